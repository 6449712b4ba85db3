/* fuzz_npy.c — fuzz target: the .npy reader (lib/tensor/npy.c).
 *
 * In: any bytes, read as a whole .npy file by npy_read_mem. What must
 * hold:
 *
 *   read      fails with "<fuzz>: message", or gives an array whose size
 *             is its shape's (dims >= 0, at most UJ_MAX_DIMS, bytes =
 *             elements x the dtype's size, bool bytes 0 or 1);
 *   the file  the same bytes written to a file and read with npy_read
 *             give the same answer: both fail with the same message (bar
 *             the name), or both give the same array;
 *   rewrite   an array read is written by npy_write and read back equal.
 *
 * The files are made in $TMPDIR (or /tmp) and removed again. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fuzz.h"
#include "tensor/npy.h"

enum { FUZZ_NPY_MAX_LEN = 1 << 20, FUZZ_ERR = 1024 };

static size_t dtype_size(uj_scalar s) {
  switch (s) {
  case UJ_FLOAT64:
  case UJ_INT64: return 8;
  case UJ_FLOAT32:
  case UJ_INT32: return 4;
  case UJ_BOOL:
  case UJ_UINT8: return 1;
  default: fuzz_fail("npy_read gave dtype %d, which it does not read", (int)s);
  }
}

static void check_array(const NpyArray *a) {
  if (a->ndim > UJ_MAX_DIMS) fuzz_fail("%u dims", a->ndim);
  size_t n = 1;
  for (unsigned i = 0; i < a->ndim; i++) {
    if (a->shape[i] < 0) fuzz_fail("dim %u is %lld", i, (long long)a->shape[i]);
    n *= (size_t)a->shape[i]; /* the reader refused any that overflows */
  }
  if (!a->data || a->bytes != n * dtype_size(a->dtype))
    fuzz_fail("%zu bytes (data %p) for %zu elements", a->bytes, a->data, n);
  const unsigned char *b = a->data;
  for (size_t i = 0; a->dtype == UJ_BOOL && i < a->bytes; i++)
    if (b[i] > 1) fuzz_fail("bool element %zu is %u", i, b[i]);
}

static bool same_array(const NpyArray *a, const NpyArray *b) {
  return a->dtype == b->dtype && a->ndim == b->ndim &&
         !memcmp(a->shape, b->shape, a->ndim * sizeof *a->shape) && a->bytes == b->bytes &&
         !memcmp(a->data, b->data, a->bytes);
}

/* The message after "NAME: ". */
static const char *err_text(const char *err, const char *name) {
  size_t n = strlen(name);
  if (strncmp(err, name, n) != 0 || strncmp(err + n, ": ", 2) != 0)
    fuzz_fail("message without \"%s: \": %s", name, err);
  return err + n + 2;
}

/* A new empty file in $TMPDIR; its path in path. */
static void temp_file(char *path, size_t size) {
  const char *dir = getenv("TMPDIR");
  snprintf(path, size, "%s/fuzz_npy_XXXXXX", dir && *dir ? dir : "/tmp");
  int fd = mkstemp(path);
  if (fd < 0) fuzz_fail("cannot make a file like %s", path);
  close(fd);
}

/* npy_read on a file of the same bytes answers as npy_read_mem did. */
static void check_file(const uint8_t *data, size_t size, bool ok_mem, const NpyArray *a,
                       const char *err_mem) {
  char path[4096], err[FUZZ_ERR] = "";
  NpyArray b = {0};
  temp_file(path, sizeof path);
  FILE *f = fopen(path, "wb");
  if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) fuzz_fail("cannot write %s", path);
  bool ok = npy_read(path, &b, err, sizeof err);
  remove(path);
  if (ok != ok_mem)
    fuzz_fail("npy_read_mem %s, npy_read %s: %s", ok_mem ? "reads" : "refuses",
              ok ? "reads" : "refuses", ok ? err_mem : err);
  if (!ok && strcmp(err_text(err, path), err_text(err_mem, "<fuzz>")) != 0)
    fuzz_fail("npy_read_mem says \"%s\", npy_read \"%s\"", err_mem, err);
  if (ok && !same_array(a, &b)) fuzz_fail("npy_read_mem and npy_read read different arrays");
  npy_free(&b);
}

/* What npy_write makes of a reads back as a. */
static void check_rewrite(const NpyArray *a) {
  char path[4096], err[FUZZ_ERR] = "";
  NpyArray b = {0};
  temp_file(path, sizeof path);
  if (!npy_write(path, a->dtype, a->shape, a->ndim, a->data, err, sizeof err))
    fuzz_fail("npy_write refuses what was read: %s", err);
  bool ok = npy_read(path, &b, err, sizeof err);
  remove(path);
  if (!ok) fuzz_fail("what npy_write wrote does not read back: %s", err);
  if (!same_array(a, &b)) fuzz_fail("what npy_write wrote reads back different");
  npy_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_NPY_MAX_LEN) return -1;
  char err[FUZZ_ERR] = "";
  NpyArray a = {0};
  bool ok = npy_read_mem(data, size, "<fuzz>", &a, err, sizeof err);
  if (ok) check_array(&a);
  else err_text(err, "<fuzz>");
  check_file(data, size, ok, &a, err);
  if (ok) check_rewrite(&a);
  npy_free(&a);
  return 0;
}
