/* uop.h — the IR inside the library: the UOp node, the context that interns
 * and owns nodes, the op table and dtype helpers.
 *
 * Every node is made by uop_new, which hash-conses: building the same
 * (op, dtype, src, arg) twice returns the same pointer. A node never changes
 * after it is made; its properties (structural key, bounds, shape) are
 * computed once, at creation, from its sources. Nodes live until their
 * context is freed, or until a collection (collect.c) finds no root reaches
 * them: it frees those and numbers the survivors again, in their order. */
#ifndef UJ_UOP_H
#define UJ_UOP_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uopjit/uopjit.h"

typedef uj_op Op;
typedef uj_dtype DType;
typedef uj_arg Arg;
typedef struct uj_uop UOp;
typedef struct uj_ctx Ctx;

struct uj_uop {
  uint32_t id;        /* dense, 0 .. ctx node count - 1: index side tables
                       * (a collection renumbers, keeping the order) */
  uint16_t op;        /* uj_op */
  bool bounded;       /* vmin/vmax hold (integer and bool dtypes) */
  uint8_t ndim;       /* rank of shape */
  DType dtype;
  uint32_t nsrc;
  uint32_t nints;
  uint64_t key;       /* structural hash: the same in every context */
  int64_t vmin, vmax; /* bounds of the value, when `bounded` */
  const char *name;   /* interned in the context, or NULL */
  const int64_t *ints;
  const int64_t *shape;
  const UOp *src[];
};

/* ---- context (uop.c) ---- */
typedef struct RuleSet RuleSet;

/* Nodes a collection must keep (collect.c): a growing list. */
typedef struct RootSet {
  const UOp **nodes;
  size_t n, cap;
  bool failed; /* out of memory: the collection frees nothing */
} RootSet;
void rootset_add(RootSet *r, const UOp *u);
void rootset_free(RootSet *r);

/* Subsystems that hang their state off the context, made on first use and
 * freed (last made, first freed) by uj_ctx_free. `roots` (or NULL) adds
 * the nodes the state holds to a collection's roots. */
typedef enum CtxPart { CTX_PART_CPU_JIT, CTX_PART_COUNT } CtxPart;
typedef struct CtxPartSlot {
  void *state;
  void (*free)(void *state);
  void (*roots)(void *state, RootSet *r);
} CtxPartSlot;

/* Chunk sizes of the context's allocator: 16-byte steps to 1 KiB, powers
 * of two above. A freed chunk waits on its class's list for the next
 * allocation of that class. */
enum { CTX_SMALL_CLASSES = 64, CTX_CLASSES = CTX_SMALL_CLASSES + 54 };

/* A slot of the intern table: the key beside the pointer, so a probe that
 * misses never touches the node. */
typedef struct InternSlot {
  uint64_t key;
  const UOp *node;
} InternSlot;

struct uj_ctx {
  struct Arena *arena;
  size_t arena_bytes;   /* the blocks' sizes: what the context holds */
  void *free_chunks[CTX_CLASSES]; /* by class: freed chunks, linked through their first word */
  const UOp **nodes;    /* by id */
  size_t nnodes, cap_nodes;
  struct InternSlot *table; /* open-addressing intern table */
  size_t cap_table;
  const char **strings; /* interned strings, open addressing */
  size_t nstrings, cap_strings;
  RuleSet *symbolic_rules; /* compiled on first use (symbolic.c) */
  /* Graph work: the nodes walks visited and the side-table slots they made
   * (nodemap.h). Never read by the compiler; tests compare it across graph
   * sizes to check that each stage costs what its graph holds (test_scale.c). */
  size_t work;
  CtxPartSlot parts[CTX_PART_COUNT];
  char error[1024];
};

/* Memory the context owns until it is freed, or until ctx_release gives
 * it back (the same size) for the next allocation of its class. */
