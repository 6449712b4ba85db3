/* divmod.h — rules that fold integer division, remainder and comparison
 * from linear forms and bounds (the rule table is in symbolic.c).
 *
 * In: a matched IDIV/MOD/CMPLT with a constant right side. Out: a simpler
 * equal expression, or NULL to decline. Every rule checks that the values
 * involved cannot wrap (their exact bounds fit the dtype), so truncating
 * division agrees with floor division on them. */
#ifndef UJ_DIVMOD_H
#define UJ_DIVMOD_H

#include "rewrite/rewrite.h"

const UOp *rw_div_div(Rewriter *rw, const UOp *root, const Binds *m);
const UOp *rw_mod_mod(Rewriter *rw, const UOp *root, const Binds *m);
const UOp *rw_mod_div(Rewriter *rw, const UOp *root, const Binds *m);
const UOp *rw_divmod(Rewriter *rw, const UOp *root, const Binds *m);
const UOp *rw_lt_linear(Rewriter *rw, const UOp *root, const Binds *m);

#endif
