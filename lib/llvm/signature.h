/* signature.h — what a kernel takes: its PARAM slots and DEFINE_VARs.
 *
 * In: a kernel root (a SINK, END or STORE). Out: the params by slot (dtype,
 * whether loaded and stored through) and the variables sorted by name. The
 * compiled function takes them in that order; the host passes one pointer
 * per slot (the buffer, or the address of a value PARAM) and one int64 per
 * variable. Errors: a slot or name used with two dtypes, a BUFFER or CALL
 * inside a kernel, a value where an effect belongs. */
#ifndef UJ_LLVM_SIGNATURE_H
#define UJ_LLVM_SIGNATURE_H

#include "uop/uop.h"

typedef struct KernelParam {
  bool used;
  bool loaded, stored; /* through a pointer PARAM */
  DType dtype;
} KernelParam;

typedef struct KernelVar {
  const char *name; /* interned in the context */
  DType dtype;
  int64_t min, max;
} KernelVar;

/* The grid a GPU launches a kernel on (docs/compile.md, "GPU kernels"):
 * the RANGEs given each dimension x, y, z. Of the `global` RANGEs, met
 * outer to inner along the kernel's ENDs, the innermost three: the last
 * met, the fastest moving (contiguous in memory), on x, so a warp's
 * threads touch adjacent elements; any further ones are loops. `local`
 * RANGEs alike (at most three: a block has three dimensions). With
 * `local` RANGEs the kernel is made of workgroups: a `global` RANGE is a
 * block id (its bound the grid's size), a `local` one a thread id (its
 * constant bound the block's size). Without, a `global` RANGE's index is
 * block id * block size + thread id, for any block size. */
typedef struct KernelGrid {
  const UOp *global[3], *local[3];
  unsigned nglobal, nlocal;
  bool workgroups;
  bool too_many_locals; /* a fourth `local` RANGE: the renderer refuses it */
  bool clash;           /* two grid RANGEs with one axis number: refused too */
} KernelGrid;

typedef struct KernelSig {
  KernelParam *params; /* by slot, nparams = highest slot + 1 */
  size_t nparams;
  KernelVar *vars; /* sorted by name */
  size_t nvars;
  bool parallel; /* CPU: the body runs in parts (kernel_parallel_range) */
  KernelGrid grid;
} KernelSig;

enum { KERNEL_MAX_PARAMS = 4096 };

bool kernel_sig_build(Ctx *ctx, const UOp *root, KernelSig *out);
void kernel_sig_free(KernelSig *sig);
/* The RANGE a CPU kernel splits among threads: the `global` RANGE of
 * the root's one END (root SINK(END(r, ...)) or END(r, ...)), or NULL.
 * Part k of n runs r over [k*c, (k+1)*c) with c = ceil(bound / n); an
 * effect outside that END would run in every part, so there is none. */
const UOp *kernel_parallel_range(const UOp *root);
/* The grid of the kernel under root (kernel_sig_build sets sig->grid);
 * false when out of memory (error set). */
bool kernel_grid(Ctx *ctx, const UOp *root, KernelGrid *out);
/* The dimension range is on (0 x, 1 y, 2 z), or -1: not on the grid; a
 * RANGE of the same kind and axis number is the same (the lowered kernel
 * may have rebuilt it). */
int kernel_grid_dim(const KernelGrid *g, const UOp *range);
/* The index of var `name` in sig->vars, or -1. */
long kernel_sig_var(const KernelSig *sig, const char *name);

#endif
