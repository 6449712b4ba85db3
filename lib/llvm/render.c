/* render.c — a kernel's list (codegen/linear.h) to an LLVM function:
 * the function and its parameters, then each item in order: a value, a
 * loop (header with a phi, body, latch, exit; on a GPU an if-guarded grid
 * index), an accumulator phi, a store, a barrier. The list decides what
 * runs where; this file only says how, for the target (render_alu.c the
 * values, render_grid.c grid indices and barriers). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>

#include "llvm/render.h"
#include "uop/alu.h"

enum { MAX_LOOPS = 64 };

typedef struct Loop {
  uint32_t item; /* its LOOP */
  LLVMBasicBlockRef pre, header, exit;
  LLVMValueRef phi;   /* NULL for a grid index */
  LLVMValueRef start; /* the phi's first value: 0, or a part's start */
} Loop;

typedef struct State {
  Renderer r;
  const KernelSig *sig;
  const Linear *l;
  LLVMValueRef fn;
  LLVMValueRef *params, *vars; /* the function's arguments by slot / var index */
  LLVMValueRef part, nparts;   /* CPU: the body's last two arguments (i64) */
  LLVMValueRef *val, *gate;    /* by item: its value, and a pointer's gate */
  Loop loops[MAX_LOOPS];
  unsigned depth;
  unsigned long stack, shared; /* bytes of ALLOCs so far */
} State;

static unsigned elem_align(DType d) { return d.scalar == UJ_BOOL ? 1 : dt_bits(d) / 8; }
/* A GPU kernel's buffers are 16-byte aligned: each is the start of a
 * device allocation (cuMemAlloc's are 256-byte aligned, HSA's pools
 * page-aligned), never an offset into one (docs/gpu.md). 16 bytes lets
 * the backend merge four adjacent float loads into one. */
enum { GPU_BUFFER_ALIGN = 16 };

static bool fail(State *s, const UOp *u, const char *msg) {
  ctx_set_error(s->r.ctx, "render: %s: %s", op_table[u->op].name, msg);
  return false;
}

/* ---- memory ---- */

/* INDEX(ptr, idx[, gate]) as item k: a GEP of idx elements; gates AND up.
 * An element of N lanes is N scalars packed (docs/semantics.md), so the
 * GEP steps in scalars, idx * N: LLVM's <3 x i32> would take 16 bytes. */
static void emit_index(State *s, uint32_t k, const UOp *u, const uint32_t *src) {
  LLVMBuilderRef B = s->r.b;
  LLVMValueRef idx = s->val[src[1]];
  LLVMTypeRef i64 = LLVMInt64TypeInContext(s->r.lc);
  bool sign = dt_is_signed(u->src[1]->dtype);
  DType elem = dt_base(u->dtype);
  if (dt_bits(u->src[1]->dtype) < 64) idx = sign ? LLVMBuildSExt(B, idx, i64, "") : LLVMBuildZExt(B, idx, i64, "");
  if (elem.lanes > 1) idx = LLVMBuildMul(B, idx, LLVMConstInt(i64, elem.lanes, 0), "");
  LLVMTypeRef scalar = render_mem_type(&s->r, dt_lane(elem));
  const UOp *i = u->src[1];
  if (i->op == UJ_OP_ADD && i->src[1]->op == UJ_OP_CONST) {
    /* e + k (codegen/offsets.h; e is src[3]): the constant as a GEP of its
     * own, last; e alone may point outside the buffer, so neither is inbounds */
    LLVMValueRef e = s->val[src[3]];
    int64_t c = (int64_t)uop_const_value(i->src[1]) * elem.lanes;
    if (dt_bits(i->dtype) < 64) e = sign ? LLVMBuildSExt(B, e, i64, "") : LLVMBuildZExt(B, e, i64, "");
    if (elem.lanes > 1) e = LLVMBuildMul(B, e, LLVMConstInt(i64, elem.lanes, 0), "");
    LLVMValueRef kv = LLVMConstInt(i64, (unsigned long long)c, 1);
    LLVMValueRef p = LLVMBuildGEPWithNoWrapFlags(B, scalar, s->val[src[0]], &e, 1, "", LLVMGEPFlagNUSW);
    s->val[k] = LLVMBuildGEPWithNoWrapFlags(B, scalar, p, &kv, 1, "", LLVMGEPFlagNUSW);
  } else {
    s->val[k] = LLVMBuildInBoundsGEP2(B, scalar, s->val[src[0]], &idx, 1, "");
  }
  LLVMValueRef g = s->gate[src[0]];
  if (u->nsrc == 3) g = g ? LLVMBuildAnd(B, g, s->val[src[2]], "") : s->val[src[2]];
  s->gate[k] = g;
}

