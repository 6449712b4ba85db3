/* test_safetensors.c — safetensors files (tensor.h: uj_safetensors_*;
 * lib/tensor/safetensors.c, lib/tensor/json.c).
 *
 * The JSON reader alone (numbers, escapes, surrogates, UTF-8, nesting);
 * round trips of every dtype for 0-d, 1-d, 3-d and empty tensors, with
 * metadata and names that need escapes; the writer's bytes against bytes
 * laid out here by hand as the Python library writes them (and those
 * bytes read back); headers written in every way JSON and the format
 * allow; then every error of reading and of writing: the message names
 * the path and says what was wrong (for a header, at which byte of the
 * file), nothing leaks (the sanitizer build), and a failed save leaves
 * neither a temporary file nor a changed file at the path. Nothing here
 * needs Python. */
#define _XOPEN_SOURCE 700 /* mkdtemp, setrlimit, ftruncate */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tensor/json.h"
#include "tensor_util.h"
#include "tmp_dir.h"

/* ---- helpers ---- */

/* A safetensors file made by hand: the length len8 (8 bytes, little
 * endian), the header's hlen bytes, then nd bytes of data. */
static bool put_raw(const char *path, uint64_t len8, const char *header, size_t hlen,
                    const void *data, size_t nd) {
  size_t n = 8 + hlen + nd;
  unsigned char *b = malloc(n);
  for (int i = 0; i < 8; i++) b[i] = (unsigned char)(len8 >> (8 * i));
  memcpy(b + 8, header, hlen);
  if (nd) memcpy(b + 8 + hlen, data, nd);
  bool ok = file_put(path, b, n);
  free(b);
  return ok;
}

/* A file of this header (its own length) and nd bytes of data. */
static bool put_st(const char *path, const char *header, const void *data, size_t nd) {
  return put_raw(path, strlen(header), header, strlen(header), data, nd);
}

/* The header padded with spaces to a multiple of 8, as the Python library writes it. */
static char *padded(const char *header) {
  size_t n = strlen(header), m = (n + 7) / 8 * 8;
  char *b = malloc(m + 1);
  memcpy(b, header, n);
  memset(b + n, ' ', m - n);
  b[m] = '\0';
  return b;
}

/* Opening path fails with "safetensors_open: PATH: " + a message holding want. */
static void expect_open_error(uj_session *s, const char *path, const char *want, const char *what) {
  uj_session_clear_error(s);
  uj_safetensors *f = uj_safetensors_open(s, path);
  CHECK(f == NULL, "%s: opened", what);
  uj_safetensors_close(f);
  const char *err = uj_session_error(s);
  char prefix[512];
  snprintf(prefix, sizeof prefix, "safetensors_open: %s: ", path);
  CHECK(strncmp(err, prefix, strlen(prefix)) == 0 && strstr(err, want),
        "%s: message '%s', want '%s'", what, err, want);
  uj_session_clear_error(s);
}

/* A file of header and data fails to open with want in the message. */
static void expect_header_error(uj_session *s, TmpDir *t, const char *header, const void *data,
                                size_t nd, const char *want) {
  const char *path = tmp_file(t, "bad.safetensors");
  CHECK(put_st(path, header, data, nd), "write %s", path);
  expect_open_error(s, path, want, header);
  remove(path);
}

static void expect_tensor(uj_session *s, uj_safetensors *f, const char *name, uj_scalar dtype,
                          const int64_t *shape, unsigned ndim, const void *bytes, size_t n) {
  uj_tensor *t = uj_safetensors_get(f, name);
  CHECK(t != NULL, "get %s: %s", name, uj_session_error(s));
  if (!t) return;
  CHECK(uj_tensor_dtype(t) == dtype, "%s: dtype %d, want %d", name, (int)uj_tensor_dtype(t),
        (int)dtype);
  CHECK(uj_tensor_ndim(t) == ndim, "%s: ndim %u, want %u", name, uj_tensor_ndim(t), ndim);
  for (unsigned k = 0; k < ndim && k < uj_tensor_ndim(t); k++)
    CHECK(uj_tensor_shape(t)[k] == shape[k], "%s: dim %u is %lld", name, k,
          (long long)uj_tensor_shape(t)[k]);
  unsigned char *got = malloc(n ? n : 1);
  CHECK(uj_tensor_to_host(t, got, n) == UJ_OK && (n == 0 || memcmp(got, bytes, n) == 0),
        "%s: bytes differ", name);
  free(got);
  uj_tensor_free(t);
}

/* ---- the JSON reader ---- */

static void expect_uint(const char *text, uint64_t max, bool ok, uint64_t want, const char *msg) {
  JsonReader r = json_reader(text, strlen(text), 100);
  uint64_t v = 0;
  bool got = json_uint(&r, "n", max, &v) && json_end(&r);
  CHECK(got == ok, "'%s': %s", text, r.err);
  if (ok) CHECK(v == want, "'%s': %llu", text, (unsigned long long)v);
  else CHECK_STR(r.err, msg, "'%s'", text);
}

static void expect_string(const char *text, const char *want, size_t wlen, const char *err) {
  JsonReader r = json_reader(text, strlen(text), 0);
  char *s = NULL;
  size_t len = 0;
  bool ok = json_string(&r, &s, &len) && json_end(&r);
  if (want)
    CHECK(ok && len == wlen && memcmp(s, want, wlen) == 0, "'%s': %s", text, ok ? s : r.err);
  else CHECK(!ok && strstr(r.err, err), "'%s': '%s', want '%s'", text, ok ? "ok" : r.err, err);
  free(s);
}

static void expect_skip(const char *text, const char *err) {
  JsonReader r = json_reader(text, strlen(text), 0);
  bool ok = json_skip(&r) && json_end(&r);
  if (!err) CHECK(ok, "'%.40s': %s", text, r.err);
  else CHECK(!ok && strstr(r.err, err), "'%.40s': '%s', want '%s'", text, ok ? "ok" : r.err, err);
}

