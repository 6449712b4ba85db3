/* render_alu.c — the value ops of the renderer: constants, ALU ops, CAST
 * and BITCAST, exactly as docs/semantics.md defines them.
 *
 * In: an ALU node and the LLVM values of its sources. Out: its LLVM value.
 * Where LLVM IR leaves a case undefined, the IR of the semantics is built
 * around it: division and modulo guard their divisor (x/0 = all ones,
 * x%0 = x, MIN/-1 = MIN), shift counts are masked to the width, float-to-int
 * casts saturate (llvm.fpto[su]i.sat, NaN to 0), float MAX is
 * llvm.maximum (NaN wins, -0 < +0), MULACC is one fused rounding (float16
 * and bfloat16 go through double, as the evaluator does), and BITCAST of a
 * NaN gives the canonical NaN's bits. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "llvm/render.h"
#include "uop/alu.h"

LLVMTypeRef render_type(const Renderer *r, DType d) {
  LLVMTypeRef t;
  switch ((uj_scalar)d.scalar) {
  case UJ_BOOL: t = LLVMInt1TypeInContext(r->lc); break;
  case UJ_FLOAT16: t = LLVMHalfTypeInContext(r->lc); break;
  case UJ_BFLOAT16: t = LLVMBFloatTypeInContext(r->lc); break;
  case UJ_FLOAT32: t = LLVMFloatTypeInContext(r->lc); break;
  case UJ_FLOAT64: t = LLVMDoubleTypeInContext(r->lc); break;
  default: t = LLVMIntTypeInContext(r->lc, dt_bits(d)); break;
  }
  return d.lanes > 1 ? LLVMVectorType(t, d.lanes) : t;
}

LLVMTypeRef render_mem_type(const Renderer *r, DType d) {
  if (d.scalar != UJ_BOOL) return render_type(r, dt_base(d));
  LLVMTypeRef byte = LLVMInt8TypeInContext(r->lc);
  return d.lanes > 1 ? LLVMVectorType(byte, d.lanes) : byte;
}

LLVMValueRef render_const(const Renderer *r, DType d, uint64_t word) {
  LLVMTypeRef t = render_type(r, dt_lane(d));
  double f;
  memcpy(&f, &word, sizeof f); /* a float word is a double's bits (alu.h) */
  LLVMValueRef c = dt_is_float(d) ? LLVMConstReal(t, f) : LLVMConstInt(t, word, 0);
  if (d.lanes == 1) return c;
  LLVMValueRef lanes[d.lanes];
  for (unsigned i = 0; i < d.lanes; i++) lanes[i] = c;
  return LLVMConstVector(lanes, d.lanes);
}

LLVMValueRef render_intrinsic(const Renderer *r, const char *name, LLVMTypeRef *over, unsigned nover,
                              LLVMValueRef *args, unsigned nargs) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef fn = LLVMGetIntrinsicDeclaration(r->mod, id, over, nover);
  LLVMTypeRef ty = LLVMIntrinsicGetType(r->lc, id, over, nover);
  return LLVMBuildCall2(r->b, ty, fn, args, nargs, "");
}

/* An int constant of dtype d (splat for vectors): v wrapped to the width. */
static LLVMValueRef int_const(const Renderer *r, DType d, int64_t v) {
  return render_const(r, d, word_from_int((uj_scalar)d.scalar, v));
}

static LLVMValueRef call1(const Renderer *r, const char *name, DType d, LLVMValueRef x) {
  LLVMTypeRef t = render_type(r, d);
  return render_intrinsic(r, name, &t, 1, &x, 1);
}

/* IDIV and MOD with the guarded divisor: x/0 = all ones, x%0 = x,
 * MIN/-1 = MIN (= 0 - MIN), MIN%-1 = 0; no guard where the divisor's
 * bounds say it is at least 1. */
