/* fuzz.h — what the fuzz targets of test/fuzz/ share (docs/fuzz.md).
 *
 * Each target (fuzz_ir.c, fuzz_lang.c, fuzz_npy.c) defines
 * LLVMFuzzerTestOneInput: one input, given as bytes, run through one part
 * of the library with the properties that must hold checked. Built with
 * UJ_FUZZ=ON (clang), libFuzzer calls it with generated inputs, mutated by
 * mutate.c; otherwise replay.c calls it on every file of the corpus and
 * regression folders. A broken property is fuzz_fail: a message and
 * abort(), which libFuzzer reports with the input that did it. An input
 * a target declines (too long, say) returns -1: libFuzzer then keeps it
 * out of the corpus. */
#ifndef UJ_FUZZ_H
#define UJ_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* ---- libFuzzer's interface ---- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed);
/* libFuzzer's own mutations, for the custom mutator to fall back on. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

/* ---- fuzz_util.c ---- */

/* "fuzz: MESSAGE" on stderr, then abort(). */
_Noreturn void fuzz_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The input as a malloc'd NUL-terminated string (a NUL inside ends it
 * early, as it would for a C string read from a file). */
char *fuzz_text(const uint8_t *data, size_t size);

#endif