static LLVMValueRef load_plain(State *s, DType d, LLVMValueRef p) {
  LLVMValueRef v = LLVMBuildLoad2(s->r.b, render_mem_type(&s->r, d), p, "");
  LLVMSetAlignment(v, elem_align(d));
  if (d.scalar == UJ_BOOL) v = LLVMBuildICmp(s->r.b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
  return v;
}

/* LOAD(ptr[, alt]): behind a branch when the pointer has a gate. */
static LLVMValueRef emit_load(State *s, const UOp *u, const uint32_t *src) {
  LLVMValueRef p = s->val[src[0]], g = s->gate[src[0]];
  if (!g) return load_plain(s, u->dtype, p);
  LLVMBuilderRef B = s->r.b;
  LLVMValueRef alt = u->nsrc == 2 ? s->val[src[1]] : LLVMConstNull(render_type(&s->r, u->dtype));
  LLVMBasicBlockRef from = LLVMGetInsertBlock(B);
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "load");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "loaded");
  LLVMBuildCondBr(B, g, then, join);
  LLVMPositionBuilderAtEnd(B, then);
  LLVMValueRef v = load_plain(s, u->dtype, p);
  LLVMBasicBlockRef then_end = LLVMGetInsertBlock(B);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, join);
  LLVMValueRef phi = LLVMBuildPhi(B, render_type(&s->r, u->dtype), "");
  LLVMValueRef vals[2] = {v, alt};
  LLVMBasicBlockRef blocks[2] = {then_end, from};
  LLVMAddIncoming(phi, vals, blocks, 2);
  return phi;
}

/* STORE_ADD's *p += v: where threads run at once (a grid), an atomic
 * addition a lane (monotonic: only the sum is ordered); on the CPU, whose
 * kernels with one run in one part (opt.c), a load, an add and a store. */
static void add_into(State *s, const UOp *u, LLVMValueRef p, LLVMValueRef v) {
  LLVMBuilderRef B = s->r.b;
  DType d = u->src[1]->dtype, one = dt_lane(d);
  if (!s->r.h->grid) {
    LLVMValueRef sum = render_accumulate(&s->r, u->src[1], UJ_OP_ADD, load_plain(s, d, p), v, NULL);
    LLVMSetAlignment(LLVMBuildStore(B, sum, p), elem_align(d));
    return;
  }
  LLVMAtomicRMWBinOp op = dt_is_float(d) ? LLVMAtomicRMWBinOpFAdd : LLVMAtomicRMWBinOpAdd;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(s->r.lc);
  for (unsigned l = 0; l < d.lanes; l++) {
    LLVMValueRef at = d.lanes == 1 ? p : LLVMBuildGEP2(B, render_mem_type(&s->r, one), p, (LLVMValueRef[]){LLVMConstInt(i32, l, 0)}, 1, "");
    LLVMValueRef x = d.lanes == 1 ? v : LLVMBuildExtractElement(B, v, LLVMConstInt(i32, l, 0), "");
    LLVMSetAlignment(LLVMBuildAtomicRMW(B, op, at, x, LLVMAtomicOrderingMonotonic, false), elem_align(one));
  }
}

