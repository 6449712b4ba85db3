/* test_npy.c — NumPy .npy files (lib/tensor/npy.h).
 *
 * Round trips of every dtype for 0-d, 1-d, 3-d and empty arrays through a
 * temporary folder (each file's data on a 64-byte boundary); npy_write's
 * bytes against bytes laid out here by hand from the format's rules (as
 * NumPy writes them); version 1.0 headers written in every way the dict
 * literal allows, and version 2.0 and 3.0 files made by hand; then every
 * error of reading and writing: the message names the path and says what
 * was wrong, *out is untouched, and no file is left behind by a failed
 * write (one cut short by a file size limit included). Files read from a
 * FIFO, which has no size to check first. Nothing here needs Python. */
#define _XOPEN_SOURCE 700 /* mkdtemp, setrlimit */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "tensor/npy.h"
#include "tmp_dir.h"

/* ---- helpers ---- */

/* A .npy file made by hand: magic, version, the header's length (2 bytes
 * for 1.0, 4 otherwise), header as given, then nd bytes of data. */
static size_t raw_npy(unsigned char *buf, unsigned major, unsigned minor, const char *header,
                      const void *data, size_t nd) {
  size_t hl = strlen(header), lb = major == 1 ? 2 : 4;
  memcpy(buf, "\x93NUMPY", 6);
  buf[6] = (unsigned char)major;
  buf[7] = (unsigned char)minor;
  for (size_t i = 0; i < lb; i++) buf[8 + i] = (unsigned char)(hl >> (8 * i));
  memcpy(buf + 8 + lb, header, hl);
  if (nd) memcpy(buf + 8 + lb + hl, data, nd);
  return 8 + lb + hl + nd;
}

static size_t dtype_size(uj_scalar s) {
  return s == UJ_FLOAT64 || s == UJ_INT64 ? 8 : s == UJ_FLOAT32 || s == UJ_INT32 ? 4 : 1;
}

/* ---- round trips ---- */

static void check_round_trip(TmpDir *t, uj_scalar dtype, const int64_t *shape, unsigned ndim) {
  char err[512] = "";
  size_t numel = 1, size = dtype_size(dtype);
  for (unsigned i = 0; i < ndim; i++) numel *= (size_t)shape[i];
  unsigned char *data = malloc(numel * size + 1);
  for (size_t i = 0; i < numel * size; i++)
    data[i] = dtype == UJ_BOOL ? (unsigned char)(i % 3 == 0) : (unsigned char)(i * 37 + 11);
  const char *path = tmp_file(t, "rt.npy");
  CHECK(npy_write(path, dtype, shape, ndim, data, err, sizeof err), "write: %s", err);
  size_t n = 0;
  unsigned char *file = file_get(path, &n);
  unsigned hlen = file && n >= 10 ? file[8] | (unsigned)file[9] << 8 : 0;
  CHECK(file && (10 + hlen) % 64 == 0 && n == 10 + hlen + numel * size && file[9 + hlen] == '\n',
        "dtype %d ndim %u: header %u bytes, file %zu", (int)dtype, ndim, hlen, n);
  free(file);
  NpyArray a;
  bool ok = npy_read(path, &a, err, sizeof err);
  CHECK(ok, "read: %s", err);
  if (ok) {
    CHECK(a.dtype == dtype && a.ndim == ndim && a.bytes == numel * size && a.data != NULL,
          "dtype %d ndim %u: got dtype %d ndim %u bytes %zu", (int)dtype, ndim, (int)a.dtype,
          a.ndim, a.bytes);
    CHECK(memcmp(a.shape, shape, ndim * sizeof *shape) == 0, "dtype %d ndim %u: shape", (int)dtype,
          ndim);
    CHECK(a.bytes == numel * size && memcmp(a.data, data, a.bytes) == 0, "dtype %d: data",
          (int)dtype);
    npy_free(&a);
    CHECK(a.data == NULL && a.bytes == 0, "npy_free empties");
  }
  free(data);
  remove(path);
}

