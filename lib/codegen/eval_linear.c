/* eval_linear.c — a kernel's list (linear.h) run on the host, item by
 * item: the second evaluator, of what the backends render, beside the
 * graph evaluator (uop/eval.h), the oracle. Values are words as there
 * (uop/alu.h), every op computed by alu_eval, so where the list keeps the
 * graph's order the two agree bit for bit (test_linear). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/linear.h"
#include "uop/alu.h"

typedef struct Ptr {
  unsigned char *base;
  int64_t count, index; /* elements of the memory, and the one pointed at */
  bool valid;           /* false: its gate is off */
} Ptr;

typedef struct Run {
  Ctx *ctx;
  const Linear *l;
  const LinearArgs *a;
  size_t *at;        /* by item: its words (value) or its Ptr (pointer) */
  uint64_t *words;
  Ptr *ptrs;
  uint32_t *body, *end; /* by LOOP item: its first item after its PHIs, its ENDLOOP */
  unsigned char **allocs;
  size_t nallocs;
} Run;

static bool fail(Run *r, uint32_t k, const char *fmt, long long x, long long y) {
  char msg[200];
  snprintf(msg, sizeof msg, fmt, x, y);
  ctx_set_error(r->ctx, "eval_linear: item %u (%s): %s", k, op_table[r->l->items[k].u->op].name, msg);
  return false;
}

static uint64_t *W(const Run *r, uint32_t k) { return r->words + r->at[k]; }
static Ptr *P(const Run *r, uint32_t k) { return r->ptrs + r->at[k]; }

static DType item_dtype(const LinItem *it) { return it->u->dtype; }

/* Words and pointers laid out by item; each LOOP's body and ENDLOOP. */
static bool layout(Run *r) {
  const Linear *l = r->l;
  size_t nwords = 0, nptrs = 0, top = 0;
  r->at = calloc(l->n + 1, sizeof *r->at), r->body = calloc(l->n + 1, sizeof *r->body);
  r->end = calloc(l->n + 1, sizeof *r->end);
  uint32_t *stack = malloc((l->n + 1) * sizeof *stack);
  if (!r->at || !r->body || !r->end || !stack) return free(stack), false;
  for (uint32_t k = 0; k < l->n; k++) {
    const LinItem *it = &l->items[k];
    DType d = item_dtype(it);
    if (it->kind == LIN_ENDLOOP || it->kind == LIN_STORE || it->kind == LIN_BARRIER) r->at[k] = 0;
    else if (dt_is_ptr(d)) r->at[k] = nptrs++;
    else r->at[k] = nwords, nwords += d.lanes;
    if (it->kind == LIN_LOOP) {
      stack[top++] = k;
      uint32_t b = k + 1;
      while (b < l->n && l->items[b].kind == LIN_PHI && lin_src(l, b)[0] == k) b++;
      r->body[k] = b;
    }
    if (it->kind == LIN_ENDLOOP) {
      if (!top || stack[top - 1] != lin_src(l, k)[0]) return free(stack), fail(r, k, "loops do not nest (a bug in uopjit)", 0, 0);
      r->end[stack[--top]] = k;
    }
  }
  free(stack);
  if (top) return fail(r, 0, "a loop is never closed (a bug in uopjit)", 0, 0);
  r->words = calloc(nwords + 1, sizeof *r->words), r->ptrs = calloc(nptrs + 1, sizeof *r->ptrs);
  r->allocs = calloc(l->n + 1, sizeof *r->allocs);
  return r->words && r->ptrs && r->allocs;
}

static bool memory_root(Run *r, uint32_t k, const UOp *u) {
  DType e = dt_base(u->dtype);
  if (u->op == UJ_OP_ALLOC) {
    unsigned char *m = calloc((size_t)u->ints[1] + 1, elem_bytes(e));
    if (!m) return fail(r, k, "out of memory", 0, 0);
    r->allocs[r->nallocs++] = m;
    *P(r, k) = (Ptr){m, u->ints[1], 0, true};
    return true;
  }
  int64_t slot = u->ints[0];
  if (slot < 0 || (size_t)slot >= r->a->nparams || !r->a->params[slot]) return fail(r, k, "PARAM %lld has no buffer", slot, 0);
  if (!dt_is_ptr(u->dtype)) return mem_read(r->a->params[slot], u->dtype, W(r, k)), true;
  *P(r, k) = (Ptr){r->a->params[slot], (int64_t)(r->a->bytes[slot] / elem_bytes(e)), 0, true};
  return true;
}

