/* beam.c — UJ_BEAM=n (beam.h, docs/search.md): a kernel's OptConfig by
 * timing candidates on the device, the winner kept on disk.
 *
 *   key = hash(kernel text, target name, threads)   machine = hash(device, its description)
 *     found in the cache (file lines of this machine) -> its config
 *     else: scratch buffers of the PARAMs' sizes, filled with ones;
 *       the heuristics' config timed first, then rounds: the neighbours
 *       (one field changed) of the n fastest not yet expanded, each
 *       shaped kernel compiled and timed once (equal shapes are one
 *       interned node), until a round finds nothing faster or
 *       4n + 8 candidates are compiled;
 *       the fastest and the heuristics' timed again, taking turns: the
 *       fastest wins if 3 % faster, else the heuristics',
 *       appended to the cache file as one line with one write().
 *
 * Never an error: a kernel it cannot measure, a cache it cannot read or
 * write, keeps the heuristics, and says why under UJ_DEBUG. */
#define _POSIX_C_SOURCE 200809L /* getline, O_CLOEXEC, clock_gettime */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "llvm/pipeline.h"
#include "runtime/beam.h"
#include "runtime/disk_cache.h"
#include "runtime/progress.h"
#include "uop/alu.h"
#include "uop/hash.h"
#include "uop/text.h"

enum {
  BEAM_SAMPLES_MIN = 3,  /* launches timed per candidate, at least ... */
  BEAM_SAMPLES_MAX = 10, /* ... and at most (short kernels: about 2 ms of them) */
};
#define BEAM_SAMPLES_SECONDS 2e-3
#define BEAM_CUTOFF 4.0  /* a first launch this many times the best is not timed further */
#define BEAM_MARGIN 0.97 /* a candidate must beat the heuristics by 3 % */
#define BEAM_MAX_BYTES ((size_t)1 << 32) /* scratch memory for one kernel: 4 GiB */

typedef struct BeamEntry {
  uint64_t kernel;
  OptConfig config;
} BeamEntry;

typedef struct Beam {
  OptSearch hook; /* first: the OptSearch handed out is the Beam */
  Device *device;
  unsigned width;   /* n: candidates kept each round */
  uint64_t machine; /* the device and its description (model, features) */
  char path[4096];  /* the cache file, "" when none */
  BeamEntry *entries; /* this machine's, in file order (later wins) */
  size_t nentries, cap;
  BeamStats stats;
} Beam;