static void test_round_trips(TmpDir *t) {
  static const uj_scalar dtypes[] = {UJ_FLOAT32, UJ_FLOAT64, UJ_INT32, UJ_INT64, UJ_BOOL, UJ_UINT8};
  static const struct {
    int64_t shape[UJ_MAX_DIMS];
    unsigned ndim;
  } shapes[] = {
      {{0}, 0},
      {{5}, 1},
      {{2, 3, 4}, 3},
      {{3, 0, 2}, 3},
      {{0}, 1},
      {{1234567}, 1},
      {{1, 2, 1, 2, 1, 2, 1, 2}, 8},
  };
  for (size_t d = 0; d < sizeof dtypes / sizeof *dtypes; d++)
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
      check_round_trip(t, dtypes[d], shapes[s].shape, shapes[s].ndim);
}

/* ---- bytes as NumPy writes them ---- */

/* magic, version 1.0, the header length; then the dict, spaces to the
 * 64-byte boundary less one, '\n'. */
static size_t expected_header(unsigned char *buf, const char *dict, size_t total) {
  size_t dl = strlen(dict);
  memcpy(buf, "\x93NUMPY\x01\x00", 8);
  buf[8] = (unsigned char)((total - 10) & 0xff);
  buf[9] = (unsigned char)((total - 10) >> 8);
  memcpy(buf + 10, dict, dl);
  memset(buf + 10 + dl, ' ', total - 11 - dl);
  buf[total - 1] = '\n';
  return total;
}

static void check_bytes(TmpDir *t, const char *what, uj_scalar dtype, const int64_t *shape,
                        unsigned ndim, const void *data, const unsigned char *want, size_t nwant) {
  char err[512] = "";
  const char *path = tmp_file(t, "exact.npy");
  CHECK(npy_write(path, dtype, shape, ndim, data, err, sizeof err), "%s: %s", what, err);
  size_t n = 0;
  unsigned char *got = file_get(path, &n);
  CHECK(got && n == nwant && memcmp(got, want, n) == 0, "%s: %zu bytes, want %zu", what, n, nwant);
  for (size_t i = 0; got && i < n && i < nwant; i++)
    if (got[i] != want[i]) {
      CHECK(false, "%s: byte %zu is 0x%02x, want 0x%02x", what, i, got[i], want[i]);
      break;
    }
  free(got);
  remove(path);
}

