/* linear.h — a lowered kernel as one list: what runs, in the order it
 * runs, with loops, accumulators, unrolled copies and barriers explicit.
 *
 * In: a kernel after the graph lowering (pipeline.c: simplified, offsets
 * split, transcendentals lowered), its online maxima (codegen/online.h)
 * and, on a target that splits a kernel among threads (the CPU), the
 * RANGE it splits. Out: a Linear, items in order; an item names the
 * earlier items it reads (`src`), never a graph node's value, so the
 * renderer (llvm/render.c) emits it item by item and eval_linear runs it
 * with no walk of their own (docs/compile.md, "Linearizing").
 *
 * Items (u: the node it stands for; its dtype is the item's):
 *   VALUE    u's op on the src items, in u's source order. INDEX gets a
 *            fourth src when its index is e + CONST (codegen/offsets.h):
 *            e's item. A PARAM, CONST, DEFINE_VAR or ALLOC has none; the
 *            ALLOCs come first, before any other item. Values the lowering
 *            adds itself (the online rescale's select, the NaN of an empty
 *            row) are VALUE items of nodes built for their type only: their
 *            operands are the src items, not the node's sources.
 *   LOOP     RANGE u from start to bound: src {bound} (start 0) or
 *            {bound, start} (a CPU part). Its value is the index. GRID: it
 *            may be a grid index on a target with a grid (an END's loop).
 *   PHI      REDUCE u's accumulator in loop src[0]: src[1] on entry
 *            (LIN_NONE: the identity of u's op), the ENDLOOP's value on
 *            each back edge; after the loop, the value it ended with.
 *   ACC      REDUCE u's op on acc src[0] and value src[1]; a MULACC of a
 *            product a * b fuses it: src {acc, value, a, b}.
 *   ENDLOOP  closes loop src[0]; then pairs (phi, its next value).
 *   STORE    STORE u: pointer src[0], value src[1].
 *   BARRIER  BARRIER u, its effects listed before it; WORKGROUP: inside a
 *            `local` RANGE (the target's barrier), else nothing.
 *
 * A REDUCE group (REDUCEs over the same RANGEs that can share one loop),
 * shadows computed first, online maxima and the rescale of the sums that
 * read them, and `unroll` RANGEs with a constant bound (copies, no loop)
 * are all decided here, once, for every backend. */
#ifndef UJ_CODEGEN_LINEAR_H
#define UJ_CODEGEN_LINEAR_H

#include "codegen/online.h"
#include "uop/uop.h"

enum { LIN_NONE = UINT32_MAX };

typedef enum LinKind { LIN_VALUE, LIN_LOOP, LIN_PHI, LIN_ACC, LIN_ENDLOOP, LIN_STORE, LIN_BARRIER } LinKind;
enum { LIN_GRID = 1, LIN_WORKGROUP = 2 };

typedef struct LinItem {
  const UOp *u;
  uint8_t kind, flags;
  uint32_t nsrc;
  uint32_t src; /* the first of nsrc in Linear.srcs */
} LinItem;

typedef struct Linear {
  LinItem *items;
  size_t n, cap;
  uint32_t *srcs;
  size_t nsrcs, srcs_cap;
  /* the CPU's part split: the DEFINE_VARs its start and bound read (part
   * k of n), NULL when the kernel runs whole */
  const UOp *part, *nparts;
} Linear;

static inline const uint32_t *lin_src(const Linear *l, size_t i) { return l->srcs + l->items[i].src; }

/* The list of kernel k; split: the RANGE a CPU kernel splits in parts
 * (kernel_parallel_range), or NULL. False with the error set (a RANGE
 * outside its END, loops nested deeper than 64, out of memory...). */
bool linearize(Ctx *ctx, const UOp *k, const OnlineMax *online, size_t nonline, const UOp *split, Linear *out);
void linear_free(Linear *l);
/* The list as text, an item a line (linear_print.c); malloc'd, NULL (error
 * set) when out of memory. */
char *linear_print(Ctx *ctx, const Linear *l);

/* ---- eval_linear.c: the list run on the host, item by item ---- */
typedef struct LinearArgs {
  void *const *params;     /* by PARAM slot: the buffer, or the address of a value PARAM */
  const size_t *bytes;     /* by slot: the buffer's size (bounds checks) */
  size_t nparams;
  const char *const *names; /* the variables by name, and their values */
  const int64_t *values;
  size_t nvars;
  int64_t part, nparts;    /* of a split kernel: 0 of 1 runs it all */
} LinearArgs;

/* Runs l in order; loads and stores checked against the buffers' sizes.
 * A BARRIER inside a workgroup is refused (the list is one thread's; the
 * graph evaluator runs workgroups). False with the error set. */
bool eval_linear(Ctx *ctx, const Linear *l, const LinearArgs *args);

#endif