void *ctx_alloc(Ctx *ctx, size_t size);
void ctx_release(Ctx *ctx, void *p, size_t size);
const char *ctx_intern_string(Ctx *ctx, const char *s, size_t len);
void ctx_set_error(Ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ctx_clear_error(Ctx *ctx);

/* Interns a node; no checking beyond what interning needs (see spec.c). */
const UOp *uop_new(Ctx *ctx, Op op, DType dtype, const UOp *const *src,
                   size_t nsrc, Arg arg);
/* Same node with new sources (returns u itself when they are unchanged). */
const UOp *uop_replace_src(Ctx *ctx, const UOp *u, const UOp *const *src,
                           size_t nsrc);
const UOp *uop_unary(Ctx *ctx, Op op, const UOp *a);
const UOp *uop_binary(Ctx *ctx, Op op, const UOp *a, const UOp *b);
const UOp *uop_ternary(Ctx *ctx, Op op, const UOp *a, const UOp *b,
                       const UOp *c);
/* A CONST from the canonical 64-bit word of a value (alu.h). */
const UOp *uop_const_word(Ctx *ctx, DType dtype, uint64_t word);
const UOp *uop_const_int(Ctx *ctx, DType dtype, int64_t value);
static inline uint64_t uop_const_value(const UOp *u) { return (uint64_t)u->ints[0]; }
static inline Arg arg_none(void) { return (Arg){0}; }
/* The nodes of the graph under root, each once, sources before users
 * (ascending id), malloc'd into *out; returns the count, or 0 (error set)
 * when out of memory. Iterative: any depth. */
size_t uop_toposort(Ctx *ctx, const UOp *root, const UOp ***out);
/* A qsort comparator of UOp pointers by ascending id: sources first. */
int uop_cmp_id(const void *a, const void *b);
/* Nodes in the graph under root (each counted once). */
size_t uop_graph_size(Ctx *ctx, const UOp *root);
/* The bytes a node takes in its context's allocator. */
static inline size_t uop_node_bytes(const UOp *u) { return sizeof *u + u->nsrc * sizeof(UOp *) + u->nints * sizeof(int64_t); }

/* ---- collection (collect.c) ---- */
/* Frees every node that neither a root in `keep` nor a part's roots hook
 * (CtxPartSlot.roots) reaches, and numbers the survivors 0 .. n - 1 in
 * their old order (sources still before users). Pointers to surviving
 * nodes stay valid; their ids change, so tables keyed by id are rebuilt
 * by their owners afterwards. Costs the context's node count. false (the
 * error set, nothing freed) when out of memory or keep->failed. */
bool uop_collect(Ctx *ctx, RootSet *keep);
/* The intern table filled again from ctx->nodes into t (cap zeroed
 * slots, a power of two, more than twice the nodes); the old one freed. */
void ctx_set_table(Ctx *ctx, struct InternSlot *t, size_t cap);

/* ---- properties (props.c) ---- */
void uop_compute_bounds(UOp *u);
/* false when out of memory */
bool uop_compute_shape(Ctx *ctx, UOp *u);
/* The bounds every value of dtype d can take; false for floats and for
 * uint64 (whose top half does not fit an int64). */
bool dtype_full_bounds(DType d, int64_t *lo, int64_t *hi);

/* ---- the op table (ops.c) ---- */
typedef enum ArgKind {
  ARG_NONE,   /* no arg */
  ARG_CONST,  /* ints[0]: the value word */
  ARG_SLOT,   /* ints[0]: parameter slot */
  ARG_VAR,    /* name, ints: min max */
  ARG_BUFFER, /* name: device, ints: id size */
  ARG_CALL,   /* name: callee, ints: launch dims (any count) */
  ARG_RANGE,  /* name: axis kind (axis_kind_names), ints: axis number */
  ARG_LANE,   /* ints[0]: a lane of a vector */
  ARG_INTS,   /* ints: a shape, an order, axes or (lo, hi) pairs */
  ARG_REDUCE, /* name: the op (ADD, MUL, MAX), ints: axes */
} ArgKind;

/* What a RANGE's loop becomes: a plain loop, a grid index (GPU threads; a
 * loop on the CPU), a workgroup-local index, a reduction, or a range the
 * optimizer expands into vector lanes (upcast) or unrolled copies. */
typedef enum AxisKind {
  AXIS_LOOP, AXIS_GLOBAL, AXIS_LOCAL, AXIS_REDUCE, AXIS_UPCAST, AXIS_UNROLL, AXIS_COUNT
} AxisKind;
extern const char *const axis_kind_names[AXIS_COUNT];
bool axis_kind_from_name(const char *name, AxisKind *out);
/* The kind of a RANGE node (its arg's name, checked by the spec). */
AxisKind range_kind(const UOp *range);
/* The memory a pointer points into, through its INDEXes (a PARAM, BUFFER
 * or ALLOC); whether u is a LOAD from an ALLOC (a STORE of the run may
 * change what it reads: docs/semantics.md "ALLOC"). */
const UOp *uop_memory_of(const UOp *pointer);
bool uop_loads_alloc(const UOp *u);

enum OpFlag {
  OPF_ALU = 1 << 0,         /* computes a value from values, per lane */
  OPF_UNARY = 1 << 1,
  OPF_BINARY = 1 << 2,
  OPF_TERNARY = 1 << 3,
  OPF_COMMUTATIVE = 1 << 4, /* f(a, b) == f(b, a) */
  OPF_ASSOCIATIVE = 1 << 5, /* f(f(a, b), c) == f(a, f(b, c)) on ints */
  OPF_COMPARE = 1 << 6,     /* result is bool */
  OPF_MOVEMENT = 1 << 7,    /* moves data: shape from the arg (movement.c) */
  OPF_TENSOR = 1 << 8,      /* tensor level only: rangeify removes it */
  OPF_EFFECT = 1 << 9,      /* runs for what it writes, has no value (SINK, END, STORE) */
};

/* Type rule: checks the sources and arg of u; on success writes the dtype
 * the node must have to *out (or leaves it to the node when the dtype is
 * given, not inferred) and returns NULL; otherwise returns a message. */
typedef const char *(*TypeRule)(const UOp *u, DType *out, char *buf,
                                size_t size);

typedef struct OpInfo {
  const char *name;
  int min_src, max_src;     /* max_src -1: any number */
  ArgKind arg;
  unsigned flags;           /* enum OpFlag */
  bool dtype_inferred;      /* the text form may omit the dtype */
  TypeRule type_rule;
} OpInfo;

extern const OpInfo op_table[UJ_OP_COUNT];
static inline const OpInfo *op_info(Op op) { return &op_table[op]; }
static inline bool op_has(Op op, unsigned flag) { return (op_table[op].flags & flag) != 0; }
bool op_from_name(const char *name, size_t len, Op *out);

/* ---- dtypes (dtype.c) ---- */
typedef struct ScalarInfo {
  const char *name;
  uint8_t bits;
  bool is_int, is_signed, is_float;
} ScalarInfo;
extern const ScalarInfo scalar_table[UJ_SCALAR_COUNT];

static inline DType dt_scalar(uj_scalar s) { return (DType){(uint8_t)s, UJ_AS_NONE, 1}; }
static inline bool dt_eq(DType a, DType b) { return a.scalar == b.scalar && a.space == b.space && a.lanes == b.lanes; }
static inline bool dt_is_ptr(DType d) { return d.space != UJ_AS_NONE; }
static inline bool dt_is_void(DType d) { return d.scalar == UJ_VOID && !dt_is_ptr(d); }
static inline bool dt_is_int(DType d) { return !dt_is_ptr(d) && scalar_table[d.scalar].is_int; }
static inline bool dt_is_signed(DType d) { return scalar_table[d.scalar].is_signed; }
static inline bool dt_is_float(DType d) { return !dt_is_ptr(d) && scalar_table[d.scalar].is_float; }
static inline bool dt_is_bool(DType d) { return !dt_is_ptr(d) && d.scalar == UJ_BOOL; }
static inline unsigned dt_bits(DType d) { return scalar_table[d.scalar].bits; }
/* The element dtype: a value of the pointee for pointers, lanes kept. */
static inline DType dt_base(DType d) { return (DType){d.scalar, UJ_AS_NONE, d.lanes}; }
/* The scalar of one lane. */
static inline DType dt_lane(DType d) { return (DType){d.scalar, UJ_AS_NONE, 1}; }
static inline DType dt_with_scalar(DType d, uj_scalar s) { return (DType){(uint8_t)s, d.space, d.lanes}; }
/* Parses "float32", "int", "float32x8", "float32*", "int8*local"; false on error. */
bool dtype_parse(const char *s, size_t len, DType *out);
const char *dtype_str(DType d, char *buf, size_t size);
/* Whether u is a live node of ctx (API entry points check what they are given). */
static inline bool uop_in_ctx(const Ctx *ctx, const UOp *u) {
  return u && u->id < ctx->nnodes && ctx->nodes[u->id] == u;
}

#endif