static void test_exact_bytes(TmpDir *t) {
  unsigned char want[256];
  /* float32 (2, 3), 0..5. The dict is 59 characters; NumPy adds 21 - 1
   * spaces (room for a first dim of 21 digits): 79; with the '\n' 80;
   * 10 + 80 = 90, so 38 spaces more reach 128: the length field is 118. */
  const float f[6] = {0, 1, 2, 3, 4, 5};
  const char *dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
  CHECK(strlen(dict) == 59, "dict length");
  size_t n = expected_header(want, dict, 128);
  CHECK(want[8] == 118 && want[9] == 0, "length field");
  memcpy(want + n, f, sizeof f);
  check_bytes(t, "float32 (2, 3)", UJ_FLOAT32, (const int64_t[]){2, 3}, 2, f, want, n + sizeof f);

  /* int64 scalar 0x0102030405060708: shape (), no growth spaces; the dict
   * is 55 characters, 10 + 56 = 66 -> 128 again. */
  const int64_t x = 0x0102030405060708;
  n = expected_header(want, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }", 128);
  memcpy(want + n, "\x08\x07\x06\x05\x04\x03\x02\x01", 8);
  check_bytes(t, "int64 ()", UJ_INT64, NULL, 0, &x, want, n + 8);

  /* bool (3,): "(3,)", descr '|b1'; 57 + 20 spaces + '\n' + 10 = 88 -> 128.
   * (Every header of these six dtypes is 128 bytes: the dicts of 8 dims
   * whose product fits 2^62 stay under 118 characters.) */
  n = expected_header(want, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", 128);
  memcpy(want + n, "\x01\x00\x01", 3);
  check_bytes(t, "bool (3,)", UJ_BOOL, (const int64_t[]){3}, 1, "\x01\x00\x01", want, n + 3);

  /* 8 dims, a first dim of 13 digits (2^40) and a 0 to keep it empty: the
   * dict is 89 characters, 21 - 13 = 8 growth spaces; 10 + 89 + 8 + 1 =
   * 108 -> 128. */
  const int64_t big[8] = {1099511627776, 0, 1, 1, 1, 1, 1, 1};
  const char *dict8 =
      "{'descr': '|u1', 'fortran_order': False, 'shape': (1099511627776, 0, 1, 1, 1, 1, 1, 1), }";
  CHECK(strlen(dict8) == 89, "dict8 length %zu", strlen(dict8));
  n = expected_header(want, dict8, 128);
  check_bytes(t, "uint8 8 dims, empty", UJ_UINT8, big, 8, NULL, want, n);
}

/* ---- reading headers written other ways ---- */

static void expect_read(const char *path, const char *what, uj_scalar dtype, const int64_t *shape,
                        unsigned ndim, const void *data, size_t bytes) {
  char err[512] = "";
  NpyArray a;
  bool ok = npy_read(path, &a, err, sizeof err);
  CHECK(ok, "%s: %s", what, err);
  if (!ok) return;
  CHECK(a.dtype == dtype && a.ndim == ndim && a.bytes == bytes, "%s: dtype %d ndim %u bytes %zu",
        what, (int)a.dtype, a.ndim, a.bytes);
  CHECK(a.ndim == ndim && (!ndim || memcmp(a.shape, shape, ndim * sizeof *shape) == 0), "%s: shape",
        what);
  CHECK(a.bytes == bytes && memcmp(a.data, data, bytes) == 0, "%s: data", what);
  npy_free(&a);
}

static void check_header_reads(TmpDir *t, unsigned major, const char *header, uj_scalar dtype,
                               const int64_t *shape, unsigned ndim, const void *data,
                               size_t bytes) {
  unsigned char buf[1024];
  const char *path = tmp_file(t, "h.npy");
  CHECK(file_put(path, buf, raw_npy(buf, major, 0, header, data, bytes)), "write %s", path);
  expect_read(path, header, dtype, shape, ndim, data, bytes);
  remove(path);
}

static void test_headers(TmpDir *t) {
  const int32_t i6[6] = {1, -2, 3, -4, 5, -6};
  const double d2[2] = {1.5, -0.25};
  const int64_t s23[] = {2, 3}, s2[] = {2}, s61[] = {6, 1};
  check_header_reads(t, 1, "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}", UJ_INT32,
                     s23, 2, i6, sizeof i6);
  check_header_reads(t, 1, "{\"descr\":\"<i4\",\"fortran_order\":False,\"shape\":(2,3)}", UJ_INT32,
                     s23, 2, i6, sizeof i6);
  check_header_reads(
      t, 1, "  {  'descr' : '<i4' , 'fortran_order' : False , 'shape' : ( 6 , 1 , ) , }  \n",
      UJ_INT32, s61, 2, i6, sizeof i6);
  check_header_reads(t, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (2L,), }\n",
                     UJ_FLOAT64, s2, 1, d2, sizeof d2);
  check_header_reads(t, 1, "{'descr': '<u1', 'fortran_order': False, 'shape': (2,)}", UJ_UINT8, s2,
                     1, "\xff\x00", 2);
  check_header_reads(t, 1, "{'descr': '=b1', 'fortran_order': False, 'shape': (2,)}", UJ_BOOL, s2,
                     1, "\x01\x00", 2);
  check_header_reads(t, 1, "{'descr': '|u1', 'fortran_order': False, 'shape': (0, -0)}", UJ_UINT8,
                     (const int64_t[]){0, 0}, 2, "", 0);
  /* Versions 2.0 and 3.0: a 4-byte header length, the data on 64 bytes. */
  char h2[128 - 12 + 1];
  snprintf(h2, sizeof h2, "%-115s\n", "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }");
  CHECK(strlen(h2) == 116, "h2 is %zu bytes", strlen(h2));
  check_header_reads(t, 2, h2, UJ_FLOAT64, s2, 1, d2, sizeof d2);
  check_header_reads(t, 2, "{'descr': '<i4', 'fortran_order': False, 'shape': ()}", UJ_INT32, NULL,
                     0, i6, 4);
  check_header_reads(t, 3, h2, UJ_FLOAT64, s2, 1, d2, sizeof d2);
  /* A 2.0 header longer than 65535 bytes, as NumPy would need for it. */
  static char long_header[70000];
  int at = snprintf(long_header, sizeof long_header,
                    "{'descr': '<i4', 'fortran_order': False, 'shape': (6,), }");
  memset(long_header + at, ' ', 69000 - (size_t)at);
  long_header[69000] = '\n';
  size_t n = 12 + 69001 + sizeof i6;
  unsigned char *buf = malloc(n);
  raw_npy(buf, 2, 0, long_header, i6, sizeof i6);
  const char *path = tmp_file(t, "long.npy");
  CHECK(file_put(path, buf, n), "write %s", path);
  expect_read(path, "a 69001-byte 2.0 header", UJ_INT32, (const int64_t[]){6}, 1, i6, sizeof i6);
  free(buf);
  remove(path);
}

