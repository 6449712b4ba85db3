/* uopjit.h — the public C API of uopjit (umbrella header).
 *
 * In: a context (uj_ctx) that owns every node built in it; programs built
 * node by node (uj_uop_new, uj_const_*, uj_var) or parsed from the text form
 * (uj_parse). Out: interned, immutable UOp nodes; their text form
 * (uj_print); checked (uj_check) and simplified (uj_simplify) graphs.
 * Errors: functions return NULL or a uj_status != UJ_OK and leave a message
 * in the context (uj_error). Nothing aborts on bad input. */
#ifndef UOPJIT_H
#define UOPJIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct uj_ctx uj_ctx;
typedef struct uj_uop uj_uop;

typedef enum uj_status {
  UJ_OK = 0,
  UJ_ERR_PARSE,  /* malformed text */
  UJ_ERR_SPEC,   /* a graph that breaks the op table (type or arity) */
  UJ_ERR_IO,     /* unreadable file */
  UJ_ERR_NOMEM,  /* allocation failed */
  UJ_ERR_ARG,    /* bad argument to an API call */
  UJ_ERR_COMPILE, /* a kernel the pipeline cannot compile for its target */
  UJ_ERR_INTERRUPTED, /* work stopped at uj_interrupt's request */
} uj_status;

/* Scalar kinds. Order matters: ints are grouped, then floats. */
typedef enum uj_scalar {
  UJ_VOID,
  UJ_BOOL,
  UJ_INT8, UJ_INT16, UJ_INT32, UJ_INT64,
  UJ_UINT8, UJ_UINT16, UJ_UINT32, UJ_UINT64,
  UJ_FLOAT16, UJ_BFLOAT16, UJ_FLOAT32, UJ_FLOAT64,
  UJ_SCALAR_COUNT
} uj_scalar;

/* Address space of a pointer dtype; UJ_AS_NONE means "not a pointer". */
typedef enum uj_addrspace {
  UJ_AS_NONE, UJ_AS_GLOBAL, UJ_AS_LOCAL, UJ_AS_REG, UJ_AS_COUNT
} uj_addrspace;

/* A dtype is a value: scalar kind, vector lanes (1 = scalar) and, for a
 * pointer, its address space (the pointee is scalar x lanes). */
typedef struct uj_dtype {
  uint8_t scalar;  /* uj_scalar */
  uint8_t space;   /* uj_addrspace; UJ_AS_NONE for values */
  uint16_t lanes;  /* >= 1 */
} uj_dtype;

/* The op set; one line each in lib/uop/ops.c with arity, arg kind, flags
 * and type rule. New ops are appended before UJ_OP_COUNT. */
typedef enum uj_op {
  /* program */
  UJ_OP_SINK, UJ_OP_CONST, UJ_OP_PARAM, UJ_OP_CALL, UJ_OP_DEFINE_VAR,
  /* memory */
  UJ_OP_BUFFER, UJ_OP_INDEX, UJ_OP_LOAD, UJ_OP_STORE,
  /* unary */
  UJ_OP_RECIP, UJ_OP_NEG, UJ_OP_EXP2, UJ_OP_LOG2, UJ_OP_SIN, UJ_OP_SQRT,
  UJ_OP_CAST, UJ_OP_BITCAST,
  /* binary */
  UJ_OP_ADD, UJ_OP_SUB, UJ_OP_MUL, UJ_OP_IDIV, UJ_OP_FDIV, UJ_OP_MOD,
  UJ_OP_MAX, UJ_OP_CMPLT, UJ_OP_CMPNE, UJ_OP_CMPEQ, UJ_OP_AND, UJ_OP_OR,
  UJ_OP_XOR, UJ_OP_SHL, UJ_OP_SHR,
  /* ternary */
  UJ_OP_WHERE, UJ_OP_MULACC,
  /* loops */
  UJ_OP_RANGE, UJ_OP_END,
  /* vectors */
  UJ_OP_VECTORIZE, UJ_OP_GEP,
  /* tensors: movement and reduction */
  UJ_OP_RESHAPE, UJ_OP_EXPAND, UJ_OP_PERMUTE, UJ_OP_FLIP, UJ_OP_PAD, UJ_OP_SHRINK,
  UJ_OP_REDUCE,
  /* scheduling: a tensor value materialised in a buffer */
  UJ_OP_STAGE,
  /* memory of a kernel's own: registers/stack, or workgroup-shared */
  UJ_OP_ALLOC,
  /* workgroups: every thread of the group reaches it before any goes on */
  UJ_OP_BARRIER,
  /* data-dependent indexing: a load at an index read from a tensor, and
   * its adjoint, additions into memory at such indices */
  UJ_OP_GATHER, UJ_OP_SCATTER, UJ_OP_STORE_ADD,
  UJ_OP_COUNT
} uj_op;

