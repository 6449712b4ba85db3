/* upcast.c — register blocking of reductions (opt.h): the innermost output
 * loop of a kernel whose stored value reduces is split into an outer loop
 * and U lanes, and each REDUCE in the value becomes one REDUCE of a
 * U-lane vector:
 *
 *   END(c, STORE(out[f(c)], g(REDUCE(x(c), k))))                 c < B
 *   -> END(c', STORE(out[f(c'U+u)], g(GEP(R, u))) for u < U)      c' < B/U
 *      with R = REDUCE(VECTORIZE(x(c'U+0), .., x(c'U+U-1)), k)
 *
 * One pass over k then computes U outputs, its accumulator a vector held
 * in registers: a GEMM's inner loop loads a[i,k] once and b[k, c'U..+U)
 * as one vector (LLVM's SLP vectorizer merges the lanes' adjacent loads,
 * multiplies and stores). Each output is reduced in the same order as
 * before, so results are bit for bit the serial kernel's. U = 32 bytes of
 * the value's elements (8 float32: one AVX2 register), when it divides B.
 * Kernels whose REDUCE nests another that depends on c are left alone. */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "rewrite/rewrite.h"
#include "uop/alu.h"

/* At most 2 registers of columns (32 float32 on AVX-512) times 8 rows;
 * the accumulators of all REDUCEs in one block stay within 16 registers
 * (AVX-512 has 32, AVX2 16: then 4 rows of 2). Without rows, up to 8
 * registers of columns (128 float32): GEMV 1 x 4096 x 4096 on one
 * thread, 6.9 -> 5.4 ms with 4, 5.1 with 8 (medians). Up to 4 registers, all the
 * columns, when the value reads a REDUCE free of the columns (online
 * softmax's max and sums, docs/opt.md): each block would compute it again. */
/* A GPU's kernel is upcast only when U >= this many outputs a thread
 * leave cores x max_threads threads (a GEMV's 4096 outputs: one thread
 * each, 16 blocks, not 128 threads of 32 columns in one block). */
enum { UPCAST_GPU_MIN_LANES = 4 };
enum { UPCAST_VECTORS = 2, UPCAST_WHOLE_VECTORS = 4, UPCAST_WIDE_VECTORS = 8, UPCAST_MIN_COLUMNS = 4, UPCAST_MAX_COLUMNS = 128, UPCAST_MAX_ROWS = 8, UPCAST_MAX_LANES = UPCAST_MAX_COLUMNS * UPCAST_MAX_ROWS, UPCAST_ACC_REGISTERS = 16,
       UPCAST_MAX_REDUCES = 32, UPCAST_MAX_SOURCES = 64 };

/* An axis being upcast: its range, the outer range that replaces it, and
 * how many lanes each outer step covers. */
typedef struct Axis {
  const UOp *range, *outer;
  unsigned lanes;
} Axis;

typedef struct Lane {
  Ctx *ctx;
  const Axis *axes;       /* the column axis, then the row axis if any */
  unsigned naxes;
  const UOp *at[2];       /* what each axis's range is in this lane */
  const UOp **reduces;    /* REDUCEs over the columns ... */
  const UOp **vectors;    /* ... and their vector REDUCEs, one per register of a row: [(reduce * rows + row) * registers + register] */
  size_t nreduces;
  unsigned lane, columns, rows, width; /* width: the lanes of one register */
} Lane;

static const UOp *lane_of(void *user, const UOp *u, const UOp *rebuilt) {
  const Lane *l = user;
  for (unsigned a = 0; a < l->naxes; a++)
    if (u == l->axes[a].range) return l->at[a];
  for (size_t i = 0; i < l->nreduces; i++)
    if (u == l->reduces[i]) {
      unsigned column = l->lane % l->columns, row = l->lane / l->columns, registers = l->columns / l->width;
      int64_t lane = column % l->width;
      const UOp *v = l->vectors[(i * l->rows + row) * registers + column / l->width];
      return uop_new(l->ctx, UJ_OP_GEP, dt_lane(u->dtype), &v, 1, (Arg){NULL, &lane, 1});
    }
  return rebuilt;
}

