/* lang_print.c — printing values: numbers as Python writes them, tensors
 * as NumPy's print(array) lays them out.
 *
 * In: a value. Out: text on L->out. A tensor is realized and copied to the
 * host (uj_tensor_to_host), then printed as a header line
 * `tensor(shape=(2, 3), dtype=float32)` and its values in nested brackets:
 * NumPy's layout (numpy/core/arrayprint.py, `str` of an array): elements
 * of one width, floats with at most 8 fractional digits (the fewest that
 * read back to the same value of the dtype, decimal points aligned), or
 * in scientific notation when the values span a large range; lines
 * wrapped at 75 columns; more than 1000 elements summarized as 3 items,
 * `...`, 3 items along each axis. */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lang.h"
#include "tool.h"

enum { LINE_WIDTH = 75, THRESHOLD = 1000, EDGE = 3, MAX_DIGITS = 8 };

/* ---- floats of each dtype ---- */

/* x rounded to the nearest value with `bits` significant bits whose
 * smallest step is 2^min_q (the subnormals), to inf above max. */
static double round_bits(double x, int bits, int min_q, double max) {
  if (!isfinite(x) || x == 0) return x;
  int e;
  frexp(fabs(x), &e);
  int q = e - bits < min_q ? min_q : e - bits;
  double r = ldexp(nearbyint(ldexp(x, -q)), q);
  return fabs(r) > max ? copysign(INFINITY, x) : r;
}

/* x as the nearest value of dtype dt, back in a double. */
static double round_to(uj_scalar dt, double x) {
  switch (dt) {
  case UJ_FLOAT16: return round_bits(x, 11, -24, 65504.0);
  case UJ_BFLOAT16: return round_bits(x, 8, -133, 3.3895313892515355e38);
  case UJ_FLOAT32: return (double)(float)x;
  default: return x;
  }
}

static double half_to_double(uint16_t h) {
  int exp = (h >> 10) & 0x1f, man = h & 0x3ff;
  double v = exp == 0 ? ldexp(man, -24) : exp == 31 ? (man ? NAN : INFINITY) : ldexp(man | 0x400, exp - 25);
  return h >> 15 ? -v : v;
}

static double bf16_to_double(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float f;
  memcpy(&f, &bits, sizeof f);
  return f;
}

/* ---- numbers as Python writes them ---- */

/* The fewest significant digits (1..17) that read back to x in dt. */
static int repr_digits(double x, uj_scalar dt) {
  char buf[64];
  for (int p = 1; p < 17; p++) {
    snprintf(buf, sizeof buf, "%.*e", p - 1, x);
    if (round_to(dt, strtod(buf, NULL)) == x) return p;
  }
  return 17;
}

/* Python's repr of a float of dtype dt: 0.1, 3.0, 1e-05, 1.5e+16, inf. */
static const char *repr_float(double x, uj_scalar dt, char *buf, size_t size) {
  if (isnan(x)) return "nan";
  if (isinf(x)) return x < 0 ? "-inf" : "inf";
  int p = repr_digits(x, dt);
  snprintf(buf, size, "%.*e", p - 1, x);
  int e = atoi(strchr(buf, 'e') + 1);
  if (e < -4 || e >= 16) return buf;
  snprintf(buf, size, "%.*f", p - 1 - e > 0 ? p - 1 - e : 0, x);
  if (!strchr(buf, '.')) strncat(buf, ".0", size - strlen(buf) - 1);
  return buf;
}

static void print_number(FILE *f, const Value *v) {
  char buf[64];
  if (v->kind == V_BOOL) fputs(v->i ? "True" : "False", f);
  else if (v->kind == V_INT) fprintf(f, "%" PRId64, v->i);
  else fputs(repr_float(v->f, UJ_FLOAT64, buf, sizeof buf), f);
}

/* ---- a tensor's elements on the host ---- */

typedef struct Host {
  uj_scalar dt;
  unsigned ndim;
  const int64_t *shape;
  int64_t strides[UJ_MAX_DIMS];
  double *f;  /* float dtypes */
  int64_t *i; /* ints and bool (uint64 as its bits) */
  bool summarize;
} Host;