static void test_json(void) {
  expect_uint("0", 10, true, 0, NULL);
  expect_uint(" 18446744073709551615 ", UINT64_MAX, true, UINT64_MAX, NULL);
  expect_uint("18446744073709551616", UINT64_MAX, false, 0,
              "at byte 100: n: 18446744073709551616 is too large (at most 18446744073709551615)");
  expect_uint("9223372036854775807", INT64_MAX, true, INT64_MAX, NULL);
  expect_uint("9223372036854775808", INT64_MAX, false, 0,
              "at byte 100: n: 9223372036854775808 is too large (at most 9223372036854775807)");
  expect_uint("10", 9, false, 0, "at byte 100: n: 10 is too large (at most 9)");
  expect_uint("-3", 10, false, 0, "at byte 100: n: -3 is negative");
  expect_uint("2.0", 10, false, 0, "at byte 100: n: 2.0 is not an integer");
  expect_uint("1e3", 10000, false, 0, "at byte 100: n: 1e3 is not an integer");
  expect_uint("01", 10, false, 0, "at byte 100: a number with a leading zero");
  expect_uint("\"1\"", 10, false, 0, "at byte 100: n: expected an integer, found a string");
  expect_uint("1 2", 10, false, 0,
              "at byte 102: expected only whitespace after the value, found a number");

  expect_string("\"a\\\"b\\\\c\\/d\\b\\f\\n\\r\\t\"", "a\"b\\c/d\b\f\n\r\t", 12, NULL);
  expect_string("\"\\u00e9\\u20AC\\ud83d\\ude00\"", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", 9,
                NULL);
  expect_string("\"\xc3\xa9\xf0\x9f\x98\x80\"", "\xc3\xa9\xf0\x9f\x98\x80", 6, NULL);
  expect_string("\"a\\u0000b\"", "a\0b", 3, NULL);
  expect_string("\"\\ud83d\"", NULL, 0, "\\uD83D is a high surrogate with no low one after it");
  expect_string("\"\\ud83dx\"", NULL, 0, "\\uD83D is a high surrogate with no low one after it");
  expect_string("\"\\ud83d\\u0041\"", NULL, 0,
                "\\uD83D is a high surrogate with no low one after it");
  expect_string("\"\\ude00\"", NULL, 0, "\\uDE00 is a low surrogate with no high one before it");
  expect_string("\"\\u12\"", NULL, 0, "a \\u escape without four hex digits");
  expect_string("\"\\x41\"", NULL, 0, "unknown escape '\\x' in a string");
  expect_string("\"a\nb\"", NULL, 0, "at byte 2: control character 0x0A in a string");
  expect_string("\"\xff\"", NULL, 0, "at byte 1: invalid UTF-8 in a string");
  expect_string("\"\xc0\xaf\"", NULL, 0, "invalid UTF-8");         /* overlong '/' */
  expect_string("\"\xed\xa0\x80\"", NULL, 0, "invalid UTF-8");     /* a surrogate in UTF-8 */
  expect_string("\"\xf4\x90\x80\x80\"", NULL, 0, "invalid UTF-8"); /* past U+10FFFF */
  expect_string("\"\xe2\x82\"", NULL, 0, "invalid UTF-8");         /* cut short by the quote */
  expect_string("\"abc", NULL, 0, "at byte 0: a string is not closed");
  expect_string("\"abc\\\"", NULL, 0, "a string is not closed");

  expect_skip("{\"a\": [1, -2.5e+3, true, false, null, {}, [], \"x\"]}", NULL);
  expect_skip("[1,]", "at byte 3: a ',' before ']'");
  expect_skip("{\"a\":1,}", "a ',' before '}'");
  expect_skip("{\"a\" 1}", "at byte 5: expected ':' after a key, found a number");
  expect_skip("{1:2}", "at byte 1: expected a string key, found a number");
  expect_skip("[1 2]", "at byte 3: expected ',' or ']', found a number");
  expect_skip("tru", "expected a value, found a misspelt 'true'");
  expect_skip("nan", "misspelt 'null'");
  expect_skip("-", "a '-' without digits");
  expect_skip("1.", "a '.' without digits after it");
  expect_skip("1e", "an exponent without digits");
  expect_skip("[", "expected a value, found the end");
  expect_skip("'a'", "expected a value, found a character that starts no JSON value");
  expect_skip("{} x", "expected only whitespace after the value");
  char deep[2 * JSON_MAX_DEPTH + 8];
  memset(deep, '[', JSON_MAX_DEPTH);
  memset(deep + JSON_MAX_DEPTH, ']', JSON_MAX_DEPTH);
  deep[2 * JSON_MAX_DEPTH] = '\0';
  expect_skip(deep, NULL);
  memset(deep, '[', JSON_MAX_DEPTH + 1);
  memset(deep + JSON_MAX_DEPTH + 1, ']', JSON_MAX_DEPTH + 1);
  deep[2 * JSON_MAX_DEPTH + 2] = '\0';
  expect_skip(deep, "nested more than 128 deep");
  CHECK(json_utf8_valid("a\xc3\xa9", 3) && !json_utf8_valid("\xc3", 1) &&
            !json_utf8_valid("\x80", 1),
        "utf8");
}

/* ---- round trips ---- */

/* Element i of a test tensor of dtype: bytes that vary (0 or 1 for bool). */
static void fill(unsigned char *b, size_t n, uj_scalar dtype, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    b[i] = dtype == UJ_BOOL ? (unsigned char)((i * 7 + seed) % 3 == 0)
                            : (unsigned char)(i * 31 + seed * 17 + 5);
}