static void emit_store(State *s, const UOp *u, const uint32_t *src) {
  LLVMBuilderRef B = s->r.b;
  LLVMValueRef p = s->val[src[0]], g = s->gate[src[0]], v = s->val[src[1]];
  DType d = u->src[1]->dtype;
  LLVMBasicBlockRef join = NULL;
  if (d.scalar == UJ_BOOL) v = LLVMBuildZExt(B, v, render_mem_type(&s->r, d), "");
  if (g) {
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "store");
    join = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "stored");
    LLVMBuildCondBr(B, g, then, join);
    LLVMPositionBuilderAtEnd(B, then);
  }
  if (u->op == UJ_OP_STORE_ADD) add_into(s, u, p, v);
  else LLVMSetAlignment(LLVMBuildStore(B, v, p), elem_align(d));
  if (join) {
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, join);
  }
}

static unsigned addrspace(const State *s, DType d) {
  return d.space == UJ_AS_LOCAL ? s->r.h->local_space : s->r.h->global_space;
}

/* An ALLOC, in the entry block (the list puts them first): an alloca
 * (stack: register memory, and local memory where the target has no
 * workgroup memory), or a global in workgroup-shared local memory.
 * Contents start undefined. */
static LLVMValueRef emit_alloc(State *s, const UOp *u) {
  DType e = dt_base(u->dtype);
  unsigned long bytes = (unsigned long)u->ints[1] * elem_bytes(e);
  LLVMTypeRef at = LLVMArrayType2(render_mem_type(&s->r, dt_lane(e)), (uint64_t)u->ints[1] * e.lanes);
  bool workgroup = u->dtype.space == UJ_AS_LOCAL && s->r.h->workgroup_bytes;
  unsigned long *used = workgroup ? &s->shared : &s->stack, limit = workgroup ? s->r.h->workgroup_bytes : s->r.h->stack_bytes;
  *used += bytes;
  if (*used > limit) {
    char msg[160];
    snprintf(msg, sizeof msg, "%lu bytes of %s memory; this target allows %lu", *used, workgroup ? "workgroup" : "stack", limit);
    return fail(s, u, msg), NULL;
  }
  LLVMValueRef v;
  if (workgroup) {
    char name[32];
    snprintf(name, sizeof name, "alloc_%lld", (long long)u->ints[0]); /* a PTX identifier */
    v = LLVMAddGlobalInAddressSpace(s->r.mod, at, name, s->r.h->local_space);
    LLVMSetInitializer(v, LLVMGetUndef(at));
    LLVMSetLinkage(v, LLVMInternalLinkage);
  } else {
    v = LLVMBuildAlloca(s->r.b, at, "alloc");
  }
  LLVMSetAlignment(v, 16);
  return v;
}

/* ---- values ---- */

static LLVMValueRef lane_index(State *s, int64_t lane) {
  return LLVMConstInt(LLVMInt32TypeInContext(s->r.lc), (unsigned long long)lane, 0);
}

/* VALUE item k (linear.h): u's op on its src items. */
static bool emit_value(State *s, uint32_t k, const UOp *u, const uint32_t *src) {
  LLVMValueRef v = NULL;
  switch (u->op) {
  case UJ_OP_CONST: v = render_const(&s->r, u->dtype, uop_const_value(u)); break;
  case UJ_OP_DEFINE_VAR:
    v = u == s->l->part ? s->part : u == s->l->nparts ? s->nparts : s->vars[kernel_sig_var(s->sig, u->name)];
    break;
  case UJ_OP_PARAM: v = s->params[u->ints[0]]; break;
  case UJ_OP_ALLOC: v = emit_alloc(s, u); break;
  case UJ_OP_INDEX: emit_index(s, k, u, src); return true;
  case UJ_OP_LOAD: v = emit_load(s, u, src); break;
  case UJ_OP_VECTORIZE: /* the lanes inserted one by one (LLVM folds constant ones) */
    v = LLVMGetPoison(render_type(&s->r, u->dtype));
    for (uint32_t i = 0; i < u->nsrc; i++) v = LLVMBuildInsertElement(s->r.b, v, s->val[src[i]], lane_index(s, i), "");
    break;
  case UJ_OP_GEP: v = LLVMBuildExtractElement(s->r.b, s->val[src[0]], lane_index(s, u->ints[0]), ""); break;
  default: {
    if (!op_has((Op)u->op, OPF_ALU) || u->nsrc > 3) return fail(s, u, "not a value op the renderer knows");
    LLVMValueRef in[3];
    for (uint32_t i = 0; i < u->nsrc; i++) in[i] = s->val[src[i]];
    v = render_alu(&s->r, u, in);
  }
  }
  s->val[k] = v;
  return v != NULL;
}

