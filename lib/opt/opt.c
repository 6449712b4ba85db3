/* opt.c — the optimizer's pass list (opt.h), run in order; the configs
 * tests force (opt_config_random, UJ_OPT_RANDOM). */
#include <stdatomic.h>
#include <stdlib.h>

#include "opt/lanes.h"
#include "opt/opt.h"
#include "symbolic/symbolic.h"

/* The pass list comes from the target's properties, never its name: a
 * GPU gets no pass that keeps per-thread state sized for a CPU core (the
 * lanes' and stream's accumulators, hoist's row scalars, reorder's and
 * tile's stack panels), and its own: a GEMM in shared-memory tiles
 * (gemm.c), a reduction per output as a workgroup with a shared-memory
 * tree (workgroup.c). */
/* Whether kernel's effect, under its ENDs, is a STORE_ADD (a SCATTER's). */
static bool adds_into(const UOp *kernel) {
  const UOp *e = kernel && kernel->op == UJ_OP_SINK && kernel->nsrc == 1 ? kernel->src[0] : NULL;
  while (e && e->op == UJ_OP_END && e->nsrc == 2) e = e->src[1];
  return e && e->op == UJ_OP_STORE_ADD;
}

const UOp *opt_apply(Ctx *ctx, const UOp *kernel, const OptTarget *t, const OptConfig *c) {
  bool cpu = t->desc->kind == TARGET_DESC_CPU;
  if (adds_into(kernel)) /* a scatter: its loops as rangeify made them; on a GPU its outer loop the grid (atomics) */
    return cpu ? kernel : opt_parallel(ctx, kernel, c->parallel);
  const UOp *k = kernel ? opt_shadow(ctx, kernel) : NULL;
  k = k && cpu && c->lanes != OPT_OFF ? opt_lanes(ctx, k, t->desc->reassociate) : k;
  k = k && cpu ? opt_hoist(ctx, k) : k;
  k = k && cpu ? opt_stream(ctx, k, t->desc, c) : k;
  k = k && cpu ? opt_reorder(ctx, k, t->desc, c) : k;
  k = k && !cpu ? opt_gemm(ctx, k, t->desc, c->gemm) : k;
  k = k && !cpu ? opt_widen(ctx, k, t->desc, c->widen) : k;
  k = k && !cpu ? opt_workgroup(ctx, k, t->desc) : k;
  k = k ? opt_upcast(ctx, k, t->desc, c) : NULL;
  k = k && cpu ? opt_tile(ctx, k, t->desc, c) : k;
  k = k ? opt_unroll(ctx, k, c) : NULL;
  k = k ? opt_parallel(ctx, k, c->parallel) : NULL;
  return k ? symbolic_canonical_order(ctx, k) : NULL; /* equal kernels print, hash and compile as one */
}

static uint64_t splitmix(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

OptConfig opt_config_random(uint64_t seed) {
  static const unsigned columns[] = {0, 1, 2, 4, 8, 16, 32}, rows[] = {0, 1, 2, 4, 8}, tiles[] = {0, 1, 2, 3, 4, 8};
  static const unsigned unrolls[] = {0, 1, 2, 3, 4, 8};
  uint64_t s = seed;
  OptConfig c = {0};
  c.lanes = splitmix(&s) % 2 ? OPT_AUTO : OPT_OFF;
  c.columns = columns[splitmix(&s) % (sizeof columns / sizeof *columns)];
  c.rows = rows[splitmix(&s) % (sizeof rows / sizeof *rows)];
  c.tile = tiles[splitmix(&s) % (sizeof tiles / sizeof *tiles)];
  c.stage = (OptSwitch)(splitmix(&s) % 3);
  c.parallel = (OptSwitch)(splitmix(&s) % 3);
  c.reorder = (OptSwitch)(splitmix(&s) % 3);
  c.stream = (OptSwitch)(splitmix(&s) % 3);
  c.unroll = unrolls[splitmix(&s) % (sizeof unrolls / sizeof *unrolls)];
  c.gemm = (OptSwitch)(splitmix(&s) % 3);
  c.widen = (OptSwitch)(splitmix(&s) % 3);
  return c;
}

/* UJ_OPT_RANDOM=SEED: each kernel gets opt_config_random(SEED, n) for
 * the n-th kernel this process shapes (tests run the tensor API's
 * kernels so, docs/opt.md); unset or not a number: t's search, if any,
 * else the heuristics. */
const UOp *opt_kernel(Ctx *ctx, const UOp *kernel, const OptTarget *t) {
  static atomic_ulong shaped;
  const char *env = getenv("UJ_OPT_RANDOM");
  char *end = NULL;
  unsigned long long seed = env && *env ? strtoull(env, &end, 10) : 0;
  if (!end || *end) {
    OptConfig c = {0};
    if (t->search) t->search->choose(t->search, ctx, kernel, t, &c);
    return opt_apply(ctx, kernel, t, &c);
  }
  OptConfig c = opt_config_random(seed * 0x100000001b3ull + atomic_fetch_add(&shaped, 1));
  return opt_apply(ctx, kernel, t, &c);
}
