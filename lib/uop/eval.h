/* eval.h — the reference evaluator: the oracle every backend is diffed
 * against. Slow and obvious on purpose.
 *
 * In: a graph root and bindings (DEFINE_VAR values by name, memory for
 * PARAM slots and BUFFER nodes). Out: the words (alu.h) of every value node
 * reached from the root, lane by lane, and the STOREs written to the bound
 * memory. Semantics (docs/semantics.md): each ALU op is alu_eval per lane;
 * every LOAD sees memory as it was before the evaluation; the effects run
 * from the root, left to right, each END once per value of its RANGE (an
 * effect reached twice runs once outside loops, each time inside one; a
 * chain of `local` ENDs is a workgroup, its threads run in lockstep
 * between BARRIERs, races reported: eval_group.c); the STOREs are written
 * after the run, in the order they ran. On an error
 * nothing is written and the context holds a message naming the node. */
#ifndef UJ_EVAL_H
#define UJ_EVAL_H

#include "uop/uop.h"

typedef struct Eval Eval; /* bindings + results of one evaluation */

Eval *eval_new(Ctx *ctx); /* NULL (error set) when out of memory */
void eval_free(Eval *ev);

/* Binds every DEFINE_VAR named `name` to value (binding again replaces). */
bool eval_bind_var(Eval *ev, const char *name, int64_t value);
/* Binds PARAM slot: for a pointer PARAM the memory it points to (its
 * element count is bytes / element size); for a value PARAM the bytes of
 * its value, in the memory layout below. The memory is the caller's; it is
 * read and written by eval_run and must outlive it. */
bool eval_bind_param(Eval *ev, int64_t slot, void *data, size_t bytes);
/* Binds a BUFFER node to memory of at least its declared size. */
bool eval_bind_buffer(Eval *ev, const UOp *buffer, void *data, size_t bytes);

/* Checks the graph under root against the op table, then evaluates it.
 * Memory layout of one element: bool 1 byte; ints their width, little
 * endian; float16/bfloat16 their 16-bit patterns; float32, float64 IEEE;
 * a vector its lanes in order. */
bool eval_run(Eval *ev, const UOp *root);
/* The words (one per lane) of a value node of the last eval_run (inside a
 * loop: of the last step that computed it); NULL for nodes not computed,
 * pointers and void nodes. Valid until the next run. */
const uint64_t *eval_value(const Eval *ev, const UOp *u);

/* Error bounds (docs/semantics.md, "Reassociation"; eval_bound.h). With
 * tracking on, every value carries, lane by lane, a bound e: a lowering
 * that regroups float reductions gives a value within e of the word here
 * (e = 0: this word; INFINITY: any). LOADs take the bounds of their memory
 * (0 where none are bound), STOREs write them with their values. */
void eval_track_bounds(Eval *ev, bool on);
/* Binds the bounds of PARAM slot's memory (bound first): one double per
 * lane of each element, read by LOADs and written by STOREs; the array is
 * the caller's, as the memory. */
bool eval_bind_bounds(Eval *ev, int64_t slot, double *errs);
/* The bounds (one per lane) of a value node of the last run, or NULL
 * (not tracking; as eval_value). */
const double *eval_bound(const Eval *ev, const UOp *u);

/* For tests: evaluates a value expression with DEFINE_VARs names[i] bound
 * to values[i]; writes its words (expr's lanes of them) to out. */
bool eval_expr(Ctx *ctx, const UOp *expr, const char *const *names, const int64_t *values,
               size_t nvars, uint64_t *out);

#endif