/* ---- loops ---- */

/* LOOP item k: a grid index when it may be one and the target has one,
 * else a counted loop from its start (0, or a CPU part's) to its bound. */
static bool loop_open(State *s, uint32_t k, const UOp *range, const uint32_t *src) {
  LLVMBuilderRef B = s->r.b;
  LLVMValueRef bound = s->val[src[0]];
  LLVMTypeRef t = render_type(&s->r, range->dtype);
  Loop *L = &s->loops[s->depth];
  *L = (Loop){.item = k, .pre = LLVMGetInsertBlock(B)};
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "body");
  L->exit = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "exit");
  LLVMValueRef i = NULL, more = NULL;
  if ((s->l->items[k].flags & LIN_GRID) && !grid_open(&s->r, &s->sig->grid, range, bound, &i, &more)) return false;
  if (!i) {
    L->start = s->l->items[k].nsrc > 1 ? s->val[src[1]] : LLVMConstNull(t);
    L->header = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "loop");
    LLVMBuildBr(B, L->header);
    LLVMPositionBuilderAtEnd(B, L->header);
    i = L->phi = LLVMBuildPhi(B, t, "i");
    more = LLVMBuildICmp(B, dt_is_signed(range->dtype) ? LLVMIntSLT : LLVMIntULT, i, bound, "");
  }
  LLVMBuildCondBr(B, more, body, L->exit);
  LLVMPositionBuilderAtEnd(B, body);
  s->depth++;
  s->val[k] = i;
  return true;
}

static Loop *loop_of(State *s, uint32_t item) {
  for (unsigned d = s->depth; d-- > 0;)
    if (s->loops[d].item == item) return &s->loops[d];
  return NULL;
}

/* PHI item k: an accumulator in its loop's header, src[1] (or the
 * identity of its REDUCE's op) on entry. */
static bool emit_phi(State *s, uint32_t k, const UOp *u, const uint32_t *src) {
  Loop *L = loop_of(s, src[0]);
  if (!L || !L->phi) return fail(s, u, "an accumulator of a loop that is not open, or is a grid index (a bug in uopjit)");
  Op op;
  op_from_name(u->name, strlen(u->name), &op);
  LLVMValueRef init = src[1] == LIN_NONE ? render_const(&s->r, u->dtype, alu_identity(op, (uj_scalar)u->dtype.scalar))
                                         : s->val[src[1]];
  LLVMBasicBlockRef body = LLVMGetInsertBlock(s->r.b);
  LLVMPositionBuilderBefore(s->r.b, L->phi); /* after the loop's earlier PHIs, before its index */
  s->val[k] = LLVMBuildPhi(s->r.b, render_type(&s->r, u->dtype), "acc");
  LLVMAddIncoming(s->val[k], &init, &L->pre, 1);
  LLVMPositionBuilderAtEnd(s->r.b, body);
  return true;
}

/* ACC item k: op(acc, value), fused with a product where it has one. */
static bool emit_acc(State *s, uint32_t k, const UOp *u, const uint32_t *src) {
  Op op;
  op_from_name(u->name, strlen(u->name), &op);
  bool product = s->l->items[k].nsrc == 4;
  LLVMValueRef ab[2] = {product ? s->val[src[2]] : NULL, product ? s->val[src[3]] : NULL};
  s->val[k] = render_accumulate(&s->r, u, op, s->val[src[0]], s->val[src[1]], product ? ab : NULL);
  return s->val[k] != NULL;
}

/* ENDLOOP item k: the latch (the index and the accumulators' back edges)
 * and the exit, where the list goes on. */