/* Lane `lane` of axis ax: outer * lanes + lane. */
static const UOp *axis_at(Ctx *ctx, const Axis *ax, unsigned lane) {
  const UOp *k = uop_const_int(ctx, ax->outer->dtype, ax->lanes), *v = uop_const_int(ctx, ax->outer->dtype, lane);
  return uop_binary(ctx, UJ_OP_ADD, uop_binary(ctx, UJ_OP_MUL, ax->outer, k), v);
}

/* x in lane u (u = row lane * column lanes + column lane): each axis's
 * range replaced by outer * lanes + its lane. */
static const UOp *in_lane(Lane *l, const UOp *x, unsigned u) {
  unsigned rest = u;
  for (unsigned a = 0; a < l->naxes; a++) {
    l->at[a] = axis_at(l->ctx, &l->axes[a], rest % l->axes[a].lanes);
    rest /= l->axes[a].lanes;
  }
  l->lane = u;
  return graph_substitute(l->ctx, x, lane_of, l);
}

/* The REDUCEs of value that depend on the range, each once; false when
 * one nests another that does (or when there are too many). */
static bool find_reduces(Ctx *ctx, const UOp *value, const UOp *range, const UOp **out, size_t *n, size_t max) {
  const UOp **nodes = NULL;
  size_t count = uop_toposort(ctx, value, &nodes);
  bool ok = count > 0;
  *n = 0;
  for (size_t i = 0; ok && i < count; i++) {
    const UOp *u = nodes[i];
    if (u->op != UJ_OP_REDUCE || u->dtype.lanes != 1 || !opt_contains(ctx, u->src[0], range)) continue;
    for (size_t j = 0; ok && j < *n; j++) ok = !opt_contains(ctx, u->src[0], out[j]);
    if (ok && *n == max) ok = false;
    if (ok) out[(*n)++] = u;
  }
  free(nodes);
  return ok;
}

static const UOp *replace_end(void *user, const UOp *u, const UOp *rebuilt) {
  const UOp *const *swap = user;
  return u == swap[0] ? swap[1] : rebuilt;
}

/* The range of END e, if it can be upcast by `lanes`: a constant bound
 * that lanes divides (or, with tail, that is at least lanes: the rest is
 * a tail loop). */
static const UOp *split_range(const UOp *e, unsigned lanes, bool tail) {
  const UOp *r = e->src[0], *b = r->src[0];
  bool ok = r->op == UJ_OP_RANGE && b->op == UJ_OP_CONST && b->bounded && b->vmin >= lanes && (tail || b->vmin % lanes == 0);
  return ok ? r : NULL;
}

static const UOp *splittable(const UOp *e, unsigned lanes) { return split_range(e, lanes, false); }

static Axis axis_of(Ctx *ctx, const UOp *r, unsigned lanes) {
  const UOp *b = uop_const_int(ctx, r->dtype, r->src[0]->vmin / lanes);
  return (Axis){r, uop_new(ctx, UJ_OP_RANGE, r->dtype, &b, 1, (Arg){r->name, r->ints, r->nints}), lanes};
}

/* The END around end in a one-nest kernel (whose one effect is end). */
static const UOp *enclosing_end(const UOp *kernel, const UOp *end) {
  const UOp *e = kernel->src[0];
  while (e->op == UJ_OP_END && e->nsrc == 2 && e->src[1] != end) e = e->src[1];
  return e->op == UJ_OP_END && e->nsrc == 2 && e->src[1] == end ? e : NULL;
}

