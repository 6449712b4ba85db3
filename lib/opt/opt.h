/* opt.h — shaping kernels for their target (lib/opt): transforms of a
 * kernel's RANGEs chosen by heuristics. The passes, in order:
 *
 *   lanes.c     long reductions in vector lanes (lanes.h)
 *   hoist.c     reductions the innermost loop does not read (a row's
 *               mean, its sum) stored once per row before that loop
 *   stream.c    a reduction down the columns of a matrix (a GEMV, a
 *               column sum) run a row at a time, its accumulators in
 *               memory: each row read as one stream
 *   reorder.c   an output loop that blocks into two vector registers
 *               moved innermost (a convolution's output channels)
 *   gemm.c      GPUs: a GEMM in shared-memory tiles, each thread a 4 x 4
 *               register block (bit for bit the serial kernel's)
 *   widen.c     GPUs: an elementwise kernel 4 adjacent outputs a thread
 *               (16-byte loads and stores)
 *   workgroup.c GPUs: a reduction per output, too few outputs for a
 *               thread each, as a workgroup with a tree in local memory
 *   upcast.c    the innermost output loop of a reducing kernel is split
 *               into U lanes, its REDUCEs into one vector REDUCE each
 *               (register blocking: a GEMM computes U outputs per pass)
 *   tile.c      the rows of a blocked kernel cut in tiles, each tile's
 *               column loop outside its rows (a panel reused from L2)
 *   unroll.c    the innermost loop of reductions unrolled (forced only:
 *               the heuristics leave it to LLVM)
 *   parallel.c  the outermost loop of a big enough kernel becomes a
 *               `global` range: threads on the CPU (split in parts by the
 *               renderer and run by the thread pool), the grid on GPUs
 *
 * In: a kernel as rangeify makes it (SINK of ENDs of `loop` and `reduce`
 * RANGEs) and what it is for (OptTarget). Out: the same results, its
 * ranges split, reordered, upcast and re-kinded (docs/opt.md). NULL with
 * the error set on failure. */
#ifndef UJ_OPT_H
#define UJ_OPT_H

#include "opt/target.h"
#include "uop/uop.h"

typedef struct OptSearch OptSearch;

/* What kernels are shaped for. */
typedef struct OptTarget {
  const TargetDesc *desc; /* the target's description (target.h) */
  OptSearch *search;      /* NULL, or what picks each kernel's config (below) */
} OptTarget;

/* A switch of OptConfig: the heuristic's choice, or forced. */
typedef enum OptSwitch { OPT_AUTO, OPT_OFF, OPT_ON } OptSwitch;

/* What each pass does to a kernel; zero (OPT_AUTO) everywhere is the
 * heuristics. A forced value a kernel cannot take (a block that does not
 * divide its loop, a panel over the stack's budget) leaves that pass's
 * part of the kernel alone: every config is safe to apply to any kernel,
 * and every result computes what the kernel did, bit for bit (opt_shadow,
 * which regroups sums, is the one pass outside OptConfig: within the
 * evaluator's bounds, docs/semantics.md "Reassociation"). */
typedef struct OptConfig {
  OptSwitch lanes;    /* long reductions in lanes (lanes.c) */
  unsigned columns;   /* upcast: columns of a block; 1: none (no upcast) */
  unsigned rows;      /* upcast: rows of a block; 1: columns only */
  unsigned tile;      /* tile: row blocks a tile (the last tile shorter when it does not divide them); 1: no tiles */
  OptSwitch stage;    /* tile: the panel staged in an ALLOC */
  OptSwitch parallel; /* the outer loop on threads */
  OptSwitch reorder;  /* an output loop two registers divide moved innermost (reorder.c) */
  OptSwitch stream;   /* a reduction down columns run a row at a time (stream.c) */
  unsigned unroll;    /* steps of a reduction's innermost loop unrolled, 2 .. 16 (unroll.c); 0, 1: none */
  OptSwitch gemm;     /* GPUs: a GEMM in shared-memory tiles with register blocks (gemm.c) */
  OptSwitch widen;    /* GPUs: an elementwise kernel 4 adjacent outputs a thread (widen.c) */
} OptConfig;

/* A search for the config of each kernel (lib/runtime/beam.c, UJ_BEAM:
 * docs/search.md): `choose` fills in the config of kernel (as rangeify
 * makes it) for t, or leaves it zero (the heuristics). */
struct OptSearch {
  void (*choose)(OptSearch *s, Ctx *ctx, const UOp *kernel, const OptTarget *t, OptConfig *config);
};

/* The heuristics' kernel for t: opt_apply with the zero OptConfig, or
 * with t->search's config when set; with UJ_OPT_RANDOM=SEED in the
 * environment, a random config per kernel. */
const UOp *opt_kernel(Ctx *ctx, const UOp *kernel, const OptTarget *t);
/* A config drawn from seed over the values each field may take (tests
 * apply it to kernels: every config is safe). */
OptConfig opt_config_random(uint64_t seed);
/* kernel shaped for t by config (opt.c runs the passes in order). */
const UOp *opt_apply(Ctx *ctx, const UOp *kernel, const OptTarget *t, const OptConfig *config);

/* The passes read their sizes from t: vector width, L1 (stream's
 * accumulators), the panel budget (target_panel_bytes: tile.c, reorder.c)
 * and the row-tile budget (tile.c). */
const UOp *opt_stream(Ctx *ctx, const UOp *kernel, const TargetDesc *t, const OptConfig *config);
const UOp *opt_reorder(Ctx *ctx, const UOp *kernel, const TargetDesc *t, const OptConfig *config);
const UOp *opt_upcast(Ctx *ctx, const UOp *kernel, const TargetDesc *t, const OptConfig *config);
/* A sum reading a max over a RANGE as long as its own reduces over the
 * max's RANGE, divisors free of a sum's RANGEs taken out of it: flash
 * attention's online softmax (shadow.c, docs/opt.md). */
const UOp *opt_shadow(Ctx *ctx, const UOp *kernel);
const UOp *opt_tile(Ctx *ctx, const UOp *kernel, const TargetDesc *t, const OptConfig *config);
const UOp *opt_hoist(Ctx *ctx, const UOp *kernel);
const UOp *opt_unroll(Ctx *ctx, const UOp *kernel, const OptConfig *config);
/* A GPU kernel's one reduction per output as a workgroup with a tree in
 * local memory, when its outputs are too few for a thread each
 * (workgroup.c, docs/opt.md "GPU kernels"); other kernels unchanged. */
const UOp *opt_workgroup(Ctx *ctx, const UOp *kernel, const TargetDesc *t);
const UOp *opt_gemm(Ctx *ctx, const UOp *kernel, const TargetDesc *t, OptSwitch use);
const UOp *opt_widen(Ctx *ctx, const UOp *kernel, const TargetDesc *t, OptSwitch use);

/* parallel.c: a kernel whose RANGEs, multiplied, make fewer iterations
 * than this stays in one thread (a launch on the pool costs microseconds). */
enum { OPT_PARALLEL_MIN_WORK = 1 << 15 };
const UOp *opt_parallel(Ctx *ctx, const UOp *kernel, OptSwitch parallel);

#endif