static void beam_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void beam_note(const char *fmt, ...) {
  if (pipeline_debug_level() < 1) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("UJ_DEBUG: beam: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

/* ---- keys ---- */


/* The device and the machine it describes (model, features). */
static uint64_t machine_key(Device *d) {
  char machine[8192] = ""; /* LLVM's feature strings run past a thousand characters */
  if (d->ops->describe) d->ops->describe(d, machine, sizeof machine);
  return fnv1a_str(fnv1a_str(FNV_OFFSET, d->name), machine);
}

/* The kernel's text, the target it is shaped for and the threads a launch
 * runs on (the best split depends on them). */
static bool kernel_key(Ctx *ctx, Device *d, const UOp *kernel, const TargetDesc *t, uint64_t *key) {
  char *text = text_print(ctx, kernel);
  if (!text) return false;
  unsigned threads = d->ops->threads ? d->ops->threads(d) : 0;
  *key = fnv1a_str(fnv1a_str(FNV_OFFSET, text), t->name);
  *key = fnv1a(*key, &threads, sizeof threads);
  free(text);
  return true;
}

/* ---- the cache file ---- */

static const BeamEntry *cache_find(const Beam *b, uint64_t kernel) {
  for (size_t i = b->nentries; i-- > 0;)
    if (b->entries[i].kernel == kernel) return &b->entries[i];
  return NULL;
}

static bool cache_add(Beam *b, uint64_t kernel, const OptConfig *c) {
  if (b->nentries == b->cap) {
    size_t cap = b->cap ? 2 * b->cap : 64;
    BeamEntry *e = realloc(b->entries, cap * sizeof *e);
    if (!e) return false;
    b->entries = e, b->cap = cap;
  }
  b->entries[b->nentries++] = (BeamEntry){kernel, *c};
  return true;
}

/* One line: tag, version, machine, kernel, the nine fields of the config,
 * then the winner's and the heuristics' nanoseconds (for people). */
static bool cache_parse(const char *line, uint64_t machine, BeamEntry *e) {
  unsigned version, v[9];
  unsigned long long m, k, ns[2];
  int end = -1;
  if (sscanf(line, BEAM_CACHE_TAG " %u %llx %llx %u %u %u %u %u %u %u %u %u %llu %llu%n", &version, &m, &k, &v[0], &v[1],
             &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &ns[0], &ns[1], &end) != 14 || end < 0)
    return false;
  if (line[end] != '\n' && line[end] != '\0') return false;
  if (version != BEAM_CACHE_VERSION || m != machine) return false;
  if (v[0] > OPT_ON || v[4] > OPT_ON || v[5] > OPT_ON || v[6] > OPT_ON || v[7] > OPT_ON || v[1] > 1024 || v[2] > 1024 ||
      v[3] > 1024 || v[8] > 1024)
    return false;
  *e = (BeamEntry){k, {(OptSwitch)v[0], v[1], v[2], v[3], (OptSwitch)v[4], (OptSwitch)v[5], (OptSwitch)v[6], (OptSwitch)v[7],
                       v[8], OPT_AUTO, OPT_AUTO}}; /* gemm, widen: GPUs only, not searched yet */
  return true;
}

static void cache_load(Beam *b) {
  FILE *f = fopen(b->path, "r");
  if (!f) {
    if (errno != ENOENT) beam_note("cannot read %s: %s", b->path, strerror(errno));
    return;
  }
  char *line = NULL;
  size_t size = 0, skipped = 0;
  BeamEntry e;
  while (getline(&line, &size, f) >= 0)
    if (!cache_parse(line, b->machine, &e) || !cache_add(b, e.kernel, &e.config)) skipped++;
  if (ferror(f)) beam_note("cannot read %s: %s", b->path, strerror(errno));
  free(line);
  fclose(f);
  beam_note("%s: %zu entries for this machine, %zu other lines", b->path, b->nentries, skipped);
}

static void cache_append(Beam *b, uint64_t kernel, const OptConfig *c, double best, double heuristic) {
  if (!b->path[0]) return;
  char line[256];
  int n = snprintf(line, sizeof line, BEAM_CACHE_TAG " %d %016llx %016llx %u %u %u %u %u %u %u %u %u %llu %llu\n",
                   BEAM_CACHE_VERSION, (unsigned long long)b->machine, (unsigned long long)kernel, (unsigned)c->lanes,
                   c->columns, c->rows, c->tile, (unsigned)c->stage, (unsigned)c->parallel, (unsigned)c->reorder,
                   (unsigned)c->stream, c->unroll,
                   (unsigned long long)(best * 1e9), (unsigned long long)(heuristic * 1e9));
  disk_cache_make_parents(b->path);
  int fd = open(b->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  ssize_t written = fd >= 0 ? write(fd, line, (size_t)n) : -1;
  int err = errno;
  if (fd >= 0) close(fd);
  if (written == n) b->stats.stored++;
  else beam_note("cannot write %s: %s", b->path, written < 0 ? strerror(err) : "short write");
}

/* ---- what a kernel reads and writes ---- */

static bool param_reach(const UOp *index, BeamParams *p) {
  const UOp *param = index->src[0], *at = index->nsrc > 1 ? index->src[1] : NULL;
  int64_t slot = param->ints[0];
  size_t elem = elem_bytes(dt_base(param->dtype));
  if (!at || !at->bounded || slot < 0 || slot >= BEAM_MAX_SLOTS || !elem) return false;
  if (at->vmax < 0) return true;
  if ((uint64_t)at->vmax >= BEAM_MAX_BYTES / elem) return false;
  size_t bytes = ((size_t)at->vmax + 1) * elem;
  if (bytes > p->bytes[slot]) p->bytes[slot] = bytes;
  return true;
}

static bool param_slot(const UOp *param, BeamParams *p) {
  int64_t slot = param->ints[0];
  if (!dt_is_ptr(param->dtype) || slot < 0 || slot >= BEAM_MAX_SLOTS) return false;
  p->dtype[slot] = dt_base(param->dtype);
  if ((size_t)slot >= p->n) p->n = (size_t)slot + 1;
  return true;
}

bool beam_params(Ctx *ctx, const UOp *kernel, BeamParams *p) {
  memset(p, 0, sizeof *p);
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes);
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *u = nodes[i];
    ok = u->op != UJ_OP_DEFINE_VAR && (u->op != UJ_OP_PARAM || param_slot(u, p));
    for (uint32_t k = 0; ok && k < u->nsrc; k++)
      if (u->src[k]->op == UJ_OP_PARAM) ok = u->op == UJ_OP_INDEX && k == 0 && param_reach(u, p);
  }
  free(nodes);
  return ok;
}

/* ---- scratch buffers ---- */

typedef struct Scratch {
  RtBuffer *buf[BEAM_MAX_SLOTS];
  void *args[BEAM_MAX_SLOTS];
  size_t bytes[BEAM_MAX_SLOTS];
  size_t n;
} Scratch;

static void scratch_free(Scratch *s) {
  for (size_t i = 0; i < s->n; i++) rt_buffer_unref(s->buf[i]);
  s->n = 0;
}

/* Every element one (1.0, 1, true): finite, no NaN, no division by zero. */
static bool scratch_fill(Device *d, RtBuffer *b, DType dtype) {
  enum { CHUNK = 1024 };
  uint64_t words[64];
  size_t elem = elem_bytes(dtype);
  unsigned char *chunk = dtype.lanes <= 64 && elem ? malloc(CHUNK * elem) : NULL;
  if (!chunk) return false;
  uj_scalar s = (uj_scalar)dtype.scalar;
  for (unsigned l = 0; l < dtype.lanes; l++) words[l] = dt_is_float(dt_lane(dtype)) ? word_from_double(s, 1.0) : word_from_int(s, 1);
  for (size_t i = 0; i < CHUNK; i++) mem_write(chunk + i * elem, dtype, words);
  bool ok = true;
  for (size_t at = 0; ok && at < b->bytes; at += CHUNK * elem) {
    size_t n = b->bytes - at < CHUNK * elem ? b->bytes - at : CHUNK * elem;
    ok = d->ops->copy_in(d, (unsigned char *)b->mem + at, chunk, n);
  }
  free(chunk);
  return ok;
}

static bool scratch_make(Device *d, const BeamParams *p, Scratch *s) {
  size_t total = 0;
  for (size_t i = 0; i < p->n; i++) total += p->bytes[i];
  if (total > BEAM_MAX_BYTES) return false;
  bool ok = true;
  for (s->n = 0; ok && s->n < p->n; s->n++) {
    size_t bytes = p->bytes[s->n] ? p->bytes[s->n] : 64; /* an unused slot still gets memory */
    s->buf[s->n] = rt_buffer_new(d, bytes);
    if (!s->buf[s->n]) break;
    s->args[s->n] = s->buf[s->n]->mem, s->bytes[s->n] = bytes;
    if (p->bytes[s->n]) ok = scratch_fill(d, s->buf[s->n], p->dtype[s->n]);
  }
  if (s->n == p->n && ok) return true;
  scratch_free(s);
  return false;
}

/* ---- timing ---- */

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static bool launch(Device *d, void *program, const Scratch *s, double *seconds) {
  double t0 = now_seconds();
  bool ok = device_launch(d, program, &(LaunchArgs){.buffers = s->args, .bytes = s->bytes, .n = s->n}) &&
            d->ops->synchronize(d, NULL);
  *seconds = now_seconds() - t0;
  return ok;
}

/* Launches to time of a kernel that takes `seconds`: about
 * BEAM_SAMPLES_SECONDS of them, BEAM_SAMPLES_MIN .. MAX. */
static unsigned samples_for(double seconds) {
  double want = seconds > 0 ? ceil(BEAM_SAMPLES_SECONDS / seconds) : BEAM_SAMPLES_MAX;
  return want < BEAM_SAMPLES_MIN ? BEAM_SAMPLES_MIN : want > BEAM_SAMPLES_MAX ? BEAM_SAMPLES_MAX : (unsigned)want;
}

/* One launch's seconds: a first launch to warm up (pages, caches, the
 * thread pool); then the best of samples_for launches, unless the first
 * took longer than cutoff (it is then the answer). */
static bool time_program(Device *d, void *program, const Scratch *s, double cutoff, double *out) {
  double first, t;
  if (!launch(d, program, s, &first)) return false;
  if (first > cutoff) return *out = first, true;
  unsigned samples = samples_for(first);
  *out = INFINITY;
  for (unsigned k = 0; k < samples; k++) {
    if (!launch(d, program, s, &t)) return false;
    if (t < *out) *out = t;
  }
  return true;
}

/* ---- the search ---- */

typedef struct Candidate {
  OptConfig config;
  const UOp *shaped;
  void *program;  /* compiled (NULL: it did not compile), until the end */
  double seconds; /* INFINITY: it did not compile or run */
  size_t order;   /* when it was made (0: the heuristics'); of equal times the earlier wins */
  bool expanded;  /* its neighbours were tried */
} Candidate;

typedef struct Search {
  Beam *beam;
  Ctx *ctx;
  const UOp *kernel;
  const OptTarget *target;
  const char *name; /* of the programs it compiles */
  Scratch scratch;
  Candidate *cands; /* every distinct shaped kernel tried */
  size_t n, cap;
  unsigned compiled, max_compiles;
  unsigned register_elems; /* W: elements of the stored value in a register */
  Progress progress;
} Search;

enum { FIELD_COLUMNS, FIELD_ROWS, FIELD_TILE, FIELD_PARALLEL, FIELD_STAGE, FIELD_LANES, FIELD_REORDER, FIELD_STREAM, FIELD_UNROLL, FIELD_COUNT };

static OptConfig config_with(OptConfig c, unsigned field, unsigned v) {
  switch (field) {
  case FIELD_COLUMNS: c.columns = v; break;
  case FIELD_ROWS: c.rows = v; break;
  case FIELD_TILE: c.tile = v; break;
  case FIELD_PARALLEL: c.parallel = (OptSwitch)v; break;
  case FIELD_STAGE: c.stage = (OptSwitch)v; break;
  case FIELD_REORDER: c.reorder = (OptSwitch)v; break;
  case FIELD_STREAM: c.stream = (OptSwitch)v; break;
  case FIELD_UNROLL: c.unroll = v; break;
  default: c.lanes = (OptSwitch)v; break;
  }
  return c;
}

static bool config_eq(const OptConfig *a, const OptConfig *b) {
  return a->lanes == b->lanes && a->columns == b->columns && a->rows == b->rows && a->tile == b->tile &&
         a->stage == b->stage && a->parallel == b->parallel && a->reorder == b->reorder && a->stream == b->stream &&
         a->unroll == b->unroll;
}

/* The values a field takes in the search (0: the heuristics'); columns
 * are W/2, W and 2W, W the stored value's elements in a register. */
static unsigned field_values(const Search *s, unsigned field, unsigned *out) {
  static const unsigned rows[] = {0, 1, 2, 4, 8}, tiles[] = {0, 1, 2, 4, 8, 16}, unrolls[] = {0, 2, 4, 8};
  static const unsigned switches[] = {OPT_AUTO, OPT_OFF, OPT_ON};
  unsigned w = s->register_elems, n = 0;
  switch (field) {
  case FIELD_COLUMNS:
    out[n++] = 0;
    if (w / 2 > 1) out[n++] = w / 2;
    if (w > 1) out[n++] = w;
    out[n++] = 2 * w;
    return n;
  case FIELD_ROWS: memcpy(out, rows, sizeof rows); return sizeof rows / sizeof *rows;
  case FIELD_TILE: memcpy(out, tiles, sizeof tiles); return sizeof tiles / sizeof *tiles;
  case FIELD_UNROLL: memcpy(out, unrolls, sizeof unrolls); return sizeof unrolls / sizeof *unrolls;
  case FIELD_LANES: memcpy(out, switches, 2 * sizeof *switches); return 2; /* ON is AUTO for lanes */
  default: memcpy(out, switches, sizeof switches); return sizeof switches / sizeof *switches;
  }
}

static double best_seconds(const Search *s) {
  double best = INFINITY;
  for (size_t i = 0; i < s->n; i++)
    if (s->cands[i].seconds < best) best = s->cands[i].seconds;
  return best;
}

static void config_text(const OptConfig *c, char *out, size_t size) {
  static const char *const sw[] = {"auto", "off", "on"};
  int n = snprintf(out, size, "lanes=%s columns=%u rows=%u tile=%u stage=%s parallel=%s reorder=%s stream=%s unroll=%u",
                   sw[c->lanes], c->columns, c->rows, c->tile, sw[c->stage], sw[c->parallel], sw[c->reorder],
                   sw[c->stream], c->unroll);
  if (n < 0) out[0] = '\0';
}

/* Shapes the kernel with c; a new shape is compiled and timed. */
static void try_config(Search *s, const OptConfig *c) {
  if (interrupt_requested()) return; /* uj_interrupt: no more candidates */
  const UOp *shaped = opt_apply(s->ctx, s->kernel, s->target, c);
  if (!shaped || s->compiled >= s->max_compiles) return;
  progress_show(&s->progress, "BEAM %s: candidate %u of at most %u", s->name, s->compiled + 1, s->max_compiles);
  for (size_t i = 0; i < s->n; i++)
    if (s->cands[i].shaped == shaped) return;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 32;
    Candidate *cands = realloc(s->cands, cap * sizeof *cands);
    if (!cands) return;
    s->cands = cands, s->cap = cap;
  }
  Device *d = s->beam->device;
  Candidate *x = &s->cands[s->n];
  *x = (Candidate){*c, shaped, NULL, INFINITY, s->n, false};
  double cutoff = s->n ? BEAM_CUTOFF * best_seconds(s) : INFINITY;
  s->compiled++, s->beam->stats.compiled++;
  x->program = d->ops->compile(d, shaped, s->name);
  if (x->program && time_program(d, x->program, &s->scratch, cutoff, &x->seconds)) s->beam->stats.timed++;
  else x->seconds = INFINITY;
  if (pipeline_debug_level() >= 2) {
    char text[128];
    config_text(c, text, sizeof text);
    beam_note("%s: candidate %s: %.3f ms", s->name, text, x->seconds * 1e3);
  }
  s->n++;
}