/* ---- errors of reading ---- */

/* npy_read(path) fails with a message naming path and containing phrase,
 * leaving *out as it was. */
static void expect_read_error(const char *path, const char *what, const char *phrase) {
  char err[512] = "";
  NpyArray a, before;
  memset(&a, 0xab, sizeof a);
  before = a;
  CHECK(!npy_read(path, &a, err, sizeof err), "%s: read succeeded", what);
  CHECK(strncmp(err, path, strlen(path)) == 0 && strstr(err, phrase) != NULL,
        "%s: message '%s' lacks the path or '%s'", what, err, phrase);
  CHECK(memcmp(&a, &before, sizeof a) == 0, "%s: *out was changed", what);
}

/* A file of version 1.0 with header and nd bytes of data fails as above. */
static void expect_header_error(TmpDir *t, const char *header, size_t nd, const char *phrase) {
  static unsigned char buf[4096], zeros[1024];
  const char *path = tmp_file(t, "bad.npy");
  CHECK(file_put(path, buf, raw_npy(buf, 1, 0, header, zeros, nd)), "write %s", path);
  expect_read_error(path, header, phrase);
  remove(path);
}

static void expect_bytes_error(TmpDir *t, const char *what, const void *bytes, size_t n,
                               const char *phrase) {
  const char *path = tmp_file(t, "bad.npy");
  CHECK(file_put(path, bytes, n), "write %s", path);
  expect_read_error(path, what, phrase);
  remove(path);
}

#define HDR(descr, order, shape)                                                                   \
  "{'descr': " descr ", 'fortran_order': " order ", 'shape': " shape ", }"

static void test_read_errors_file(TmpDir *t) {
  expect_read_error(tmp_file(t, "missing.npy"), "missing", "cannot open: No such file");
  expect_read_error(t->dir, "a folder", "cannot read: Is a directory");
  expect_bytes_error(t, "empty", "", 0, "not a .npy file");
  expect_bytes_error(t, "text", "hello, world\n", 13, "not a .npy file");
  expect_bytes_error(t, "magic only", "\x93NUMPY", 6, "not a .npy file");
  expect_bytes_error(t, "version 4.0", "\x93NUMPY\x04\x00\x00\x00", 10, "format version 4.0");
  expect_bytes_error(t, "version 1.1", "\x93NUMPY\x01\x01\x00\x00", 10, "format version 1.1");
  expect_bytes_error(t, "version 0.0", "\x93NUMPY\x00\x00\x00\x00", 10, "format version 0.0");
  expect_bytes_error(t, "length cut", "\x93NUMPY\x02\x00\x10\x00", 10,
                     "header length is truncated: 2 bytes of 4");
  expect_bytes_error(t, "header cut", "\x93NUMPY\x01\x00\x40\x00{'descr'", 18,
                     "header is truncated: 8 bytes of 64");
  expect_bytes_error(t, "header huge", "\x93NUMPY\x02\x00\x00\x00\x00\x10{}", 14,
                     "header of 268435456 bytes is too long");
}