static LLVMValueRef alu_divmod(const Renderer *r, const UOp *u, LLVMValueRef a, LLVMValueRef b) {
  DType d = u->dtype;
  bool is_signed = dt_is_signed(d);
  LLVMBuilderRef B = r->b;
  if (u->src[1]->bounded && u->src[1]->vmin >= 1) {
    if (u->op == UJ_OP_MOD) return is_signed ? LLVMBuildSRem(B, a, b, "") : LLVMBuildURem(B, a, b, "");
    return is_signed ? LLVMBuildSDiv(B, a, b, "") : LLVMBuildUDiv(B, a, b, "");
  }
  LLVMValueRef by_zero = LLVMBuildICmp(B, LLVMIntEQ, b, int_const(r, d, 0), "");
  LLVMValueRef by_minus1 = is_signed ? LLVMBuildICmp(B, LLVMIntEQ, b, int_const(r, d, -1), "") : NULL;
  LLVMValueRef bad = is_signed ? LLVMBuildOr(B, by_zero, by_minus1, "") : by_zero;
  LLVMValueRef safe = LLVMBuildSelect(B, bad, int_const(r, d, 1), b, "");
  if (u->op == UJ_OP_MOD) {
    LLVMValueRef m = is_signed ? LLVMBuildSRem(B, a, safe, "") : LLVMBuildURem(B, a, safe, "");
    return LLVMBuildSelect(B, by_zero, a, m, "");
  }
  LLVMValueRef q = is_signed ? LLVMBuildSDiv(B, a, safe, "") : LLVMBuildUDiv(B, a, safe, "");
  if (is_signed) q = LLVMBuildSelect(B, by_minus1, LLVMBuildNeg(B, a, ""), q, "");
  return LLVMBuildSelect(B, by_zero, int_const(r, d, -1), q, "");
}

static LLVMValueRef alu_shift(const Renderer *r, const UOp *u, LLVMValueRef a, LLVMValueRef b) {
  LLVMValueRef count = LLVMBuildAnd(r->b, b, int_const(r, u->dtype, dt_bits(u->dtype) - 1), "");
  if (u->op == UJ_OP_SHL) return LLVMBuildShl(r->b, a, count, "");
  return dt_is_signed(u->dtype) ? LLVMBuildAShr(r->b, a, count, "") : LLVMBuildLShr(r->b, a, count, "");
}

static LLVMValueRef alu_compare(const Renderer *r, const UOp *u, LLVMValueRef a, LLVMValueRef b) {
  DType d = u->src[0]->dtype;
  if (dt_is_float(d)) {
    LLVMRealPredicate p = u->op == UJ_OP_CMPLT ? LLVMRealOLT : u->op == UJ_OP_CMPEQ ? LLVMRealOEQ : LLVMRealUNE;
    return LLVMBuildFCmp(r->b, p, a, b, "");
  }
  LLVMIntPredicate lt = dt_is_signed(d) ? LLVMIntSLT : LLVMIntULT; /* bool: false < true */
  LLVMIntPredicate p = u->op == UJ_OP_CMPLT ? lt : u->op == UJ_OP_CMPEQ ? LLVMIntEQ : LLVMIntNE;
  return LLVMBuildICmp(r->b, p, a, b, "");
}

/* float16/bfloat16 widened to float32 (exact) where LLVM 19's x86
 * lowering of the narrow type is wrong: fptosi.sat from f16 with
 * AVX512-FP16 gives MIN for NaN (MAX: alu_max_narrow). */
static LLVMValueRef widen(const Renderer *r, LLVMValueRef x, DType d, uj_scalar via);
static LLVMValueRef narrow(const Renderer *r, LLVMValueRef x, DType d, uj_scalar via);

/* MAX of float16 / bfloat16 without llvm.maximum: LLVM 19 turns
 * fptrunc(maximum(fpext a, fpext b)) back into maximum.f16, whose x86
 * vector lowering loses NaNs (<2 x half> .. <32 x half>, every CPU; the
 * bf16 one even as a scalar). So: NaN if either is NaN (unordered), else
 * the greater, else (equal) the AND of their bits: +0 over -0, and x for
 * x = x. The compares are exact on the widened float32 values. */
static LLVMValueRef alu_max_narrow(const Renderer *r, DType d, LLVMValueRef a, LLVMValueRef b) {
  LLVMBuilderRef B = r->b;
  LLVMValueRef wa = widen(r, a, d, UJ_FLOAT32), wb = widen(r, b, d, UJ_FLOAT32);
  LLVMTypeRef bits = render_type(r, dt_with_scalar(d, UJ_UINT16)), t = render_type(r, d);
  LLVMValueRef both = LLVMBuildAnd(B, LLVMBuildBitCast(B, a, bits, ""), LLVMBuildBitCast(B, b, bits, ""), "");
  LLVMValueRef m = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOLT, wa, wb, ""), b, LLVMBuildBitCast(B, both, t, ""), "");
  m = LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealOGT, wa, wb, ""), a, m, "");
  return LLVMBuildSelect(B, LLVMBuildFCmp(B, LLVMRealUNO, wa, wb, ""), render_const(r, d, word_from_double(UJ_FLOAT32, NAN)), m, "");
}

