/* npy.c — NumPy .npy files, read and written.
 *
 * In: a path (npy_read) or the bytes of a file (npy_read_mem), or a dtype,
 * a shape and dense C-order host memory (npy_write). Out: an NpyArray
 * holding a malloc'd copy of the file's elements, or a file byte for byte
 * as NumPy writes it.
 *
 * The file: the magic "\x93NUMPY", a version byte pair (1.0, 2.0 or 3.0), the
 * header length (2 bytes little endian for 1.0, 4 for 2.0 and 3.0), the
 * header — a Python dict literal such as
 *   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a final '\n' so that the data starts on a 64-byte
 * boundary — then the elements, C order. The header is read by a small
 * parser of that literal (keys in any order, either quote, spaces, trailing
 * commas, Python 2's "3L" ints); every check of the format says in its
 * message what it found. */
#define _POSIX_C_SOURCE 200809L /* fileno */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tensor/npy.h"
#include "uop/movement.h" /* shape_str: a shape as Python writes a tuple */
#include "uop/uop.h"      /* scalar_table: dtype names in messages */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c copies little-endian .npy data as host memory"
#endif

enum {
  NPY_PREFIX_V1 = 10,         /* magic, version, 2-byte header length */
  NPY_ALIGN = 64,             /* the data starts on this boundary */
  NPY_GROWTH_DIGITS = 21,     /* NumPy pads the dict for a first dim this wide */
  NPY_MAX_HEADER = 1 << 20,   /* longer headers are refused unread */
  NPY_WRITE_HEADER_MAX = 512, /* the longest header npy_write makes, and more */
};
static const char npy_magic[] = "\x93NUMPY";
#define NPY_MAGIC_LEN (sizeof npy_magic - 1)
#define NPY_MAX_NUMEL ((uint64_t)1 << 62)

/* The six dtypes read and written; descr as npy_write writes it. */
typedef struct NpyType {
  const char *descr;
  uj_scalar dtype;
  size_t size;
} NpyType;

static const NpyType npy_types[] = {
    {"<f4", UJ_FLOAT32, 4}, {"<f8", UJ_FLOAT64, 8}, {"<i4", UJ_INT32, 4},
    {"<i8", UJ_INT64, 8},   {"|b1", UJ_BOOL, 1},    {"|u1", UJ_UINT8, 1},
};
#define NPY_TYPES_STR "'<f4' '<f8' '<i4' '<i8' '|b1' '|u1'"

/* ---- errors: "PATH: message" ---- */

typedef struct NpyErr {
  const char *path;
  char *buf;
  size_t size;
} NpyErr;

