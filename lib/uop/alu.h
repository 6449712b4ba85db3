/* alu.h — the semantics of every ALU op on one lane, shared by constant
 * folding (lib/symbolic) and the reference evaluator (eval.c).
 *
 * A value of one lane is a 64-bit "word": bool 0/1; signed ints
 * sign-extended; unsigned ints zero-extended; floats as the bits of a double
 * that holds the value already rounded to its dtype (NaN is one canonical
 * quiet NaN). The choices for the corner cases are in docs/semantics.md. */
#ifndef UJ_ALU_H
#define UJ_ALU_H

#include <stdint.h>

#include "uop/uop.h"

/* Brings a raw word into canonical form: wraps ints to their width, bools
 * to 0/1, rounds floats (given as double bits) to their format. */
uint64_t word_normalize(uj_scalar s, uint64_t raw);
uint64_t word_from_double(uj_scalar s, double v);
uint64_t word_from_int(uj_scalar s, int64_t v);
/* The value of an op on one lane. `out` is the result scalar; `in` is the
 * scalar of the first value operand (the second for WHERE). */
uint64_t alu_eval(Op op, uj_scalar out, uj_scalar in, const uint64_t *args);
/* The word a REDUCE by op (ADD, MUL, MAX) starts from: 0 (-0.0 for floats,
 * since -0 + x is x for every x), 1, or the lowest value (-inf, MIN,
 * false, 0 unsigned). */
uint64_t alu_identity(Op op, uj_scalar s);
/* One step of a REDUCE by op: acc op v. A MULACC reduce accumulates a
 * value that is a product a * b (ab = {a, b}) with one fused rounding,
 * fma(a, b, acc); any other value (ab NULL) is added (= fma(v, 1, acc)). */
/* The product MUL(a, b) a REDUCE by MULACC fuses (its value), or NULL. */
const UOp *reduce_fused_product(const UOp *reduce);
uint64_t alu_reduce_step(Op op, uj_scalar s, uint64_t acc, uint64_t v, const uint64_t *ab);
/* The bit pattern of a value as stored in memory (IEEE bits for floats,
 * two's complement truncated to the width for ints, 0/1 for bool), and the
 * word of such a pattern; BITCAST is one after the other. */
uint64_t word_to_mem_bits(uj_scalar s, uint64_t w);
uint64_t word_from_mem_bits(uj_scalar s, uint64_t bits);
/* The memory layout of values (docs/semantics.md): bool 1 byte, ints their
 * width little endian, floats their IEEE bits, a vector its lanes in order.
 * elem_bytes: one element of a value dtype (or of a pointer's pointee). */
size_t elem_bytes(DType d);
/* One element of value dtype d at p, as its lanes' words, and back. */
void mem_read(const unsigned char *p, DType d, uint64_t *out);
void mem_write(unsigned char *p, DType d, const uint64_t *words);
/* Writes a float word of scalar s the way the text form spells it: the
 * shortest decimal that reads back to it ("0.1", "65504.0"), "inf", "nan". */
void word_format_float(uj_scalar s, uint64_t w, char *buf, size_t size);

#endif
