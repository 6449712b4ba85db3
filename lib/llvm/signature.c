/* signature.c — a kernel's parameters and variables (signature.h), read
 * from its graph in one walk, with the checks that make a graph a kernel. */
#include <stdlib.h>
#include <string.h>

#include "llvm/signature.h"

/* The PARAM or ALLOC a pointer is into, or NULL. */
static const UOp *base_memory(const UOp *p) {
  p = uop_memory_of(p);
  return p->op == UJ_OP_PARAM || p->op == UJ_OP_ALLOC ? p : NULL;
}

static const UOp *base_param(const UOp *p) {
  p = base_memory(p);
  return p && p->op == UJ_OP_PARAM ? p : NULL;
}

static bool add_param(Ctx *ctx, KernelSig *sig, const UOp *u) {
  int64_t slot = u->ints[0];
  char a[32], b[32];
  if (slot >= KERNEL_MAX_PARAMS) {
    ctx_set_error(ctx, "kernel: PARAM slot %lld is above the limit %d", (long long)slot, KERNEL_MAX_PARAMS - 1);
    return false;
  }
  if ((size_t)slot >= sig->nparams) {
    KernelParam *p = realloc(sig->params, (size_t)(slot + 1) * sizeof *p);
    if (!p) return ctx_set_error(ctx, "kernel: out of memory"), false;
    memset(p + sig->nparams, 0, ((size_t)slot + 1 - sig->nparams) * sizeof *p);
    sig->params = p, sig->nparams = (size_t)slot + 1;
  }
  KernelParam *p = &sig->params[slot];
  if (p->used && !dt_eq(p->dtype, u->dtype)) {
    ctx_set_error(ctx, "kernel: PARAM slot %lld is used as %s and as %s", (long long)slot,
                  dtype_str(p->dtype, a, sizeof a), dtype_str(u->dtype, b, sizeof b));
    return false;
  }
  p->used = true, p->dtype = u->dtype;
  return true;
}

static bool add_var(Ctx *ctx, KernelSig *sig, const UOp *u) {
  long i = kernel_sig_var(sig, u->name);
  if (i >= 0) {
    const KernelVar *v = &sig->vars[i];
    if (dt_eq(v->dtype, u->dtype) && v->min == u->ints[0] && v->max == u->ints[1]) return true;
    ctx_set_error(ctx, "kernel: variable %s is declared twice, differently", u->name);
    return false;
  }
  KernelVar *vars = realloc(sig->vars, (sig->nvars + 1) * sizeof *vars);
  if (!vars) return ctx_set_error(ctx, "kernel: out of memory"), false;
  sig->vars = vars;
  size_t at = sig->nvars++;
  while (at > 0 && strcmp(vars[at - 1].name, u->name) > 0) vars[at] = vars[at - 1], at--;
  vars[at] = (KernelVar){u->name, u->dtype, u->ints[0], u->ints[1]};
  return true;
}

static void mark_access(KernelSig *sig, const UOp *u) {
  const UOp *p = base_param(u->src[0]);
  if (!p) return;
  if (u->op != UJ_OP_STORE) sig->params[p->ints[0]].loaded = true; /* LOAD, STORE_ADD */
  if (u->op != UJ_OP_LOAD) sig->params[p->ints[0]].stored = true;
}

static bool check_node(Ctx *ctx, KernelSig *sig, const UOp *u) {
  if (op_has((Op)u->op, OPF_TENSOR)) {
    ctx_set_error(ctx, "kernel: %s is a tensor op; rangeify turns tensors into kernels", op_table[u->op].name);
    return false;
  }
  switch (u->op) {
  case UJ_OP_PARAM: return add_param(ctx, sig, u);
  case UJ_OP_DEFINE_VAR: return add_var(ctx, sig, u);
  case UJ_OP_BUFFER:
  case UJ_OP_CALL:
    ctx_set_error(ctx, "kernel: %s cannot be compiled (kernels take PARAMs)", op_table[u->op].name);
    return false;
  case UJ_OP_SINK:
  case UJ_OP_BARRIER:
  case UJ_OP_END:
    for (uint32_t i = u->op == UJ_OP_END; i < u->nsrc; i++) {
      if (!op_has(u->src[i]->op, OPF_EFFECT)) {
        ctx_set_error(ctx, "kernel: %s holds a %s; a kernel's SINK and END hold STOREs and ENDs",
                      op_table[u->op].name, op_table[u->src[i]->op].name);
        return false;
      }
    }
    return true;
  case UJ_OP_REDUCE:
    if (u->nsrc == 1) {
      ctx_set_error(ctx, "kernel: a REDUCE over axes is a tensor op; kernels reduce over RANGEs");
      return false;
    }
    return true;
  case UJ_OP_LOAD:
  case UJ_OP_STORE:
  case UJ_OP_STORE_ADD:
    if (!base_memory(u->src[0])) {
      ctx_set_error(ctx, "kernel: %s through a pointer that is not a PARAM or an ALLOC", op_table[u->op].name);
      return false;
    }
    return true;
  default: return true;
  }
}

