/* safetensors.c — Hugging Face safetensors files, read and written
 * (tensor.h, docs/tensor.md "safetensors files").
 *
 * In: a path (uj_safetensors_open), or named tensors and metadata strings
 * (uj_safetensors_save). Out: an open file whose tensors are read one at a
 * time, on request, into new tensors; or a file as the Python library
 * writes one, put in place by a rename.
 *
 * The file: N, the header's length (8 bytes, little endian); the header,
 * a JSON object of N bytes (space-padded) mapping each tensor's name to
 *   {"dtype":"F32","shape":[2,3],"data_offsets":[BEGIN,END]}
 * and maybe "__metadata__" to an object of strings; then the data, each
 * tensor's bytes (C order, little endian) at [BEGIN, END) counted from the
 * data's start. As the Rust library does, a file is refused unless its
 * header starts with '{', N is at most 100,000,000 bytes, and the tensors'
 * ranges tile the data exactly: sorted by offset, each begins where the
 * one before ends, the first at 0, the last at the end of the file (no
 * gap, no overlap, nothing after). Keys of a tensor besides those three
 * are skipped, as the Python library skips them.
 *
 * Opening reads the header alone; each uj_safetensors_get reads its
 * tensor's bytes with pread, so a file is never held in memory whole.
 * Every error of a file's bytes is a message naming the path, and where
 * the header is at fault the byte (of the file) and the tensor. */
#define _POSIX_C_SOURCE 200809L /* pread, fsync */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/json.h"
#include "tensor/tensor_impl.h"
#include "uop/alu.h" /* elem_bytes */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c copies little-endian file data as host memory"
#endif

enum {
  ST_LEN_BYTES = 8,          /* the header's length, before it */
  ST_ALIGN = 8,              /* the header is padded so that the data starts on this boundary */
  ST_MAX_HEADER = 100000000, /* longer headers are refused unread (the Rust library's limit) */
};
static const char st_metadata_key[] = "__metadata__";

/* safetensors' name of each scalar kind (NULL: none). Element sizes are
 * the dtype table's (elem_bytes). Not read: F8_E4M3, F8_E5M2 and the other
 * small floats, C64. */
static const char *const st_dtype_names[] = {
    [UJ_VOID] = NULL,     [UJ_BOOL] = "BOOL",   [UJ_INT8] = "I8",     [UJ_INT16] = "I16",
    [UJ_INT32] = "I32",   [UJ_INT64] = "I64",   [UJ_UINT8] = "U8",    [UJ_UINT16] = "U16",
    [UJ_UINT32] = "U32",  [UJ_UINT64] = "U64",  [UJ_FLOAT16] = "F16", [UJ_BFLOAT16] = "BF16",
    [UJ_FLOAT32] = "F32", [UJ_FLOAT64] = "F64",
};
static_assert(sizeof st_dtype_names / sizeof *st_dtype_names == UJ_SCALAR_COUNT,
              "a safetensors name (or NULL) for each uj_scalar");
#define ST_DTYPES_STR "BOOL U8 I8 U16 I16 U32 I32 U64 I64 F16 BF16 F32 F64"

typedef struct StTensor {
  char *name; /* NUL-free UTF-8 */
  uj_scalar dtype;
  unsigned ndim;
  int64_t shape[UJ_MAX_DIMS];
  uint64_t begin, end; /* its bytes in the data */
} StTensor;

typedef struct StMeta {
  char *key, *value;
} StMeta;

struct uj_safetensors {
  uj_session *s;
  char *path;
  int fd;
  uint64_t data_start, data_size; /* where the data starts in the file; its length */
  StTensor *tensors;              /* in the header's order */
  size_t n, cap;
  StTensor **by_name; /* sorted by name: lookups */
  StMeta *meta;       /* sorted by key once read */
  size_t nmeta, cap_meta;
};

/* ---- names in messages ---- */

/* s[0..len) quoted for a message: '"', its bytes with control characters,
 * '"' and '\\' escaped, '"'; cut with "..." (between characters) where
 * buf would overflow. */
static const char *quote(const char *s, size_t len, char *buf, size_t size) {
  size_t k = 0;
  buf[k++] = '"';
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    bool continuation = (c & 0xC0) == 0x80; /* of a UTF-8 character begun with room for it */
    if (!continuation && k + 12 > size) {
      k += (size_t)snprintf(buf + k, size - k, "...");
      break;
    }
    if (c < 0x20 || c == 0x7f || c == '"' || c == '\\')
      k += (size_t)snprintf(buf + k, size - k, c == '"' || c == '\\' ? "\\%c" : "\\x%02x", c);
    else buf[k++] = (char)c;
  }
  snprintf(buf + k, size - k, "\"");
  return buf;
}
enum { QUOTE_SIZE = 96, WHAT_SIZE = QUOTE_SIZE + 8 }; /* a quoted name; "tensor " and one */