static bool fail(const NpyErr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool fail(const NpyErr *e, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (e->buf && e->size) snprintf(e->buf, e->size, "%s: %s", e->path, msg);
  return false;
}

/* ---- dtypes and shapes ---- */

static const NpyType *npy_type_of(uj_scalar dtype) {
  for (size_t i = 0; i < sizeof npy_types / sizeof *npy_types; i++)
    if (npy_types[i].dtype == dtype) return &npy_types[i];
  return NULL;
}

/* descr (len bytes, unquoted) -> its type. One-byte types take any byte
 * order character, since none applies to them. */
static bool npy_type_parse(const NpyErr *e, const char *s, size_t len, const NpyType **out) {
  for (size_t i = 0; len == 3 && i < sizeof npy_types / sizeof *npy_types; i++) {
    const NpyType *t = &npy_types[i];
    if (memcmp(s + 1, t->descr + 1, 2) != 0) continue;
    if (t->size == 1 ? s[0] && strchr("|<>=", s[0]) : s[0] == '<') {
      *out = t;
      return true;
    }
    if (s[0] == '>')
      return fail(e, "dtype '%.*s' is big-endian; only little-endian .npy files are read", (int)len,
                  s);
  }
  return fail(e, "dtype '%.*s' is not supported; only " NPY_TYPES_STR " are read", (int)len, s);
}

/* The byte count of a shape's elements. Refused: a negative dim, more than
 * 2^62 elements or more bytes than size_t holds; as NumPy does, dims of 0
 * do not excuse the others' product from the check. */
static bool npy_shape_bytes(const NpyErr *e, const int64_t *shape, unsigned ndim, size_t elsize,
                            size_t *bytes) {
  char s[192];
  uint64_t numel = 1;
  bool empty = false;
  for (unsigned i = 0; i < ndim; i++) {
    if (shape[i] < 0)
      return fail(e, "negative dim %lld in shape %s", (long long)shape[i],
                  shape_str(shape, ndim, s, sizeof s));
    if (shape[i] == 0) empty = true;
    else if ((uint64_t)shape[i] > NPY_MAX_NUMEL / numel)
      return fail(e, "shape %s has more than 2^62 elements", shape_str(shape, ndim, s, sizeof s));
    else numel *= (uint64_t)shape[i];
  }
  if (numel > SIZE_MAX / elsize)
    return fail(e, "shape %s has more bytes than size_t holds",
                shape_str(shape, ndim, s, sizeof s));
  *bytes = empty ? 0 : (size_t)numel * elsize;
  return true;
}

/* Each bool byte 0 or 1; `verb` is "read" or "written". */
static bool npy_bools_check(const NpyErr *e, const NpyType *t, const void *data, size_t bytes,
                            const char *verb) {
  const unsigned char *b = data;
  for (size_t i = 0; t->dtype == UJ_BOOL && i < bytes; i++)
    if (b[i] > 1) return fail(e, "bool element %zu is %u; only 0 and 1 are %s", i, b[i], verb);
  return true;
}

/* ---- the header dict ---- */

typedef struct NpyHeader {
  const NpyType *type;
  unsigned ndim;
  int64_t shape[UJ_MAX_DIMS];
  bool seen[3]; /* by header_keys index */
} NpyHeader;

typedef struct HeaderParser {
  const NpyErr *e;
  const char *at, *end;
  NpyHeader *h;
} HeaderParser;

static void header_skip_space(HeaderParser *p) {
  while (p->at < p->end && *p->at && strchr(" \t\r\n", *p->at)) p->at++;
}

/* The next non-space character is c: consumed. */
static bool header_accept(HeaderParser *p, char c) {
  header_skip_space(p);
  if (p->at == p->end || *p->at != c) return false;
  p->at++;
  return true;
}

/* What is at the cursor, for messages: "'xyz...'" or "the end of the header". */
static const char *header_found(const HeaderParser *p, char *buf, size_t size) {
  size_t n = (size_t)(p->end - p->at), k = 0;
  if (n == 0) return "the end of the header";
  buf[k++] = '\'';
  for (size_t i = 0; i < n && i < 16 && k + 5 < size; i++)
    buf[k++] = p->at[i] >= ' ' && p->at[i] <= '~' ? p->at[i] : '?';
  if (n > 16 && k + 5 < size) k += (size_t)snprintf(buf + k, size - k, "...");
  buf[k++] = '\'';
  buf[k] = '\0';
  return buf;
}

static bool header_expected(HeaderParser *p, const char *what) {
  char b[32];
  header_skip_space(p);
  return fail(p->e, "malformed header: expected %s, found %s", what, header_found(p, b, sizeof b));
}

/* A quoted string without escapes: 'abc' or "abc". */
static bool header_string(HeaderParser *p, const char *what, const char **s, size_t *len) {
  header_skip_space(p);
  if (p->at == p->end || (*p->at != '\'' && *p->at != '"')) return header_expected(p, what);
  char quote = *p->at;
  const char *close = memchr(p->at + 1, quote, (size_t)(p->end - p->at - 1));
  if (!close) return fail(p->e, "malformed header: a string is not closed");
  *s = p->at + 1;
  *len = (size_t)(close - *s);
  p->at = close + 1;
  if (memchr(*s, '\\', *len))
    return fail(p->e, "malformed header: escapes in strings are not read");
  return true;
}

static bool header_descr(HeaderParser *p) {
  const char *s;
  size_t len;
  header_skip_space(p);
  if (p->at < p->end && (*p->at == '[' || *p->at == '{'))
    return fail(p->e,
                "dtype is structured (descr is a list of fields); only " NPY_TYPES_STR " are read");
  return header_string(p, "a quoted descr", &s, &len) && npy_type_parse(p->e, s, len, &p->h->type);
}

static bool is_ident_char(char c) {
  return c == '_' || (c >= '0' && c <= '9') || ((c | 32) >= 'a' && (c | 32) <= 'z');
}

/* The word w, not followed by more of an identifier. */
static bool header_word(HeaderParser *p, const char *w) {
  size_t n = strlen(w);
  header_skip_space(p);
  if ((size_t)(p->end - p->at) < n || memcmp(p->at, w, n) != 0) return false;
  if (p->at + n < p->end && is_ident_char(p->at[n])) return false;
  p->at += n;
  return true;
}

static bool header_fortran_order(HeaderParser *p) {
  if (header_word(p, "False")) return true;
  if (header_word(p, "True"))
    return fail(p->e, "fortran_order is True; only C-order .npy files are read");
  return header_expected(p, "True or False for fortran_order");
}

/* A dim of the shape: digits, maybe Python 2's 'L' suffix. */
static bool header_dim(HeaderParser *p, int64_t *out) {
  header_skip_space(p);
  bool neg = p->at < p->end && *p->at == '-';
  const char *d = p->at + neg;
  if (d == p->end || *d < '0' || *d > '9') return header_expected(p, "a dim (an integer) in shape");
  int64_t v = 0;
  for (; d < p->end && *d >= '0' && *d <= '9'; d++) {
    if (v > (INT64_MAX - (*d - '0')) / 10)
      return fail(p->e, "malformed header: dim %.*s... in shape is too large", (int)(d - p->at),
                  p->at);
    v = v * 10 + (*d - '0');
  }
  if (neg && v != 0) return fail(p->e, "negative dim -%lld in shape", (long long)v);
  p->at = d + (d < p->end && *d == 'L');
  *out = v;
  return true;
}

/* A tuple of dims: "()", "(5,)", "(2, 3)", "(2, 3,)". */
static bool header_shape(HeaderParser *p) {
  NpyHeader *h = p->h;
  unsigned n = 0;
  bool comma = false;
  if (!header_accept(p, '(')) return header_expected(p, "a tuple '(' for shape");
  while (!header_accept(p, ')')) {
    if (n > 0 && !comma) return header_expected(p, "',' or ')' in shape");
    int64_t dim = 0;
    if (!header_dim(p, &dim)) return false;
    if (n < UJ_MAX_DIMS) h->shape[n] = dim;
    n++;
    comma = header_accept(p, ',');
  }
  if (n == 1 && !comma)
    return fail(p->e, "malformed header: shape (%lld) is not a tuple; one dim is written (%lld,)",
                (long long)h->shape[0], (long long)h->shape[0]);
  if (n > UJ_MAX_DIMS)
    return fail(p->e, "shape has %u dims; at most %d are read", n, (int)UJ_MAX_DIMS);
  h->ndim = n;
  return true;
}

static const struct {
  const char *key;
  bool (*parse)(HeaderParser *p);
} header_keys[] = {
    {"descr", header_descr},
    {"fortran_order", header_fortran_order},
    {"shape", header_shape},
};
static_assert(sizeof header_keys / sizeof *header_keys == sizeof((NpyHeader *)0)->seen,
              "one seen flag per header key");

/* 'key': value */
static bool header_entry(HeaderParser *p) {
  const char *key;
  size_t len;
  if (!header_string(p, "a quoted key or '}'", &key, &len)) return false;
  for (size_t k = 0; k < sizeof header_keys / sizeof *header_keys; k++) {
    if (strlen(header_keys[k].key) != len || memcmp(header_keys[k].key, key, len) != 0) continue;
    if (p->h->seen[k])
      return fail(p->e, "malformed header: key '%s' is given twice", header_keys[k].key);
    p->h->seen[k] = true;
    if (!header_accept(p, ':')) return header_expected(p, "':' after a key");
    return header_keys[k].parse(p);
  }
  return fail(p->e,
              "malformed header: unknown key '%.*s' (the keys are descr, fortran_order, shape)",
              (int)len, key);
}

static bool header_parse(const NpyErr *e, const char *text, size_t len, NpyHeader *h) {
  HeaderParser p = {e, text, text + len, h};
  if (!header_accept(&p, '{')) return header_expected(&p, "a dict '{'");
  for (;;) {
    if (header_accept(&p, '}')) break;
    if (!header_entry(&p)) return false;
    if (header_accept(&p, '}')) break;
    if (!header_accept(&p, ',')) return header_expected(&p, "',' or '}'");
  }
  header_skip_space(&p);
  if (p.at != p.end) return header_expected(&p, "only spaces after the header dict");
  for (size_t k = 0; k < sizeof header_keys / sizeof *header_keys; k++)
    if (!h->seen[k]) return fail(e, "malformed header: key '%s' is missing", header_keys[k].key);
  return true;
}

/* ---- reading ---- */

/* Where the bytes come from: an open file, or memory (file NULL). One
 * reader serves both, so npy_read and npy_read_mem refuse and accept the
 * same inputs with the same messages. */
typedef struct NpySource {
  FILE *file;
  const unsigned char *mem; /* size bytes; pos of them read */
  size_t size, pos;
} NpySource;

/* Up to n bytes into buf; how many were read. */
static size_t source_read(NpySource *src, void *buf, size_t n) {
  if (src->file) return fread(buf, 1, n, src->file);
  size_t got = n < src->size - src->pos ? n : src->size - src->pos;
  if (got) memcpy(buf, src->mem + src->pos, got);
  src->pos += got;
  return got;
}

static bool source_failed(const NpySource *src) { return src->file && ferror(src->file); }

/* The bytes after offset, when they are known before reading (memory, a
 * regular file); false for a pipe or a device. */
static bool source_left(const NpySource *src, long long offset, long long *left) {
  struct stat st;
  if (!src->file) *left = (long long)src->size - offset;
  else if (fstat(fileno(src->file), &st) == 0 && S_ISREG(st.st_mode))
    *left = (long long)st.st_size - offset;
  else return false;
  return true;
}

/* n bytes; false with a message when the input ends first or reading fails. */
static bool read_exact(const NpyErr *e, NpySource *src, void *buf, size_t n, const char *what) {
  size_t got = source_read(src, buf, n);
  if (got == n) return true;
  if (source_failed(src)) return fail(e, "cannot read: %s", strerror(errno));
  return fail(e, "%s is truncated: %zu bytes of %zu", what, got, n);
}

/* Magic, version, header length; *offset: where the header ends. */
static bool read_header(const NpyErr *e, NpySource *src, NpyHeader *h, long long *offset) {
  unsigned char pre[NPY_MAGIC_LEN + 2 + 4];
  size_t got = source_read(src, pre, NPY_MAGIC_LEN + 2);
  if (source_failed(src)) return fail(e, "cannot read: %s", strerror(errno));
  if (got < NPY_MAGIC_LEN + 2 || memcmp(pre, npy_magic, NPY_MAGIC_LEN) != 0)
    return fail(e, "not a .npy file: it does not start with the magic string \\x93NUMPY");
  unsigned major = pre[NPY_MAGIC_LEN], minor = pre[NPY_MAGIC_LEN + 1];
  if (major < 1 || major > 3 || minor != 0)
    return fail(e, "unsupported .npy format version %u.%u (1.0, 2.0 and 3.0 are read)", major,
                minor);
  size_t lenbytes = major == 1 ? 2 : 4;
  if (!read_exact(e, src, pre + NPY_MAGIC_LEN + 2, lenbytes, "header length")) return false;
  uint32_t len = 0;
  for (size_t i = lenbytes; i-- > 0;) len = len << 8 | pre[NPY_MAGIC_LEN + 2 + i];
  if (len > NPY_MAX_HEADER) return fail(e, "header of %u bytes is too long", (unsigned)len);
  char *text = malloc(len ? len : 1);
  if (!text) return fail(e, "out of memory");
  bool ok = read_exact(e, src, text, len, "header") && header_parse(e, text, len, h);
  free(text);
  *offset = (long long)(NPY_MAGIC_LEN + 2 + lenbytes + len);
  return ok;
}

/* When the input's size is known, the data's size checked before it is
 * allocated. */
static bool read_size_check(const NpyErr *e, const NpySource *src, long long offset,
                            size_t bytes) {
  long long have;
  if (!source_left(src, offset, &have)) return true;
  if (have < 0 || (unsigned long long)have < bytes)
    return fail(e, "data is truncated: %lld bytes of %zu", have < 0 ? 0 : have, bytes);
  if ((unsigned long long)have > bytes)
    return fail(e, "trailing bytes after the data: %llu beyond the %zu of the shape",
                (unsigned long long)have - bytes, bytes);
  return true;
}

static bool read_data(const NpyErr *e, NpySource *src, const NpyHeader *h, long long offset,
                      NpyArray *a) {
  size_t bytes;
  unsigned char extra;
  if (!npy_shape_bytes(e, h->shape, h->ndim, h->type->size, &bytes)) return false;
  if (!read_size_check(e, src, offset, bytes)) return false;
  void *data = malloc(bytes ? bytes : 1);
  if (!data) return fail(e, "out of memory for %zu bytes of data", bytes);
  bool ok = read_exact(e, src, data, bytes, "data");
  if (ok && source_read(src, &extra, 1) == 1)
    ok = fail(e, "trailing bytes after the %zu of the shape", bytes);
  ok = ok && npy_bools_check(e, h->type, data, bytes, "read");
  if (!ok) {
    free(data);
    return false;
  }
  *a = (NpyArray){.dtype = h->type->dtype, .ndim = h->ndim, .data = data, .bytes = bytes};
  memcpy(a->shape, h->shape, sizeof a->shape);
  return true;
}

static bool read_source(const NpyErr *e, NpySource *src, NpyArray *out) {
  NpyHeader h = {0};
  long long offset = 0;
  return read_header(e, src, &h, &offset) && read_data(e, src, &h, offset, out);
}

bool npy_read(const char *path, NpyArray *out, char *err, size_t errsize) {
  NpyErr e = {path, err, errsize};
  FILE *f = fopen(path, "rb");
  if (!f) return fail(&e, "cannot open: %s", strerror(errno));
  NpySource src = {.file = f};
  bool ok = read_source(&e, &src, out);
  fclose(f);
  return ok;
}

bool npy_read_mem(const void *data, size_t size, const char *name, NpyArray *out, char *err,
                  size_t errsize) {
  NpyErr e = {name, err, errsize};
  NpySource src = {.mem = data, .size = size};
  return read_source(&e, &src, out);
}

void npy_free(NpyArray *a) {
  free(a->data);
  *a = (NpyArray){0};
}

/* ---- writing ---- */

/* Magic, version 1.0, header length, the dict as NumPy writes it (keys
 * sorted, then spaces for a first dim of NPY_GROWTH_DIGITS digits), spaces
 * and '\n' up to a 64-byte boundary (a whole 64 when already there, as
 * NumPy does). The dict of UJ_MAX_DIMS dims stays far below the 65535 bytes
 * of a 1.0 header, so version 2.0 is never needed. Returns the length. */
static size_t header_format(const NpyType *t, const int64_t *shape, unsigned ndim, char *buf) {
  char s[192];
  size_t at = NPY_PREFIX_V1;
  at += (size_t)snprintf(buf + at, NPY_WRITE_HEADER_MAX - at,
                         "{'descr': '%s', 'fortran_order': False, 'shape': %s, }", t->descr,
                         shape_str(shape, ndim, s, sizeof s));
  size_t digits0 = ndim ? (size_t)snprintf(NULL, 0, "%lld", (long long)shape[0]) : 0;
  size_t growth = ndim ? NPY_GROWTH_DIGITS - digits0 : 0;
  size_t pad = NPY_ALIGN - (at + growth + 1) % NPY_ALIGN;
  size_t total = at + growth + pad + 1;
  assert(total <= NPY_WRITE_HEADER_MAX);
  memset(buf + at, ' ', growth + pad);
  buf[total - 1] = '\n';
  memcpy(buf, npy_magic, NPY_MAGIC_LEN);
  buf[NPY_MAGIC_LEN] = 1; /* version 1.0 */
  buf[NPY_MAGIC_LEN + 1] = 0;
  buf[NPY_MAGIC_LEN + 2] = (char)((total - NPY_PREFIX_V1) & 0xff); /* little endian */
  buf[NPY_MAGIC_LEN + 3] = (char)((total - NPY_PREFIX_V1) >> 8);
  return total;
}
static_assert(NPY_WRITE_HEADER_MAX < 65535, "npy_write's headers fit format 1.0");

/* A regular file that was partly written is removed (a device or a pipe
 * is left alone). */
static bool write_file(const NpyErr *e, const char *head, size_t hn, const void *data,
                       size_t bytes) {
  FILE *f = fopen(e->path, "wb");
  if (!f) return fail(e, "cannot open for writing: %s", strerror(errno));
  struct stat st;
  bool regular = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode);
  bool ok = fwrite(head, 1, hn, f) == hn && (bytes == 0 || fwrite(data, 1, bytes, f) == bytes);
  int error = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    error = errno;
  }
  if (ok) return true;
  if (regular) remove(e->path);
  return fail(e, "cannot write: %s", strerror(error));
}

bool npy_write(const char *path, uj_scalar dtype, const int64_t *shape, unsigned ndim,
               const void *data, char *err, size_t errsize) {
  NpyErr e = {path, err, errsize};
  const NpyType *t = npy_type_of(dtype);
  size_t bytes;
  char head[NPY_WRITE_HEADER_MAX];
  if (!t)
    return fail(&e, "dtype %s is not written; only float32, float64, int32, int64, bool, uint8",
                (unsigned)dtype < UJ_SCALAR_COUNT ? scalar_table[dtype].name : "(invalid)");
  if (ndim > UJ_MAX_DIMS)
    return fail(&e, "%u dims; at most %d are written", ndim, (int)UJ_MAX_DIMS);
  if (!npy_shape_bytes(&e, shape, ndim, t->size, &bytes)) return false;
  if (bytes && !data) return fail(&e, "no data for %zu bytes", bytes);
  if (!npy_bools_check(&e, t, data, bytes, "written")) return false;
  return write_file(&e, head, header_format(t, shape, ndim, head), data, bytes);
}