static bool host_is_float(uj_scalar dt) { return dt >= UJ_FLOAT16; }

/* Element k of raw (dtype h->dt) into h->f or h->i. */
static void host_convert(Host *h, const unsigned char *raw, size_t k) {
  const void *p = raw + k * value_size(h->dt);
  uint16_t u16;
  switch (h->dt) {
  case UJ_BOOL: h->i[k] = *(const uint8_t *)p != 0; break;
  case UJ_INT8: h->i[k] = *(const int8_t *)p; break;
  case UJ_INT16: h->i[k] = *(const int16_t *)p; break;
  case UJ_INT32: h->i[k] = *(const int32_t *)p; break;
  case UJ_INT64: memcpy(&h->i[k], p, 8); break;
  case UJ_UINT8: h->i[k] = *(const uint8_t *)p; break;
  case UJ_UINT16: h->i[k] = *(const uint16_t *)p; break;
  case UJ_UINT32: h->i[k] = *(const uint32_t *)p; break;
  case UJ_UINT64: memcpy(&h->i[k], p, 8); break;
  case UJ_FLOAT16: memcpy(&u16, p, 2), h->f[k] = half_to_double(u16); break;
  case UJ_BFLOAT16: memcpy(&u16, p, 2), h->f[k] = bf16_to_double(u16); break;
  case UJ_FLOAT32: h->f[k] = *(const float *)p; break;
  default: memcpy(&h->f[k], p, 8); break;
  }
}

/* Realizes t and reads its elements; errors at `at`. */
static bool host_read(Lang *L, const Node *at, uj_tensor *t, Host *h) {
  size_t n = (size_t)uj_tensor_numel(t), esize = value_size(uj_tensor_dtype(t));
  *h = (Host){.dt = uj_tensor_dtype(t), .ndim = uj_tensor_ndim(t), .shape = uj_tensor_shape(t)};
  h->summarize = n > THRESHOLD;
  int64_t stride = 1;
  for (unsigned k = h->ndim; k-- > 0; stride *= h->shape[k]) h->strides[k] = stride;
  if (uj_tensor_realize(&t, 1) != UJ_OK) return eval_lib_error(L, at, "cannot compute the tensor"); /* its error first */
  unsigned char *raw = malloc(n * esize + 1);
  bool is_float = host_is_float(h->dt);
  h->f = is_float ? malloc((n + 1) * sizeof *h->f) : NULL;
  h->i = is_float ? NULL : malloc((n + 1) * sizeof *h->i);
  bool ok = raw && (h->f || h->i);
  if (!ok) lang_error(&L->err, at->line, at->col, "out of memory for the %zu elements to print", n);
  else if (!(ok = uj_tensor_to_host(t, raw, n * esize) == UJ_OK)) eval_lib_error(L, at, "cannot read the tensor");
  for (size_t k = 0; ok && k < n; k++) host_convert(h, raw, k);
  free(raw);
  return ok;
}

static void host_free(Host *h) {
  free(h->f);
  free(h->i);
}

/* The indices of axis `axis` that are shown: all, or 3, a gap, 3. */
static bool host_gap(const Host *h, unsigned axis) { return h->summarize && h->shape[axis] > 2 * EDGE; }

static int64_t host_index(const Host *h, unsigned axis, int64_t k) {
  return host_gap(h, axis) && k >= EDGE ? h->shape[axis] - 2 * EDGE + k : k;
}

static int64_t host_shown(const Host *h, unsigned axis) {
  return host_gap(h, axis) ? 2 * EDGE : h->shape[axis];
}

/* ---- the element format (NumPy's FloatingFormat, IntegerFormat) ---- */

typedef struct Fmt {
  bool exp_mode;
  int precision;               /* exp mode: the mantissa's fractional digits */
  int pad_left, pad_right;     /* widths around the decimal point */
  int exp_size;                /* exponent digits */
  bool any_finite, any_nonfinite, neg_inf;
  double max_abs, min_abs;     /* of the non-zero finite values */
  int width;                   /* ints */
} Fmt;

/* x with the fewest fractional digits (at most 8) that read back, trailing
 * zeros trimmed: "1.", "0.25", "1.5e-05"; in buf. */