static void test_round_trip(uj_session *s, TmpDir *t) {
  static const int64_t shapes[4][3] = {{0}, {5}, {2, 3, 4}, {0, 3}};
  static const unsigned ndims[4] = {0, 1, 3, 2};
  enum { N = (UJ_SCALAR_COUNT - 1) * 4 };
  uj_tensor *ts[N];
  char names[N][32];
  const char *np[N];
  unsigned char *data[N];
  size_t bytes[N], n = 0;
  for (int d = UJ_SCALAR_COUNT - 1; d > UJ_VOID;
       d--) /* narrow and wide interleaved: the writer reorders the data */
    for (int k = 0; k < 4; k++, n++) {
      size_t numel = 1;
      for (unsigned a = 0; a < ndims[k]; a++) numel *= (size_t)shapes[k][a];
      bytes[n] = numel * elem_bytes(dt_scalar((uj_scalar)d));
      data[n] = malloc(bytes[n] ? bytes[n] : 1);
      fill(data[n], bytes[n], (uj_scalar)d, (unsigned)n);
      ts[n] = uj_tensor_from_data(s, (uj_scalar)d, shapes[k], ndims[k], data[n]);
      snprintf(names[n], sizeof names[n], "%s.%d", scalar_table[d].name, k);
      np[n] = names[n];
    }
  const char *keys[] = {"step", "config", "empty", "esc\"aped\n\xc3\xa9"};
  const char *values[] = {"1200", "{\"n_layer\": 12, \"n_embd\": 768}", "",
                          "tab\there \xf0\x9f\x98\x80"};
  const char *path = tmp_file(t, "all.safetensors");
  CHECK(uj_safetensors_save(s, path, np, ts, n, keys, values, 4) == UJ_OK, "save: %s",
        uj_session_error(s));
  CHECK(tmp_count(t) == 1, "one file in the folder, not %d", tmp_count(t));
  size_t fn;
  unsigned char *file = file_get(path, &fn);
  uint64_t hl = 0;
  for (int i = 7; file && fn >= 8 && i >= 0; i--) hl = hl << 8 | file[i];
  CHECK(file && hl % 8 == 0 && hl < fn, "header length %llu", (unsigned long long)hl);
  free(file);

  uj_safetensors *f = uj_safetensors_open(s, path);
  CHECK(f != NULL, "open: %s", uj_session_error(s));
  if (!f) return;
  CHECK(uj_safetensors_count(f) == n, "count %zu", uj_safetensors_count(f));
  for (size_t i = 0; i < n; i++)
    CHECK_STR(uj_safetensors_name(f, i), np[i], "name %zu: the order given", i);
  CHECK(uj_safetensors_name(f, n) == NULL, "past the end");
  for (size_t i = 0; i < 4; i++)
    CHECK_STR(uj_safetensors_meta(f, keys[i]), values[i], "meta %s", keys[i]);
  CHECK(uj_safetensors_meta(f, "absent") == NULL && uj_safetensors_meta(f, NULL) == NULL,
        "absent meta");
  CHECK(uj_safetensors_meta_count(f) == 4 && uj_safetensors_meta_key(f, 4) == NULL, "4 metadata keys, not %zu",
        uj_safetensors_meta_count(f));
  for (size_t i = 0; i < 4 && uj_safetensors_meta_count(f) == 4; i++) { /* each once, in byte order */
    const char *k = uj_safetensors_meta_key(f, i);
    bool known = false;
    for (size_t j = 0; j < 4 && k; j++) known = known || !strcmp(k, keys[j]);
    CHECK(known && (i == 0 || strcmp(uj_safetensors_meta_key(f, i - 1), k) < 0), "metadata key %zu: %s", i, k ? k : "(null)");
  }
  for (size_t i = 0; i < n; i++) {
    int d = UJ_SCALAR_COUNT - 1 - (int)(i / 4), k = (int)(i % 4);
    expect_tensor(s, f, np[i], (uj_scalar)d, shapes[k], ndims[k], data[i], bytes[i]);
  }
  uj_safetensors_close(f);
  for (size_t i = 0; i < n; i++) free(data[i]), uj_tensor_free(ts[i]);
  remove(path);
}

/* A lazy tensor is computed (with the others, in one schedule) and saved;
 * no tensors at all is a file too. */
static void test_save_lazy(uj_session *s, TmpDir *t) {
  const float a[] = {1, 2, 3}, want[] = {2, 4, 6};
  uj_tensor *x = tf32(s, (const int64_t[]){3}, 1, a), *y = uj_tensor_binary(UJ_BIN_ADD, x, x);
  const char *path = tmp_file(t, "lazy.safetensors"), *name = "y";
  CHECK(uj_safetensors_save(s, path, &name, &y, 1, NULL, NULL, 0) == UJ_OK, "save: %s",
        uj_session_error(s));
  uj_safetensors *f = uj_safetensors_open(s, path);
  CHECK(f != NULL, "open: %s", uj_session_error(s));
  if (f) expect_tensor(s, f, "y", UJ_FLOAT32, (const int64_t[]){3}, 1, want, sizeof want);
  uj_safetensors_close(f);
  CHECK(uj_safetensors_save(s, path, NULL, NULL, 0, NULL, NULL, 0) == UJ_OK, "save nothing: %s",
        uj_session_error(s));
  size_t fn;
  unsigned char *b = file_get(path, &fn);
  CHECK(b && fn == 16 && memcmp(b, "\x08\0\0\0\0\0\0\0{}      ", 16) == 0,
        "an empty file: %zu bytes", fn);
  free(b);
  f = uj_safetensors_open(s, path);
  CHECK(f && uj_safetensors_count(f) == 0 && uj_safetensors_name(f, 0) == NULL, "empty: %s",
        uj_session_error(s));
  uj_safetensors_close(f);
  uj_tensor_free(x), uj_tensor_free(y);
  remove(path);
}

/* ---- the bytes as the Python library writes them ---- */

/* save(names, ts) makes exactly the bytes of header (padded) and data. */
static void expect_written(uj_session *s, TmpDir *t, const char *const *names, uj_tensor *const *ts,
                           size_t n, const char *const *keys, const char *const *values,
                           size_t nmeta, const char *header, const void *data, size_t nd) {
  const char *path = tmp_file(t, "written.safetensors");
  char *h = padded(header);
  CHECK(uj_safetensors_save(s, path, names, ts, n, keys, values, nmeta) == UJ_OK, "save: %s",
        uj_session_error(s));
  size_t fn, hn = strlen(h);
  unsigned char *b = file_get(path, &fn);
  bool same = b && fn == 8 + hn + nd && b[0] == (hn & 0xff) && b[1] == hn >> 8 &&
              memcmp(b + 8, h, hn) == 0 && memcmp(b + 8 + hn, data, nd) == 0;
  CHECK(same, "written bytes differ:\n  got:  %.*s\n  want: %s", b && fn > 8 ? (int)(fn - 8) : 0,
        b ? (char *)b + 8 : "", h);
  free(b);
  free(h);
  remove(path);
}

