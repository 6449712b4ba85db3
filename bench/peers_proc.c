/* peers_proc.c — what bench_peers reads from outside its own code
 * (bench_peers.h): the replies of bench/peers.py, and what uopjit says of
 * its kernels (its UJ_DEBUG lines, the assembly uj_emit gives).
 *
 * bench/peers.py: in, the Python interpreter and the script; out, a
 * PeerProc whose commands go down one pipe and whose replies come up
 * another, one line each (the protocol is in peers.py's header); what
 * imported (NumPy, PyTorch) and their versions. The child's stderr is
 * ours. When python cannot start or stops answering, every call fails and
 * the peers are reported absent. SIGPIPE must be ignored by the caller.
 *
 * UJ_DEBUG: between debug_capture_begin and _end, UJ_DEBUG=1 and fd 2
 * goes to a temporary file; the library then writes, per kernel of a
 * realize in schedule order, "UJ_DEBUG: NAME: compiled in X ms" (or
 * "cached") and "UJ_DEBUG: NAME: ran in X ms" (backends/cpu/program.c),
 * which become a KernelProfile.
 *
 * Assembly: the loops of a function are its backward jumps (a jump to a
 * label above it); the innermost are those holding no other; of these
 * the one with the most floating-point arithmetic (FMAs and other FP
 * ops), then the most instructions, is counted, each instruction put in
 * one class (FMA by width, gather, broadcast, load, store, shuffle, other
 * floating point). It is the hot loop of a kernel as far as the code
 * alone can tell: the loop over the reduction or over the elements, not
 * a GEMM's panel copy (larger, but all moves). */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_peers.h"

enum { REPLY_MAX = 512, LINE_MAX_LEN = 512, MAX_LABELS = 4096, MAX_LOOPS = 1024 };

/* In the child: stdin from to_child, stdout to from_child, then exec. */
static void child_exec(const int to_child[2], const int from_child[2], const char *python, const char *script) {
  dup2(to_child[0], STDIN_FILENO);
  dup2(from_child[1], STDOUT_FILENO);
  close(to_child[0]), close(to_child[1]), close(from_child[0]), close(from_child[1]);
  execl(python, python, script, (char *)NULL);
  fprintf(stderr, "bench_peers: cannot run %s: ", python);
  perror(NULL);
  _exit(127);
}

/* "hello numpy=V torch=V": the version of name, or "absent". */
static bool hello_version(const char *reply, const char *name, char *out, size_t n) {
  const char *at = strstr(reply, name);
  snprintf(out, n, "absent");
  if (!at) return false;
  at += strlen(name);
  size_t len = strcspn(at, " ");
  snprintf(out, n, "%.*s", (int)len, at);
  return strcmp(out, "absent") != 0;
}

bool peerproc_start(PeerProc *p, const char *python, const char *script) {
  *p = (PeerProc){.pid = -1};
  snprintf(p->numpy_version, sizeof p->numpy_version, "absent");
  snprintf(p->torch_version, sizeof p->torch_version, "absent");
  int to_child[2], from_child[2];
  if (pipe(to_child) != 0) return perror("bench_peers: pipe"), false;
  if (pipe(from_child) != 0) return close(to_child[0]), close(to_child[1]), perror("bench_peers: pipe"), false;
  fflush(NULL);
  p->pid = fork();
  if (p->pid == 0) child_exec(to_child, from_child, python, script);
  close(to_child[0]), close(from_child[1]);
  p->to = p->pid > 0 ? fdopen(to_child[1], "w") : NULL;
  p->from = p->pid > 0 ? fdopen(from_child[0], "r") : NULL;
  if (!p->to || !p->from) {
    perror("bench_peers: fork");
    peerproc_stop(p);
    return false;
  }
  char reply[REPLY_MAX];
  if (!peerproc_ask(p, "hello", reply, sizeof reply) || strncmp(reply, "hello", 5)) {
    fprintf(stderr, "bench_peers: %s %s does not answer; NumPy and PyTorch are absent\n", python, script);
    peerproc_stop(p);
    return false;
  }
  p->numpy = hello_version(reply, "numpy=", p->numpy_version, sizeof p->numpy_version);
  p->torch = hello_version(reply, "torch=", p->torch_version, sizeof p->torch_version);
  return true;
}

bool peerproc_ask(PeerProc *p, const char *cmd, char *reply, size_t n) {
  reply[0] = 0;
  if (!p->to || !p->from) return false;
  if (fprintf(p->to, "%s\n", cmd) < 0 || fflush(p->to) != 0) return false;
  if (!fgets(reply, (int)n, p->from)) return false;
  reply[strcspn(reply, "\n")] = 0;
  return true;
}