static void fmt_unique(double x, uj_scalar dt, bool exp_mode, char *buf, size_t size) {
  int d = 0;
  for (; d < MAX_DIGITS; d++) {
    snprintf(buf, size, exp_mode ? "%#.*e" : "%#.*f", d, x);
    if (round_to(dt, strtod(buf, NULL)) == x) return;
  }
  snprintf(buf, size, exp_mode ? "%#.*e" : "%#.*f", d, x);
  char *e = strchr(buf, 'e'), *end = e ? e : buf + strlen(buf), *z = end;
  while (z[-1] == '0') z--;
  memmove(z, end, strlen(end) + 1);
}

typedef void (*VisitFn)(const Host *h, size_t offset, Fmt *f);

/* Calls fn on every shown element. */
static void host_visit(const Host *h, unsigned axis, size_t offset, VisitFn fn, Fmt *f) {
  if (axis == h->ndim) return fn(h, offset, f);
  for (int64_t k = 0; k < host_shown(h, axis); k++)
    host_visit(h, axis + 1, offset + (size_t)(host_index(h, axis, k) * h->strides[axis]), fn, f);
}

static void fmt_range(const Host *h, size_t k, Fmt *f) {
  double x = h->f[k], a = fabs(x);
  if (isinf(x) && x < 0) f->neg_inf = true;
  if (!isfinite(x)) f->any_nonfinite = true;
  if (!isfinite(x) || x == 0) return;
  if (!f->any_finite || a > f->max_abs) f->max_abs = a;
  if (!f->any_finite || a < f->min_abs) f->min_abs = a;
  f->any_finite = true;
}

static void fmt_widths(const Host *h, size_t k, Fmt *f) {
  char buf[64];
  double x = h->f[k];
  if (!isfinite(x)) return;
  fmt_unique(x, h->dt, f->exp_mode, buf, sizeof buf);
  char *dot = strchr(buf, '.'), *e = strchr(buf, 'e');
  int left = (int)(dot - buf), right = (int)((e ? e : buf + strlen(buf)) - dot - 1);
  if (left > f->pad_left) f->pad_left = left;
  int *frac = f->exp_mode ? &f->precision : &f->pad_right;
  if (right > *frac) *frac = right;
  if (e && (int)strlen(e + 2) > f->exp_size) f->exp_size = (int)strlen(e + 2);
}

static void fmt_int_width(const Host *h, size_t k, Fmt *f) {
  char buf[32];
  int n = h->dt == UJ_UINT64 ? snprintf(buf, sizeof buf, "%" PRIu64, (uint64_t)h->i[k])
                             : snprintf(buf, sizeof buf, "%" PRId64, h->i[k]);
  if (n > f->width) f->width = n;
}

static void fmt_init(const Host *h, Fmt *f) {
  *f = (Fmt){0};
  if (!host_is_float(h->dt)) return host_visit(h, 0, 0, fmt_int_width, f);
  host_visit(h, 0, 0, fmt_range, f);
  f->exp_mode = f->any_finite && (f->max_abs >= 1e8 || f->min_abs < 1e-4 || f->max_abs / f->min_abs > 1e3);
  f->exp_size = 2;
  host_visit(h, 0, 0, fmt_widths, f);
  if (f->exp_mode) f->pad_right = f->exp_size + 2 + f->precision;
  if (!f->any_nonfinite) return;
  int offset = f->pad_right + 1, nan_left = 3 - offset, inf_left = 3 + f->neg_inf - offset;
  if (nan_left > f->pad_left) f->pad_left = nan_left;
  if (inf_left > f->pad_left) f->pad_left = inf_left;
}