static void test_python_layout(uj_session *s, TmpDir *t) {
  char path[384];
  snprintf(path, sizeof path, "%s", tmp_file(t, "hf.safetensors"));
  const float w[6] = {0.5f, -1, 2, 3.25f, 4, -5};
  const char *hf =
      "{\"__metadata__\":{\"format\":\"pt\"},\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[2,3],"
      "\"data_offsets\":[0,24]}}";
  char *h = padded(hf);
  CHECK(put_st(path, h, w, sizeof w), "write");
  uj_safetensors *f = uj_safetensors_open(s, path);
  CHECK(f != NULL, "open: %s", uj_session_error(s));
  if (f) {
    CHECK(uj_safetensors_count(f) == 1, "count");
    CHECK_STR(uj_safetensors_name(f, 0), "wte.weight", "name");
    CHECK_STR(uj_safetensors_meta(f, "format"), "pt", "meta");
    expect_tensor(s, f, "wte.weight", UJ_FLOAT32, (const int64_t[]){2, 3}, 2, w, sizeof w);
    uj_session_clear_error(s);
    CHECK(uj_safetensors_get(f, "wpe.weight") == NULL, "absent");
    char want[512];
    snprintf(want, sizeof want, "safetensors_get: %s: no tensor \"wpe.weight\"", path);
    CHECK_STR(uj_session_error(s), want, "absent");
    uj_session_clear_error(s);
  }
  uj_safetensors_close(f);
  free(h);

  /* What uj_safetensors_save writes for it, byte for byte. */
  uj_tensor *wt = tf32(s, (const int64_t[]){2, 3}, 2, w);
  const char *name = "wte.weight", *key = "format", *value = "pt";
  expect_written(s, t, &name, &wt, 1, &key, &value, 1, hf, w, sizeof w);

  /* Widest first in the data, the names in the order given in the header;
   * escapes as serde_json writes them. */
  const uint8_t u8[3] = {1, 2, 3};
  const double f64[1] = {1.5};
  const int16_t i16[1] = {-2};
  uj_tensor *ts[4] = {uj_tensor_from_data(s, UJ_UINT8, (const int64_t[]){3}, 1, u8), wt,
                      uj_tensor_from_data(s, UJ_FLOAT64, NULL, 0, f64),
                      uj_tensor_from_data(s, UJ_INT16, (const int64_t[]){1, 1}, 2, i16)};
  const char *names[4] = {"a", "b\"\\\n\x01/\xc3\xa9", "c", "d"};
  unsigned char data[8 + 24 + 2 + 3];
  memcpy(data, f64, 8), memcpy(data + 8, w, 24), memcpy(data + 32, i16, 2),
      memcpy(data + 34, u8, 3);
  expect_written(s, t, names, ts, 4, NULL, NULL, 0,
                 "{\"a\":{\"dtype\":\"U8\",\"shape\":[3],\"data_offsets\":[34,37]},"
                 "\"b\\\"\\\\\\n\\u0001/"
                 "\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[8,32]},"
                 "\"c\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]},"
                 "\"d\":{\"dtype\":\"I16\",\"shape\":[1,1],\"data_offsets\":[32,34]}}",
                 data, sizeof data);
  for (int i = 0; i < 4; i++) uj_tensor_free(ts[i]);
  remove(path);
}

/* Headers as JSON and the format allow them: whitespace anywhere, keys in
 * any order, other keys skipped, \u escapes in names, __metadata__ null,
 * tensors listed out of the data's order, empty tensors sharing an
 * offset, escapes decoded. */
static void test_read_variants(uj_session *s, TmpDir *t) {
  const char *path = tmp_file(t, "v.safetensors");
  const int32_t v[3] = {7, -8, 9};
  const char *h = " {\n\t\"__metadata__\" : null ,\r\n"
                  "  \"b\" : { \"data_offsets\" : [ 4 , 12 ] , \"extra\": {\"x\": [1, 2.5, null]}, "
                  "\"shape\" : [ 2 ] , \"dtype\" : \"I32\" },\n"
                  "  \"e1\": {\"dtype\": \"F64\", \"shape\": [0, 4], \"data_offsets\": [4, 4]},\n"
                  "  \"\\u00e9\\ud83d\\ude00\\\"\\\\\\n\": {\"dtype\": \"I32\", \"shape\": [], "
                  "\"data_offsets\": [0, 4]},\n"
                  "  \"e0\": {\"dtype\": \"BOOL\", \"shape\": [0], \"data_offsets\": [0, 0]}\n"
                  "}      ";
  CHECK(put_st(path, h + 1, v, sizeof v), "write"); /* h + 1: the header starts with '{' */
  uj_safetensors *f = uj_safetensors_open(s, path);
  CHECK(f != NULL, "open: %s", uj_session_error(s));
  if (!f) return;
  CHECK(uj_safetensors_count(f) == 4, "count %zu", uj_safetensors_count(f));
  const char *order[] = {"b", "e1", "\xc3\xa9\xf0\x9f\x98\x80\"\\\n", "e0"};
  for (size_t i = 0; i < 4; i++) CHECK_STR(uj_safetensors_name(f, i), order[i], "name %zu", i);
  CHECK(uj_safetensors_meta(f, "format") == NULL, "no metadata");
  CHECK(uj_safetensors_meta_count(f) == 0 && uj_safetensors_meta_key(f, 0) == NULL, "no metadata keys");
  expect_tensor(s, f, "b", UJ_INT32, (const int64_t[]){2}, 1, v + 1, 8);
  expect_tensor(s, f, order[2], UJ_INT32, NULL, 0, v, 4);
  expect_tensor(s, f, "e1", UJ_FLOAT64, (const int64_t[]){0, 4}, 2, NULL, 0);
  expect_tensor(s, f, "e0", UJ_BOOL, (const int64_t[]){0}, 1, NULL, 0);
  uj_safetensors_close(f);
  remove(path);
}

/* ---- errors of reading ---- */