static LLVMValueRef alu_max(const Renderer *r, DType d, LLVMValueRef a, LLVMValueRef b) {
  if (dt_is_bool(d)) return LLVMBuildOr(r->b, a, b, "");
  if (!dt_is_float(d)) {
    LLVMTypeRef t = render_type(r, d);
    return render_intrinsic(r, dt_is_signed(d) ? "llvm.smax" : "llvm.umax", &t, 1, (LLVMValueRef[]){a, b}, 2);
  }
  if (dt_bits(d) == 16) return alu_max_narrow(r, d, a, b);
  LLVMTypeRef t = render_type(r, d);
  return render_intrinsic(r, "llvm.maximum", &t, 1, (LLVMValueRef[]){a, b}, 2);
}

/* float16 and bfloat16 round-trip through `via` for ops LLVM cannot do in
 * them directly (fused MULACC through double, libm functions through float). */
static LLVMValueRef widen(const Renderer *r, LLVMValueRef x, DType d, uj_scalar via) {
  DType w = dt_with_scalar(d, via);
  return d.scalar == via ? x : LLVMBuildFPExt(r->b, x, render_type(r, w), "");
}
static LLVMValueRef narrow(const Renderer *r, LLVMValueRef x, DType d, uj_scalar via) {
  return d.scalar == via ? x : LLVMBuildFPTrunc(r->b, x, render_type(r, d), "");
}

static LLVMValueRef alu_mulacc(const Renderer *r, const UOp *u, LLVMValueRef *s) {
  DType d = u->dtype;
  if (!dt_is_float(d)) return LLVMBuildAdd(r->b, LLVMBuildMul(r->b, s[0], s[1], ""), s[2], "");
  uj_scalar via = d.scalar == UJ_FLOAT32 ? UJ_FLOAT32 : UJ_FLOAT64;
  DType w = dt_with_scalar(d, via);
  LLVMValueRef args[3] = {widen(r, s[0], d, via), widen(r, s[1], d, via), widen(r, s[2], d, via)};
  LLVMTypeRef t = render_type(r, w);
  return narrow(r, render_intrinsic(r, "llvm.fma", &t, 1, args, 3), d, via);
}

/* EXP2, LOG2, SIN: llvm.exp2/log2/sin (libm on the CPU) in float32 or
 * float64, float16/bfloat16 widened to float32 as the evaluator does. What
 * the target has no function for the pipeline lowered first (hooks.c). */
static LLVMValueRef alu_transcendental(const Renderer *r, const UOp *u, LLVMValueRef x) {
  DType d = u->dtype;
  if (!(r->h->libm_scalars & (1u << d.scalar))) {
    char dt[32];
    ctx_set_error(r->ctx, "render: %s of %s on %s must be lowered first", op_table[u->op].name,
                  dtype_str(d, dt, sizeof dt), target_kind_names[r->t->kind]);
    return NULL;
  }
  const char *name = u->op == UJ_OP_EXP2 ? "llvm.exp2" : u->op == UJ_OP_LOG2 ? "llvm.log2" : "llvm.sin";
  uj_scalar via = d.scalar == UJ_FLOAT64 ? UJ_FLOAT64 : UJ_FLOAT32;
  return narrow(r, call1(r, name, dt_with_scalar(d, via), widen(r, x, d, via)), d, via);
}

/* ---- CAST and BITCAST ---- */

static LLVMValueRef cast_from_bool(const Renderer *r, LLVMValueRef x, DType to) {
  LLVMTypeRef t = render_type(r, to);
  return dt_is_float(to) ? LLVMBuildUIToFP(r->b, x, t, "") : LLVMBuildZExt(r->b, x, t, "");
}

static LLVMValueRef cast_to_bool(const Renderer *r, LLVMValueRef x, DType from) {
  LLVMValueRef zero = LLVMConstNull(render_type(r, from));
  if (dt_is_float(from)) return LLVMBuildFCmp(r->b, LLVMRealUNE, x, zero, ""); /* NaN: true */
  return LLVMBuildICmp(r->b, LLVMIntNE, x, zero, "");
}

static LLVMValueRef cast_int_to_float(const Renderer *r, LLVMValueRef x, DType from, DType to) {
  /* bfloat16 through double, like the evaluator: LLVM would round through
   * float32 and round twice for ints above 2^24 */
  DType mid = to.scalar == UJ_BFLOAT16 ? dt_with_scalar(to, UJ_FLOAT64) : to;
  LLVMTypeRef t = render_type(r, mid);
  LLVMValueRef f = dt_is_signed(from) ? LLVMBuildSIToFP(r->b, x, t, "") : LLVMBuildUIToFP(r->b, x, t, "");
  return narrow(r, f, to, (uj_scalar)mid.scalar);
}