/* The fastest and the heuristics' kernel timed again, their launches
 * taking turns: a lead that came from a quieter moment of a shared
 * machine does not survive it. */
static void confirm(Search *s, Candidate *best, Candidate *heuristic) {
  Device *d = s->beam->device;
  double t[2] = {INFINITY, INFINITY}, x;
  unsigned samples = samples_for(best->seconds);
  for (unsigned k = 0; k < samples; k++) {
    if (launch(d, heuristic->program, &s->scratch, &x) && x < t[0]) t[0] = x;
    if (launch(d, best->program, &s->scratch, &x) && x < t[1]) t[1] = x;
  }
  heuristic->seconds = t[0], best->seconds = t[1];
}

static void expand(Search *s, size_t i) {
  s->cands[i].expanded = true;
  OptConfig base = s->cands[i].config;
  unsigned values[8];
  for (unsigned f = 0; f < FIELD_COUNT; f++) {
    unsigned n = field_values(s, f, values);
    for (unsigned k = 0; k < n; k++) {
      OptConfig c = config_with(base, f, values[k]);
      if (!config_eq(&c, &base)) try_config(s, &c);
    }
  }
}

static int by_time(const void *a, const void *b) {
  const Candidate *x = a, *y = b;
  if (x->seconds != y->seconds) return x->seconds < y->seconds ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

/* Rounds until one finds nothing faster or the compiles run out; the
 * candidates are then sorted, the fastest first. */
static void search_rounds(Search *s) {
  while (!interrupt_requested()) {
    double before = best_seconds(s);
    qsort(s->cands, s->n, sizeof *s->cands, by_time);
    size_t kept = s->n < s->beam->width ? s->n : s->beam->width;
    for (size_t i = 0; i < kept && s->compiled < s->max_compiles; i++)
      if (!s->cands[i].expanded) expand(s, i);
    qsort(s->cands, s->n, sizeof *s->cands, by_time);
    if (!(s->cands[0].seconds < before) || s->compiled >= s->max_compiles) return;
  }
}

static unsigned register_elems(const BeamParams *p, unsigned vector_bytes) {
  size_t elem = p->n ? elem_bytes(dt_lane(p->dtype[0])) : 4;
  unsigned w = elem ? vector_bytes / (unsigned)elem : 1;
  return w ? w : 1;
}

/* "128x128x128": the constant bounds of the kernel's loops, to tell its
 * UJ_DEBUG lines apart. */
static void loops_text(Ctx *ctx, const UOp *kernel, char *out, size_t size) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, kernel, &nodes), at = 0;
  out[0] = '\0';
  for (size_t i = 0; i < n && at < size; i++)
    if (nodes[i]->op == UJ_OP_RANGE && nodes[i]->src[0]->op == UJ_OP_CONST)
      at += (size_t)snprintf(out + at, size - at, "%s%lld", at ? "x" : "", (long long)nodes[i]->src[0]->ints[0]);
  free(nodes);
  if (!out[0]) snprintf(out, size, "no loops");
}