static int cmp_str(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ---- the open file's header ---- */

typedef struct StParse {
  JsonReader r;
  uj_safetensors *f;
  bool seen_metadata;
} StParse;

static void *grow(void *p, size_t *cap, size_t need, size_t elsize) {
  if (need <= *cap) return p;
  size_t c = *cap ? 2 * *cap : 16;
  void *q = realloc(p, c * elsize);
  if (q) *cap = c;
  return q;
}

/* s[0..len) as a name: no NUL inside (a C string could not hold it). */
static bool check_no_nul(StParse *p, size_t at, const char *what, const char *s, size_t len) {
  if (memchr(s, '\0', len) == NULL) return true;
  char q[QUOTE_SIZE];
  return json_fail(&p->r, at, "%s %s holds \\u0000", what, quote(s, len, q, sizeof q));
}

/* "__metadata__": {"key": "value", ...} or null. */
static bool parse_metadata(StParse *p, size_t at) {
  uj_safetensors *f = p->f;
  char *key, *value, q[QUOTE_SIZE];
  size_t klen, vlen, kat;
  bool more;
  if (p->seen_metadata) return json_fail(&p->r, at, "\"__metadata__\" is given twice");
  p->seen_metadata = true;
  if (json_peek(&p->r, 'n'))
    return json_skip(&p->r); /* null: none, as the Python library reads it */
  if (!json_open(&p->r, '{', "an object of strings for \"__metadata__\"")) return false;
  for (size_t i = 0; json_next(&p->r, '}', i, &more) && more; i++) {
    if (!json_key(&p->r, &key, &klen, &kat)) return false;
    if (!json_peek(&p->r, '"')) {
      size_t vat = p->r.pos;
      json_fail(&p->r, vat, "__metadata__ %s: the value is %s; only strings are allowed",
                quote(key, klen, q, sizeof q), json_kind(&p->r));
      return free(key), false;
    }
    if (!json_string(&p->r, &value, &vlen)) return free(key), false;
    StMeta *m = grow(f->meta, &f->cap_meta, f->nmeta + 1, sizeof *m);
    if (!m) free(key), free(value);
    if (!m) return json_fail(&p->r, kat, "out of memory");
    f->meta = m;
    f->meta[f->nmeta++] = (StMeta){key, value};
    if (!check_no_nul(p, kat, "__metadata__ key", key, klen) ||
        !check_no_nul(p, kat, "__metadata__ value", value, vlen))
      return false;
  }
  return !p->r.failed;
}

static bool parse_dtype(StParse *p, StTensor *t, const char *what) {
  char *s, q[QUOTE_SIZE];
  size_t len, at = p->r.pos;
  if (!json_string(&p->r, &s, &len)) return false;
  for (int d = 0; d < UJ_SCALAR_COUNT; d++)
    if (st_dtype_names[d] && strlen(st_dtype_names[d]) == len &&
        memcmp(st_dtype_names[d], s, len) == 0) {
      t->dtype = (uj_scalar)d;
      return free(s), true;
    }
  json_fail(&p->r, at, "%s: dtype %s is not one uopjit reads (" ST_DTYPES_STR ")", what,
            quote(s, len, q, sizeof q));
  return free(s), false;
}

/* A JSON array of at most max unsigned integers (each at most limit). */
static bool parse_uints(StParse *p, const char *what, uint64_t limit, uint64_t *out, unsigned max,
                        unsigned *count) {
  bool more;
  unsigned n = 0;
  if (!json_open(&p->r, '[', "an array of integers")) return false;
  for (; json_next(&p->r, ']', n, &more) && more; n++) {
    if (n == max) return json_fail(&p->r, p->r.pos, "%s: more than %u entries", what, max);
    if (!json_uint(&p->r, what, limit, &out[n])) return false;
  }
  *count = n;
  return !p->r.failed;
}

static bool parse_shape(StParse *p, StTensor *t, const char *what) {
  uint64_t dims[UJ_MAX_DIMS];
  char w[WHAT_SIZE + 32];
  snprintf(w, sizeof w, "%s: shape", what);
  if (!parse_uints(p, w, INT64_MAX, dims, UJ_MAX_DIMS, &t->ndim)) return false;
  for (unsigned k = 0; k < t->ndim; k++) t->shape[k] = (int64_t)dims[k];
  return true;
}

static bool parse_offsets(StParse *p, StTensor *t, const char *what) {
  uint64_t o[2];
  unsigned n = 0;
  size_t at = p->r.pos;
  char w[WHAT_SIZE + 32];
  snprintf(w, sizeof w, "%s: data_offsets", what);
  if (!parse_uints(p, w, UINT64_MAX, o, 2, &n)) return false;
  if (n != 2) return json_fail(&p->r, at, "%s: %u numbers, not 2 ([begin, end])", w, n);
  t->begin = o[0], t->end = o[1];
  return true;
}

/* The bytes t's shape and dtype take: false when they overflow. */
static bool tensor_bytes(const StTensor *t, uint64_t *bytes) {
  uint64_t numel = 1, size = elem_bytes(dt_scalar(t->dtype));
  for (unsigned k = 0; k < t->ndim; k++) {
    if (t->shape[k] != 0 && numel > UINT64_MAX / (uint64_t)t->shape[k]) return false;
    numel *= (uint64_t)t->shape[k];
  }
  if (numel > UINT64_MAX / size) return false;
  *bytes = numel * size;
  return true;
}

/* t's range within the data, and of its shape's size. */
static bool check_range(StParse *p, size_t at, const StTensor *t, const char *what) {
  uint64_t bytes;
  char sh[192];
  if (t->begin > t->end)
    return json_fail(&p->r, at, "%s: data_offsets [%llu, %llu] are reversed", what,
                     (unsigned long long)t->begin, (unsigned long long)t->end);
  if (t->end > p->f->data_size)
    return json_fail(&p->r, at, "%s: data_offsets [%llu, %llu] run past the data's %llu bytes",
                     what, (unsigned long long)t->begin, (unsigned long long)t->end,
                     (unsigned long long)p->f->data_size);
  shape_str(t->shape, t->ndim, sh, sizeof sh);
  if (!tensor_bytes(t, &bytes))
    return json_fail(&p->r, at, "%s: shape %s of %s overflows 64 bits", what, sh,
                     st_dtype_names[t->dtype]);
  if (bytes != t->end - t->begin)
    return json_fail(&p->r, at,
                     "%s: data_offsets [%llu, %llu] hold %llu bytes, but shape %s of %s takes %llu",
                     what, (unsigned long long)t->begin, (unsigned long long)t->end,
                     (unsigned long long)(t->end - t->begin), sh, st_dtype_names[t->dtype],
                     (unsigned long long)bytes);
  return true;
}

/* The members of a tensor's object: dtype, shape and data_offsets, once each. */
static bool parse_tensor_fields(StParse *p, StTensor *t, const char *what, size_t at) {
  static const char *const keys[3] = {"dtype", "shape", "data_offsets"};
  bool seen[3] = {false, false, false}, more;
  char *key;
  size_t klen, kat;
  if (!json_open(&p->r, '{', "an object {\"dtype\", \"shape\", \"data_offsets\"}")) return false;
  for (size_t i = 0; json_next(&p->r, '}', i, &more) && more; i++) {
    if (!json_key(&p->r, &key, &klen, &kat)) return false;
    int k = 0;
    while (k < 3 && (strlen(keys[k]) != klen || memcmp(keys[k], key, klen) != 0)) k++;
    free(key);
    if (k == 3) { /* another key: skipped */
      if (!json_skip(&p->r)) return false;
      continue;
    }
    if (seen[k]) return json_fail(&p->r, kat, "%s: \"%s\" is given twice", what, keys[k]);
    seen[k] = true;
    bool ok = k == 0   ? parse_dtype(p, t, what)
              : k == 1 ? parse_shape(p, t, what)
                       : parse_offsets(p, t, what);
    if (!ok) return false;
  }
  for (int k = 0; k < 3 && !p->r.failed; k++)
    if (!seen[k]) return json_fail(&p->r, at, "%s: no \"%s\"", what, keys[k]);
  return !p->r.failed && check_range(p, at, t, what);
}

/* "name": {...}; name is the file's from here on (freed with it). */
static bool parse_tensor(StParse *p, char *name, size_t len, size_t at) {
  uj_safetensors *f = p->f;
  StTensor *ts = grow(f->tensors, &f->cap, f->n + 1, sizeof *ts);
  if (!ts) return free(name), json_fail(&p->r, at, "out of memory");
  f->tensors = ts;
  StTensor *t = &f->tensors[f->n++];
  *t = (StTensor){.name = name};
  char q[QUOTE_SIZE], what[WHAT_SIZE];
  snprintf(what, sizeof what, "tensor %s", quote(name, len, q, sizeof q));
  return check_no_nul(p, at, "tensor name", name, len) && parse_tensor_fields(p, t, what, at);
}

static bool parse_header(StParse *p) {
  char *key;
  size_t len, at;
  bool more;
  if (p->r.len == 0 || p->r.text[0] != '{')
    return json_fail(&p->r, 0, "the header does not start with '{'");
  p->r.pos = 1;
  for (size_t i = 0; json_next(&p->r, '}', i, &more) && more; i++) {
    if (!json_key(&p->r, &key, &len, &at)) return false;
    bool meta = len == sizeof st_metadata_key - 1 && memcmp(key, st_metadata_key, len) == 0;
    if (meta) free(key);
    if (meta ? !parse_metadata(p, at) : !parse_tensor(p, key, len, at)) return false;
  }
  return !p->r.failed && json_end(&p->r);
}

/* ---- opening: the tensors tile the data; names and keys once each ---- */

static bool open_fail(uj_safetensors *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static bool open_fail(uj_safetensors *f, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tensor_fail(f->s, "safetensors_open", "%s: %s", f->path, msg);
  return false;
}

static int cmp_offsets(const void *a, const void *b) {
  const StTensor *x = *(const StTensor *const *)a, *y = *(const StTensor *const *)b;
  if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
  return x->end < y->end ? -1 : x->end > y->end;
}

static const char *quote_name(const StTensor *t, char *buf, size_t size) {
  return quote(t->name, strlen(t->name), buf, size);
}

/* Sorted by offset, each tensor starts where the one before ended. */
static bool check_tiling(uj_safetensors *f, StTensor **order) {
  char q1[QUOTE_SIZE], q2[QUOTE_SIZE];
  uint64_t at = 0;
  qsort(order, f->n, sizeof *order, cmp_offsets);
  for (size_t i = 0; i < f->n; i++) {
    const StTensor *t = order[i], *prev = i ? order[i - 1] : NULL;
    if (t->begin > at)
      return open_fail(f, "bytes [%llu, %llu) of the data belong to no tensor (before tensor %s)",
                       (unsigned long long)at, (unsigned long long)t->begin,
                       quote_name(t, q1, sizeof q1));
    if (t->begin < at)
      return open_fail(f, "tensors %s [%llu, %llu) and %s [%llu, %llu) overlap",
                       quote_name(prev, q2, sizeof q2), (unsigned long long)prev->begin,
                       (unsigned long long)prev->end, quote_name(t, q1, sizeof q1),
                       (unsigned long long)t->begin, (unsigned long long)t->end);
    at = t->end;
  }
  if (at != f->data_size)
    return open_fail(f,
                     "bytes [%llu, %llu) of the data, at the end of the file, belong to no tensor",
                     (unsigned long long)at, (unsigned long long)f->data_size);
  return true;
}

static int cmp_tensor_names(const void *a, const void *b) {
  return strcmp((*(const StTensor *const *)a)->name, (*(const StTensor *const *)b)->name);
}

static int cmp_meta(const void *a, const void *b) {
  return strcmp(((const StMeta *)a)->key, ((const StMeta *)b)->key);
}

/* by_name made: no name twice, no metadata key twice; then the tiling. */
static bool index_names(uj_safetensors *f) {
  char q[QUOTE_SIZE];
  size_t size = (f->n ? f->n : 1) * sizeof *f->by_name;
  StTensor **order = malloc(size);
  f->by_name = malloc(size);
  if (!f->by_name || !order) return free(order), open_fail(f, "out of memory");
  for (size_t i = 0; i < f->n; i++) f->by_name[i] = order[i] = &f->tensors[i];
  qsort(f->by_name, f->n, sizeof *f->by_name, cmp_tensor_names);
  bool ok = true;
  for (size_t i = 1; i < f->n && ok; i++)
    if (strcmp(f->by_name[i - 1]->name, f->by_name[i]->name) == 0)
      ok = open_fail(f, "tensor %s is given twice", quote_name(f->by_name[i], q, sizeof q));
  if (f->nmeta) qsort(f->meta, f->nmeta, sizeof *f->meta, cmp_meta);
  for (size_t i = 1; i < f->nmeta && ok; i++)
    if (strcmp(f->meta[i - 1].key, f->meta[i].key) == 0)
      ok = open_fail(f, "__metadata__ key %s is given twice",
                     quote(f->meta[i].key, strlen(f->meta[i].key), q, sizeof q));
  ok = ok && check_tiling(f, order);
  free(order);
  return ok;
}

/* n bytes at offset of the file into buf; false with errno set (0: the
 * file ended first). */
static bool read_at(int fd, void *buf, size_t n, uint64_t offset) {
  for (size_t got = 0; got < n;) {
    ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(offset + got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return errno = k == 0 ? 0 : errno, false;
    got += (size_t)k;
  }
  return true;
}

static const char *read_error(void) { return errno ? strerror(errno) : "the file is truncated"; }

/* The length, the header read and checked. */
static bool open_header(uj_safetensors *f, uint64_t file_size) {
  unsigned char len8[ST_LEN_BYTES];
  if (file_size < ST_LEN_BYTES)
    return open_fail(f, "the file has %llu bytes, too few for the 8-byte header length",
                     (unsigned long long)file_size);
  if (!read_at(f->fd, len8, ST_LEN_BYTES, 0)) return open_fail(f, "cannot read: %s", read_error());
  uint64_t n = 0;
  for (int i = ST_LEN_BYTES; i-- > 0;) n = n << 8 | len8[i];
  if (n > ST_MAX_HEADER)
    return open_fail(f, "header length %llu is over the limit of %d bytes", (unsigned long long)n,
                     ST_MAX_HEADER);
  if (n > file_size - ST_LEN_BYTES)
    return open_fail(f, "header length %llu runs past the end of the file (%llu bytes)",
                     (unsigned long long)n, (unsigned long long)file_size);
  f->data_start = ST_LEN_BYTES + n;
  f->data_size = file_size - f->data_start;
  char *text = malloc(n ? n : 1);
  if (!text) return open_fail(f, "out of memory for a header of %llu bytes", (unsigned long long)n);
  StParse p = {json_reader(text, n, ST_LEN_BYTES), f, false};
  bool ok = read_at(f->fd, text, n, ST_LEN_BYTES) || open_fail(f, "cannot read: %s", read_error());
  ok = ok && (parse_header(&p) || open_fail(f, "header %s", p.r.err));
  free(text);
  return ok && index_names(f);
}

uj_safetensors *uj_safetensors_open(uj_session *s, const char *path) {
  if (!s) return NULL;
  if (!path) return tensor_fail(s, "safetensors_open", "no path");
  uj_safetensors *f = calloc(1, sizeof *f);
  char *p = strdup(path);
  if (!f || !p) return free(f), free(p), tensor_fail(s, "safetensors_open", "out of memory");
  /* O_NONBLOCK: a FIFO opens at once (and is refused), not when a writer comes */
  *f = (uj_safetensors){.s = s, .path = p, .fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  struct stat st;
  bool ok = f->fd >= 0 || open_fail(f, "cannot open: %s", strerror(errno));
  ok = ok && (fstat(f->fd, &st) == 0 || open_fail(f, "cannot stat: %s", strerror(errno)));
  ok = ok && (S_ISREG(st.st_mode) || open_fail(f, "not a regular file"));
  ok = ok && open_header(f, (uint64_t)st.st_size);
  if (!ok) return uj_safetensors_close(f), NULL;
  return f;
}

void uj_safetensors_close(uj_safetensors *f) {
  if (!f) return;
  if (f->fd >= 0) close(f->fd);
  for (size_t i = 0; i < f->n; i++) free(f->tensors[i].name);
  for (size_t i = 0; i < f->nmeta; i++) free(f->meta[i].key), free(f->meta[i].value);
  free(f->tensors);
  free(f->by_name);
  free(f->meta);
  free(f->path);
  free(f);
}

size_t uj_safetensors_count(const uj_safetensors *f) { return f ? f->n : 0; }

const char *uj_safetensors_name(const uj_safetensors *f, size_t i) {
  return f && i < f->n ? f->tensors[i].name : NULL;
}

size_t uj_safetensors_meta_count(const uj_safetensors *f) { return f ? f->nmeta : 0; }

const char *uj_safetensors_meta_key(const uj_safetensors *f, size_t i) {
  return f && i < f->nmeta ? f->meta[i].key : NULL;
}

const char *uj_safetensors_meta(const uj_safetensors *f, const char *key) {
  if (!f || !key) return NULL;
  StMeta k = {(char *)key, NULL};
  const StMeta *m = f->nmeta ? bsearch(&k, f->meta, f->nmeta, sizeof *f->meta, cmp_meta) : NULL;
  return m ? m->value : NULL;
}

/* ---- reading a tensor ---- */

static const StTensor *find_tensor(const uj_safetensors *f, const char *name) {
  StTensor key = {.name = (char *)name}, *kp = &key;
  StTensor **t = f->n ? bsearch(&kp, f->by_name, f->n, sizeof *f->by_name, cmp_tensor_names) : NULL;
  return t ? *t : NULL;
}

/* Each byte of a bool tensor 0 or 1; else the first other one's index in *bad. */
static bool bools_ok(uj_scalar dtype, const unsigned char *b, size_t n, size_t *bad) {
  for (size_t i = 0; dtype == UJ_BOOL && i < n; i++)
    if (b[i] > 1) return *bad = i, false;
  return true;
}

uj_tensor *uj_safetensors_get(uj_safetensors *f, const char *name) {
  if (!f) return NULL;
  uj_session *s = f->s;
  char q[QUOTE_SIZE];
  if (!name) return tensor_fail(s, "safetensors_get", "%s: no name", f->path);
  const StTensor *t = find_tensor(f, name);
  if (!t)
    return tensor_fail(s, "safetensors_get", "%s: no tensor %s", f->path,
                       quote(name, strlen(name), q, sizeof q));
  size_t n = (size_t)(t->end - t->begin), bad;
  unsigned char *buf = malloc(n ? n : 1);
  if (!buf)
    return tensor_fail(s, "safetensors_get", "%s: out of memory for the %zu bytes of tensor %s",
                       f->path, n, quote(name, strlen(name), q, sizeof q));
  uj_tensor *out = NULL;
  if (!read_at(f->fd, buf, n, f->data_start + t->begin))
    tensor_fail(s, "safetensors_get", "%s: tensor %s: cannot read: %s", f->path,
                quote(name, strlen(name), q, sizeof q), read_error());
  else if (!bools_ok(t->dtype, buf, n, &bad))
    tensor_fail(s, "safetensors_get",
                "%s: tensor %s: bool element %zu is %u; only 0 and 1 are read", f->path,
                quote(name, strlen(name), q, sizeof q), bad, buf[bad]);
  else if (!(out = uj_tensor_from_data(s, t->dtype, t->shape, t->ndim, buf))) {
    char why[sizeof s->ctx->error];
    snprintf(why, sizeof why, "%s", uj_session_error(s));
    tensor_fail(s, "safetensors_get", "%s: tensor %s: %s", f->path,
                quote(name, strlen(name), q, sizeof q), why);
  }
  free(buf);
  return out;
}

/* ---- writing ---- */

/* A growing text: the header being written. */
typedef struct StBuf {
  char *text;
  size_t len, cap;
  bool oom;
} StBuf;

static void buf_put(StBuf *b, const char *s, size_t n) {
  if (b->oom) return;
  if (b->len + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + n + 1) cap *= 2;
    char *t = realloc(b->text, cap);
    if (!t) return (void)(b->oom = true);
    b->text = t, b->cap = cap;
  }
  memcpy(b->text + b->len, s, n);
  b->len += n;
  b->text[b->len] = '\0';
}

static void buf_str(StBuf *b, const char *s) { buf_put(b, s, strlen(s)); }

/* s as a JSON string, escaped as serde_json escapes: '"', '\\' and
 * control characters; the rest as it is (UTF-8). */
static void buf_json_string(StBuf *b, const char *s) {
  static const char from[] = "\"\\\b\f\n\r\t", to[] = "\"\\bfnrt";
  char e[8];
  buf_put(b, "\"", 1);
  for (; *s; s++) {
    const char *k = strchr(from, *s);
    if (k) snprintf(e, sizeof e, "\\%c", to[k - from]);
    else if ((unsigned char)*s < 0x20) snprintf(e, sizeof e, "\\u%04x", (unsigned)*s);
    else e[0] = *s, e[1] = '\0';
    buf_str(b, e);
  }
  buf_put(b, "\"", 1);
}

typedef struct StSave {
  uj_session *s;
  const char *path;
  const char *const *names;
  uj_tensor *const *ts;
  size_t n;
  uint64_t *begin, *bytes; /* by tensor */
  size_t *order;           /* the tensors in the order of their data */
} StSave;

static uj_status save_fail(const StSave *v, uj_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static uj_status save_fail(const StSave *v, uj_status st, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  tensor_fail(v->s, "safetensors_save", "%s: %s", v->path, msg);
  return st;
}

/* strs[0..n) (what: "tensor name") non-NULL and UTF-8; if unique, each once. */
static uj_status check_strings(const StSave *v, const char *const *strs, size_t n, const char *what,
                               bool unique) {
  char q[QUOTE_SIZE];
  const char **sorted = malloc((n ? n : 1) * sizeof *sorted);
  if (!sorted) return save_fail(v, UJ_ERR_NOMEM, "out of memory");
  uj_status st = UJ_OK;
  for (size_t i = 0; i < n && st == UJ_OK; i++) {
    if (!strs[i]) st = save_fail(v, UJ_ERR_ARG, "%s %zu is NULL", what, i);
    else if (!json_utf8_valid(strs[i], strlen(strs[i])))
      st = save_fail(v, UJ_ERR_ARG, "%s %s is not valid UTF-8", what,
                     quote(strs[i], strlen(strs[i]), q, sizeof q));
    sorted[i] = strs[i];
  }
  if (st == UJ_OK && unique && n) qsort(sorted, n, sizeof *sorted, cmp_str);
  for (size_t i = 1; i < n && st == UJ_OK && unique; i++)
    if (strcmp(sorted[i - 1], sorted[i]) == 0)
      st = save_fail(v, UJ_ERR_ARG, "%s %s is given twice", what,
                     quote(sorted[i], strlen(sorted[i]), q, sizeof q));
  free((void *)sorted);
  return st;
}

static uj_status check_save_args(const StSave *v, const char *const *keys,
                                 const char *const *values, size_t nmeta) {
  for (size_t i = 0; i < v->n; i++) {
    if (!v->ts[i]) return UJ_ERR_ARG; /* the message of what made it NULL stays */
    if (v->ts[i]->s != v->s)
      return save_fail(v, UJ_ERR_ARG, "tensor %zu belongs to another session", i);
  }
  uj_status st = check_strings(v, v->names, v->n, "tensor name", true);
  for (size_t i = 0; i < v->n && st == UJ_OK; i++)
    if (strcmp(v->names[i], st_metadata_key) == 0)
      st = save_fail(v, UJ_ERR_ARG, "a tensor cannot be named \"__metadata__\"");
  if (st == UJ_OK) st = check_strings(v, keys, nmeta, "__metadata__ key", true);
  if (st == UJ_OK) st = check_strings(v, values, nmeta, "__metadata__ value", false);
  return st;
}

static size_t tensor_width(const uj_tensor *t) { return elem_bytes(dt_scalar(uj_tensor_dtype(t))); }

/* Where each tensor's bytes go: the widest elements first, in the order
 * given within a width, so each tensor starts at a multiple of its element
 * size (the data itself starting at one of 8). */
static void layout(StSave *v) {
  uint64_t at = 0;
  size_t k = 0;
  for (size_t width = 8; width >= 1; width /= 2)
    for (size_t i = 0; i < v->n; i++) {
      if (tensor_width(v->ts[i]) != width) continue;
      v->bytes[i] = (uint64_t)uj_tensor_numel(v->ts[i]) * width;
      v->begin[i] = at, at += v->bytes[i];
      v->order[k++] = i;
    }
  assert(k == v->n && "every element is 8, 4, 2 or 1 bytes wide");
}

/* The header as the Python library writes it (compact JSON: metadata
 * first, then each tensor's dtype, shape, data_offsets), padded with
 * spaces to a multiple of 8 bytes; tensors in the order given. */
static void header_text(const StSave *v, const char *const *keys, const char *const *values,
                        size_t nmeta, StBuf *b) {
  char num[96];
  buf_str(b, "{");
  if (nmeta) buf_str(b, "\"__metadata__\":{");
  for (size_t i = 0; i < nmeta; i++) {
    if (i) buf_str(b, ",");
    buf_json_string(b, keys[i]);
    buf_str(b, ":");
    buf_json_string(b, values[i]);
  }
  if (nmeta) buf_str(b, v->n ? "}," : "}");
  for (size_t i = 0; i < v->n; i++) {
    const uj_tensor *t = v->ts[i];
    buf_str(b, i ? "," : "");
    buf_json_string(b, v->names[i]);
    buf_str(b, ":{\"dtype\":\"");
    buf_str(b, st_dtype_names[uj_tensor_dtype(t)]);
    buf_str(b, "\",\"shape\":[");
    for (unsigned k = 0; k < uj_tensor_ndim(t); k++) {
      snprintf(num, sizeof num, "%s%lld", k ? "," : "", (long long)uj_tensor_shape(t)[k]);
      buf_str(b, num);
    }
    snprintf(num, sizeof num, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)v->begin[i],
             (unsigned long long)(v->begin[i] + v->bytes[i]));
    buf_str(b, num);
  }
  buf_str(b, "}");
  while (!b->oom && b->len % ST_ALIGN) buf_str(b, " ");
}

static bool write_all(int fd, const void *data, size_t n) {
  for (size_t done = 0; done < n;) {
    ssize_t k = write(fd, (const char *)data + done, n - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    done += (size_t)k;
  }
  return true;
}

/* Each tensor's bytes, in the order of the data, through host (room for
 * the largest). */
static uj_status write_data(const StSave *v, int fd, unsigned char *host) {
  char q[QUOTE_SIZE];
  size_t bad;
  for (size_t k = 0; k < v->n; k++) {
    size_t i = v->order[k], n = (size_t)v->bytes[i];
    uj_status st = uj_tensor_to_host(v->ts[i], host, n);
    if (st != UJ_OK) return st;
    if (!bools_ok(uj_tensor_dtype(v->ts[i]), host, n, &bad))
      return save_fail(v, UJ_ERR_ARG, "tensor %s: bool element %zu is %u; only 0 and 1 are written",
                       quote(v->names[i], strlen(v->names[i]), q, sizeof q), bad, host[bad]);
    if (!write_all(fd, host, n))
      return save_fail(v, UJ_ERR_IO, "cannot write: %s", strerror(errno));
  }
  return UJ_OK;
}

/* A new file beside path (path.PID.N.tmp, made with O_EXCL); its name in tmp. */
static int open_temp(const StSave *v, char *tmp, size_t size) {
  for (unsigned k = 0; k < 100; k++) {
    snprintf(tmp, size, "%s.%ld.%u.tmp", v->path, (long)getpid(), k);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0 || errno != EEXIST) return fd;
  }
  return -1;
}

/* The length, the header and the data into a temporary file, synced,
 * then renamed onto path; the temporary file is removed on failure. */
static uj_status write_file(const StSave *v, const StBuf *head, unsigned char *host) {
  size_t tsize = strlen(v->path) + 48;
  char *tmp = malloc(tsize);
  if (!tmp) return save_fail(v, UJ_ERR_NOMEM, "out of memory");
  int fd = open_temp(v, tmp, tsize);
  if (fd < 0) {
    save_fail(v, UJ_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    return free(tmp), UJ_ERR_IO;
  }
  unsigned char len8[ST_LEN_BYTES];
  for (int i = 0; i < ST_LEN_BYTES; i++) len8[i] = (unsigned char)((uint64_t)head->len >> (8 * i));
  uj_status st = write_all(fd, len8, sizeof len8) && write_all(fd, head->text, head->len)
                     ? write_data(v, fd, host)
                     : save_fail(v, UJ_ERR_IO, "cannot write: %s", strerror(errno));
  if (st == UJ_OK && fsync(fd) != 0)
    st = save_fail(v, UJ_ERR_IO, "cannot write: %s", strerror(errno));
  if (close(fd) != 0 && st == UJ_OK)
    st = save_fail(v, UJ_ERR_IO, "cannot write: %s", strerror(errno));
  if (st == UJ_OK && rename(tmp, v->path) != 0)
    st = save_fail(v, UJ_ERR_IO, "cannot rename %s onto it: %s", tmp, strerror(errno));
  if (st != UJ_OK) unlink(tmp);
  free(tmp);
  return st;
}

static uj_status save(StSave *v, const char *const *keys, const char *const *values, size_t nmeta) {
  uj_status st = check_save_args(v, keys, values, nmeta);
  if (st != UJ_OK) return st;
  layout(v);
  StBuf head = {0};
  header_text(v, keys, values, nmeta, &head);
  size_t most = 1;
  for (size_t i = 0; i < v->n; i++) most = v->bytes[i] > most ? (size_t)v->bytes[i] : most;
  unsigned char *host = head.oom ? NULL : malloc(most);
  if (!host) st = save_fail(v, UJ_ERR_NOMEM, "out of memory");
  else if (v->n) st = uj_tensor_realize(v->ts, v->n); /* one schedule for all */
  if (st == UJ_OK) st = write_file(v, &head, host);
  free(host);
  free(head.text);
  return st;
}

uj_status uj_safetensors_save(uj_session *s, const char *path, const char *const *names,
                              uj_tensor *const *ts, size_t n, const char *const *meta_keys,
                              const char *const *meta_values, size_t nmeta) {
  if (!s) return UJ_ERR_ARG;
  if (!path) return tensor_fail(s, "safetensors_save", "no path"), UJ_ERR_ARG;
  StSave v = {s, path, names, ts, n, NULL, NULL, NULL};
  if (n && (!names || !ts)) return save_fail(&v, UJ_ERR_ARG, "no names or tensors");
  if (nmeta && (!meta_keys || !meta_values))
    return save_fail(&v, UJ_ERR_ARG, "no metadata keys or values");
  v.begin = malloc((n ? n : 1) * sizeof *v.begin);
  v.bytes = malloc((n ? n : 1) * sizeof *v.bytes);
  v.order = malloc((n ? n : 1) * sizeof *v.order);
  uj_status st = v.begin && v.bytes && v.order ? save(&v, meta_keys, meta_values, nmeta)
                                               : save_fail(&v, UJ_ERR_NOMEM, "out of memory");
  free(v.begin);
  free(v.bytes);
  free(v.order);
  return st;
}