static LLVMValueRef cast_float_to_float(const Renderer *r, LLVMValueRef x, DType from, DType to) {
  if (dt_bits(from) == dt_bits(to)) { /* float16 <-> bfloat16: exact through float32 */
    x = widen(r, x, from, UJ_FLOAT32);
    return narrow(r, x, to, UJ_FLOAT32);
  }
  LLVMTypeRef t = render_type(r, to);
  return dt_bits(from) < dt_bits(to) ? LLVMBuildFPExt(r->b, x, t, "") : LLVMBuildFPTrunc(r->b, x, t, "");
}

static LLVMValueRef cast_float_to_int(const Renderer *r, LLVMValueRef x, DType from, DType to) {
  if (dt_bits(from) == 16) x = widen(r, x, from, UJ_FLOAT32), from = dt_with_scalar(from, UJ_FLOAT32);
  LLVMTypeRef over[2] = {render_type(r, to), render_type(r, from)};
  return render_intrinsic(r, dt_is_signed(to) ? "llvm.fptosi.sat" : "llvm.fptoui.sat", over, 2, &x, 1);
}

static LLVMValueRef cast_int_to_int(const Renderer *r, LLVMValueRef x, DType from, DType to) {
  LLVMTypeRef t = render_type(r, to);
  if (dt_bits(from) == dt_bits(to)) return x;
  if (dt_bits(from) > dt_bits(to)) return LLVMBuildTrunc(r->b, x, t, "");
  return dt_is_signed(from) ? LLVMBuildSExt(r->b, x, t, "") : LLVMBuildZExt(r->b, x, t, "");
}

static LLVMValueRef alu_cast(const Renderer *r, const UOp *u, LLVMValueRef x) {
  DType from = u->src[0]->dtype, to = u->dtype;
  if (dt_eq(from, to)) return x;
  if (dt_is_bool(from)) return cast_from_bool(r, x, to);
  if (dt_is_bool(to)) return cast_to_bool(r, x, from);
  if (dt_is_int(from)) return dt_is_int(to) ? cast_int_to_int(r, x, from, to) : cast_int_to_float(r, x, from, to);
  return dt_is_int(to) ? cast_float_to_int(r, x, from, to) : cast_float_to_float(r, x, from, to);
}

static LLVMValueRef alu_bitcast(const Renderer *r, const UOp *u, LLVMValueRef x) {
  DType from = u->src[0]->dtype;
  if (dt_is_float(from)) { /* any NaN has the canonical NaN's bits */
    LLVMValueRef nan = render_const(r, from, word_normalize((uj_scalar)from.scalar, 0x7ff8000000000000ull));
    LLVMValueRef is_nan = LLVMBuildFCmp(r->b, LLVMRealUNO, x, x, "");
    x = LLVMBuildSelect(r->b, is_nan, nan, x, "");
  }
  return LLVMBuildBitCast(r->b, x, render_type(r, u->dtype), "");
}

/* ---- the dispatcher ---- */

static LLVMValueRef alu_arith(const Renderer *r, Op op, DType d, LLVMValueRef a, LLVMValueRef b) {
  bool f = dt_is_float(d);
  LLVMBuilderRef B = r->b;
  switch (op) {
  case UJ_OP_ADD: return f ? LLVMBuildFAdd(B, a, b, "") : LLVMBuildAdd(B, a, b, "");
  case UJ_OP_SUB: return f ? LLVMBuildFSub(B, a, b, "") : LLVMBuildSub(B, a, b, "");
  case UJ_OP_MUL: return f ? LLVMBuildFMul(B, a, b, "") : LLVMBuildMul(B, a, b, "");
  case UJ_OP_FDIV: return LLVMBuildFDiv(B, a, b, "");
  case UJ_OP_AND: return LLVMBuildAnd(B, a, b, "");
  case UJ_OP_OR: return LLVMBuildOr(B, a, b, "");
  case UJ_OP_XOR: return LLVMBuildXor(B, a, b, "");
  default: return NULL;
  }
}

/* The exact range of an integer ADD, SUB or MUL of bounded sources, or
 * false (too wide for 128 bits cannot happen: sources are int64). */