/* After the rounds: the winner (the heuristics' unless the fastest is
 * BEAM_MARGIN faster when both are timed again), into *config, the
 * session's table and the file. Frees the scratch and the programs. */
static void search_finish(Search *s, uint64_t key, const char *loops, OptConfig *config) {
  Beam *b = s->beam;
  bool stopped = interrupt_requested(); /* read once: the log and the cache agree */
  Candidate *w = &s->cands[0], *h = w;
  for (size_t i = 0; i < s->n; i++)
    if (s->cands[i].order == 0) h = &s->cands[i];
  if (w != h) confirm(s, w, h);
  scratch_free(&s->scratch);
  for (size_t i = 0; i < s->n; i++)
    if (s->cands[i].program) b->device->ops->program_free(b->device, s->cands[i].program);
  if (w->seconds >= h->seconds * BEAM_MARGIN || stopped) w = h; /* stopped early: the heuristics, not kept */
  *config = w->config;
  char text[128];
  config_text(config, text, sizeof text);
  beam_note("%s (%s): %s, %.3f ms (heuristics %.3f ms), %u compiled%s", s->name, loops, text, w->seconds * 1e3,
            h->seconds * 1e3, s->compiled, stopped ? ", interrupted" : "");
  if (!stopped && cache_add(b, key, config)) cache_append(b, key, config, w->seconds, h->seconds);
}