/* Whether a gated load is under x (padding: each lane branches). */
static bool has_gated_load(Ctx *ctx, const UOp *x) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, x, &nodes);
  bool gated = false;
  for (size_t i = 0; i < n && !gated; i++) gated = nodes[i]->op == UJ_OP_INDEX && nodes[i]->nsrc == 3;
  free(nodes);
  return gated;
}

/* Whether blocking rows pays: every REDUCE reads something that varies
 * along them, and none loads through a gate (whose lanes LLVM keeps as
 * branches: 32 of them per step cost more than the loads they share). */
static bool rows_pay(Ctx *ctx, const UOp *const *reduces, size_t n, const UOp *range) {
  for (size_t i = 0; i < n; i++)
    if (!opt_contains(ctx, reduces[i]->src[0], range) || has_gated_load(ctx, reduces[i]->src[0])) return false;
  return true;
}

/* The vector REDUCE of one register of a row of the block: lanes x[0..columns) of one
 * REDUCE's value (their lanes pushed down to the loads, lanes.h; a
 * gated product stays one MUL of two VECTORIZEs, scalar lanes). */
static const UOp *row_reduce(Ctx *ctx, const UOp *reduce, const UOp *const *x, unsigned columns) {
  const UOp *src[UPCAST_MAX_SOURCES];
  uj_scalar lane = (uj_scalar)reduce->src[0]->dtype.scalar; /* the reduced values' (the store may cast) */
  DType vd = uj_dtype_vec(lane, columns);
  src[0] = uop_new(ctx, UJ_OP_VECTORIZE, vd, x, columns, arg_none());
  if (!src[0]) return NULL;
  bool gated = has_gated_load(ctx, src[0]);
  if (gated && reduce->src[0]->op == UJ_OP_MUL) { /* the product stays one (MULACC fuses it) */
    const UOp *fa[UPCAST_MAX_COLUMNS], *fb[UPCAST_MAX_COLUMNS];
    for (unsigned u = 0; u < columns; u++) fa[u] = x[u]->src[0], fb[u] = x[u]->src[1];
    src[0] = uop_binary(ctx, UJ_OP_MUL, uop_new(ctx, UJ_OP_VECTORIZE, vd, fa, columns, arg_none()),
                        uop_new(ctx, UJ_OP_VECTORIZE, vd, fb, columns, arg_none()));
  } else if (!gated) {
    src[0] = opt_vectorize(ctx, x, columns); /* lanes of one ALU op as one vector op, down to the loads */
  }
  if (!src[0]) return NULL;
  for (uint32_t k = 1; k < reduce->nsrc; k++) src[k] = reduce->src[k];
  return uop_new(ctx, UJ_OP_REDUCE, uj_dtype_vec((uj_scalar)reduce->dtype.scalar, columns), src, reduce->nsrc,
                 (Arg){reduce->name, NULL, 0});
}

/* The columns of a block: 2 registers of the stored value's elements or
 * one, if that divides the bound; else 2 registers and a tail loop for
 * the rest, if the bound holds 2 blocks (1000 columns: 31 blocks of 32
 * and a tail of 8); else all of a bound smaller than a register that is
 * no power of 2 (10 classes: one vector of 10, where halves would find
 * no divisor and leave the GEMM a scalar chain); else halves of a
 * register down to 4 elements that divide it; 0 when none does. */
/* Whether x reads a REDUCE that does not depend on range c. */
static bool reads_invariant_reduce(Ctx *ctx, const UOp *x, const UOp *c) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, x, &nodes);
  bool found = false;
  for (size_t i = 0; i < n && !found; i++) found = nodes[i]->op == UJ_OP_REDUCE && !opt_contains(ctx, nodes[i], c);
  free(nodes);
  return found;
}