static void test_file_errors(uj_session *s, TmpDir *t) {
  const char *path = tmp_file(t, "missing.safetensors");
  expect_open_error(s, path, "cannot open: No such file or directory", "missing");
  expect_open_error(s, t->dir, "not a regular file", "a folder");
  path = tmp_file(t, "fifo");
  CHECK(mkfifo(path, 0600) == 0, "mkfifo: %s", strerror(errno));
  expect_open_error(s, path, "not a regular file",
                    "a FIFO (no writer: opening must not wait for one)");
  remove(path);
  path = tmp_file(t, "short.safetensors");
  CHECK(file_put(path, "\x02\0\0\0\0", 5), "write");
  expect_open_error(s, path, "the file has 5 bytes, too few for the 8-byte header length",
                    "5 bytes");
  CHECK(file_put(path, "", 0), "write");
  expect_open_error(s, path, "the file has 0 bytes", "0 bytes");
  CHECK(put_raw(path, 100000001, "{}", 2, NULL, 0), "write");
  expect_open_error(s, path, "header length 100000001 is over the limit of 100000000 bytes",
                    "huge header");
  CHECK(put_raw(path, UINT64_MAX, "{}", 2, NULL, 0), "write");
  expect_open_error(s, path, "header length 18446744073709551615 is over the limit", "2^64 - 1");
  CHECK(put_raw(path, 40, "{\"a\":{", 6, NULL, 0), "write");
  expect_open_error(s, path, "header length 40 runs past the end of the file (14 bytes)",
                    "truncated header");
  CHECK(put_raw(path, 0, "", 0, NULL, 0), "write");
  expect_open_error(s, path, "header at byte 8: the header does not start with '{'",
                    "empty header");
  uj_session_clear_error(s);
  CHECK(uj_safetensors_open(s, NULL) == NULL &&
            strcmp(uj_session_error(s), "safetensors_open: no path") == 0,
        "NULL path: %s", uj_session_error(s));
  CHECK(uj_safetensors_open(NULL, path) == NULL, "NULL session");
  CHECK(uj_safetensors_count(NULL) == 0 && uj_safetensors_name(NULL, 0) == NULL &&
            uj_safetensors_meta(NULL, "a") == NULL && uj_safetensors_get(NULL, "a") == NULL,
        "NULL file");
  uj_safetensors_close(NULL);
  uj_session_clear_error(s);
  remove(path);
}

#define T1(offsets) "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":" offsets "}}"

/* JSON errors, each at the byte of the file where the reader stood: the
 * first occurrence of mark in the header, plus plus (no mark: the message
 * alone is checked). */
static void test_json_errors(uj_session *s, TmpDir *t) {
  const char zeros[8] = {0};
  char want[256];
  struct {
    const char *header, *mark;
    int plus;
    const char *msg;
  } cases[] = {
      {" {}", NULL, 0, "header at byte 8: the header does not start with '{'"},
      {"{\"a\" {}}", "{}", 0, "expected ':' after a key, found an object"},
      {"{\"a\":{\"dtype\":\"F32\" \"shape\":[2],\"data_offsets\":[0,8]}}", "\"shape", 0,
       "expected ',' or '}', found a string"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],}}", ",}", 1,
       "a ',' before '}'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", NULL, 0,
       "header at byte 61: expected ',' or '}', found the end"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}}", "}}}", 2,
       "expected only whitespace after the value, found '}'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}}", "02", 0,
       "a number with a leading zero"},
      {"{\"a\\q\":{}}", "\\q", 0, "unknown escape '\\q' in a string"},
      {"{\"a\":{\"dtype\":\"F\t32\"}}", "\"F\t", 2, "control character 0x09 in a string"},
      {"{\"\xfe\":{}}", "\xfe", 0, "invalid UTF-8 in a string"},
      {"{\"\\udc00\":{}}", "\\udc00", 0, "\\uDC00 is a low surrogate with no high one before it"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", " x", 1,
       "expected only whitespace after the value, found a character that starts no JSON value"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", ",}", 1,
       "a ',' before '}'"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}\n\0", "\n", 1,
       "expected only whitespace after the value, found a character that starts no JSON value"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    const char *h = cases[i].header, *m = cases[i].mark ? strstr(h, cases[i].mark) : NULL;
    if (m)
      snprintf(want, sizeof want, "header at byte %zu: %s",
               (size_t)(m - h) + 8 + (size_t)cases[i].plus, cases[i].msg);
    else snprintf(want, sizeof want, "%s", cases[i].msg);
    size_t n = strlen(h) +
               (h[strlen(h) - 1] == '\n'); /* the NUL after a final '\n' is part of the header */
    const char *path = tmp_file(t, "bad.safetensors");
    CHECK(put_raw(path, n, h, n, zeros, 8), "write");
    expect_open_error(s, path, want, h);
    remove(path);
  }
  /* Nesting (in a key that is skipped) past JSON_MAX_DEPTH. */
  char deep[512];
  int k = snprintf(deep, sizeof deep,
                   "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"x\":");
  memset(deep + k, '[', JSON_MAX_DEPTH + 1);
  memset(deep + k + JSON_MAX_DEPTH + 1, ']', JSON_MAX_DEPTH + 1);
  snprintf(deep + k + 2 * (JSON_MAX_DEPTH + 1), sizeof deep - (size_t)k - 2 * (JSON_MAX_DEPTH + 1),
           "}}");
  snprintf(want, sizeof want, "header at byte %d: nested more than 128 deep",
           8 + k + JSON_MAX_DEPTH);
  expect_header_error(s, t, deep, zeros, 8, want);
  deep[k + JSON_MAX_DEPTH] = ' ', deep[k + JSON_MAX_DEPTH + 1] = ' '; /* 128 deep: read */
  const char *path = tmp_file(t, "deep.safetensors");
  CHECK(put_st(path, deep, zeros, 8), "write");
  uj_safetensors *f = uj_safetensors_open(s, path);
  CHECK(f && uj_safetensors_count(f) == 1, "128 deep: %s", uj_session_error(s));
  uj_safetensors_close(f);
  remove(path);
}

/* One offset written out: the '{' where ':' should be is byte 8 + 5. */
static void test_error_offset(uj_session *s, TmpDir *t) {
  expect_header_error(s, t, "{\"a\" {}}", NULL, 0,
                      "header at byte 13: expected ':' after a key, found an object");
}