/* Times the candidates for kernel; false when it cannot be measured. */
static bool beam_search(Beam *b, Ctx *ctx, const UOp *kernel, const OptTarget *t, uint64_t key, OptConfig *config) {
  BeamParams p;
  char name[32], loops[64];
  snprintf(name, sizeof name, "beam_%08llx", (unsigned long long)(key >> 32));
  Search s = {.beam = b, .ctx = ctx, .kernel = kernel, .target = t, .name = name, .max_compiles = 4 * b->width + 8};
  loops_text(ctx, kernel, loops, sizeof loops);
  if (interrupt_requested()) { /* before the scratch buffers are made */
    beam_note("%s (%s): not searched (interrupted): the heuristics", name, loops);
    return false;
  }
  if (!beam_params(ctx, kernel, &p) || !scratch_make(b->device, &p, &s.scratch)) {
    beam_note("%s (%s): not measured (its buffers are unknown or too big)", name, loops);
    return false;
  }
  s.register_elems = register_elems(&p, t->desc->vector_bytes);
  b->stats.searched++;
  progress_begin(&s.progress);
  disk_cache_skip(true); /* candidates are compiled to be timed, not kept */
  try_config(&s, &(OptConfig){0});
  bool ok = s.n == 1 && s.cands[0].seconds < INFINITY;
  if (ok) {
    search_rounds(&s);
    search_finish(&s, key, loops, config);
  } else {
    beam_note("%s (%s): the heuristics' kernel did not run", name, loops);
    scratch_free(&s.scratch);
    if (s.n && s.cands[0].program) b->device->ops->program_free(b->device, s.cands[0].program);
  }
  disk_cache_skip(false);
  progress_end(&s.progress);
  free(s.cands);
  return ok;
}