bool kernel_sig_build(Ctx *ctx, const UOp *root, KernelSig *out) {
  memset(out, 0, sizeof *out);
  if (!op_has(root->op, OPF_EFFECT)) {
    ctx_set_error(ctx, "kernel: the root is a %s, not a SINK, END or STORE", op_table[root->op].name);
    return false;
  }
  const UOp **nodes = NULL;
  size_t n = uop_toposort(ctx, root, &nodes);
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++) ok = check_node(ctx, out, nodes[i]);
  for (size_t i = 0; ok && i < n; i++)
    if (nodes[i]->op == UJ_OP_LOAD || nodes[i]->op == UJ_OP_STORE || nodes[i]->op == UJ_OP_STORE_ADD) mark_access(out, nodes[i]);
  free(nodes);
  ok = ok && kernel_grid(ctx, root, &out->grid);
  if (!ok) kernel_sig_free(out);
  return ok;
}

/* Puts range among the dims of its kind met so far (outer before inner),
 * each once; past three the outermost drops out (a loop). True when one
 * dropped out. */
static bool grid_put(KernelGrid *g, const UOp **dims, unsigned *n, const UOp *range) {
  for (unsigned i = 0; i < *n; i++) {
    if (dims[i] == range) return false;
    if (dims[i]->ints[0] == range->ints[0]) g->clash = true; /* two RANGEs, one axis number */
  }
  bool drop = *n == 3;
  if (drop) memmove(dims, dims + 1, 2 * sizeof *dims), --*n;
  dims[(*n)++] = range;
  return drop;
}

/* The innermost (met last) first: on x. */
static void reverse(const UOp **dims, unsigned n) {
  for (unsigned d = 0; d < n / 2; d++) {
    const UOp *t = dims[d];
    dims[d] = dims[n - 1 - d], dims[n - 1 - d] = t;
  }
}

bool kernel_grid(Ctx *ctx, const UOp *root, KernelGrid *g) {
  *g = (KernelGrid){0};
  size_t top = 0, cap = 64;
  const UOp **stack = malloc(cap * sizeof *stack);
  if (!stack) return ctx_set_error(ctx, "kernel: out of memory"), false;
  stack[top++] = root;
  while (top) { /* the effects from the root, the first effect met first */
    const UOp *u = stack[--top];
    if (u->op != UJ_OP_SINK && u->op != UJ_OP_END && u->op != UJ_OP_BARRIER) continue;
    if (u->op == UJ_OP_END && u->src[0]->op == UJ_OP_RANGE) {
      AxisKind kind = range_kind(u->src[0]);
      if (kind == AXIS_GLOBAL) grid_put(g, g->global, &g->nglobal, u->src[0]);
      if (kind == AXIS_LOCAL) g->too_many_locals |= grid_put(g, g->local, &g->nlocal, u->src[0]);
    }
    if (top + u->nsrc > cap) {
      cap = 2 * (top + u->nsrc);
      const UOp **s = realloc(stack, cap * sizeof *s);
      if (!s) return free(stack), ctx_set_error(ctx, "kernel: out of memory"), false;
      stack = s;
    }
    for (uint32_t i = u->nsrc; i-- > (u->op == UJ_OP_END);) stack[top++] = u->src[i];
  }
  free(stack);
  g->workgroups = g->nlocal > 0;
  reverse(g->global, g->nglobal), reverse(g->local, g->nlocal);
  return true;
}

/* By kind and axis number, not by pointer: the renderer meets the RANGE
 * in the lowered kernel, where simplifying its bound (n * 1) made it
 * another node; the signature's grid is the kernel's as given. */
int kernel_grid_dim(const KernelGrid *g, const UOp *range) {
  bool local = range_kind(range) == AXIS_LOCAL;
  const UOp *const *dims = local ? g->local : g->global;
  unsigned n = local ? g->nlocal : g->nglobal;
  for (unsigned i = 0; i < n; i++)
    if (dims[i]->ints[0] == range->ints[0]) return (int)i; /* a RANGE's arg is its kind and one axis number */
  return -1;
}

void kernel_sig_free(KernelSig *sig) {
  free(sig->params);
  free(sig->vars);
  memset(sig, 0, sizeof *sig);
}

long kernel_sig_var(const KernelSig *sig, const char *name) {
  for (size_t i = 0; i < sig->nvars; i++)
    if (strcmp(sig->vars[i].name, name) == 0) return (long)i;
  return -1;
}

const UOp *kernel_parallel_range(const UOp *root) {
  const UOp *end = root->op == UJ_OP_SINK && root->nsrc == 1 ? root->src[0] : root;
  if (end->op != UJ_OP_END) return NULL;
  const UOp *r = end->src[0];
  return r->op == UJ_OP_RANGE && range_kind(r) == AXIS_GLOBAL ? r : NULL;
}