/* The arg of a node: an optional name and a list of integers. What they
 * mean depends on the op (docs/ir.md): CONST holds its value in ints[0]
 * (see uj_const_*), DEFINE_VAR its name and [min, max], PARAM its slot,
 * BUFFER (id, size) and its device name, CALL the callee and launch dims,
 * RANGE its kind ("loop", "global", ...) and axis number, GEP its lane,
 * RESHAPE/EXPAND the new shape, PERMUTE the order, FLIP the axes, PAD and
 * SHRINK (lo, hi) per axis, REDUCE its op name ("ADD") and axes, ALLOC
 * (id, element count). */
typedef struct uj_arg {
  const char *name;     /* NULL when the op takes no name */
  const int64_t *ints;  /* may be NULL when nints == 0 */
  uint32_t nints;
} uj_arg;

/* ---- version ---- */
/* One line naming this build: "uopjit 0.1.0 (LLVM 19.1.7; targets: cpu
 * nvptx amdgpu; devices: CPU, EVAL, CUDA, CUDA:N, AMD, AMD:N)". The text
 * is the calling thread's and stays until its next call. */
const char *uj_version(void);

/* ---- long work ---- */
/* Asks work in progress to stop (true), or withdraws the request (false).
 * A realize stops before its next kernel and a BEAM search before its
 * next candidate, failing with UJ_ERR_INTERRUPTED and the message
 * "interrupted"; the session stays usable
 * (what ran is kept, nothing is half-written). Process-wide and
 * async-signal-safe: a SIGINT handler may call it; a prompt withdraws
 * the request before each entry. One running kernel is not cut short. */
void uj_interrupt(bool on);

/* ---- context ---- */
uj_ctx *uj_ctx_new(void);
void uj_ctx_free(uj_ctx *ctx);
/* The message of the last error, "" when there was none. */
const char *uj_error(const uj_ctx *ctx);
/* Number of nodes interned so far (dense ids are 0 .. count-1). */
size_t uj_ctx_node_count(const uj_ctx *ctx);

/* ---- dtypes ---- */
uj_dtype uj_dtype_scalar(uj_scalar s);
uj_dtype uj_dtype_vec(uj_scalar s, unsigned lanes);
uj_dtype uj_dtype_ptr(uj_scalar s, unsigned lanes, uj_addrspace space);
bool uj_dtype_eq(uj_dtype a, uj_dtype b);
/* Writes the dtype's text form ("float32x8", "int32*local") into buf. */
const char *uj_dtype_name(uj_dtype d, char *buf, size_t size);

/* ---- building nodes (interned: equal inputs give the same pointer) ---- */
/* Returns NULL (and sets the error) when the node breaks its op's rule. */
const uj_uop *uj_uop_new(uj_ctx *ctx, uj_op op, uj_dtype dtype,
                         const uj_uop *const *src, size_t nsrc, uj_arg arg);
const uj_uop *uj_const_int(uj_ctx *ctx, uj_dtype dtype, int64_t value);
const uj_uop *uj_const_float(uj_ctx *ctx, uj_dtype dtype, double value);
const uj_uop *uj_const_bool(uj_ctx *ctx, bool value);
const uj_uop *uj_var(uj_ctx *ctx, uj_dtype dtype, const char *name,
                     int64_t min, int64_t max);

/* ---- reading nodes ---- */
uj_op uj_uop_op(const uj_uop *u);
uj_dtype uj_uop_dtype(const uj_uop *u);
size_t uj_uop_nsrc(const uj_uop *u);
const uj_uop *uj_uop_src(const uj_uop *u, size_t i);
uj_arg uj_uop_arg(const uj_uop *u);
uint32_t uj_uop_id(const uj_uop *u);
/* Integer bounds; false when the node has none (floats, unknown uint64). */
bool uj_uop_bounds(const uj_uop *u, int64_t *vmin, int64_t *vmax);
const char *uj_op_name(uj_op op);