static bool var_value(Run *r, uint32_t k, const UOp *u) {
  int64_t v = 0;
  bool found = false;
  if (u == r->l->part || u == r->l->nparts) v = u == r->l->part ? r->a->part : r->a->nparts, found = true;
  for (size_t i = 0; i < r->a->nvars && !found; i++)
    if (!strcmp(r->a->names[i], u->name)) v = r->a->values[i], found = true;
  if (!found) return fail(r, k, "a variable with no value", 0, 0);
  W(r, k)[0] = word_from_int((uj_scalar)u->dtype.scalar, v);
  return true;
}

static bool index_of(Run *r, uint32_t k, const UOp *u, const uint32_t *src) {
  Ptr *p = P(r, k);
  *p = *P(r, src[0]);
  uint64_t w = W(r, src[1])[0];
  p->valid = p->valid && (src[2] == LIN_NONE || W(r, src[2])[0]);
  bool fits = dt_is_signed(u->src[1]->dtype) || w <= (uint64_t)INT64_MAX;
  if (fits && !__builtin_add_overflow(p->index, (int64_t)w, &p->index)) return true;
  p->index = 0;
  return p->valid ? fail(r, k, "element index overflows int64", 0, 0) : true;
}

static unsigned char *element(Run *r, uint32_t k, const Ptr *p, DType d) {
  if (p->index < 0 || p->index >= p->count)
    return fail(r, k, "element %lld is out of bounds [0, %lld)", (long long)p->index, (long long)p->count), NULL;
  return p->base + (size_t)p->index * elem_bytes(d);
}

static bool load(Run *r, uint32_t k, const UOp *u, const uint32_t *src) {
  const Ptr *p = P(r, src[0]);
  uint64_t *out = W(r, k);
  if (!p->valid) {
    if (u->nsrc == 2) memcpy(out, W(r, src[1]), u->dtype.lanes * sizeof *out);
    else memset(out, 0, u->dtype.lanes * sizeof *out);
    return true;
  }
  unsigned char *at = element(r, k, p, dt_base(u->src[0]->dtype));
  if (at) mem_read(at, u->dtype, out);
  return at != NULL;
}

static bool store(Run *r, uint32_t k, const UOp *u, const uint32_t *src) {
  const Ptr *p = P(r, src[0]);
  if (!p->valid) return true;
  unsigned char *at = element(r, k, p, dt_base(u->src[0]->dtype));
  DType d = u->src[1]->dtype, one = dt_lane(d);
  if (at && u->op == UJ_OP_STORE_ADD) /* what is there plus the value, lane by lane */
    for (unsigned l = 0; l < d.lanes; l++) {
      uint64_t args[3] = {0, W(r, src[1])[l], 0};
      mem_read(at + l * elem_bytes(one), one, &args[0]);
      args[0] = alu_eval(UJ_OP_ADD, (uj_scalar)d.scalar, (uj_scalar)d.scalar, args);
      mem_write(at + l * elem_bytes(one), one, &args[0]);
    }
  else if (at) mem_write(at, d, W(r, src[1]));
  return at != NULL;
}

static bool value(Run *r, uint32_t k, const UOp *u, const uint32_t *src) {
  uint64_t *out = dt_is_ptr(u->dtype) ? NULL : W(r, k);
  switch (u->op) {
  case UJ_OP_CONST: out[0] = word_normalize((uj_scalar)u->dtype.scalar, uop_const_value(u)); return true;
  case UJ_OP_DEFINE_VAR: return var_value(r, k, u);
  case UJ_OP_PARAM:
  case UJ_OP_ALLOC: return memory_root(r, k, u);
  case UJ_OP_INDEX: return index_of(r, k, u, src);
  case UJ_OP_LOAD: return load(r, k, u, src);
  case UJ_OP_VECTORIZE:
    for (uint32_t i = 0; i < u->nsrc; i++) out[i] = W(r, src[i])[0];
    return true;
  case UJ_OP_GEP: out[0] = W(r, src[0])[u->ints[0]]; return true;
  default: break;
  }
  if (!op_has((Op)u->op, OPF_ALU) || u->nsrc > 3) return fail(r, k, "not a value op a kernel computes", 0, 0);
  uj_scalar to = (uj_scalar)u->dtype.scalar, in = (uj_scalar)u->src[u->op == UJ_OP_WHERE ? 1 : 0]->dtype.scalar;
  for (unsigned lane = 0; lane < u->dtype.lanes; lane++) {
    uint64_t args[3] = {0, 0, 0};
    for (uint32_t i = 0; i < u->nsrc; i++) args[i] = W(r, src[i])[lane];
    out[lane] = alu_eval((Op)u->op, to, in, args);
  }
  return true;
}

