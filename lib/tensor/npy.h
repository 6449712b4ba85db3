/* npy.h — NumPy .npy files, read and written (npy.c).
 *
 * In: a path or the bytes of a file in memory, and for npy_write a dense
 * C-order array (dtype, shape, host memory). Out: an NpyArray whose data
 * is a malloc'd copy of the file's elements, or a file as NumPy itself
 * writes it (format 1.0; 2.0 if the header would not fit), its data on a
 * 64-byte boundary.
 *
 * Read: format versions 1.0, 2.0 and 3.0; descr '<f4' '<f8' '<i4' '<i8'
 * '|b1' '|u1' (one-byte types also with '<' or '='); fortran_order False.
 * Anything else — big-endian data, Fortran order, other or structured
 * dtypes, a malformed header, a negative dim, more than UJ_MAX_DIMS axes,
 * an element count past 2^62, a file shorter or longer than its data, a
 * bool byte other than 0 or 1 — is refused.
 *
 * Errors: false, and "PATH: message" in err (NUL-terminated, truncated to
 * errsize; err may be NULL when errsize is 0). Nothing is leaked, *out is
 * untouched, and a partly written file is removed. */
#ifndef UJ_NPY_H
#define UJ_NPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uopjit/tensor.h"
#include "uopjit/uopjit.h"

typedef struct NpyArray {
  uj_scalar dtype; /* UJ_FLOAT32, UJ_FLOAT64, UJ_INT32, UJ_INT64, UJ_BOOL, UJ_UINT8 */
  unsigned ndim;   /* 0 .. UJ_MAX_DIMS */
  int64_t shape[UJ_MAX_DIMS];
  void *data; /* malloc'd, numel elements, C order, host (little-endian) order; bool as one byte 0/1
               */
  size_t bytes; /* numel * element size; data is never NULL after a success, even for 0 bytes */
} NpyArray;

/* false and "PATH: message" in err (NUL-terminated, truncated to errsize); nothing leaked, *out
 * untouched on failure. */
bool npy_read(const char *path, NpyArray *out, char *err, size_t errsize);
/* The same reader over the size bytes of a whole file at data (may be NULL
 * when size is 0); messages start "NAME: ". What npy_read accepts, this
 * accepts, with the same messages (the fuzz target test/fuzz/fuzz_npy.c
 * checks that). */
bool npy_read_mem(const void *data, size_t size, const char *name, NpyArray *out, char *err,
                  size_t errsize);
/* shape: ndim dims (may be NULL when ndim is 0); data: numel elements as NpyArray holds them (may
 * be NULL when numel is 0). */
bool npy_write(const char *path, uj_scalar dtype, const int64_t *shape, unsigned ndim,
               const void *data, char *err, size_t errsize);
/* Frees a->data and empties *a; a zeroed or already freed array is fine. */
void npy_free(NpyArray *a);

#endif