/* One float in the format: fixed (pad_left, '.', pad_right) or scientific. */
static void fmt_float(const Fmt *f, uj_scalar dt, double x, char *out, size_t size) {
  char buf[64];
  if (!isfinite(x)) {
    snprintf(out, size, "%*s", f->pad_left + f->pad_right + 1, isnan(x) ? "nan" : x < 0 ? "-inf" : "inf");
    return;
  }
  if (!f->exp_mode) {
    fmt_unique(x, dt, false, buf, sizeof buf);
    char *dot = strchr(buf, '.');
    snprintf(out, size, "%*.*s%-*s", f->pad_left, (int)(dot - buf), buf, f->pad_right + 1, dot);
    return;
  }
  snprintf(buf, sizeof buf, "%#.*e", f->precision, x);
  char *e = strchr(buf, 'e');
  int exp = atoi(e + 1);
  *e = '\0';
  snprintf(out, size, "%*se%c%0*d", f->pad_left + 1 + f->precision, buf, exp < 0 ? '-' : '+', f->exp_size, abs(exp));
}

static void fmt_elem(const Host *h, const Fmt *f, size_t k, char *out, size_t size) {
  if (host_is_float(h->dt)) fmt_float(f, h->dt, h->f[k], out, size);
  else if (h->dt == UJ_BOOL) snprintf(out, size, "%s", h->i[k] ? " True" : "False");
  else if (h->dt == UJ_UINT64) snprintf(out, size, "%*" PRIu64, f->width, (uint64_t)h->i[k]);
  else snprintf(out, size, "%*" PRId64, f->width, h->i[k]);
}

/* ---- the layout (NumPy's _formatArray) ---- */

typedef struct Buf {
  char *p;
  size_t n, cap;
  bool oom;
} Buf;

