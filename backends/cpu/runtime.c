/* runtime.c — functions that JIT-compiled code calls: LLVM lowers float
 * conversions to bfloat16 to __truncsfbf2 / __truncdfbf2, which libgcc 12
 * does not have. Both round to nearest even, as docs/semantics.md says.
 *
 * ABI: the bfloat16 result travels in the low 16 bits of the first float
 * return register (x86-64 SysV xmm0), so it is returned here as a float
 * whose bit pattern has the bfloat16 in its low half. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <llvm-c/LLJIT.h>

#include "cpu/jit.h"

static uint32_t float_bits(float f) {
  uint32_t b;
  memcpy(&b, &f, sizeof b);
  return b;
}

static float bits_float(uint32_t b) {
  float f;
  memcpy(&f, &b, sizeof f);
  return f;
}

/* float32 bits to bfloat16, round to nearest even; NaN stays NaN. */
static uint16_t bf16_round(uint32_t b) {
  if ((b & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((b >> 16) | 0x0040u);
  return (uint16_t)((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

static float uj_rt_truncsfbf2(float x) { return bits_float(bf16_round(float_bits(x))); }

/* double to float32 rounded to odd, then to bfloat16 to nearest even: one
 * correct rounding (float32 has more than 2 x 8 + 2 bits). */
static float uj_rt_truncdfbf2(double x) {
  float f = (float)x;
  if (!isnan(x) && (double)f != x) {
    uint32_t b = float_bits(f);
    if (fabs((double)f) > fabs(x)) b -= 1; /* toward zero */
    f = bits_float(b | 1u);
  }
  return bits_float(bf16_round(float_bits(f)));
}

bool cpu_runtime_define(Ctx *ctx, LLVMOrcLLJITRef jit, LLVMOrcJITDylibRef dylib) {
  static const struct {
    const char *name;
    void *fn;
  } table[] = {{"__truncsfbf2", (void *)uj_rt_truncsfbf2}, {"__truncdfbf2", (void *)uj_rt_truncdfbf2}};
  enum { N = sizeof table / sizeof *table };
  LLVMOrcCSymbolMapPair pairs[N];
  for (size_t i = 0; i < N; i++) {
    pairs[i].Name = LLVMOrcLLJITMangleAndIntern(jit, table[i].name);
    pairs[i].Sym.Address = (LLVMOrcExecutorAddress)(uintptr_t)table[i].fn;
    pairs[i].Sym.Flags.GenericFlags = LLVMJITSymbolGenericFlagsExported | LLVMJITSymbolGenericFlagsCallable;
    pairs[i].Sym.Flags.TargetFlags = 0;
  }
  LLVMOrcMaterializationUnitRef mu = LLVMOrcAbsoluteSymbols(pairs, N);
  LLVMErrorRef err = LLVMOrcJITDylibDefine(dylib, mu); /* takes mu only on success */
  if (!err) return true;
  LLVMOrcDisposeMaterializationUnit(mu);
  char *msg = LLVMGetErrorMessage(err);
  ctx_set_error(ctx, "cpu: cannot define the runtime symbols: %s", msg);
  LLVMDisposeErrorMessage(msg);
  return false;
}
