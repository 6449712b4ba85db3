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

typedef struct KernelSig {
  KernelParam *params; /* by slot, nparams = highest slot + 1 */
  size_t nparams;
  KernelVar *vars; /* sorted by name */
  size_t nvars;
  bool parallel; /* CPU: the body runs in parts (kernel_parallel_range) */
} KernelSig;

enum { KERNEL_MAX_PARAMS = 4096 };

bool kernel_sig_build(Ctx *ctx, const UOp *root, KernelSig *out);
void kernel_sig_free(KernelSig *sig);
/* The RANGE a CPU kernel splits among threads: the `global` RANGE of
 * the root's one END (root SINK(END(r, ...)) or END(r, ...)), or NULL.
 * Part k of n runs r over [k*c, (k+1)*c) with c = ceil(bound / n); an
 * effect outside that END would run in every part, so there is none. */
const UOp *kernel_parallel_range(const UOp *root);
/* The index of var `name` in sig->vars, or -1. */
long kernel_sig_var(const KernelSig *sig, const char *name);

#endif