static void loop_close(State *s, uint32_t k, const uint32_t *src) {
  LLVMBuilderRef B = s->r.b;
  Loop *L = &s->loops[--s->depth];
  if (L->phi) {
    LLVMValueRef next = LLVMBuildAdd(B, L->phi, LLVMConstInt(LLVMTypeOf(L->phi), 1, 0), "");
    LLVMSetNUW(next, 1); /* i < bound: i + 1 does not wrap */
    if (dt_is_signed(s->l->items[k].u->dtype)) LLVMSetNSW(next, 1);
    LLVMValueRef vals[2] = {L->start, next};
    LLVMBasicBlockRef blocks[2] = {L->pre, LLVMGetInsertBlock(B)};
    LLVMBuildBr(B, L->header);
    LLVMAddIncoming(L->phi, vals, blocks, 2);
    for (uint32_t i = 1; i + 1 < s->l->items[k].nsrc; i += 2)
      LLVMAddIncoming(s->val[src[i]], &s->val[src[i + 1]], &blocks[1], 1);
  } else {
    LLVMBuildBr(B, L->exit);
  }
  LLVMPositionBuilderAtEnd(B, L->exit);
}

/* The list, item by item. */
static bool emit_items(State *s) {
  for (uint32_t k = 0; k < s->l->n; k++) {
    const LinItem *it = &s->l->items[k];
    const uint32_t *src = lin_src(s->l, k);
    bool ok = true;
    switch ((LinKind)it->kind) {
    case LIN_VALUE: ok = emit_value(s, k, it->u, src); break;
    case LIN_LOOP: ok = loop_open(s, k, it->u, src); break;
    case LIN_PHI: ok = emit_phi(s, k, it->u, src); break;
    case LIN_ACC: ok = emit_acc(s, k, it->u, src); break;
    case LIN_ENDLOOP: loop_close(s, k, src); break;
    case LIN_STORE: emit_store(s, it->u, src); break;
    case LIN_BARRIER: /* the target's barrier inside a `local` RANGE (render_grid.c), nothing outside one */
      if ((it->flags & LIN_WORKGROUP) && !s->r.h->barrier)
        return fail(s, it->u, "a BARRIER in a workgroup (inside a `local` RANGE) needs a target with workgroups");
      ok = grid_barrier(&s->r, it->flags & LIN_WORKGROUP);
      break;
    }
    if (!ok) return false;
  }
  return true;
}

/* ---- the function ---- */

static LLVMTypeRef param_type(const State *s, const KernelParam *p) {
  if (!p->used || dt_is_ptr(p->dtype))
    return LLVMPointerTypeInContext(s->r.lc, p->used ? addrspace(s, p->dtype) : 0);
  return render_type(&s->r, p->dtype);
}

static void add_attr(State *s, LLVMValueRef fn, unsigned idx, const char *name, uint64_t val) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(s->r.lc, kind, val));
}

