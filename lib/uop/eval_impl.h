/* eval_impl.h — the reference evaluator's state, shared by its files:
 * eval.c (the walk, values, REDUCE, effects, the run) and eval_mem.c
 * (bindings, memory, LOAD and STORE). Not an API: eval.h is. */
#ifndef UJ_EVAL_IMPL_H
#define UJ_EVAL_IMPL_H

#include <assert.h>

#include "uop/eval.h"
#include "uop/nodemap.h"

typedef struct VarBinding {
  char *name;
  int64_t value;
} VarBinding;

/* Memory bound to a BUFFER node, or to PARAM `slot` when buffer is NULL. */
typedef struct Memory {
  const UOp *buffer;
  int64_t slot;
  unsigned char *data;
  size_t bytes;
  double *errs; /* eval_bind_bounds: a bound per lane of each element, or NULL (exact) */
} Memory;

/* A pointer value: element `index` of the `count` elements at data; valid
 * is false when a gate on the way turned the access off. */
typedef struct Pointer {
  unsigned char *data;
  int64_t count, index;
  bool valid;
  bool own;       /* an ALLOC's memory: stores land at once, loads need one first */
  bool uncertain; /* tracking bounds: an index or gate on the way may differ */
  double *errs;   /* tracking bounds: the memory's bounds, a lane each, or NULL (exact) */
} Pointer;

typedef struct Frame {
  const UOp *u;
  uint32_t next; /* the next source to visit */
} Frame;

/* A STORE that ran: written, from its copy of the value, after the run. */
typedef struct Store {
  unsigned char *at;
  DType dtype;
  size_t words; /* offset in store_words (and store_errs) */
  double *err_at; /* tracking bounds: where the value's bounds go, or NULL */
} Store;

/* One effect node being run: SINK, END (with its loop state) or STORE. */
typedef struct Step {
  const UOp *u;
  uint32_t next;      /* the next source to run */
  int64_t iter, trip; /* END: the current value of its RANGE and the bound */
} Step;

struct Eval {
  Ctx *ctx;
  VarBinding *vars;
  size_t nvars, cap_vars;
  Memory *mems;
  size_t nmems, cap_mems;
  /* results of the last run */
  const UOp **order; /* post-order of the graph */
  size_t norder;
  NodeMap num;     /* the graph's nodes, numbered (nodemap.h): the tables below are by number */
  size_t *where;   /* by number: 1 + offset in words or ptrs; 0: none */
  uint64_t *words; /* lanes of the value nodes */
  Pointer *ptrs;   /* pointer nodes */
  /* by number: depends on a RANGE; the epoch its value was computed in
   * (0: never); a RANGE inside its END; an effect run outside loops */
  unsigned char *in_loop, *open, *done, *pinned; /* pinned: a shadow computed for this step (reduce_level) */
  uint64_t *stamp, epoch; /* epoch: +1 at every loop step */
  size_t depth;           /* ENDs open */
  uint64_t *pushed, walks, walk_id; /* by number: the walk that pushed the node */
  Frame *walk;                       /* stack for computing values; walks nest */
  size_t walk_top, walk_cap;         /* (REDUCE), each above the last */
  Step *steps;            /* stack of effects */
  Store *stores;
  size_t nstores, cap_stores;
  uint64_t *store_words;
  size_t nstore_words, cap_store_words;
  bool track;        /* eval_track_bounds */
  double *errs;      /* tracking: the bound of each lane in words */
  double *store_errs; /* tracking: the bounds of store_words */
  uintptr_t *written; /* set of element addresses stored to: 0 = empty slot */
  size_t nwritten, cap_written;
  void **allocs; /* the memory of ALLOCs in this run (and their bounds) */
  size_t nallocs, cap_allocs;
};

/* u's number: the tables are as long as the graph run, not the context. */
static inline uint32_t ix(const Eval *ev, const UOp *u) {
  uint32_t k = nodemap_find(&ev->num, u);
  assert(k != NODEMAP_NONE);
  return k;
}

/* The words of a value node, the Pointer of a pointer node: both reached
 * (the walk puts sources first). */
static inline uint64_t *words_of(const Eval *ev, const UOp *u) { return ev->words + ev->where[ix(ev, u)] - 1; }
static inline Pointer *pointer_of(const Eval *ev, const UOp *u) { return ev->ptrs + ev->where[ix(ev, u)] - 1; }
/* Tracking bounds: the bounds of a value node's lanes. */
static inline double *errs_of(const Eval *ev, const UOp *u) { return ev->errs + ev->where[ix(ev, u)] - 1; }

/* eval.c: an error naming node u (its text form follows); out of memory;
 * room for one more item in a growable array (the new array or NULL). */
bool eval_fail(Eval *ev, const UOp *u, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool eval_fail_nomem(Eval *ev);
void *eval_grow(void *items, size_t n, size_t *cap, size_t size);

/* eval_mem.c: the nodes that read bindings or touch memory, and the
 * queued STOREs written once the run succeeded. */
bool eval_var(Eval *ev, const UOp *u);
bool eval_memory_root(Eval *ev, const UOp *u);
bool eval_alloc(Eval *ev, const UOp *u);
bool eval_index(Eval *ev, const UOp *u);
bool eval_load(Eval *ev, const UOp *u);
bool eval_store(Eval *ev, const UOp *u);
void eval_write_stores(Eval *ev);

#endif
