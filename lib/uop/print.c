/* print.c — the printer of the text form (docs/text-form.md).
 *
 * In: a graph root (text_print, uj_print) or one node and a depth
 * (text_print_node). Out: canonical text that text_parse reads back to the
 * same interned graph: every node shared by more than one source edge
 * (CONSTs excepted) is printed once as a binding "%N = (...)" on its own
 * line, sources before users, and the root last; every other node is
 * printed inline in its one user. Both walks are iterative, with explicit
 * stacks: a graph a million nodes deep prints without recursion. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"
#include "uop/nodemap.h"
#include "uop/text.h"

/* ---- output: a growing buffer (text_print) or a fixed one (messages) ---- */

typedef struct Out {
  char *buf;
  size_t len, cap; /* cap: bytes usable for text, the NUL not counted */
  bool grow;       /* realloc when full; otherwise cut and set `full` */
  bool full;       /* a fixed buffer ran out, or realloc failed */
} Out;

static bool out_reserve(Out *o, size_t extra) {
  if (o->len + extra <= o->cap) return true;
  size_t cap = o->cap ? o->cap * 2 : 256;
  while (cap < o->len + extra) cap *= 2;
  char *b = realloc(o->buf, cap + 1);
  if (!b) return false;
  o->buf = b;
  o->cap = cap;
  return true;
}

static void out_put(Out *o, const char *s, size_t n) {
  if (o->full) return;
  if (o->grow && !out_reserve(o, n)) n = 0, o->full = true;
  if (!o->grow && o->len + n > o->cap) n = o->cap - o->len, o->full = true;
  if (n) memcpy(o->buf + o->len, s, n);
  o->len += n;
}

static void out_str(Out *o, const char *s) { out_put(o, s, strlen(s)); }