double peerproc_run(PeerProc *p, const char *peer, int threads) {
  char cmd[64], reply[REPLY_MAX];
  snprintf(cmd, sizeof cmd, "run %s %d", peer, threads);
  if (!peerproc_ask(p, cmd, reply, sizeof reply)) return -1;
  char *end;
  double ms = strncmp(reply, "ms ", 3) ? -1 : strtod(reply + 3, &end);
  if (ms < 0) fprintf(stderr, "bench_peers: %s: %s\n", cmd, reply);
  return ms;
}

void peerproc_stop(PeerProc *p) {
  if (p->to) fprintf(p->to, "quit\n"), fclose(p->to);
  if (p->from) fclose(p->from);
  while (p->pid > 0 && waitpid(p->pid, NULL, 0) < 0 && errno == EINTR) {
  }
  p->to = p->from = NULL;
  p->pid = -1;
}

/* ---- uopjit's UJ_DEBUG lines ---- */

bool debug_capture_begin(DebugCapture *c) {
  fflush(stderr);
  *c = (DebugCapture){.saved_fd = dup(STDERR_FILENO), .file = tmpfile()};
  if (c->saved_fd < 0 || !c->file || dup2(fileno(c->file), STDERR_FILENO) < 0) {
    if (c->file) fclose(c->file);
    if (c->saved_fd >= 0) close(c->saved_fd);
    *c = (DebugCapture){.saved_fd = -1};
    return false;
  }
  setenv("UJ_DEBUG", "1", 1);
  return true;
}

/* One "UJ_DEBUG: NAME: WHAT ms" line into p. */
static void profile_add(KernelProfile *p, const char *line) {
  char name[KERNEL_NAME_MAX];
  double ms;
  if (sscanf(line, "UJ_DEBUG: %63[^:]: compiled in %lf ms", name, &ms) == 2) p->compile_ms += ms, p->ncompiled++;
  else if (sscanf(line, "UJ_DEBUG: %63[^:]: loaded from the disk cache in %lf ms", name, &ms) == 2)
    p->load_ms += ms, p->nloaded++;
  else if (sscanf(line, "UJ_DEBUG: %63[^:]: ran in %lf ms", name, &ms) == 2) {
    if (p->hottest < 0 || ms > p->hottest_ms) {
      p->hottest = p->nkernels, p->hottest_ms = ms;
      snprintf(p->hottest_name, sizeof p->hottest_name, "%s", name);
    }
    p->nkernels++, p->run_ms += ms;
  }
}

void debug_capture_end(DebugCapture *c, KernelProfile *out) {
  *out = (KernelProfile){.hottest = -1};
  if (!c->file) return;
  fflush(stderr);
  unsetenv("UJ_DEBUG");
  dup2(c->saved_fd, STDERR_FILENO);
  close(c->saved_fd);
  rewind(c->file);
  char line[LINE_MAX_LEN];
  while (fgets(line, sizeof line, c->file)) profile_add(out, line);
  fclose(c->file);
  *c = (DebugCapture){.saved_fd = -1};
}

/* ---- the instruction mix of a kernel's hottest loop ---- */

static bool starts_with(const char *s, const char *prefix) { return !strncmp(s, prefix, strlen(prefix)); }

static bool starts_with_any(const char *s, const char *const *prefixes) {
  for (; *prefixes; prefixes++)
    if (starts_with(s, *prefixes)) return true;
  return false;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && !strcmp(s + n - k, suffix);
}

/* 0 none, 1 xmm, 2 ymm, 3 zmm: the widest register named in operands. */
static int register_width(const char *operands) {
  return strstr(operands, "%zmm") ? 3 : strstr(operands, "%ymm") ? 2 : strstr(operands, "%xmm") ? 1 : 0;
}

/* Where the last operand starts: after the last comma outside
 * parentheses ("(%r8,%r15,4)" is one operand). */
static const char *last_operand(const char *operands) {
  const char *last = operands;
  int depth = 0;
  for (const char *p = operands; *p; p++)
    if (*p == '(') depth++;
    else if (*p == ')') depth--;
    else if (*p == ',' && depth == 0) last = p + 1;
  return last;
}

/* One instruction (mnemonic, operands) into m. AT&T: the destination is
 * the last operand, memory operands hold "(". */
