/* values.c — values of one scalar dtype between the text form and memory.
 *
 * In: a value as a CONST literal of the text form ("1.5", "0x1p-3", "-inf",
 * "nan", "true", "255"), or bytes in memory. Out: the bytes of the value,
 * or the values written as the text form prints CONSTs (floats shortest
 * round-trip: "0.1", "65504.0"). The literal is read by the library's own
 * parser and printed by its printer, so both follow docs/text-form.md.
 *
 * Memory layout (docs/semantics.md): bool one byte (nonzero is true), ints
 * two's complement little endian, floats their IEEE bits little endian.
 * The library keeps a value as a "word": floats as a double that the dtype
 * holds exactly, which the float16 helpers below turn into bits and back
 * without rounding. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tool.h"

/* Bytes of one scalar in memory, by uj_scalar. */
static const unsigned char scalar_bytes[] = {
    [UJ_VOID] = 0,    [UJ_BOOL] = 1,     [UJ_INT8] = 1,    [UJ_INT16] = 2,   [UJ_INT32] = 4,
    [UJ_INT64] = 8,   [UJ_UINT8] = 1,    [UJ_UINT16] = 2,  [UJ_UINT32] = 4,  [UJ_UINT64] = 8,
    [UJ_FLOAT16] = 2, [UJ_BFLOAT16] = 2, [UJ_FLOAT32] = 4, [UJ_FLOAT64] = 8,
};
_Static_assert(sizeof scalar_bytes == UJ_SCALAR_COUNT, "scalar_bytes: one entry per uj_scalar");

size_t value_size(uj_scalar s) { return (unsigned)s < UJ_SCALAR_COUNT ? scalar_bytes[s] : 0; }

static bool scalar_signed(uj_scalar s) { return s >= UJ_INT8 && s <= UJ_INT64; }

/* ---- float16 and bfloat16 bits of values they hold exactly ---- */

static uint64_t half_bits(double d) {
  uint64_t sign = signbit(d) ? 0x8000u : 0;
  double a = fabs(d);
  int e;
  if (isnan(d)) return 0x7e00u;
  if (isinf(d)) return sign | 0x7c00u;
  if (a < 0x1p-14) return sign | (uint64_t)(a * 0x1p24); /* subnormal or zero */
  double m = frexp(a, &e);                               /* a = m 2^e, m in [0.5, 1) */
  return sign | (uint64_t)(e + 14) << 10 | (uint64_t)((m * 2 - 1) * 1024);
}

static double half_value(uint64_t b) {
  int e = (int)(b >> 10) & 31;
  double m = (double)(b & 1023), sign = b & 0x8000u ? -1.0 : 1.0;
  if (e == 31) return m != 0 ? NAN : sign * INFINITY;
  return sign * (e ? ldexp(m + 1024, e - 25) : ldexp(m, -24));
}

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

/* ---- words and memory ---- */

/* The bits in memory of a word of s. */
static uint64_t word_to_bits(uj_scalar s, uint64_t w) {
  double d;
  memcpy(&d, &w, sizeof d);
  switch (s) {
  case UJ_BOOL: return w != 0;
  case UJ_FLOAT16: return half_bits(d);
  case UJ_BFLOAT16: return isnan(d) ? 0x7fc0u : float_bits((float)d) >> 16;
  case UJ_FLOAT32: return isnan(d) ? 0x7fc00000u : float_bits((float)d);
  default: return w; /* ints: the low bytes; float64: the double's bits */
  }
}

/* A CONST node of s with the value of the bits in memory. */
static const uj_uop *bits_to_const(uj_ctx *ctx, uj_scalar s, uint64_t b) {
  uj_dtype dt = uj_dtype_scalar(s);
  unsigned width = 8 * (unsigned)value_size(s);
  double d;
  switch (s) {
  case UJ_BOOL: return uj_const_bool(ctx, (b & 0xff) != 0);
  case UJ_FLOAT16: return uj_const_float(ctx, dt, half_value(b));
  case UJ_BFLOAT16: return uj_const_float(ctx, dt, bits_float((uint32_t)b << 16));
  case UJ_FLOAT32: return uj_const_float(ctx, dt, bits_float((uint32_t)b));
  case UJ_FLOAT64: return memcpy(&d, &b, sizeof d), uj_const_float(ctx, dt, d);
  default:
    if (scalar_signed(s) && width < 64 && (b >> (width - 1) & 1)) b |= ~0ull << width;
    return uj_const_int(ctx, dt, (int64_t)b);
  }
}

static void bits_store(uint64_t b, unsigned char *mem, size_t size) {
  for (size_t i = 0; i < size; i++) mem[i] = (unsigned char)(b >> (8 * i));
}

static uint64_t bits_load(const unsigned char *mem, size_t size) {
  uint64_t b = 0;
  for (size_t i = 0; i < size; i++) b |= (uint64_t)mem[i] << (8 * i);
  return b;
}

/* ---- text ---- */

bool value_parse(uj_ctx *ctx, uj_scalar s, const char *token, void *mem, char *why, size_t size) {
  char dt[32], text[128];
  size_t n = strlen(token);
  uj_dtype_name(uj_dtype_scalar(s), dt, sizeof dt);
  if (n == 0 || n > 64 || token[strcspn(token, " \t\r\n\v\f()=:;%\"")] != '\0') {
    if (n == 0) snprintf(why, size, "empty");
    else snprintf(why, size, "'%.20s%s' is not a %s value", token, n > 20 ? "..." : "", dt);
    return false;
  }
  snprintf(text, sizeof text, "(CONST:%s %s)", dt, token);
  const uj_uop *c = uj_parse(ctx, text, "value");
  if (!c) { /* "value:1:COL: CONST: what": keep what */
    const char *msg = strstr(uj_error(ctx), ": ");
    msg = msg ? msg + 2 : uj_error(ctx);
    snprintf(why, size, "%s", strncmp(msg, "CONST: ", 7) ? msg : msg + 7);
    return false;
  }
  bits_store(word_to_bits(s, (uint64_t)uj_uop_arg(c).ints[0]), mem, value_size(s));
  return true;
}

/* Writes the values of the CONSTs in text ("(SINK (CONST:T v) ...)"). */
static bool print_consts(const char *text, FILE *f) {
  bool first = true;
  for (const char *p = strstr(text, "(CONST:"); p; p = strstr(p, "(CONST:")) {
    p += strcspn(p, " ") + 1;
    size_t n = strcspn(p, ")");
    if (fprintf(f, "%s%.*s", first ? "" : ",", (int)n, p) < 0) return false;
    p += n, first = false;
  }
  return true;
}

bool value_print(uj_ctx *ctx, uj_scalar s, const void *mem, size_t n, FILE *f) {
  const unsigned char *bytes = mem;
  size_t size = value_size(s);
  const uj_uop **consts = malloc((n ? n : 1) * sizeof *consts);
  bool ok = consts != NULL;
  for (size_t i = 0; ok && i < n; i++)
    ok = (consts[i] = bits_to_const(ctx, s, bits_load(bytes + i * size, size)));
  /* one SINK of them all, printed once: the printer writes CONSTs inline */
  const uj_uop *sink =
      ok ? uj_uop_new(ctx, UJ_OP_SINK, uj_dtype_scalar(UJ_VOID), consts, n, (uj_arg){0}) : NULL;
  char *text = sink ? uj_print(ctx, sink) : NULL;
  ok = text && print_consts(text, f);
  if (!text) report("cannot print values: %s", uj_error(ctx));
  free(text);
  free(consts);
  return ok;
}