static Op reduce_op(const UOp *u) {
  Op op = UJ_OP_ADD;
  op_from_name(u->name, strlen(u->name), &op);
  return op;
}

static void accumulate(Run *r, uint32_t k, const UOp *u, const uint32_t *src, uint32_t nsrc) {
  Op op = reduce_op(u);
  uj_scalar s = (uj_scalar)u->dtype.scalar;
  for (unsigned lane = 0; lane < u->dtype.lanes; lane++) {
    uint64_t ab[2] = {nsrc == 4 ? W(r, src[2])[lane] : 0, nsrc == 4 ? W(r, src[3])[lane] : 0};
    W(r, k)[lane] = alu_reduce_step(op, s, W(r, src[0])[lane], W(r, src[1])[lane], nsrc == 4 ? ab : NULL);
  }
}

static bool more(const Run *r, uint32_t loop) {
  const UOp *range = r->l->items[loop].u;
  uint64_t args[3] = {W(r, loop)[0], W(r, lin_src(r->l, loop)[0])[0], 0};
  return alu_eval(UJ_OP_CMPLT, UJ_BOOL, (uj_scalar)range->dtype.scalar, args) != 0;
}

/* LOOP k: its index at its start, its PHIs at their first values; the
 * next item to run. */
static uint32_t loop_enter(Run *r, uint32_t k) {
  const uint32_t *src = lin_src(r->l, k);
  W(r, k)[0] = r->l->items[k].nsrc > 1 ? W(r, src[1])[0] : 0;
  for (uint32_t p = k + 1; p < r->body[k]; p++) {
    const UOp *u = r->l->items[p].u;
    uint32_t init = lin_src(r->l, p)[1];
    for (unsigned lane = 0; lane < u->dtype.lanes; lane++)
      W(r, p)[lane] = init == LIN_NONE ? alu_identity(reduce_op(u), (uj_scalar)u->dtype.scalar) : W(r, init)[lane];
  }
  return more(r, k) ? r->body[k] : r->end[k] + 1;
}

/* ENDLOOP k: the PHIs take their next values, the index steps. */
static uint32_t loop_step(Run *r, uint32_t k) {
  const uint32_t *src = lin_src(r->l, k);
  uint32_t loop = src[0];
  for (uint32_t i = 1; i + 1 < r->l->items[k].nsrc; i += 2)
    memcpy(W(r, src[i]), W(r, src[i + 1]), r->l->items[src[i]].u->dtype.lanes * sizeof(uint64_t));
  const UOp *range = r->l->items[loop].u;
  uint64_t one[3] = {W(r, loop)[0], 1, 0};
  W(r, loop)[0] = alu_eval(UJ_OP_ADD, (uj_scalar)range->dtype.scalar, (uj_scalar)range->dtype.scalar, one);
  return more(r, loop) ? r->body[loop] : k + 1;
}

static bool run(Run *r) {
  const Linear *l = r->l;
  for (uint32_t k = 0; k < l->n;) {
    const LinItem *it = &l->items[k];
    const uint32_t *src = lin_src(l, k);
    switch ((LinKind)it->kind) {
    case LIN_VALUE:
      if (!value(r, k, it->u, src)) return false;
      k++;
      break;
    case LIN_LOOP: k = loop_enter(r, k); break;
    case LIN_PHI: k++; break; /* set by its LOOP */
    case LIN_ACC: accumulate(r, k, it->u, src, it->nsrc), k++; break;
    case LIN_ENDLOOP: k = loop_step(r, k); break;
    case LIN_STORE:
      if (!store(r, k, it->u, src)) return false;
      k++;
      break;
    case LIN_BARRIER:
      if (it->flags & LIN_WORKGROUP)
        return fail(r, k, "a BARRIER in a workgroup: the list is one thread's (the graph evaluator runs workgroups)", 0, 0);
      k++;
      break;
    }
  }
  return true;
}

bool eval_linear(Ctx *ctx, const Linear *l, const LinearArgs *args) {
  Run r = {.ctx = ctx, .l = l, .a = args};
  ctx_clear_error(ctx);
  bool ok = layout(&r);
  if (!ok && !ctx->error[0]) ctx_set_error(ctx, "eval_linear: out of memory");
  ok = ok && run(&r);
  for (size_t i = 0; i < r.nallocs; i++) free(r.allocs[i]);
  free(r.at), free(r.body), free(r.end), free(r.words), free(r.ptrs), free(r.allocs);
  return ok;
}