static void test_read_errors_header(TmpDir *t) {
  expect_header_error(t, HDR("'>f4'", "False", "(2,)"), 8,
                      "dtype '>f4' is big-endian; only little-endian .npy files are read");
  expect_header_error(t, HDR("'>i8'", "False", "(2,)"), 16, "dtype '>i8' is big-endian");
  expect_header_error(t, HDR("'<c8'", "False", "(2,)"), 16, "dtype '<c8' is not supported");
  expect_header_error(t, HDR("'<U10'", "False", "(2,)"), 80, "dtype '<U10' is not supported");
  expect_header_error(t, HDR("'|i1'", "False", "(2,)"), 2, "dtype '|i1' is not supported");
  expect_header_error(t, HDR("'=f4'", "False", "(2,)"), 8, "dtype '=f4' is not supported");
  expect_header_error(t, HDR("'<f2'", "False", "(2,)"), 4, "dtype '<f2' is not supported");
  expect_header_error(t, HDR("'|O'", "False", "(2,)"), 16, "dtype '|O' is not supported");
  expect_header_error(t, HDR("[('a', '<f4'), ('b', '<i4')]", "False", "(2,)"), 16,
                      "dtype is structured");
  expect_header_error(t, HDR("3", "False", "(2,)"), 8, "expected a quoted descr, found '3");
  expect_header_error(t, HDR("'<f4'", "True", "(2, 2)"), 16, "fortran_order is True; only C-order");
  expect_header_error(t, HDR("'<f4'", "1", "(2,)"), 8, "expected True or False");
  expect_header_error(t, HDR("'<f4'", "Falsey", "(2,)"), 8, "expected True or False");
  expect_header_error(t, "{'descr': '<f4', 'fortran_order': False}", 0, "key 'shape' is missing");
  expect_header_error(t, "{'descr': '<f4', 'shape': ()}", 4, "key 'fortran_order' is missing");
  expect_header_error(t, "{}", 0, "key 'descr' is missing");
  expect_header_error(t, "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': ()}", 4,
                      "key 'descr' is given twice");
  expect_header_error(t, "{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}", 4,
                      "unknown key 'x'");
  expect_header_error(t, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3}", 24,
                      "expected ',' or ')' in shape, found '}'");
  expect_header_error(t, HDR("'<f4'", "False", "(2 3)"), 24, "expected ',' or ')' in shape");
  expect_header_error(t, HDR("'<f4'", "False", "(5)"), 20, "shape (5) is not a tuple");
  expect_header_error(t, HDR("'<f4'", "False", "(,)"), 0, "expected a dim");
  expect_header_error(t, HDR("'<f4'", "False", "(2, a)"), 0,
                      "expected a dim (an integer) in shape, found 'a)");
  expect_header_error(t, HDR("'<f4'", "False", "(2.0,)"), 8,
                      "expected ',' or ')' in shape, found '.0");
  expect_header_error(t, HDR("'<f4'", "False", "[2, 3]"), 24, "expected a tuple '(' for shape");
  expect_header_error(t, HDR("'<f4'", "False", "(2, -1)"), 0, "negative dim -1 in shape");
  expect_header_error(t, HDR("'<f4'", "False", "(1, 1, 1, 1, 1, 1, 1, 1, 1)"), 4,
                      "shape has 9 dims; at most 8 are read");
  expect_header_error(t, HDR("'<f4'", "False", "(99999999999999999999,)"), 0, "is too large");
  expect_header_error(t, HDR("'<f4'", "False", "(4611686018427387905,)"), 0,
                      "shape (4611686018427387905,) has more than 2^62 elements");
  expect_header_error(t, HDR("'<f4'", "False", "(0, 4294967296, 4294967296)"), 0,
                      "has more than 2^62 elements");
  expect_header_error(t, HDR("'<f8'", "False", "(4611686018427387904,)"), 0,
                      "has more bytes than size_t holds");
  expect_header_error(t, "hello", 0, "malformed header: expected a dict '{', found 'hello'");
  expect_header_error(t, "", 0, "expected a dict '{', found the end of the header");
  expect_header_error(t, "{'descr': '<f4'", 0, "expected ',' or '}', found the end of the header");
  expect_header_error(t, "{'descr' '<f4'}", 0, "expected ':' after a key");
  expect_header_error(t, "{'descr: '<f4'}", 0, "unknown key 'descr: '");
  expect_header_error(t, "{'descr': '<f4}", 0, "a string is not closed");
  expect_header_error(t, "{descr: '<f4'}", 0, "expected a quoted key or '}'");
  expect_header_error(t, "{'descr': '<f\\x34'}", 0, "escapes in strings are not read");
  expect_header_error(t, HDR("'<f4'", "False", "()") " garbage", 4,
                      "expected only spaces after the header dict, found 'garbage'");
  expect_header_error(t, HDR("'<f4'", "False", "()") "}", 4, "only spaces after the header dict");
}