static unsigned block_columns(const UOp *end, DType d, unsigned vector_bytes, unsigned forced, bool whole) {
  unsigned per = vector_bytes / (elem_bytes(d) ? (unsigned)elem_bytes(d) : 1), two = UPCAST_VECTORS * per;
  int64_t b = opt_const_bound(end->src[0]);
  if (!forced && whole && b >= per && b % per == 0 && b <= UPCAST_WHOLE_VECTORS * per && b <= UPCAST_MAX_COLUMNS)
    return (unsigned)b;
  if (!forced && b >= UPCAST_MIN_COLUMNS && b < per && (b & (b - 1))) /* fewer than a register, no power of 2 to split by (a 10-class head): all of them */
    return (unsigned)b;
  if (forced) /* at most 2 registers; a power of 2 (whole registers or part of one); a tail if need be */
    return forced >= 2 && forced <= two && forced <= UPCAST_MAX_COLUMNS && !(forced & (forced - 1)) &&
                   split_range(end, forced, true) ? forced : 0;
  for (unsigned c = two; c >= per && c >= UPCAST_MIN_COLUMNS; c /= 2)
    if (c <= UPCAST_MAX_COLUMNS && splittable(end, c)) return c;
  if (two <= UPCAST_MAX_COLUMNS && split_range(end, 2 * two, true)) return two;
  for (unsigned c = per / 2; c >= UPCAST_MIN_COLUMNS; c /= 2)
    if (splittable(end, c)) return c;
  return 0;
}

/* The tail of a block whose columns do not divide the bound B of c: the
 * store again for c = (B/U)·U + t, t < B mod U, once for each row lane
 * (rows: i = i'·R + r), in a loop of its own: END(t, stores). */
static const UOp *tail_end(Ctx *ctx, const UOp *kernel, const UOp *store, const Axis *axes, unsigned naxes) {
  const Axis *c = &axes[0];
  int64_t bound = c->range->src[0]->vmin, base = bound / c->lanes * c->lanes, axis = opt_next_axis(ctx, kernel);
  const UOp *n = uop_const_int(ctx, c->range->dtype, bound - base);
  const UOp *t = uop_new(ctx, UJ_OP_RANGE, c->range->dtype, &n, 1, (Arg){c->range->name, &axis, 1});
  const UOp *at = uop_binary(ctx, UJ_OP_ADD, uop_const_int(ctx, c->range->dtype, base), t);
  unsigned rows = naxes == 2 ? axes[1].lanes : 1;
  const UOp *effects[1 + UPCAST_MAX_ROWS];
  effects[0] = t;
  for (unsigned r = 0; r < rows; r++) {
    const UOp *from[2] = {c->range, naxes == 2 ? axes[1].range : NULL}, *to[2] = {at, NULL};
    if (naxes == 2) to[1] = axis_at(ctx, &axes[1], r);
    if (!t || !at || (naxes == 2 && !to[1]) || !(effects[1 + r] = opt_substitute(ctx, store, from, to, naxes))) return NULL;
  }
  return uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), effects, 1 + rows, arg_none());
}

/* The tail as vectors, when the rest R = B mod U of the columns is a
 * power of 2 from 4 to one register and rows are blocked: one REDUCE of
 * R lanes per REDUCE of the value for each row lane of the row block, as
 * a block of those rows and R columns at c = (B/U)·U + u, in a loop of
 * one step (the tail's place in the nest is a loop):
 * END(t, STORE(out[f(row r, base + u)], g(GEP(V_r, u))) for r, u < R).
 * The rows' REDUCEs share one loop over k, each its own accumulator: at
 * 1000 columns (31 blocks of 32 and 8) 8 ymm FMAs a step of k, where a
 * loop over the rows, one REDUCE a pass, waited on each FMA's latency
 * (and the scalar tail did 8 scalar FMAs a row). NULL when out of memory;
 * *none when the tail is not that. */