static void test_schema_errors(uj_session *s, TmpDir *t) {
  const char zeros[64] = {0};
  struct {
    const char *header;
    size_t nd;
    const char *msg;
  } cases[] = {
      {T1("[8,0]"), 8, "tensor \"a\": data_offsets [8, 0] are reversed"},
      {T1("[0,16]"), 8, "tensor \"a\": data_offsets [0, 16] run past the data's 8 bytes"},
      {T1("[0,4]"), 4,
       "tensor \"a\": data_offsets [0, 4] hold 4 bytes, but shape (2,) of F32 takes 8"},
      {T1("[0,8,8]"), 8, "tensor \"a\": data_offsets: more than 2 entries"},
      {T1("[0]"), 8, "tensor \"a\": data_offsets: 1 numbers, not 2 ([begin, end])"},
      {T1("[0,-8]"), 8, "tensor \"a\": data_offsets: -8 is negative"},
      {T1("[0,8.0]"), 8, "tensor \"a\": data_offsets: 8.0 is not an integer"},
      {T1("[0,18446744073709551616]"), 8,
       "tensor \"a\": data_offsets: 18446744073709551616 is too large"},
      {T1("\"0,8\""), 8, "expected an array of integers, found a string"},
      {T1("[4,12]"), 12, "bytes [0, 4) of the data belong to no tensor (before tensor \"a\")"},
      {T1("[0,8]"), 12, "bytes [8, 12) of the data, at the end of the file, belong to no tensor"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
       8, "tensors \"a\" [0, 8) and \"b\" [4, 8) overlap"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
       "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}",
       8, "tensors \"a\" [0, 8) and \"e\" [4, 4) overlap"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
       8, "tensor \"a\" is given twice"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
       "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
       4, "tensor \"a\" is given twice"},
      {"{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "__metadata__ key \"k\" is given twice"},
      {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "\"__metadata__\" is given twice"},
      {"{\"__metadata__\":{\"step\":100}}", 0,
       "__metadata__ \"step\": the value is a number; only strings are allowed"},
      {"{\"__metadata__\":{\"cfg\":{\"a\":\"b\"}}}", 0,
       "__metadata__ \"cfg\": the value is an object; only strings"},
      {"{\"__metadata__\":[\"a\"]}", 0,
       "expected an object of strings for \"__metadata__\", found an array"},
      {"{\"__metadata__\":{\"k\\u0000\":\"v\"}}", 0, "__metadata__ key \"k\\x00\" holds \\u0000"},
      {"{\"__metadata__\":{\"k\":\"v\\u0000\"}}", 0, "__metadata__ value \"v\\x00\" holds \\u0000"},
      {"{\"a\\u0000b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
       "tensor name \"a\\x00b\" holds \\u0000"},
      {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
       "tensor \"a\": \"dtype\" is given twice"},
      {"{\"a\":{\"dtype\":\"F32\",\"data_offsets\":[0,8]}}", 8, "tensor \"a\": no \"shape\""},
      {"{\"a\":{\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor \"a\": no \"dtype\""},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "tensor \"a\": no \"data_offsets\""},
      {"{\"a\":[1,2]}", 8,
       "expected an object {\"dtype\", \"shape\", \"data_offsets\"}, found an array"},
      {"{\"a\":{\"dtype\":\"F8_E4M3\",\"shape\":[8],\"data_offsets\":[0,8]}}", 8,
       "tensor \"a\": dtype \"F8_E4M3\" is not one uopjit reads (BOOL U8 I8 U16 I16 U32 I32 U64 "
       "I64 F16 BF16 F32 F64)"},
      {"{\"a\":{\"dtype\":\"f32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
       "tensor \"a\": dtype \"f32\" is not one"},
      {"{\"a\":{\"dtype\":32,\"shape\":[2],\"data_offsets\":[0,8]}}", 8,
       "expected a string, found a number"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8,
       "tensor \"a\": shape: -2 is negative"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,2],\"data_offsets\":[0,8]}}", 8,
       "tensor \"a\": shape: more than 8 entries"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[9223372036854775808],\"data_offsets\":[0,8]}}", 8,
       "tensor \"a\": shape: 9223372036854775808 is too large (at most 9223372036854775807)"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
       "tensor \"a\": shape (4294967296, 4294967296) of F32 overflows 64 bits"},
      {"{\"a\":{\"dtype\":\"U8\",\"shape\":[4294967296,0],\"data_offsets\":[0,8]}}", 8,
       "tensor \"a\": data_offsets [0, 8] hold 8 bytes, but shape (4294967296, 0) of U8 takes 0"},
      {"{\"a\":{\"dtype\":\"F32\",\"shape\":\"2\",\"data_offsets\":[0,8]}}", 8,
       "expected an array of integers, found a string"},
      {"{\"\\n\\\"x\\u0001\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8,
       "tensor \"\\x0a\\\"x\\x01\xc3\xa9\": data_offsets [0, 8] hold 8 bytes, but shape (3,) of "
       "F32 takes 12"},
      {"{\"0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567"
       "890123456789\":"
       "{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}",
       8,
       "tensor "
       "\"012345678901234567890123456789012345678901234567890123456789012345678901234567890123..."
       "\": data_offsets"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    expect_header_error(s, t, cases[i].header, zeros, cases[i].nd, cases[i].msg);
}

/* Errors of uj_safetensors_get: a bool byte other than 0 or 1, a file cut
 * short after it was opened. */