/* ---- text form (docs/text-form.md) ---- */
/* Parses one program; `where` names the source in messages ("<stdin>").
 * NULL on error, with "where:line:col: message" in uj_error. */
const uj_uop *uj_parse(uj_ctx *ctx, const char *text, const char *where);
/* The text form of a graph, malloc'd (free with free()); NULL on no memory. */
char *uj_print(uj_ctx *ctx, const uj_uop *root);
/* The graph under root as Graphviz DOT (`dot -Tsvg`): a box a node,
 * labelled as the text form heads it, coloured by kind; an edge from each
 * source to its user (docs/tool.md, "Pictures"). malloc'd; NULL on error. */
char *uj_dot(uj_ctx *ctx, const uj_uop *root);

/* ---- checking and simplifying ---- */
/* Checks every node under root against the op table. */
uj_status uj_check(uj_ctx *ctx, const uj_uop *root);
/* Symbolic simplification to a fixpoint (docs/symbolic.md). */
const uj_uop *uj_simplify(uj_ctx *ctx, const uj_uop *root);

/* ---- compiling and running kernels (docs/compile.md) ---- */
/* A kernel is a SINK of STOREs and ENDs (loops) over PARAM slots. */
typedef struct uj_program uj_program; /* a kernel compiled for this CPU */

/* What uj_emit produces. Text for all but UJ_EMIT_HSACO (an ELF code
 * object). IR and asm are for the target of the kind: UJ_EMIT_IR and
 * UJ_EMIT_IR_OPT for the CPU unless arch names a GPU ("sm_90", "gfx90a"). */
typedef enum uj_emit_kind {
  UJ_EMIT_IR,      /* LLVM IR as rendered, verified */
  UJ_EMIT_IR_OPT,  /* LLVM IR after the pass pipeline */
  UJ_EMIT_ASM,     /* host CPU assembly */
  UJ_EMIT_PTX,     /* NVIDIA PTX (arch: sm_80 .. sm_90a; NULL: sm_90) */
  UJ_EMIT_AMDGCN,  /* AMD GCN assembly (arch: gfx90a, gfx942, gfx1100...) */
  UJ_EMIT_HSACO,   /* AMD HSA code object, linked with ld.lld */
  UJ_EMIT_LIST,    /* the lowered kernel as the list every backend renders
                      (docs/compile.md "Linearizing"); CPU unless arch names a GPU */
  UJ_EMIT_COUNT
} uj_emit_kind;

/* Compiles kernel for the host CPU; `name` (NULL: "kernel") names it in
 * dumps and UJ_DEBUG output. Compiling an equal kernel again returns the
 * same program, counted: each uj_compile needs its uj_program_free. NULL
 * and a message on error. */
uj_program *uj_compile(uj_ctx *ctx, const uj_uop *kernel, const char *name);
/* Runs p: args[slot] is the buffer of each pointer PARAM slot (or the
 * address of a value PARAM's value); vars[i] is the value of variable i
 * (uj_program_var_name order: sorted by name). Buffers must not overlap. */
uj_status uj_run(uj_program *p, void *const *args, size_t nargs, const int64_t *vars, size_t nvars);
size_t uj_program_nparams(const uj_program *p);
/* Programs belong to their context: uj_ctx_free frees those still alive,
 * after which they must not be used (nor freed again). */
size_t uj_program_nvars(const uj_program *p);
const char *uj_program_var_name(const uj_program *p, size_t i);
/* PARAM slot's dtype (a pointer for a buffer) and whether the kernel
 * stores through it; false when no PARAM of the kernel has that slot. */
bool uj_program_param(const uj_program *p, size_t slot, uj_dtype *dtype, bool *stored);
/* Variable i's dtype and the range [min, max] uj_run accepts. */
bool uj_program_var(const uj_program *p, size_t i, uj_dtype *dtype, int64_t *min, int64_t *max);
void uj_program_free(uj_program *p);

/* The stage `kind` of kernel as a malloc'd buffer (free with free()), its
 * length in *len (may be NULL; text is also NUL-terminated). NULL and a
 * message on error, such as an op the target cannot compute. */
char *uj_emit(uj_ctx *ctx, const uj_uop *kernel, uj_emit_kind kind, const char *arch, size_t *len);
const char *uj_emit_name(uj_emit_kind kind); /* "ir", "ir-opt", "asm", "ptx", "amdgcn", "hsaco" */

#ifdef __cplusplus
}
#endif
#endif