static void add_string_attr(State *s, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(s->r.lc, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}

/* noalias, aligned to the element, readonly / writeonly as used. On the
 * CPU, whose entry inlines the body, noalias only where the kernel stores:
 * the inliner turns each noalias pointer into an alias scope and lists, on
 * every load and store, the scopes of the others (n read-only buffers: n^2
 * metadata, and GVN's alias queries, each as long as a list, cost n^2 in
 * all: a sum of 2000 buffers took 5.8 s to compile); a store's scope on the
 * loads says all that matters, that they read no memory it writes. On GPUs
 * the kernel is not inlined (BasicAA reads the attributes directly) and a
 * noalias read-only pointer loads through the non-coherent cache. */
static void pointer_attrs(State *s, LLVMValueRef fn, unsigned i, const KernelParam *p) {
  if (p->stored || s->r.h->kernel_cc) add_attr(s, fn, i + 1, "noalias", 0);
  add_attr(s, fn, i + 1, "nocapture", 0);
  unsigned align = elem_align(dt_base(p->dtype));
  if (s->r.t->kind != TARGET_CPU && align < GPU_BUFFER_ALIGN) align = GPU_BUFFER_ALIGN; /* every GPU buffer starts an allocation */
  add_attr(s, fn, i + 1, "align", align);
  if (!p->stored) add_attr(s, fn, i + 1, "readonly", 0);
  if (!p->loaded) add_attr(s, fn, i + 1, "writeonly", 0);
}

/* The kernel function: params by slot, then the variables. */
static LLVMValueRef make_function(State *s, const char *name) {
  size_t np = s->sig->nparams, nv = s->sig->nvars, n = np + nv + (s->r.h->kernel_cc ? 0 : 2);
  LLVMTypeRef *types = malloc((n + 1) * sizeof *types);
  if (!types) return NULL;
  for (size_t i = 0; i < np; i++) types[i] = param_type(s, &s->sig->params[i]);
  for (size_t i = 0; i < nv; i++) types[np + i] = render_type(&s->r, s->sig->vars[i].dtype);
  for (size_t i = np + nv; i < n; i++) types[i] = LLVMInt64TypeInContext(s->r.lc); /* CPU: part, nparts */
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(s->r.lc), types, (unsigned)n, 0);
  free(types);
  LLVMValueRef fn = LLVMAddFunction(s->r.mod, name, fty);
  for (size_t i = 0; i < np; i++)
    if (s->sig->params[i].used && dt_is_ptr(s->sig->params[i].dtype)) pointer_attrs(s, fn, (unsigned)i, &s->sig->params[i]);
  add_attr(s, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  if (!s->r.h->kernel_cc) { /* called by the CPU entry */
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    add_attr(s, fn, LLVMAttributeFunctionIndex, "alwaysinline", 0);
  } else {
    LLVMSetFunctionCallConv(fn, s->r.h->kernel_cc);
  }
  if (s->r.t->cpu[0]) add_string_attr(s, fn, "target-cpu", s->r.t->cpu);
  if (s->r.t->features[0]) add_string_attr(s, fn, "target-features", s->r.t->features);
  /* LLVM vectorizes loops 256 bits wide on AVX-512 CPUs unless told (docs/compile.md) */
  if (s->r.t->kind == TARGET_CPU && s->r.t->vector_bytes >= 64) add_string_attr(s, fn, "prefer-vector-width", "512");
  return fn;
}

/* The CPU entry `void name(void **args, int64_t *vars, int64_t part,
 * int64_t nparts)` calling the body (part k of n of its parallel RANGE;
 * 0 of 1 runs it all); false when out of memory. */
static bool make_cpu_entry(State *s, LLVMValueRef body, const char *name) {
  LLVMContextRef lc = s->r.lc;
  LLVMBuilderRef B = s->r.b;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(lc, 0), i64 = LLVMInt64TypeInContext(lc);
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(lc), (LLVMTypeRef[]){ptr, ptr, i64, i64}, 4, 0);
  LLVMValueRef fn = LLVMAddFunction(s->r.mod, name, fty);
  add_attr(s, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  add_string_attr(s, fn, "target-cpu", s->r.t->cpu);
  add_string_attr(s, fn, "target-features", s->r.t->features);
  if (s->r.t->vector_bytes >= 64) add_string_attr(s, fn, "prefer-vector-width", "512"); /* as the body's */
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(lc, fn, "entry"));
  size_t np = s->sig->nparams, nv = s->sig->nvars;
  LLVMValueRef *args = malloc((np + nv + 2) * sizeof *args);
  if (!args) return false;
  for (size_t i = 0; i < np; i++) {
    const KernelParam *p = &s->sig->params[i];
    LLVMValueRef at = LLVMBuildInBoundsGEP2(B, ptr, LLVMGetParam(fn, 0), (LLVMValueRef[]){LLVMConstInt(i64, i, 0)}, 1, "");
    LLVMValueRef a = LLVMBuildLoad2(B, ptr, at, "");
    args[i] = !p->used || dt_is_ptr(p->dtype) ? a : load_plain(s, p->dtype, a);
  }
  for (size_t i = 0; i < nv; i++) {
    LLVMValueRef at = LLVMBuildInBoundsGEP2(B, i64, LLVMGetParam(fn, 1), (LLVMValueRef[]){LLVMConstInt(i64, i, 0)}, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(B, i64, at, "");
    LLVMTypeRef t = render_type(&s->r, s->sig->vars[i].dtype);
    args[np + i] = dt_bits(s->sig->vars[i].dtype) < 64 ? LLVMBuildTrunc(B, v, t, "") : v;
  }
  args[np + nv] = LLVMGetParam(fn, 2), args[np + nv + 1] = LLVMGetParam(fn, 3); /* part, nparts */
  LLVMBuildCall2(B, LLVMGlobalGetValueType(body), body, args, (unsigned)(np + nv + 2), "");
  LLVMBuildRetVoid(B);
  free(args);
  return true;
}

static bool check_params(Ctx *ctx, const KernelSig *sig) {
  for (size_t i = 0; i < sig->nparams; i++) {
    const KernelParam *p = &sig->params[i];
    if (p->used && dt_is_ptr(p->dtype) && p->dtype.space != UJ_AS_GLOBAL) {
      ctx_set_error(ctx, "render: PARAM slot %zu points into %s memory; kernel parameters are global", i,
                    p->dtype.space == UJ_AS_LOCAL ? "local" : "register");
      return false;
    }
  }
  return true;
}

static bool render_body(State *s, const char *name) {
  char body_name[256];
  snprintf(body_name, sizeof body_name, "%s%s", name, s->r.h->kernel_cc ? "" : ".body");
  s->fn = make_function(s, body_name);
  if (!s->fn) return ctx_set_error(s->r.ctx, "render: out of memory"), false;
  size_t n = s->sig->nparams + s->sig->nvars;
  for (size_t i = 0; i < n; i++) s->params[i] = LLVMGetParam(s->fn, (unsigned)i);
  if (!s->r.h->kernel_cc) s->part = LLVMGetParam(s->fn, (unsigned)n), s->nparts = LLVMGetParam(s->fn, (unsigned)n + 1);
  LLVMPositionBuilderAtEnd(s->r.b, LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "entry"));
  if (!emit_items(s)) return false;
  LLVMBuildRetVoid(s->r.b);
  if (!s->r.h->kernel_cc && !make_cpu_entry(s, s->fn, name)) return ctx_set_error(s->r.ctx, "render: out of memory"), false;
  return true;
}