static void beam_choose(OptSearch *hook, Ctx *ctx, const UOp *kernel, const OptTarget *t, OptConfig *config) {
  Beam *b = (Beam *)hook;
  char saved[sizeof ctx->error], text[128];
  memcpy(saved, ctx->error, sizeof saved); /* the search reports nothing */
  b->stats.kernels++;
  uint64_t key;
  const BeamEntry *e = NULL;
  if (!kernel_key(ctx, b->device, kernel, t->desc, &key)) {
    beam_note("out of memory: the heuristics");
  } else if ((e = cache_find(b, key)) != NULL) {
    *config = e->config, b->stats.hits++;
    config_text(config, text, sizeof text);
    beam_note("beam_%08llx: %s (cached)", (unsigned long long)(key >> 32), text);
  } else {
    beam_search(b, ctx, kernel, t, key, config);
  }
  memcpy(ctx->error, saved, sizeof saved);
}

/* ---- the search's life ---- */

OptSearch *beam_new(Device *d) {
  const char *env = getenv("UJ_BEAM");
  char *end = NULL;
  unsigned long n = env && *env >= '0' && *env <= '9' ? strtoul(env, &end, 10) : 0;
  if (!end || *end || n == 0) return NULL;
  Beam *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->hook.choose = beam_choose;
  b->device = d;
  b->width = n < BEAM_MAX_WIDTH ? (unsigned)n : BEAM_MAX_WIDTH;
  b->machine = machine_key(d);
  disk_cache_path(b->path, sizeof b->path, "beam.txt");
  if (b->path[0]) cache_load(b);
  else beam_note("no cache: set UJ_CACHE_DIR, XDG_CACHE_HOME or HOME");
  return &b->hook;
}

void beam_free(OptSearch *s) {
  Beam *b = (Beam *)s;
  if (!b) return;
  free(b->entries);
  free(b);
}

BeamStats beam_stats(const OptSearch *s) { return s ? ((const Beam *)s)->stats : (BeamStats){0}; }

const char *beam_cache_path(const OptSearch *s) { return s ? ((const Beam *)s)->path : ""; }