static void test_get_errors(uj_session *s, TmpDir *t) {
  const char *path = tmp_file(t, "get.safetensors");
  char want[512];
  CHECK(put_st(path,
               "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[0,4]},"
               "\"f\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}",
               "\1\0\2\1\0\0\0\0\0\0\0\0", 12),
        "write");
  uj_safetensors *f = uj_safetensors_open(s, path);
  CHECK(f != NULL, "open: %s", uj_session_error(s));
  if (!f) return;
  uj_session_clear_error(s);
  CHECK(uj_safetensors_get(f, "m") == NULL, "bool 2");
  snprintf(want, sizeof want,
           "safetensors_get: %s: tensor \"m\": bool element 2 is 2; only 0 and 1 are read", path);
  CHECK_STR(uj_session_error(s), want, "bool 2");
  uj_session_clear_error(s);
  CHECK(uj_safetensors_get(f, NULL) == NULL && strstr(uj_session_error(s), ": no name"),
        "NULL name");
  /* A shape the file holds (no bytes) but a tensor cannot (its strides overflow). */
  const char *big =
      "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[0,4]},"
      "\"f\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]},"
      "\"z\":{\"dtype\":\"F32\",\"shape\":[0,4611686018427387904],\"data_offsets\":[12,12]}}";
  uj_safetensors_close(f);
  CHECK(put_st(path, big, "\1\0\2\1\0\0\0\0\0\0\0\0", 12), "write");
  f = uj_safetensors_open(s, path);
  CHECK(f != NULL, "open: %s", uj_session_error(s));
  if (!f) return;
  uj_session_clear_error(s);
  CHECK(uj_safetensors_get(f, "z") == NULL, "(0, 2^62)");
  snprintf(
      want, sizeof want,
      "safetensors_get: %s: tensor \"z\": from_data: shape (0, 4611686018427387904) is too large",
      path);
  CHECK(strncmp(uj_session_error(s), want, strlen(want)) == 0, "(0, 2^62): %s",
        uj_session_error(s));
  CHECK(truncate(path, 40) == 0, "truncate");
  uj_session_clear_error(s);
  CHECK(uj_safetensors_get(f, "f") == NULL, "cut short");
  snprintf(want, sizeof want,
           "safetensors_get: %s: tensor \"f\": cannot read: the file is truncated", path);
  CHECK_STR(uj_session_error(s), want, "cut short");
  uj_session_clear_error(s);
  uj_safetensors_close(f);
  remove(path);
}

/* ---- errors of writing ---- */

/* save fails with st and "safetensors_save: PATH: " + want; the file at
 * path (written first) is as it was, and nothing else is in the folder. */
static void expect_save_error(uj_session *s, TmpDir *t, const char *const *names,
                              uj_tensor *const *ts, size_t n, const char *const *keys,
                              const char *const *values, size_t nmeta, uj_status want_st,
                              const char *want) {
  const char *path = tmp_file(t, "keep.safetensors");
  char prefix[512];
  snprintf(prefix, sizeof prefix, "safetensors_save: %s: ", path);
  CHECK(file_put(path, "old", 3), "write");
  uj_session_clear_error(s);
  uj_status st = uj_safetensors_save(s, path, names, ts, n, keys, values, nmeta);
  const char *err = uj_session_error(s);
  CHECK(st == want_st, "%s: status %d", want, (int)st);
  CHECK(strncmp(err, prefix, strlen(prefix)) == 0 && strstr(err, want), "message '%s', want '%s'",
        err, want);
  size_t fn;
  unsigned char *b = file_get(path, &fn);
  CHECK(b && fn == 3 && memcmp(b, "old", 3) == 0, "%s: the file at the path changed", want);
  free(b);
  CHECK(tmp_count(t) == 1, "%s: %d files in the folder", want, tmp_count(t));
  remove(path);
  uj_session_clear_error(s);
}

static void test_save_errors(uj_session *s, TmpDir *t) {
  const float one[1] = {1};
  uj_tensor *a = tf32(s, (const int64_t[]){1}, 1, one), *b = tf32(s, NULL, 0, one);
  uj_tensor *ab[2] = {a, b}, *an[2] = {a, NULL};
  const char *dup[2] = {"w", "w"}, *ok2[2] = {"w", "v"}, *meta[1] = {"__metadata__"},
             *bad[1] = {"\xff"}, *nul[2] = {"w", NULL}, *k2[2] = {"k", "k"}, *v2[2] = {"1", "2"};
  expect_save_error(s, t, dup, ab, 2, NULL, NULL, 0, UJ_ERR_ARG,
                    "tensor name \"w\" is given twice");
  expect_save_error(s, t, meta, ab, 1, NULL, NULL, 0, UJ_ERR_ARG,
                    "a tensor cannot be named \"__metadata__\"");
  expect_save_error(s, t, bad, ab, 1, NULL, NULL, 0, UJ_ERR_ARG,
                    "tensor name \"\xff\" is not valid UTF-8");
  expect_save_error(s, t, nul, ab, 2, NULL, NULL, 0, UJ_ERR_ARG, "tensor name 1 is NULL");
  expect_save_error(s, t, ok2, ab, 2, k2, v2, 2, UJ_ERR_ARG,
                    "__metadata__ key \"k\" is given twice");
  expect_save_error(s, t, ok2, ab, 2, ok2, nul, 2, UJ_ERR_ARG, "__metadata__ value 1 is NULL");
  expect_save_error(s, t, ok2, ab, 2, ok2, bad, 1, UJ_ERR_ARG,
                    "__metadata__ value \"\xff\" is not valid UTF-8");
  expect_save_error(s, t, ok2, NULL, 2, NULL, NULL, 0, UJ_ERR_ARG, "no names or tensors");
  expect_save_error(s, t, ok2, ab, 2, NULL, NULL, 1, UJ_ERR_ARG, "no metadata keys or values");
  uj_tensor *bools = uj_tensor_from_data(s, UJ_BOOL, (const int64_t[]){3}, 1, "\1\0\3");
  expect_save_error(s, t, ok2, &bools, 1, NULL, NULL, 0, UJ_ERR_ARG,
                    "tensor \"w\": bool element 2 is 3; only 0 and 1 are written");

  /* A NULL tensor: UJ_ERR_ARG, and the message of what made it NULL stays. */
  const char *path = tmp_file(t, "null.safetensors");
  uj_session_clear_error(s);
  CHECK(uj_tensor_reshape(a, (const int64_t[]){2}, 1) == NULL, "a failing op");
  char first[1024];
  snprintf(first, sizeof first, "%s", uj_session_error(s));
  CHECK(uj_safetensors_save(s, path, ok2, an, 2, NULL, NULL, 0) == UJ_ERR_ARG, "NULL tensor");
  CHECK_STR(uj_session_error(s), first, "the first message stays");
  CHECK(tmp_count(t) == 0, "nothing written");
  CHECK(uj_safetensors_save(NULL, path, ok2, ab, 2, NULL, NULL, 0) == UJ_ERR_ARG, "NULL session");
  CHECK(uj_safetensors_save(s, NULL, ok2, ab, 2, NULL, NULL, 0) == UJ_ERR_ARG &&
            strcmp(uj_session_error(s), "safetensors_save: no path") == 0,
        "NULL path: %s", uj_session_error(s));

  /* A tensor of another session. */
  uj_session *s2 = uj_session_new("CPU", NULL);
  uj_tensor *other = tf32(s2, (const int64_t[]){1}, 1, one), *mixed[2] = {a, other};
  expect_save_error(s, t, ok2, mixed, 2, NULL, NULL, 0, UJ_ERR_ARG,
                    "tensor 1 belongs to another session");
  uj_session_free(s2);

  /* A folder that is not there: nothing can be created. */
  char nodir[400];
  snprintf(nodir, sizeof nodir, "%s/no/such/folder.safetensors", t->dir);
  uj_session_clear_error(s);
  CHECK(uj_safetensors_save(s, nodir, ok2, ab, 2, NULL, NULL, 0) == UJ_ERR_IO, "no folder");
  CHECK(strstr(uj_session_error(s), "cannot create") &&
            strstr(uj_session_error(s), "No such file or directory"),
        "no folder: %s", uj_session_error(s));
  uj_session_clear_error(s);

  /* A write cut short by the file size limit: the temporary file goes,
   * the old file stays. */
  struct rlimit old, lim;
  static unsigned char big[1 << 16];
  uj_tensor *bt = uj_tensor_from_data(s, UJ_UINT8, (const int64_t[]){sizeof big}, 1, big);
  if (getrlimit(RLIMIT_FSIZE, &old) == 0) {
    void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
    lim = old;
    lim.rlim_cur = 1000;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
    expect_save_error(s, t, ok2, &bt, 1, NULL, NULL, 0, UJ_ERR_IO, "cannot write: File too large");
    setrlimit(RLIMIT_FSIZE, &old);
    signal(SIGXFSZ, old_handler);
  }
  uj_tensor_free(bt), uj_tensor_free(bools), uj_tensor_free(a), uj_tensor_free(b);
}