static const UOp *vector_tail(Ctx *ctx, const UOp *kernel, const UOp *store, const Axis *axes, unsigned width, bool *none) {
  const Axis *c = &axes[0], *row = &axes[1];
  int64_t bound = c->range->src[0]->vmin, base = bound / c->lanes * c->lanes, axis = opt_next_axis(ctx, kernel);
  unsigned rest = (unsigned)(bound - base), rows = row->lanes;
  const UOp *reduces[UPCAST_MAX_REDUCES], *vectors[UPCAST_MAX_REDUCES], *effects[1 + UPCAST_MAX_LANES];
  *none = rest < UPCAST_MIN_COLUMNS || rest > width || (rest & (rest - 1)) || base % rest || rows * rest > UPCAST_MAX_LANES;
  if (*none) return NULL;
  const UOp *n1 = uop_const_int(ctx, row->range->dtype, 1);
  const UOp *t = uop_new(ctx, UJ_OP_RANGE, row->range->dtype, &n1, 1, (Arg){row->range->name, &axis, 1});
  if (!t) return NULL;
  effects[0] = t;
  Axis columns = {c->range, uop_const_int(ctx, c->range->dtype, base / rest), rest};
  for (unsigned r = 0; r < rows; r++) {
    const UOp *at = axis_at(ctx, row, r);
    const UOp *one = at ? opt_substitute(ctx, store, &row->range, &at, 1) : NULL;
    size_t n = 0;
    if (!one) return NULL;
    if (!find_reduces(ctx, one->src[1], c->range, reduces, &n, UPCAST_MAX_REDUCES) || !n) return *none = true, NULL;
    Lane l = {ctx, &columns, 1, {NULL, NULL}, NULL, NULL, 0, 0, rest, 1, rest};
    for (size_t i = 0; i < n; i++) {
      const UOp *x[UPCAST_MAX_COLUMNS];
      for (unsigned u = 0; u < rest; u++)
        if (!(x[u] = in_lane(&l, reduces[i]->src[0], u))) return NULL;
      if (!(vectors[i] = row_reduce(ctx, reduces[i], x, rest))) return NULL;
    }
    l.reduces = reduces, l.vectors = vectors, l.nreduces = n;
    for (unsigned u = 0; u < rest; u++)
      if (!(effects[1 + r * rest + u] = in_lane(&l, one, u))) return NULL;
  }
  return uop_new(ctx, UJ_OP_END, dt_scalar(UJ_VOID), effects, 1 + rows * rest, arg_none());
}