static void test_read_errors_data(TmpDir *t) {
  expect_header_error(t, HDR("'<f4'", "False", "(2, 3)"), 20, "data is truncated: 20 bytes of 24");
  expect_header_error(t, HDR("'<f4'", "False", "()"), 0, "data is truncated: 0 bytes of 4");
  expect_header_error(t, HDR("'|u1'", "False", "(4611686018427387904,)"), 3,
                      "data is truncated: 3 bytes of 4611686018427387904");
  expect_header_error(t, HDR("'<f4'", "False", "(2, 3)"), 25, "trailing bytes after the data: 1");
  expect_header_error(t, HDR("'<f4'", "False", "(0,)"), 64, "trailing bytes after the data: 64");
  unsigned char buf[256];
  size_t n = raw_npy(buf, 1, 0, HDR("'|b1'", "False", "(4,)"), "\x01\x00\x02\x01", 4);
  expect_bytes_error(t, "bool 2", buf, n, "bool element 2 is 2; only 0 and 1 are read");
  n = raw_npy(buf, 1, 0, HDR("'|b1'", "False", "(1,)"), "\xff", 1);
  expect_bytes_error(t, "bool 255", buf, n, "bool element 0 is 255");
}

/* A pipe has no size to check before reading: its data is read, then found
 * short or followed by more. A child process writes bytes into a FIFO;
 * want_ok: the read succeeds (a 2 x int32 array), else fails with phrase. */
static void check_fifo(TmpDir *t, const void *bytes, size_t n, bool want_ok, const char *phrase) {
  const char *path = tmp_file(t, "fifo");
  if (mkfifo(path, 0600) != 0) {
    CHECK(false, "mkfifo %s: %s", path, strerror(errno));
    return;
  }
  pid_t pid = fork();
  CHECK(pid >= 0, "fork: %s", strerror(errno));
  if (pid == 0) {
    signal(SIGPIPE, SIG_IGN);
    int fd = open(path, O_WRONLY);
    _exit(fd >= 0 && write(fd, bytes, n) == (ssize_t)n ? 0 : 1);
  }
  if (pid > 0 && want_ok)
    expect_read(path, "from a FIFO", UJ_INT32, (const int64_t[]){2}, 1, "\1\0\0\0\2\0\0\0", 8);
  else if (pid > 0) expect_read_error(path, phrase, phrase);
  if (pid > 0) waitpid(pid, NULL, 0);
  remove(path);
}

static void test_read_fifo(TmpDir *t) {
  unsigned char buf[256];
  const char *h = HDR("'<i4'", "False", "(2,)");
  size_t n = raw_npy(buf, 1, 0, h, "\1\0\0\0\2\0\0\0\3", 9);
  check_fifo(t, buf, n - 1, true, NULL);
  check_fifo(t, buf, n, false, "trailing bytes after the 8 of the shape");
  check_fifo(t, buf, n - 3, false, "data is truncated: 6 bytes of 8");
}

