/* linear.h — integer expressions as linear forms: Σ coef·term + k.
 *
 * In: an integer node. Out: its terms (nodes that are not ADD, SUB, NEG,
 * MUL by a constant or CONST), their coefficients and the constant, in the
 * ring of the dtype (coefficients are kept sign-extended from its width);
 * and back: the canonical expression of a linear form. Used by the sum
 * canonicaliser and by div/mod folding. */
#ifndef UJ_LINEAR_H
#define UJ_LINEAR_H

#include "rewrite/rewrite.h"

enum { LINEAR_MAX_TERMS = 32, LINEAR_MAX_SPINE = 64 };

typedef struct Term {
  const UOp *node;
  int64_t coef;
  bool fresh; /* made by the decomposition (a joined slice), not below the node */
} Term;

typedef struct Linear {
  DType dtype;
  int nterms;
  Term terms[LINEAR_MAX_TERMS];
  int64_t k;
} Linear;

/* Decomposes u; false when it has more terms or spine nodes than the
 * limits, or out of memory (the caller then leaves u alone). Like terms
 * are combined, digit slices of one value are joined (x%4 + (x//4)·4 ->
 * x; the node of a partly joined slice, like x%32, is made in ctx), terms
 * are sorted (uop_term_order) and zero coefficients dropped. */
bool linear_decompose(Ctx *ctx, const UOp *u, Linear *lin);
/* The canonical expression: positive terms first, in order, joined by ADD,
 * then negative ones by SUB, then the constant; NULL when out of memory. */
const UOp *linear_build(Ctx *ctx, const Linear *lin);
/* Exact bounds of the form over the integers (not wrapped); false when a
 * term has no bounds or the arithmetic overflows int64. */
bool linear_bounds(const Linear *lin, int64_t *lo, int64_t *hi);
/* Whether [lo, hi] fits the dtype (then the wrapped value is the exact one). */
bool linear_fits(DType d, int64_t lo, int64_t hi);
/* out when it costs no more than root, the node it replaces; else NULL
 * (out itself when NULL or root). A node costs its distinct nodes down to
 * the terms of lin; a node that other users keep alive (rewrite_is_shared)
 * costs nothing on either side, except root itself, whose users all move to
 * out: so an out that already exists for other users is free (x+0 -> x for
 * a shared x). An integer division or modulo costs LINEAR_DIVMOD_COST (tens
 * of cycles, against one for an add or multiply), so folding one away is
 * worth a few new adds even where the sum it divided stays alive. */
enum { LINEAR_DIVMOD_COST = 8 };
const UOp *linear_not_larger(const Rewriter *rw, const UOp *out, const UOp *root,
                             const Linear *lin);
/* A total, context-independent order of nodes: variables by name, then by
 * op and structure, constants last. */
int uop_term_order(const UOp *a, const UOp *b);
/* Coefficient arithmetic in the ring of d. */
int64_t ring_norm(DType d, uint64_t v);

#endif
