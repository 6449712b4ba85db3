/* eval_impl.h — the reference evaluator's state, shared by its files:
 * eval.c (the walk, values, REDUCE, effects, the run), eval_mem.c
 * (bindings, memory, LOAD and STORE, race checks) and eval_group.c
 * (workgroups: threads in lockstep between BARRIERs). Not an API: eval.h is. */
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

/* An ALLOC's memory in this run: `blocks` blocks of `count` elements (a
 * `reg` ALLOC has one per thread of a workgroup, else one). born: for each
 * element, the life (Eval.life) it was last stored in, 0 never; a LOAD
 * needs the current one. writer, reader, reader2, phase: in a workgroup,
 * a `local` ALLOC's race record, made on first use (eval_mem.c). */
typedef struct AllocMem {
  const UOp *u;
  size_t count, blocks;
  unsigned char *data;
  double *errs; /* tracking bounds: a bound per lane of each element */
  uint64_t *born;
  int32_t *writer, *reader, *reader2;
  uint64_t *phase;
} AllocMem;

/* A pointer value: element `index` of the `count` elements at data (of
 * alloc, when it points into an ALLOC); valid is false when a gate on the
 * way turned the access off; mem: the PARAM, BUFFER or ALLOC it is in. */
typedef struct Pointer {
  unsigned char *data;
  int64_t count, index;
  bool valid;
  bool uncertain;  /* tracking bounds: an index or gate on the way may differ */
  double *errs;    /* tracking bounds: the memory's bounds, a lane each, or NULL (exact) */
  AllocMem *alloc; /* an ALLOC's memory: stores land at once, loads need one first */
  const UOp *mem;
} Pointer;

/* An element of global memory a STORE of the run wrote: by which thread,
 * in which workgroup life and phase (thread -1: outside workgroups). */
typedef struct Written {
  uintptr_t at; /* 0: an empty slot */
  uint64_t life, phase;
  int32_t thread;
  bool added; /* by STORE_ADDs only so far: more of them from any thread do not race */
  bool many;  /* added to by threads besides `thread` (the first) */
} Written;

typedef struct Frame {
  const UOp *u;
  uint32_t next; /* the next source to visit */
} Frame;

/* A STORE that ran: written, from its copy of the value, after the run. */
typedef struct Store {
  unsigned char *at;
  DType dtype;
  bool add;     /* STORE_ADD: added to what is there when written */
  size_t words; /* offset in store_words (and store_errs) */
  double *err_at; /* tracking bounds: where the value's bounds go, or NULL */
} Store;

/* One effect node being run: SINK, END (with its loop state), BARRIER, or
 * a workgroup thread's body (its innermost `local` END, run once). */
typedef struct Step {
  const UOp *u;
  uint32_t next;      /* the next source to run */
  int64_t iter, trip; /* END: the current value of its RANGE and the bound */
  bool body;          /* a thread's body: u's RANGE is the thread's, set by the workgroup */
} Step;

typedef struct StepStack {
  Step *at;
  size_t top, cap;
} StepStack;

typedef struct Workgroup Workgroup; /* eval_group.c */

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
  StepStack steps;        /* the effects being run, outside workgroups */
  Workgroup *group;       /* the workgroup being run, or NULL */
  int32_t thread;         /* its thread being run (-1: none) */
  uint64_t life, lives;   /* memory life: 1 outside workgroups, one per workgroup run */
  uint64_t phase;         /* +1 at every workgroup phase (between BARRIERs) */
  Store *stores;
  size_t nstores, cap_stores;
  uint64_t *store_words;
  size_t nstore_words, cap_store_words;
  bool track;        /* eval_track_bounds */
  double *errs;      /* tracking: the bound of each lane in words */
  double *store_errs; /* tracking: the bounds of store_words */
  Written *written; /* the global elements stored to, hashed by address */
  size_t nwritten, cap_written;
  AllocMem **allocs; /* the ALLOCs' memory in this run */
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

/* eval.c: computes value node u now unless it is ready for this step;
 * runs the effects on ss until its top is base again: RUN_BARRIER when a
 * workgroup's thread stopped at a BARRIER (ev->group says which). */
bool eval_value_node(Eval *ev, const UOp *u);
typedef enum RunResult { RUN_DONE, RUN_BARRIER, RUN_ERROR } RunResult;
RunResult eval_run_steps(Eval *ev, StepStack *ss, size_t base);
bool eval_push_step(Eval *ev, StepStack *ss, Step st);

/* eval_group.c: runs the workgroup of `local` END u met on ss (its threads
 * in lockstep between BARRIERs); the BARRIER a thread stopped at; a
 * thread's name, "(r1=3)", and " of workgroup (r0=1)" (or "": the only
 * one), for messages. */
bool eval_workgroup(Eval *ev, const UOp *u, const StepStack *ss);
void eval_group_stopped(Eval *ev, const UOp *barrier);
/* A LOAD of the running thread read element index of a `local` ALLOC
 * nothing stored in this workgroup yet: an error at the phase's end,
 * unless another thread stores it in the phase (then a race, found first). */
void eval_group_undefined(Eval *ev, const UOp *load, int64_t index);
void eval_thread_name(const Eval *ev, int32_t thread, char *buf, size_t size);
const char *eval_group_name(const Eval *ev);

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