static bool exact_range(const UOp *u, __int128 *lo, __int128 *hi) {
  const UOp *a = u->src[0], *b = u->src[1];
  if (!a->bounded || !b->bounded) return false;
  __int128 al = a->vmin, ah = a->vmax, bl = b->vmin, bh = b->vmax;
  switch (u->op) {
  case UJ_OP_ADD: *lo = al + bl, *hi = ah + bh; return true;
  case UJ_OP_SUB: *lo = al - bh, *hi = ah - bl; return true;
  case UJ_OP_MUL: {
    __int128 p[4] = {al * bl, al * bh, ah * bl, ah * bh};
    *lo = *hi = p[0];
    for (int i = 1; i < 4; i++) *lo = p[i] < *lo ? p[i] : *lo, *hi = p[i] > *hi ? p[i] : *hi;
    return true;
  }
  default: return false;
  }
}

/* nsw / nuw on an integer ADD, SUB or MUL whose sources' bounds show it
 * cannot wrap: a promise that holds, which lets LLVM see that lane i + 1
 * of an index is the next element (contiguous vector loads, not gathers). */
static void no_wrap_flags(const UOp *u, LLVMValueRef v) {
  __int128 lo, hi;
  if (!LLVMIsAInstruction(v) || !dt_is_int(u->dtype) || u->dtype.lanes != 1 || !exact_range(u, &lo, &hi)) return;
  unsigned bits = dt_bits(u->dtype);
  bool sign = dt_is_signed(u->dtype);
  __int128 smin = -((__int128)1 << (bits - 1)), smax = ((__int128)1 << (bits - 1)) - 1, umax = ((__int128)1 << bits) - 1;
  bool operands_nonneg = u->src[0]->vmin >= 0 && u->src[1]->vmin >= 0;
  if (sign && lo >= smin && hi <= smax) LLVMSetNSW(v, 1);
  if (lo >= 0 && hi <= (sign ? smax : umax) && (!sign || operands_nonneg)) LLVMSetNUW(v, 1);
}

LLVMValueRef render_alu(const Renderer *r, const UOp *u, LLVMValueRef *s) {
  DType d = u->dtype;
  switch (u->op) {
  case UJ_OP_NEG: return dt_is_float(d) ? LLVMBuildFNeg(r->b, s[0], "") : LLVMBuildNeg(r->b, s[0], "");
  case UJ_OP_RECIP: return LLVMBuildFDiv(r->b, render_const(r, d, word_from_double((uj_scalar)d.scalar, 1.0)), s[0], "");
  case UJ_OP_SQRT: return call1(r, "llvm.sqrt", d, s[0]);
  case UJ_OP_EXP2:
  case UJ_OP_LOG2:
  case UJ_OP_SIN: return alu_transcendental(r, u, s[0]);
  case UJ_OP_CAST: return alu_cast(r, u, s[0]);
  case UJ_OP_BITCAST: return alu_bitcast(r, u, s[0]);
  case UJ_OP_IDIV:
  case UJ_OP_MOD: return alu_divmod(r, u, s[0], s[1]);
  case UJ_OP_SHL:
  case UJ_OP_SHR: return alu_shift(r, u, s[0], s[1]);
  case UJ_OP_CMPLT:
  case UJ_OP_CMPNE:
  case UJ_OP_CMPEQ: return alu_compare(r, u, s[0], s[1]);
  case UJ_OP_MAX: return alu_max(r, d, s[0], s[1]);
  case UJ_OP_WHERE: return LLVMBuildSelect(r->b, s[0], s[1], s[2], "");
  case UJ_OP_MULACC: return alu_mulacc(r, u, s);
  default: break;
  }
  LLVMValueRef v = u->nsrc == 2 ? alu_arith(r, (Op)u->op, d, s[0], s[1]) : NULL;
  if (!v) ctx_set_error(r->ctx, "render: %s is not an ALU op the renderer knows", op_table[u->op].name);
  else no_wrap_flags(u, v);
  return v;
}

LLVMValueRef render_accumulate(const Renderer *r, const UOp *reduce, Op op, LLVMValueRef acc, LLVMValueRef v,
                               const LLVMValueRef *ab) {
  DType d = reduce->dtype;
  if (op == UJ_OP_MULACC && ab) return alu_mulacc(r, reduce, (LLVMValueRef[]){ab[0], ab[1], acc});
  if (op == UJ_OP_MAX) return alu_max(r, d, acc, v);
  return alu_arith(r, op == UJ_OP_MULACC ? UJ_OP_ADD : op, d, acc, v);
}