static void module_setup(State *s) {
  LLVMSetTarget(s->r.mod, s->r.t->triple);
  if (s->r.h->code_object_version) {
    LLVMValueRef v = LLVMConstInt(LLVMInt32TypeInContext(s->r.lc), (unsigned)s->r.h->code_object_version, 0);
    const char *key = "amdhsa_code_object_version";
    LLVMAddModuleFlag(s->r.mod, LLVMModuleFlagBehaviorError, key, strlen(key), LLVMValueAsMetadata(v));
  }
}

LLVMModuleRef render_kernel(Ctx *ctx, LLVMContextRef lc, const Target *t, LLVMTargetDataRef layout, const Linear *l,
                            const KernelSig *sig, const char *name) {
  State s = {.r = {ctx, t, &target_hooks[t->kind], lc, NULL, NULL}, .sig = sig, .l = l};
  if (!check_params(ctx, sig)) return NULL;
  s.val = malloc((l->n + 1) * sizeof *s.val), s.gate = calloc(l->n + 1, sizeof *s.gate);
  s.params = calloc(sig->nparams + sig->nvars + 1, sizeof *s.params);
  if (!s.val || !s.gate || !s.params) {
    free(s.val), free(s.gate), free(s.params);
    ctx_set_error(ctx, "render: out of memory");
    return NULL;
  }
  s.vars = s.params + sig->nparams;
  s.r.mod = LLVMModuleCreateWithNameInContext(name, lc);
  if (layout) LLVMSetModuleDataLayout(s.r.mod, layout); /* allocas take its address space */
  s.r.b = LLVMCreateBuilderInContext(lc);
  module_setup(&s);
  bool ok = render_body(&s, name);
  char *msg = NULL;
  if (ok && LLVMVerifyModule(s.r.mod, LLVMReturnStatusAction, &msg)) {
    ctx_set_error(ctx, "render: LLVM rejects the module (a bug in uopjit): %s", msg);
    ok = false;
  }
  LLVMDisposeMessage(msg);
  LLVMDisposeBuilder(s.r.b);
  free(s.val), free(s.gate), free(s.params);
  if (!ok) LLVMDisposeModule(s.r.mod);
  return ok ? s.r.mod : NULL;
}
