/* dtype.c — the dtype table and the dtype text form.
 *
 * In: scalar kinds, lanes, address spaces (uj_dtype). Out: names such as
 * "float32", "int32x4", "float32*" (a global pointer), "float16x8*local",
 * and the parse of those names, with the aliases of docs/text-form.md. */
#include <stdio.h>
#include <string.h>

#include "uop/uop.h"

const ScalarInfo scalar_table[UJ_SCALAR_COUNT] = {
  [UJ_VOID] = {"void", 0, false, false, false},
  [UJ_BOOL] = {"bool", 1, false, false, false},
  [UJ_INT8] = {"int8", 8, true, true, false},
  [UJ_INT16] = {"int16", 16, true, true, false},
  [UJ_INT32] = {"int32", 32, true, true, false},
  [UJ_INT64] = {"int64", 64, true, true, false},
  [UJ_UINT8] = {"uint8", 8, true, false, false},
  [UJ_UINT16] = {"uint16", 16, true, false, false},
  [UJ_UINT32] = {"uint32", 32, true, false, false},
  [UJ_UINT64] = {"uint64", 64, true, false, false},
  [UJ_FLOAT16] = {"float16", 16, false, true, true},
  [UJ_BFLOAT16] = {"bfloat16", 16, false, true, true},
  [UJ_FLOAT32] = {"float32", 32, false, true, true},
  [UJ_FLOAT64] = {"float64", 64, false, true, true},
};

static const char *const space_names[UJ_AS_COUNT] = {
  [UJ_AS_NONE] = "", [UJ_AS_GLOBAL] = "", [UJ_AS_LOCAL] = "local",
  [UJ_AS_REG] = "reg",
};

static const struct { const char *alias; uj_scalar scalar; } scalar_aliases[] = {
  {"int", UJ_INT32},     {"uint", UJ_UINT32},     {"long", UJ_INT64},
  {"ulong", UJ_UINT64},  {"char", UJ_INT8},       {"uchar", UJ_UINT8},
  {"short", UJ_INT16},   {"ushort", UJ_UINT16},   {"half", UJ_FLOAT16},
  {"float", UJ_FLOAT32}, {"double", UJ_FLOAT64},
};

static bool scalar_parse(const char *s, size_t len, uj_scalar *out) {
  for (int i = 0; i < UJ_SCALAR_COUNT; i++) {
    const char *name = scalar_table[i].name;
    if (strlen(name) == len && memcmp(name, s, len) == 0) {
      *out = (uj_scalar)i;
      return true;
    }
  }
  for (size_t i = 0; i < sizeof scalar_aliases / sizeof *scalar_aliases; i++) {
    const char *name = scalar_aliases[i].alias;
    if (strlen(name) == len && memcmp(name, s, len) == 0) {
      *out = scalar_aliases[i].scalar;
      return true;
    }
  }
  return false;
}

static bool space_parse(const char *s, size_t len, uj_addrspace *out) {
  if (len == 0 || (len == 6 && memcmp(s, "global", 6) == 0)) {
    *out = UJ_AS_GLOBAL;
    return true;
  }
  for (int i = UJ_AS_LOCAL; i < UJ_AS_COUNT; i++) {
    if (strlen(space_names[i]) == len && memcmp(space_names[i], s, len) == 0) {
      *out = (uj_addrspace)i;
      return true;
    }
  }
  return false;
}

/* Splits "SCALAR[xLANES]" at the last 'x' followed only by digits. */
static size_t lanes_split(const char *s, size_t len, unsigned *lanes) {
  size_t i = len;
  while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') i--;
  *lanes = 1;
  if (i == len || i < 2 || s[i - 1] != 'x' || len - i > 5) return len;
  unsigned v = 0;
  for (size_t k = i; k < len; k++) v = v * 10 + (unsigned)(s[k] - '0');
  *lanes = v;
  return i - 1;
}

bool dtype_parse(const char *s, size_t len, DType *out) {
  const char *star = memchr(s, '*', len);
  size_t vlen = star ? (size_t)(star - s) : len;
  uj_addrspace space = UJ_AS_NONE;
  if (star && !space_parse(star + 1, len - vlen - 1, &space)) return false;
  unsigned lanes;
  size_t slen = lanes_split(s, vlen, &lanes);
  uj_scalar scalar;
  if (!scalar_parse(s, slen, &scalar)) return false;
  if (lanes < 1 || lanes > 65535 || (scalar == UJ_VOID && (lanes > 1 || !star)))
    return false;
  *out = (DType){(uint8_t)scalar, (uint8_t)space, (uint16_t)lanes};
  return true;
}

const char *dtype_str(DType d, char *buf, size_t size) {
  const char *name = d.scalar < UJ_SCALAR_COUNT ? scalar_table[d.scalar].name : "?";
  int n = d.lanes > 1 ? snprintf(buf, size, "%sx%u", name, (unsigned)d.lanes)
                      : snprintf(buf, size, "%s", name);
  if (dt_is_ptr(d) && n >= 0 && (size_t)n < size)
    snprintf(buf + n, size - (size_t)n, "*%s",
             d.space < UJ_AS_COUNT ? space_names[d.space] : "?");
  return buf;
}

/* ---- public wrappers ---- */
uj_dtype uj_dtype_scalar(uj_scalar s) { return dt_scalar(s); }
uj_dtype uj_dtype_vec(uj_scalar s, unsigned lanes) {
  return (DType){(uint8_t)s, UJ_AS_NONE, (uint16_t)lanes};
}
uj_dtype uj_dtype_ptr(uj_scalar s, unsigned lanes, uj_addrspace space) {
  return (DType){(uint8_t)s, (uint8_t)space, (uint16_t)lanes};
}
bool uj_dtype_eq(uj_dtype a, uj_dtype b) { return dt_eq(a, b); }
const char *uj_dtype_name(uj_dtype d, char *buf, size_t size) {
  return dtype_str(d, buf, size);
}
