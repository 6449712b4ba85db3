/* hoist.c — reductions an inner loop does not read, computed once before
 * it (opt.h). A kernel that normalizes rows — layernorm's mean and
 * variance, softmax's sum, fused into the kernel that uses them — stores
 * in its innermost loop j a value holding REDUCEs over the row that do
 * not depend on j. The renderer computes a value where it is first used
 * (docs/compile.md), so each would be computed again for every j. This
 * pass stores each of them once per row, in a `reg` ALLOC of one element,
 * in the body of the innermost loop it depends on, before the loops it
 * does not:
 *
 *   END(i, END(j, STORE(out[f(i, j)], g(x(i, j), H(i)))))
 *   -> END(i, STORE(t[0], H(i)), END(j, STORE(out[f(i, j)], g(x(i, j), LOAD(t[0])))))
 *
 * H: each largest part of the stored value that does not depend on j
 * and holds a REDUCE (a variance's REDUCE reads the mean's: the mean is
 * stored first and read back). The same operations on the same values:
 * results bit for bit (docs/semantics.md, "ALLOC": a load sees what the
 * run stored to an ALLOC). Not when a REDUCE in the value depends on j
 * (register blocking's, and online softmax's, which the renderer runs in
 * one loop with the max they read), nor when H depends on no loop (it
 * would go outside the kernel's one loop nest, which threads split). */
#include <stdlib.h>

#include "opt/graph.h"
#include "opt/opt.h"
#include "uop/nodemap.h"

enum { HOIST_MAX = 16, HOIST_MAX_LOOPS = 16, HOIST_MAX_RANGES = 16 };

typedef struct Hoist {
  const UOp *node, *load, *store; /* a part H, its LOAD(t[0]) and STORE(t[0], H') */
  unsigned depth;                 /* the loop (chain index) whose body stores it */
} Hoist;

/* x with the RANGEs its REDUCEs bind replaced by fresh ones, numbered
 * from *axis on: the renderer runs REDUCEs over one RANGE in one loop
 * (docs/compile.md), and a part's REDUCE that reads an earlier part's
 * stored value must run after that part's, in a loop of its own. */
static const UOp *fresh_ranges(Ctx *ctx, const UOp *x, int64_t *axis) {
  const UOp **nodes = NULL, *from[HOIST_MAX_RANGES], *to[HOIST_MAX_RANGES];
  size_t n = uop_toposort(ctx, x, &nodes), m = 0;
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++)
    for (uint32_t k = 1; nodes[i]->op == UJ_OP_REDUCE && k < nodes[i]->nsrc && ok; k++) {
      const UOp *r = nodes[i]->src[k];
      bool seen = false;
      for (size_t q = 0; q < m && !seen; q++) seen = from[q] == r;
      if (seen || r->op != UJ_OP_RANGE) continue;
      ok = m < HOIST_MAX_RANGES;
      int64_t at = (*axis)++;
      if (ok) from[m] = r, to[m] = uop_new(ctx, UJ_OP_RANGE, r->dtype, r->src, r->nsrc, (Arg){r->name, &at, 1});
      ok = ok && to[m++];
    }
  free(nodes);
  return !ok ? NULL : m ? opt_substitute(ctx, x, from, to, m) : x;
}

/* STORE(t[0], part with the parts before it read back, over RANGEs of
 * its own) and LOAD(t[0]). */
static bool hoist_one(Ctx *ctx, Hoist *hs, int i, int64_t id, int64_t *axis, DType index_type) {
  const UOp *from[HOIST_MAX], *to[HOIST_MAX], *x = hs[i].node;
  for (int p = 0; p < i; p++) from[p] = hs[p].node, to[p] = hs[p].load;
  const UOp *v = i ? opt_substitute(ctx, x, from, to, (size_t)i) : x;
  v = v ? fresh_ranges(ctx, v, axis) : NULL;
  int64_t alloc[2] = {id, 1};
  const UOp *t = uop_new(ctx, UJ_OP_ALLOC, uj_dtype_ptr((uj_scalar)x->dtype.scalar, x->dtype.lanes, UJ_AS_REG), NULL, 0,
                         (Arg){NULL, alloc, 2});
  const UOp *zero = uop_const_int(ctx, index_type, 0);
  const UOp *at = t && zero ? uop_new(ctx, UJ_OP_INDEX, t->dtype, (const UOp *[]){t, zero}, 2, arg_none()) : NULL;
  hs[i].load = at ? uop_new(ctx, UJ_OP_LOAD, x->dtype, &at, 1, arg_none()) : NULL;
  hs[i].store = at && v ? uop_new(ctx, UJ_OP_STORE, dt_scalar(UJ_VOID), (const UOp *[]){at, v}, 2, arg_none()) : NULL;
  return hs[i].load && hs[i].store;
}

const UOp *opt_hoist(Ctx *ctx, const UOp *kernel) {
  const UOp *end = opt_innermost_end(kernel), *loops[HOIST_MAX_LOOPS], *parts[HOIST_MAX];
  unsigned n = 0;
  for (const UOp *e = end ? kernel->src[0] : NULL; e && n < HOIST_MAX_LOOPS; e = e == end ? NULL : e->src[1]) loops[n++] = e;
  if (n < 2 || loops[n - 1] != end) return kernel;
  const UOp *j = end->src[0], *store = end->src[1];
  int m = opt_loop_free_parts(ctx, store->src[1], j, parts, HOIST_MAX);
  if (m <= 0) return m == -2 ? NULL : kernel;
  Hoist hs[HOIST_MAX];
  int kept = 0;
  int64_t id = opt_next_alloc_id(ctx, kernel), axis = opt_next_axis(ctx, kernel);
  for (int p = 0; p < m; p++) { /* the loop each part is stored in: the innermost it depends on */
    int depth = -1;
    for (unsigned d = 0; d + 1 < n; d++)
      if (opt_depends(ctx, parts[p], loops[d]->src[0])) depth = (int)d;
    if (depth < 0) continue; /* outside the nest: left where it is */
    hs[kept] = (Hoist){parts[p], NULL, NULL, (unsigned)depth};
    if (!hoist_one(ctx, hs, kept, id++, &axis, j->dtype)) return NULL;
    kept++;
  }
  if (!kept) return kernel;
  const UOp *from[HOIST_MAX], *to[HOIST_MAX];
  for (int p = 0; p < kept; p++) from[p] = hs[p].node, to[p] = hs[p].load;
  const UOp *inner = opt_substitute(ctx, end, from, to, (size_t)kept);
  for (unsigned d = n - 1; inner && d-- > 0;) { /* END(loop d, the stores of its parts, the loop inside) */
    const UOp *src[2 + HOIST_MAX];
    uint32_t ns = 0;
    src[ns++] = loops[d]->src[0];
    for (int p = 0; p < kept; p++)
      if (hs[p].depth == d) src[ns++] = hs[p].store;
    src[ns++] = inner;
    inner = uop_new(ctx, UJ_OP_END, loops[d]->dtype, src, ns, arg_none());
  }
  return inner ? uop_replace_src(ctx, kernel, &inner, 1) : NULL;
}