static void buf_add(Buf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = (b->n + n + 1) * 2;
    char *grown = realloc(b->p, cap);
    if (!grown) return (void)(b->oom = true);
    b->p = grown, b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void buf_puts(Buf *b, const char *s) { buf_add(b, s, strlen(s)); }

typedef struct Layout {
  const Host *h;
  const Fmt *f;
  Buf *out;
  Buf line; /* the line being filled on the last axis */
} Layout;

/* Adds word to the line, first moving to a new one when it would pass
 * width (unless the line holds only its indent). */
static void layout_word(Layout *y, const char *word, size_t width, size_t indent) {
  size_t n = strlen(word);
  if (y->line.n + n > width && y->line.n > indent) {
    size_t keep = y->line.n;
    while (keep > 0 && y->line.p[keep - 1] == ' ') keep--;
    buf_add(y->out, y->line.p, keep);
    buf_puts(y->out, "\n");
    y->line.n = 0;
    for (size_t k = 0; k < indent; k++) buf_puts(&y->line, " ");
  }
  buf_add(&y->line, word, n);
}

static void layout_row(Layout *y, size_t offset, unsigned axis, size_t indent, size_t width) {
  char word[80];
  y->line.n = 0;
  for (size_t k = 0; k < indent; k++) buf_puts(&y->line, " ");
  int64_t shown = host_shown(y->h, axis);
  for (int64_t k = 0; k < shown; k++) {
    size_t at = offset + (size_t)(host_index(y->h, axis, k) * y->h->strides[axis]);
    fmt_elem(y->h, y->f, at, word, sizeof word);
    layout_word(y, word, width - 1, indent);
    if (k + 1 < shown) buf_puts(&y->line, " ");
    if (host_gap(y->h, axis) && k + 1 == EDGE) layout_word(y, "...", width - 1, indent), buf_puts(&y->line, " ");
  }
  buf_add(y->out, y->line.p ? y->line.p : "", y->line.n);
}

/* One axis: '[' + its rows (or elements) + ']', the first line's indent
 * replaced by the '['. */
static void layout_axis(Layout *y, size_t offset, unsigned axis, size_t indent, size_t width) {
  size_t start = y->out->n;
  if (axis + 1 == y->h->ndim) layout_row(y, offset, axis, indent, width);
  for (int64_t k = 0, shown = host_shown(y->h, axis); axis + 1 < y->h->ndim && k < shown; k++) {
    for (size_t s = 0; s < indent; s++) buf_puts(y->out, " ");
    layout_axis(y, offset + (size_t)(host_index(y->h, axis, k) * y->h->strides[axis]), axis + 1, indent + 1, width - 1);
    for (unsigned s = axis + 1; k + 1 < shown && s < y->h->ndim; s++) buf_puts(y->out, "\n");
    if (host_gap(y->h, axis) && k + 1 == EDGE) {
      for (size_t s = 0; s < indent; s++) buf_puts(y->out, " ");
      buf_puts(y->out, "...");
      for (unsigned s = axis + 1; s < y->h->ndim; s++) buf_puts(y->out, "\n");
    }
  }
  if (y->out->oom) return;
  memmove(y->out->p + start + 1, y->out->p + start + indent, y->out->n - start - indent + 1);
  y->out->n -= indent - 1;
  y->out->p[start] = '[';
  buf_puts(y->out, "]");
}

/* ---- values ---- */

static bool print_tensor_values(Lang *L, FILE *to, const Node *at, uj_tensor *t) {
  Host h;
  Fmt f;
  Buf out = {0};
  char word[80];
  bool ok = host_read(L, at, t, &h);
  if (ok && uj_tensor_numel(t) == 0) buf_puts(&out, "[]");
  else if (ok && h.ndim == 0 && host_is_float(h.dt)) buf_puts(&out, repr_float(h.f[0], h.dt, word, sizeof word));
  else if (ok && h.ndim == 0) fmt_init(&h, &f), fmt_elem(&h, &f, 0, word, sizeof word), buf_puts(&out, word + (word[0] == ' '));
  else if (ok) {
    Layout y = {&h, &f, &out, {0}};
    fmt_init(&h, &f);
    layout_axis(&y, 0, 0, 1, LINE_WIDTH);
    out.oom |= y.line.oom;
    free(y.line.p);
  }
  if (ok && out.oom) ok = false, lang_error(&L->err, at->line, at->col, "out of memory");
  if (ok) fprintf(to, "%s\n", out.p);
  free(out.p);
  host_free(&h);
  return ok;
}

static void print_header(FILE *f, uj_tensor *t) {
  char buf[32];
  unsigned ndim = uj_tensor_ndim(t);
  fputs("tensor(shape=(", f);
  for (unsigned k = 0; k < ndim; k++) fprintf(f, "%s%" PRId64, k ? ", " : "", uj_tensor_shape(t)[k]);
  fprintf(f, "%s), dtype=%s)", ndim == 1 ? "," : "", dtype_name(uj_tensor_dtype(t), buf, sizeof buf));
}

/* A value inside a list or tuple: strings quoted, tensors as a header. */
static void print_inline(FILE *f, const Value *v) {
  if (value_is_number(v)) return print_number(f, v);
  if (v->kind == V_STR) return (void)fprintf(f, "'%s'", v->s);
  if (v->kind == V_TENSOR) return print_header(f, v->t->t);
  if (v->kind == V_NONE) return (void)fputs("None", f);
  if (v->kind == V_OPTIM)
    return (void)fprintf(f, "%s(%zu parameters, lr=%.6g)", v->opt->kind, v->opt->params->n, uj_optim_lr(v->opt->o));
  fputc(v->kind == V_LIST ? '[' : '(', f);
  for (size_t k = 0; k < v->n; k++) {
    if (k) fputs(", ", f);
    print_inline(f, &v->items[k]);
  }
  fputs(v->kind == V_LIST ? "]" : v->n == 1 ? ",)" : ")", f);
}

/* v's text into f; false with the error set when a tensor's values cannot
 * be computed. */
static bool print_to(Lang *L, FILE *f, const Node *at, const Value *v) {
  if (v->kind == V_STR) return fprintf(f, "%s\n", v->s), true;
  if (v->kind != V_TENSOR) return print_inline(f, v), fputc('\n', f), true;
  print_header(f, v->t->t);
  fputc('\n', f);
  return print_tensor_values(L, f, at, v->t->t);
}

/* All of the text is made in memory first: a value that fails (a tensor
 * that cannot be realized) prints nothing, not its header alone. */
bool print_value(Lang *L, const Node *at, const Value *v) {
  if (v->kind == V_NONE) return true;
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  bool ok = m && print_to(L, m, at, v);
  bool closed = m && fclose(m) == 0; /* text is complete only then */
  if (!closed && !L->err.set) lang_error(&L->err, at->line, at->col, "out of memory");
  if (ok && closed) fwrite(text, 1, len, L->out); /* its errors: lang_run checks the stream */
  free(text);
  return ok && closed;
}