/* A valid file with bytes changed at random (or cut short), again and
 * again: each either opens, and then every tensor reads or fails with a
 * message, or fails to open with "safetensors_open: PATH: ..."; nothing
 * crashes or leaks (the sanitizer build). */
static void test_mutations(uj_session *s, TmpDir *t) {
  const char *h = "{\"__metadata__\":{\"step\":\"12\",\"k\\u00e9\":\"v\\n\"},"
                  "\"a\":{\"dtype\":\"F32\",\"shape\":[2,1],\"data_offsets\":[0,8]},"
                  "\"b\\\"\":{\"dtype\":\"BOOL\",\"shape\":[3],\"data_offsets\":[8,11]},"
                  "\"c\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[11,19]},"
                  "\"e\":{\"dtype\":\"F16\",\"shape\":[0,7],\"data_offsets\":[19,19]}}";
  char path[384], prefix[512];
  snprintf(path, sizeof path, "%s", tmp_file(t, "mutant.safetensors"));
  snprintf(prefix, sizeof prefix, "safetensors_open: %s: ", path);
  const unsigned char data[19] = {0, 0, 128, 63, 0, 0, 0, 64, 1, 0, 1, 7};
  size_t n = 8 + strlen(h) + sizeof data, opened = 0;
  unsigned char *good = malloc(n), *b = malloc(n);
  for (int i = 0; i < 8; i++) good[i] = (unsigned char)(strlen(h) >> (8 * i));
  memcpy(good + 8, h, strlen(h));
  memcpy(good + 8 + strlen(h), data, sizeof data);
  Rng rng = {0x5afe7e25012ull};
  for (int round = 0; round < 3000; round++) {
    memcpy(b, good, n);
    size_t len = n;
    for (int k = 1 + rng_int(&rng, 3); k > 0; k--) {
      size_t at = (size_t)rng_int(&rng, (int)n);
      static const char picks[] = "{}[]\",:0123456789-.eE\\u \x01\xff\x80";
      b[at] = rng_int(&rng, 2) ? (unsigned char)picks[rng_int(&rng, (int)sizeof picks - 1)]
                               : (unsigned char)rng_next(&rng);
    }
    if (rng_int(&rng, 8) == 0) len = (size_t)rng_int(&rng, (int)n);
    CHECK(file_put(path, b, len), "write");
    uj_session_clear_error(s);
    uj_safetensors *f = uj_safetensors_open(s, path);
    if (!f) {
      CHECK(strncmp(uj_session_error(s), prefix, strlen(prefix)) == 0, "round %d: '%s'", round,
            uj_session_error(s));
      continue;
    }
    opened++;
    for (size_t i = 0; i < uj_safetensors_count(f); i++) {
      uj_tensor *x = uj_safetensors_get(f, uj_safetensors_name(f, i));
      CHECK(x || strncmp(uj_session_error(s), "safetensors_get: ", 17) == 0, "round %d: '%s'",
            round, uj_session_error(s));
      uj_tensor_free(x);
    }
    uj_safetensors_close(f);
  }
  CHECK(opened > 0 && opened < 3000, "%zu of 3000 mutants opened", opened);
  uj_session_clear_error(s);
  free(good), free(b);
  remove(path);
}

int main(void) {
  TmpDir t;
  snprintf(t.dir, sizeof t.dir, "/tmp/uj-safetensors-XXXXXX");
  if (!mkdtemp(t.dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_json();
  uj_session *s = suite_session("test_safetensors");
  test_round_trip(s, &t);
  test_save_lazy(s, &t);
  test_python_layout(s, &t);
  test_read_variants(s, &t);
  test_file_errors(s, &t);
  test_json_errors(s, &t);
  test_error_offset(s, &t);
  test_schema_errors(s, &t);
  test_get_errors(s, &t);
  test_save_errors(s, &t);
  test_mutations(s, &t);
  uj_session_free(s);
  CHECK(tmp_remove(&t), "the temporary folder was left clean");
  return check_report("test_safetensors");
}