static void mix_add(AsmMix *m, const char *op, const char *operands) {
  static const char *const fmas[] = {"vfmadd", "vfmsub", "vfnmadd", "vfnmsub", NULL};
  static const char *const shuffles[] = {"vperm", "vshuf", "vpshuf", "vunpck", "vpunpck", "vinsert", "vextract",
                                         "vblend", "vpblend", "valign", "vpalign", "vmovsh", "vpack", NULL};
  static const char *const fp_ops[] = {"vadd", "vsub", "vmul", "vdiv", "vmax", "vmin", "vsqrt", "vrcp", "vrsqrt",
                                       "vcmp", "vround", "vrndscale", "vscalef", "vgetexp", "vgetmant", "vcvt",
                                       "vand", "vor", "vxor", NULL};
  const char *last = last_operand(operands);
  bool vector = op[0] == 'v', mem_dst = strchr(last, '(') != NULL;
  bool mem_src = memchr(operands, '(', (size_t)(last - operands)) != NULL || (last == operands && mem_dst);
  bool packed = ends_with(op, "ps") || ends_with(op, "pd");
  bool scalar = ends_with(op, "ss") || ends_with(op, "sd");
  m->instructions++;
  m->reads += vector && mem_src && !starts_with(op, "vgather");
  m->writes += vector && mem_dst && last != operands;
  m->nontemporal += starts_with(op, "vmovnt");
  if (starts_with_any(op, fmas)) m->fma[scalar ? 0 : register_width(operands)]++;
  else if (starts_with(op, "vgather") || starts_with(op, "vpgather")) m->gathers++;
  else if (strstr(op, "broadcast")) m->broadcasts++;
  else if (starts_with_any(op, shuffles) && !mem_dst) m->shuffles++;
  else if (starts_with_any(op, fp_ops) && (packed || scalar)) packed ? m->fp_packed++ : m->fp_scalar++;
}

/* The asm's instruction lines, the positions of its labels and its
 * backward jumps: loops [start, end) in instruction indices. */
typedef struct AsmLoops {
  char label[MAX_LABELS][32];
  int label_at[MAX_LABELS];
  int nlabels;
  int start[MAX_LOOPS], end[MAX_LOOPS];
  int nloops;
} AsmLoops;

/* The mnemonic and operands of one line; false for labels, directives
 * and comments (a label is recorded in L when L is not NULL). */
static bool asm_split(char *line, AsmLoops *L, int index, char **op, char **operands) {
  char *s = line + strspn(line, " \t");
  s[strcspn(s, "\n#")] = 0;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
  if (!n) return false;
  if (s[n - 1] == ':') {
    if (L && L->nlabels < MAX_LABELS && n - 1 < sizeof L->label[0]) {
      snprintf(L->label[L->nlabels], sizeof L->label[0], "%.*s", (int)(n - 1), s);
      L->label_at[L->nlabels++] = index;
    }
    return false;
  }
  if (s[0] == '.') return false;
  *op = s;
  s += strcspn(s, " \t");
  if (*s) *s++ = 0;
  *operands = s + strspn(s, " \t");
  return true;
}

/* A jump to a label above it is a loop. */
static void asm_note_jump(AsmLoops *L, const char *op, const char *operands, int index) {
  if (op[0] != 'j' || L->nloops >= MAX_LOOPS) return;
  for (int i = 0; i < L->nlabels; i++)
    if (!strcmp(L->label[i], operands) && L->label_at[i] <= index) {
      L->start[L->nloops] = L->label_at[i], L->end[L->nloops++] = index + 1;
      return;
    }
}

/* Whether loop i holds no other. */
static bool asm_innermost(const AsmLoops *L, int i) {
  for (int j = 0; j < L->nloops; j++)
    if (j != i && L->start[j] >= L->start[i] && L->end[j] <= L->end[i] && L->end[j] - L->start[j] < L->end[i] - L->start[i])
      return false;
  return true;
}

static int fp_ops(const AsmMix *m) {
  return m->fma[0] + m->fma[1] + m->fma[2] + m->fma[3] + m->fp_packed + m->fp_scalar;
}

/* Over the instructions of text: with find_loops, its labels and loops
 * into L and its widest register into m; else the mix of the
 * instructions [from, to) into m. */
static void asm_walk(const char *text, AsmLoops *L, int from, int to, AsmMix *m, bool find_loops) {
  char line[LINE_MAX_LEN];
  int index = 0;
  while (*text) {
    size_t n = strcspn(text, "\n");
    snprintf(line, sizeof line, "%.*s", (int)(n < sizeof line ? n : sizeof line - 1), text);
    text += n + (text[n] == '\n');
    char *op, *operands;
    if (!asm_split(line, find_loops ? L : NULL, index, &op, &operands)) continue;
    int w = register_width(operands);
    if (find_loops) {
      asm_note_jump(L, op, operands, index);
      if (w > m->widest) m->widest = w;
    } else if (index >= from && index < to) mix_add(m, op, operands);
    index++;
  }
}

void asm_mix_read(const char *asm_text, AsmMix *out) {
  *out = (AsmMix){0};
  AsmLoops *L = calloc(1, sizeof *L);
  if (!L || !asm_text) return free(L);
  asm_walk(asm_text, L, 0, 0, out, true);
  AsmMix best = {0};
  for (int i = 0; i < L->nloops; i++) { /* the innermost loop with the most FP arithmetic, then instructions */
    AsmMix m = {.widest = out->widest};
    if (!asm_innermost(L, i)) continue;
    asm_walk(asm_text, L, L->start[i], L->end[i], &m, false);
    if (!best.found || fp_ops(&m) > fp_ops(&best) || (fp_ops(&m) == fp_ops(&best) && m.instructions > best.instructions))
      best = m, best.found = true;
  }
  if (best.found) *out = best;
  free(L);
}