static void out_fmt(Out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_fmt(Out *o, const char *fmt, ...) {
  char tmp[64];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
  va_end(ap);
  if (n > 0) out_put(o, tmp, (size_t)n < sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

/* ---- one node's head: "(OP:DTYPE arg..." ---- */

bool text_name_is_bare(const char *s, size_t len) {
  bool ok = len > 0 && ((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || *s == '_');
  for (size_t i = 1; ok && i < len; i++)
    ok = (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') ||
         (s[i] >= '0' && s[i] <= '9') || s[i] == '_' || s[i] == '.';
  return ok;
}

/* A name bare when it is a NAME, else quoted: '"' and '\' and control
 * bytes escaped as \" \\ \xHH. */
static void out_name(Out *o, const char *s) {
  if (!s) s = "";
  if (text_name_is_bare(s, strlen(s))) {
    out_str(o, s);
    return;
  }
  out_str(o, "\"");
  for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
    if (*c == '"' || *c == '\\')
      out_fmt(o, "\\%c", *c);
    else if (*c < 0x20 || *c == 0x7f)
      out_fmt(o, "\\x%02x", *c);
    else
      out_put(o, (const char *)c, 1);
  }
  out_str(o, "\"");
}

static void out_const_value(Out *o, DType dt, uint64_t word) {
  const ScalarInfo *s = &scalar_table[dt.scalar < UJ_SCALAR_COUNT ? dt.scalar : UJ_VOID];
  if (dt.scalar == UJ_BOOL) {
    out_str(o, word ? "true" : "false");
  } else if (s->is_float) {
    char tmp[48];
    word_format_float((uj_scalar)dt.scalar, word, tmp, sizeof tmp);
    out_str(o, tmp);
  } else if (s->is_signed) {
    out_fmt(o, "%" PRId64, (int64_t)word);
  } else {
    out_fmt(o, "%" PRIu64, word);
  }
}

/* The arg in the order of its ArgKind: name first, except BUFFER's device. */
static void out_arg(Out *o, const UOp *u) {
  ArgKind kind = u->op < UJ_OP_COUNT ? op_info((Op)u->op)->arg : ARG_NONE;
  if (kind == ARG_CONST && u->nints == 1) {
    out_str(o, " ");
    out_const_value(o, u->dtype, (uint64_t)u->ints[0]);
    return;
  }
  if (u->name && kind != ARG_BUFFER) out_str(o, " "), out_name(o, u->name);
  for (uint32_t i = 0; i < u->nints; i++) out_fmt(o, " %" PRId64, u->ints[i]);
  if (u->name && kind == ARG_BUFFER) out_str(o, " "), out_name(o, u->name);
}

static void out_head(Out *o, const UOp *u) {
  char dt[40];
  out_str(o, "(");
  out_str(o, u->op < UJ_OP_COUNT ? op_info((Op)u->op)->name : "?");
  if (!(dt_is_void(u->dtype) && u->op < UJ_OP_COUNT && op_info((Op)u->op)->dtype_inferred))
    out_str(o, ":"), out_str(o, dtype_str(u->dtype, dt, sizeof dt));
  out_arg(o, u);
}

/* ---- a node and its inline sources ---- */

enum { NO_BINDING = UINT32_MAX };

typedef struct Frame {
  const UOp *u;
  uint32_t next; /* the next source to print */
} Frame;

/* Prints u with its sources nested. A source with a binding number prints
 * as "%N"; one more than max_level levels down as "...". `stack` holds
 * max_level + 1 frames. */
static void out_tree(Out *o, const UOp *u, Frame *stack, size_t max_level,
                     const NodeMap *num, const uint32_t *binding) {
  size_t top = 0;
  out_head(o, u);
  stack[top++] = (Frame){u, 0};
  while (top > 0 && !o->full) {
    Frame *f = &stack[top - 1];
    if (f->next == f->u->nsrc) {
      out_str(o, ")");
      top--;
      continue;
    }
    const UOp *s = f->u->src[f->next++];
    uint32_t at = binding ? nodemap_find(num, s) : NODEMAP_NONE;
    if (at != NODEMAP_NONE && binding[at] != NO_BINDING)
      out_fmt(o, " %%%" PRIu32, binding[at]);
    else if (top > max_level)
      out_str(o, " ...");
    else
      out_str(o, " "), out_head(o, s), stack[top++] = (Frame){s, 0};
  }
}

void text_node_head(const UOp *u, char *buf, size_t size) {
  if (size == 0) return;
  Out o = {buf, 0, size - 1, false, false};
  out_head(&o, u);
  size_t from = o.len > 0 && buf[0] == '(' ? 1 : 0; /* "OP:DTYPE args", no parenthesis */
  memmove(buf, buf + from, o.len - from);
  buf[o.len - from] = '\0';
}

enum { NODE_MAX_DEPTH = 64 };

void text_print_node(const UOp *u, int depth, char *buf, size_t size) {
  if (size == 0) return;
  Out o = {buf, 0, size - 1, false, false};
  Frame stack[NODE_MAX_DEPTH + 1];
  size_t levels = depth < 0 ? 0 : depth > NODE_MAX_DEPTH ? NODE_MAX_DEPTH : (size_t)depth;
  out_tree(&o, u, stack, levels, NULL, NULL);
  if (o.full) {
    size_t dots = size - 1 < 3 ? size - 1 : 3;
    memset(buf + size - 1 - dots, '.', dots);
    o.len = size - 1;
  }
  buf[o.len] = '\0';
}

/* ---- the whole program ---- */

typedef struct Printer {
  Ctx *ctx;
  Out out;
  Topo t;            /* the graph, numbered (nodemap.h): the tables are by place in t */
  uint32_t *refs;    /* source edges into the node from the graph */
  uint32_t *binding; /* its %N, or NO_BINDING when printed inline */
  unsigned char *seen;
  Frame *walk, *tree; /* stacks: the graph walks, out_tree */
} Printer;

static bool printer_alloc(Printer *p, const UOp *root) {
  if (!topo_make(p->ctx, root, &p->t)) return false;
  size_t n = p->t.n;
  p->refs = calloc(n, sizeof *p->refs);
  p->binding = malloc(n * sizeof *p->binding);
  p->seen = calloc(n, 1);
  p->walk = malloc((n + 1) * sizeof *p->walk);
  p->tree = malloc((n + 1) * sizeof *p->tree);
  if (!p->refs || !p->binding || !p->seen || !p->walk || !p->tree) return false;
  memset(p->binding, 0xff, n * sizeof *p->binding);
  return true;
}

static void printer_free(Printer *p) {
  topo_free(&p->t);
  free(p->refs);
  free(p->binding);
  free(p->seen);
  free(p->walk);
  free(p->tree);
}

static uint32_t at(const Printer *p, const UOp *u) { return topo_at(&p->t, u); }

/* Counts the source edges into every node of the graph. */
static void count_refs(Printer *p) {
  for (size_t k = 0; k < p->t.n; k++)
    for (uint32_t i = 0; i < p->t.nodes[k]->nsrc; i++) p->refs[at(p, p->t.nodes[k]->src[i])]++;
}

static bool gets_binding(const Printer *p, const UOp *u) {
  return p->refs[at(p, u)] > 1 && u->op != UJ_OP_CONST;
}

static void print_binding(Printer *p, const UOp *u, uint32_t number) {
  out_fmt(&p->out, "%%%" PRIu32 " = ", number);
  out_tree(&p->out, u, p->tree, SIZE_MAX, &p->t.num, p->binding);
  out_str(&p->out, "\n");
  p->binding[at(p, u)] = number;
}

/* Post-order walk: each shared node's binding is printed once
 * all of its sources are, so bindings come out in topological order. */
static void print_bindings(Printer *p, const UOp *root) {
  uint32_t number = 0;
  size_t top = 0;
  p->walk[top++] = (Frame){root, 0};
  p->seen[at(p, root)] = 1;
  while (top > 0 && !p->out.full) {
    Frame *f = &p->walk[top - 1];
    if (f->next < f->u->nsrc) {
      const UOp *s = f->u->src[f->next++];
      if (!p->seen[at(p, s)]) p->seen[at(p, s)] = 1, p->walk[top++] = (Frame){s, 0};
      continue;
    }
    if (gets_binding(p, f->u)) print_binding(p, f->u, number++);
    top--;
  }
}

char *text_print(Ctx *ctx, const UOp *root) {
  if (!uop_in_ctx(ctx, root)) {
    ctx_set_error(ctx, "print: %s", root ? "the node is not from this context" : "no graph");
    return NULL;
  }
  Printer p = {.ctx = ctx, .out = {NULL, 0, 0, true, false}};
  bool ok = printer_alloc(&p, root) && out_reserve(&p.out, 256);
  if (ok) {
    count_refs(&p);
    print_bindings(&p, root);
    out_tree(&p.out, root, p.tree, SIZE_MAX, &p.t.num, p.binding);
    out_str(&p.out, "\n");
    ok = !p.out.full;
  }
  printer_free(&p);
  if (!ok) {
    free(p.out.buf);
    ctx_set_error(ctx, "out of memory printing a graph");
    return NULL;
  }
  p.out.buf[p.out.len] = '\0';
  return p.out.buf;
}

char *uj_print(uj_ctx *ctx, const uj_uop *root) { return text_print(ctx, root); }

void text_node_error(Ctx *ctx, const UOp *u, const char *prefix, const char *fmt, ...) {
  char msg[384], node[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  text_print_node(u, 2, node, sizeof node);
  ctx_set_error(ctx, "%s: %s\n  in %s", prefix, msg, node);
}