const UOp *opt_upcast(Ctx *ctx, const UOp *kernel, const TargetDesc *t, const OptConfig *config) {
  unsigned vector_bytes = t->vector_bytes;
  /* a GPU's threads are its outputs: blocks of U outputs a thread only while a GPU's worth of threads is left */
  if (t->kind == TARGET_DESC_GPU && config->columns <= 1 &&
      opt_nest_iterations(kernel) < (int64_t)t->cores * t->max_threads * UPCAST_GPU_MIN_LANES)
    return kernel;
  const UOp *end = config->columns == 1 ? NULL : opt_innermost_end(kernel);
  const UOp *store = end ? end->src[1] : NULL;
  DType d = store ? store->src[1]->dtype : dt_scalar(UJ_VOID);
  unsigned columns = end ? block_columns(end, d, vector_bytes, config->columns, reads_invariant_reduce(ctx, store->src[1], end->src[0])) : 0;
  const UOp *r = columns ? split_range(end, columns, true) : NULL;
  const UOp *reduces[UPCAST_MAX_REDUCES], *vectors[UPCAST_MAX_REDUCES * UPCAST_MAX_ROWS * UPCAST_WHOLE_VECTORS];
  size_t nreduces;
  if (!r || !find_reduces(ctx, store->src[1], r, reduces, &nreduces, UPCAST_MAX_REDUCES) || nreduces == 0) return kernel;
  for (size_t i = 0; i < nreduces; i++)
    if (reduces[i]->nsrc > UPCAST_MAX_SOURCES) return kernel;
  Axis axes[2] = {axis_of(ctx, r, columns)};
  unsigned naxes = 1, rows = 1, width = vector_bytes / (unsigned)elem_bytes(d), registers;
  width = width < columns ? width : columns, registers = columns / width;
  const UOp *outer_end = enclosing_end(kernel, end), *row_range = NULL;
  bool forced = config->rows != 0;
  if (forced) /* a power of 2 up to 8 that divides the rows */
    rows = config->rows <= UPCAST_MAX_ROWS && !(config->rows & (config->rows - 1)) && outer_end &&
                   (row_range = splittable(outer_end, config->rows)) ? config->rows : 1;
  for (rows = forced ? rows : UPCAST_MAX_ROWS; !forced && rows > 1 &&
                                               (!outer_end || rows * registers * nreduces > UPCAST_ACC_REGISTERS ||
                                                !(row_range = splittable(outer_end, rows)));)
    rows /= 2;
  if (rows > 1 && (forced || rows_pay(ctx, reduces, nreduces, row_range))) /* rows too: each column vector load serves them all */
    axes[naxes++] = axis_of(ctx, row_range, rows);
  else
    rows = 1;
  /* no rows: up to 8 registers of columns (a matrix-vector product then
   * reads 8 cache lines of a row of b a visit, not 2) */
  int64_t bound = r->src[0]->vmin;
  if (rows == 1 && !forced && !config->columns && columns == UPCAST_VECTORS * width && bound % columns == 0) {
    unsigned wide = columns;
    while (2 * wide <= UPCAST_WIDE_VECTORS * width && 2 * wide <= UPCAST_MAX_COLUMNS &&
           2 * wide / width * nreduces <= UPCAST_ACC_REGISTERS && bound % (2 * wide) == 0)
      wide *= 2;
    if (wide > columns) columns = wide, registers = columns / width, axes[0] = axis_of(ctx, r, columns);
  }
  unsigned total = columns * rows;
  Lane l = {ctx, axes, naxes, {NULL, NULL}, NULL, NULL, 0, 0, columns, rows, width};
  for (size_t i = 0; i < nreduces; i++) /* per register of a row: REDUCE(VECTORIZE(x in each column), k...) */
    for (unsigned row = 0; row < rows; row++)
      for (unsigned g = 0; g < registers; g++) {
        const UOp *x[UPCAST_MAX_COLUMNS];
        for (unsigned c = 0; c < width; c++)
          if (!(x[c] = in_lane(&l, reduces[i]->src[0], row * columns + g * width + c))) return NULL;
        if (!(vectors[(i * rows + row) * registers + g] = row_reduce(ctx, reduces[i], x, width))) return NULL;
      }
  l.reduces = reduces, l.vectors = vectors, l.nreduces = nreduces;
  const UOp *effects[1 + UPCAST_MAX_LANES];
  effects[0] = axes[0].outer;
  for (unsigned u = 0; u < total; u++)
    if (!(effects[1 + u] = in_lane(&l, store, u))) return NULL;
  const UOp *inner = uop_new(ctx, UJ_OP_END, end->dtype, effects, 1 + total, arg_none());
  bool tail = bound % columns != 0;
  bool scalar_tail = true;
  const UOp *rest = tail && naxes == 2 ? vector_tail(ctx, kernel, store, axes, width, &scalar_tail) : NULL;
  if (tail && scalar_tail) rest = tail_end(ctx, kernel, store, axes, naxes);
  if (tail && (!rest || (naxes == 1 && !outer_end))) return rest ? kernel : NULL; /* a tail needs a loop around to sit in */
  const UOp *swap[2] = {naxes == 2 || tail ? outer_end : end, inner};
  const UOp *around = naxes == 2 ? axes[1].outer : tail ? outer_end->src[0] : NULL;
  if (around) swap[1] = uop_new(ctx, UJ_OP_END, end->dtype, (const UOp *[]){around, inner, rest}, tail ? 3 : 2, arg_none());
  return graph_substitute(ctx, kernel, replace_end, swap);
}