/* The message is cut to errsize, NUL included; errsize 0 writes nothing. */
static void test_read_error_sizes(TmpDir *t) {
  const char *path = tmp_file(t, "missing.npy");
  char err[8];
  memset(err, 'x', sizeof err);
  NpyArray a;
  CHECK(!npy_read(path, &a, err, sizeof err) && strlen(err) == 7 && strncmp(err, path, 7) == 0,
        "cut message '%.8s'", err);
  CHECK(!npy_read(path, &a, NULL, 0), "no message buffer");
  memset(err, 'x', sizeof err);
  CHECK(!npy_read(path, &a, err, 0) && err[0] == 'x', "errsize 0 writes nothing");
}

/* ---- errors of writing ---- */

static void expect_write_error(TmpDir *t, const char *what, uj_scalar dtype, const int64_t *shape,
                               unsigned ndim, const void *data, const char *phrase) {
  char err[512] = "";
  const char *path = tmp_file(t, "w.npy");
  CHECK(!npy_write(path, dtype, shape, ndim, data, err, sizeof err), "%s: write succeeded", what);
  CHECK(strncmp(err, path, strlen(path)) == 0 && strstr(err, phrase) != NULL,
        "%s: message '%s' lacks the path or '%s'", what, err, phrase);
  CHECK(!file_exists(path), "%s: %s was left behind", what, path);
}

/* A write that fails half way (the file size limit below the array's
 * bytes) removes what it wrote. */
static void test_write_cut(TmpDir *t) {
  struct rlimit old, lim;
  static unsigned char data[1 << 16];
  if (getrlimit(RLIMIT_FSIZE, &old) != 0) return;
  void (*old_handler)(int) = signal(SIGXFSZ, SIG_IGN);
  lim = old;
  lim.rlim_cur = 1000;
  CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
  expect_write_error(t, "file size limit", UJ_UINT8, (const int64_t[]){sizeof data}, 1, data,
                     "cannot write: File too large");
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, old_handler);
}

static void test_write_errors(TmpDir *t) {
  const int64_t s2[] = {2}, s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
  char err[512] = "", path[300];
  snprintf(path, sizeof path, "%s/no/such/folder.npy", t->dir);
  CHECK(!npy_write(path, UJ_INT32, s2, 1, "\0\0\0\0\0\0\0\0", err, sizeof err), "no folder");
  CHECK(strncmp(err, path, strlen(path)) == 0 &&
            strstr(err, "cannot open for writing: No such file or directory"),
        "no folder: '%s'", err);
  expect_write_error(t, "float16", UJ_FLOAT16, s2, 1, "\0\0\0\0", "dtype float16 is not written");
  expect_write_error(t, "int16", UJ_INT16, s2, 1, "\0\0\0\0", "dtype int16 is not written");
  expect_write_error(t, "9 dims", UJ_UINT8, s9, 9, "\0", "9 dims; at most 8 are written");
  expect_write_error(t, "negative", UJ_UINT8, (const int64_t[]){2, -3}, 2, "",
                     "negative dim -3 in shape (2, -3)");
  expect_write_error(t, "huge", UJ_UINT8, (const int64_t[]){1ll << 40, 1ll << 40}, 2, "",
                     "more than 2^62 elements");
  expect_write_error(t, "no data", UJ_INT32, s2, 1, NULL, "no data for 8 bytes");
  expect_write_error(t, "bool 3", UJ_BOOL, (const int64_t[]){3}, 1, "\x01\x00\x03",
                     "bool element 2 is 3; only 0 and 1 are written");
  test_write_cut(t);
}

int main(void) {
  TmpDir t;
  snprintf(t.dir, sizeof t.dir, "/tmp/uj_test_npy_XXXXXX");
  if (!mkdtemp(t.dir)) {
    perror("mkdtemp");
    return 1;
  }
  test_round_trips(&t);
  test_exact_bytes(&t);
  test_headers(&t);
  test_read_errors_file(&t);
  test_read_errors_header(&t);
  test_read_errors_data(&t);
  test_read_fifo(&t);
  test_read_error_sizes(&t);
  test_write_errors(&t);
  CHECK(tmp_remove(&t), "remove %s", t.dir);
  return check_report("test_npy");
}
