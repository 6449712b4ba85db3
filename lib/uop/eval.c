/* eval.c — the reference evaluator (eval.h): the oracle of the project.
 *
 * In: a graph root, variable values, memory for PARAMs and BUFFERs. Out:
 * the words of every value node under root; STOREs written to memory.
 *
 * How, in three phases, none recursive (a graph a million nodes deep is
 * fine): (1) a depth-first, left-to-right post-order walk from the root
 * lists every node once, after its sources; (2) each node is evaluated in
 * that order: ALU ops lane by lane through alu_eval, LOADs read memory
 * (still untouched), STOREs are checked and queued; (3) the queued STOREs
 * are written, in the order of the walk. An error in (2) leaves memory as
 * it was. Pointer nodes evaluate to a Pointer (memory, element, gate). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"
#include "uop/eval.h"
#include "uop/spec.h"
#include "uop/text.h"

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
} Memory;

/* A pointer value: element `index` of the `count` elements at data; valid
 * is false when a gate on the way turned the access off. */
typedef struct Pointer {
  unsigned char *data;
  int64_t count, index;
  bool valid;
} Pointer;

/* A STORE checked in phase 2, written in phase 3. */
typedef struct Store {
  unsigned char *at;
  DType dtype;
  const uint64_t *words;
} Store;

struct Eval {
  Ctx *ctx;
  VarBinding *vars;
  size_t nvars, cap_vars;
  Memory *mems;
  size_t nmems, cap_mems;
  /* results of the last run */
  const UOp **order; /* post-order of the graph */
  size_t norder;
  size_t *where;   /* by node id: 1 + offset in words or ptrs; 0: none */
  size_t nwhere;   /* ids covered by where[] */
  uint64_t *words; /* lanes of the value nodes */
  Pointer *ptrs;   /* pointer nodes */
  Store *stores;
  size_t nstores;
};

/* ---- errors ---- */

static bool fail(Eval *ev, const UOp *u, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(Eval *ev, const UOp *u, const char *fmt, ...) {
  char msg[256], node[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  text_print_node(u, 2, node, sizeof node);
  ctx_set_error(ev->ctx, "eval: %s: %s\n  in %s", op_table[u->op].name, msg, node);
  return false;
}

static bool fail_nomem(Eval *ev) {
  ctx_set_error(ev->ctx, "eval: out of memory");
  return false;
}

/* ---- memory layout ---- */

static size_t scalar_bytes(uj_scalar s) { return s == UJ_BOOL ? 1 : scalar_table[s].bits / 8; }

/* Bytes of one element of a value dtype, or of a pointer's pointee. */
static size_t elem_bytes(DType d) { return scalar_bytes((uj_scalar)d.scalar) * d.lanes; }

static void mem_read(const unsigned char *p, DType d, uint64_t *out) {
  size_t n = scalar_bytes((uj_scalar)d.scalar);
  for (unsigned lane = 0; lane < d.lanes; lane++, p += n) {
    uint64_t bits = 0;
    for (size_t i = n; i-- > 0;) bits = bits << 8 | p[i]; /* little endian */
    out[lane] = word_from_mem_bits((uj_scalar)d.scalar, bits);
  }
}

static void mem_write(unsigned char *p, DType d, const uint64_t *words) {
  size_t n = scalar_bytes((uj_scalar)d.scalar);
  for (unsigned lane = 0; lane < d.lanes; lane++, p += n) {
    uint64_t bits = word_to_mem_bits((uj_scalar)d.scalar, words[lane]);
    for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(bits >> (8 * i));
  }
}

/* ---- bindings ---- */

Eval *eval_new(Ctx *ctx) {
  Eval *ev = calloc(1, sizeof *ev);
  if (!ev) ctx_set_error(ctx, "eval: out of memory");
  else ev->ctx = ctx;
  return ev;
}

static void results_clear(Eval *ev) {
  free(ev->order);
  free(ev->where);
  free(ev->words);
  free(ev->ptrs);
  free(ev->stores);
  ev->order = NULL, ev->where = NULL, ev->words = NULL, ev->ptrs = NULL, ev->stores = NULL;
  ev->norder = ev->nwhere = ev->nstores = 0;
}

void eval_free(Eval *ev) {
  if (!ev) return;
  results_clear(ev);
  for (size_t i = 0; i < ev->nvars; i++) free(ev->vars[i].name);
  free(ev->vars);
  free(ev->mems);
  free(ev);
}

/* Room for one more item in a growable array; the new array or NULL. */
static void *grow(void *items, size_t n, size_t *cap, size_t size) {
  if (n < *cap) return items;
  size_t cap2 = *cap ? *cap * 2 : 8;
  void *p = realloc(items, cap2 * size);
  if (p) *cap = cap2;
  return p;
}

bool eval_bind_var(Eval *ev, const char *name, int64_t value) {
  for (size_t i = 0; i < ev->nvars; i++) {
    if (strcmp(ev->vars[i].name, name) == 0) {
      ev->vars[i].value = value;
      return true;
    }
  }
  VarBinding *vars = grow(ev->vars, ev->nvars, &ev->cap_vars, sizeof *vars);
  if (!vars) return fail_nomem(ev);
  ev->vars = vars;
  size_t len = strlen(name);
  char *copy = malloc(len + 1);
  if (!copy) return fail_nomem(ev);
  memcpy(copy, name, len + 1);
  ev->vars[ev->nvars++] = (VarBinding){copy, value};
  return true;
}

static Memory *mem_find(const Eval *ev, const UOp *buffer, int64_t slot) {
  for (size_t i = 0; i < ev->nmems; i++) {
    Memory *m = &ev->mems[i];
    if (m->buffer == buffer && (buffer || m->slot == slot)) return m;
  }
  return NULL;
}

static bool mem_bind(Eval *ev, const UOp *buffer, int64_t slot, void *data, size_t bytes) {
  Memory *m = mem_find(ev, buffer, slot);
  if (!m) {
    Memory *mems = grow(ev->mems, ev->nmems, &ev->cap_mems, sizeof *mems);
    if (!mems) return fail_nomem(ev);
    ev->mems = mems;
    m = &ev->mems[ev->nmems++];
  }
  *m = (Memory){buffer, slot, data, bytes};
  return true;
}

bool eval_bind_param(Eval *ev, int64_t slot, void *data, size_t bytes) {
  if (slot < 0 || (!data && bytes)) {
    ctx_set_error(ev->ctx, "eval_bind_param: bad slot %lld or memory", (long long)slot);
    return false;
  }
  return mem_bind(ev, NULL, slot, data, bytes);
}

bool eval_bind_buffer(Eval *ev, const UOp *buffer, void *data, size_t bytes) {
  if (!buffer || buffer->op != UJ_OP_BUFFER || buffer->nints != 2 || buffer->ints[1] < 0) {
    ctx_set_error(ev->ctx, "eval_bind_buffer: not a BUFFER node");
    return false;
  }
  size_t need;
  if (__builtin_mul_overflow((size_t)buffer->ints[1], elem_bytes(buffer->dtype), &need) ||
      bytes < need || (!data && bytes)) {
    ctx_set_error(ev->ctx, "eval_bind_buffer: BUFFER of %lld elements needs %zu bytes, not %zu",
                  (long long)buffer->ints[1], need, bytes);
    return false;
  }
  return mem_bind(ev, buffer, 0, data, bytes);
}

/* ---- phase 1: the walk, and room for the results ---- */

typedef struct Frame {
  const UOp *u;
  uint32_t next; /* the next source to visit */
} Frame;

/* Every node under root once, each after its sources, sources left to
 * right; NULL when out of memory. */
static const UOp **post_order(const UOp *root, size_t nnodes, size_t *count) {
  const UOp **order = malloc(nnodes * sizeof *order);
  Frame *stack = malloc(nnodes * sizeof *stack);
  unsigned char *seen = calloc(nnodes, 1);
  size_t top = 0, n = 0;
  if (order && stack && seen) {
    stack[top++] = (Frame){root, 0};
    seen[root->id] = 1;
  }
  while (top > 0) {
    Frame *f = &stack[top - 1];
    if (f->next == f->u->nsrc) {
      order[n++] = f->u;
      top--;
      continue;
    }
    const UOp *s = f->u->src[f->next++];
    if (!seen[s->id]) seen[s->id] = 1, stack[top++] = (Frame){s, 0};
  }
  free(stack);
  free(seen);
  if (n == 0) free(order);
  *count = n;
  return n ? order : NULL;
}

/* Lists the graph and gives each value node its words, each pointer node
 * its Pointer, each STORE a place in the queue. */
static bool results_alloc(Eval *ev, const UOp *root) {
  size_t nnodes = ev->ctx->nnodes, nwords = 0, nptrs = 0, nstores = 0;
  ev->order = post_order(root, nnodes, &ev->norder);
  ev->where = calloc(nnodes, sizeof *ev->where); /* O(graph), not O(context) */
  if (!ev->order || !ev->where) return false;
  ev->nwhere = nnodes;
  for (size_t i = 0; i < ev->norder; i++) {
    const UOp *u = ev->order[i];
    if (dt_is_ptr(u->dtype)) ev->where[u->id] = 1 + nptrs++;
    else if (!dt_is_void(u->dtype)) ev->where[u->id] = 1 + nwords, nwords += u->dtype.lanes;
    nstores += u->op == UJ_OP_STORE;
  }
  ev->words = calloc(nwords + 1, sizeof *ev->words);
  ev->ptrs = calloc(nptrs + 1, sizeof *ev->ptrs);
  ev->stores = calloc(nstores + 1, sizeof *ev->stores);
  return ev->words && ev->ptrs && ev->stores;
}

/* The words of a value node, the Pointer of a pointer node: both reached
 * (the walk puts sources first). */
static uint64_t *words_of(const Eval *ev, const UOp *u) { return ev->words + ev->where[u->id] - 1; }
static Pointer *pointer_of(const Eval *ev, const UOp *u) { return ev->ptrs + ev->where[u->id] - 1; }

/* ---- phase 2: one node ---- */

static bool eval_var(Eval *ev, const UOp *u) {
  const VarBinding *b = NULL;
  for (size_t i = 0; i < ev->nvars && !b; i++)
    if (strcmp(ev->vars[i].name, u->name) == 0) b = &ev->vars[i];
  if (!b) return fail(ev, u, "variable %s is not bound", u->name);
  if (b->value < u->ints[0] || b->value > u->ints[1])
    return fail(ev, u, "variable %s = %lld is outside [%lld, %lld]", u->name, (long long)b->value,
                (long long)u->ints[0], (long long)u->ints[1]);
  words_of(ev, u)[0] = word_from_int((uj_scalar)u->dtype.scalar, b->value);
  return true;
}

/* A PARAM or BUFFER: a pointer to element 0 of its memory, or (a value
 * PARAM) the value in its bytes. */
static bool eval_memory_root(Eval *ev, const UOp *u) {
  bool is_buffer = u->op == UJ_OP_BUFFER;
  const Memory *m = mem_find(ev, is_buffer ? u : NULL, is_buffer ? 0 : u->ints[0]);
  size_t elem = elem_bytes(u->dtype);
  if (!m && is_buffer) return fail(ev, u, "BUFFER is not bound");
  if (!m) return fail(ev, u, "PARAM slot %lld is not bound", (long long)u->ints[0]);
  if (dt_is_ptr(u->dtype)) {
    int64_t count = is_buffer ? u->ints[1] : elem ? (int64_t)(m->bytes / elem) : 0;
    *pointer_of(ev, u) = (Pointer){m->data, count, 0, true};
    return true;
  }
  if (m->bytes != elem)
    return fail(ev, u, "PARAM slot %lld is bound to %zu bytes, its value has %zu",
                (long long)u->ints[0], m->bytes, elem);
  mem_read(m->data, u->dtype, words_of(ev, u));
  return true;
}

/* INDEX(ptr, idx[, gate]): idx elements further; off where gate is false. */
static bool eval_index(Eval *ev, const UOp *u) {
  const Pointer *base = pointer_of(ev, u->src[0]);
  uint64_t w = words_of(ev, u->src[1])[0];
  bool gate = u->nsrc < 3 || words_of(ev, u->src[2])[0];
  Pointer *p = pointer_of(ev, u);
  *p = *base;
  p->valid = base->valid && gate;
  bool fits = dt_is_signed(u->src[1]->dtype) || w <= (uint64_t)INT64_MAX;
  if (fits && !__builtin_add_overflow(base->index, (int64_t)w, &p->index)) return true;
  p->index = 0;
  return p->valid ? fail(ev, u, "element index overflows int64") : true;
}

static bool access_ok(Eval *ev, const UOp *u, const Pointer *p) {
  if (p->index >= 0 && p->index < p->count) return true;
  return fail(ev, u, "element %lld is out of bounds [0, %lld)", (long long)p->index,
              (long long)p->count);
}

/* LOAD(ptr[, alt]): the element at ptr; alt (or zero) when ptr is off. */
static bool eval_load(Eval *ev, const UOp *u) {
  const Pointer *p = pointer_of(ev, u->src[0]);
  uint64_t *out = words_of(ev, u);
  size_t lanes = u->dtype.lanes;
  if (!p->valid) {
    if (u->nsrc == 2) memcpy(out, words_of(ev, u->src[1]), lanes * sizeof *out);
    else memset(out, 0, lanes * sizeof *out);
    return true;
  }
  if (!access_ok(ev, u, p)) return false;
  mem_read(p->data + (size_t)p->index * elem_bytes(u->dtype), u->dtype, out);
  return true;
}

/* STORE(ptr, val): checked now, written in phase 3; nothing when ptr is off. */
static bool eval_store(Eval *ev, const UOp *u) {
  const Pointer *p = pointer_of(ev, u->src[0]);
  DType d = u->src[1]->dtype;
  if (!p->valid) return true;
  if (!access_ok(ev, u, p)) return false;
  ev->stores[ev->nstores++] =
      (Store){p->data + (size_t)p->index * elem_bytes(d), d, words_of(ev, u->src[1])};
  return true;
}

/* An ALU op, lane by lane. `in` is the scalar of the first value operand
 * (WHERE's first is its condition). */
static bool eval_alu(Eval *ev, const UOp *u) {
  uj_scalar out = (uj_scalar)u->dtype.scalar;
  uj_scalar in = (uj_scalar)u->src[u->op == UJ_OP_WHERE ? 1 : 0]->dtype.scalar;
  uint64_t *res = words_of(ev, u);
  for (unsigned lane = 0; lane < u->dtype.lanes; lane++) {
    uint64_t args[3] = {0, 0, 0};
    for (uint32_t i = 0; i < u->nsrc; i++) args[i] = words_of(ev, u->src[i])[lane];
    res[lane] = alu_eval((Op)u->op, out, in, args);
  }
  return true;
}

static bool eval_node(Eval *ev, const UOp *u) {
  switch ((Op)u->op) {
  case UJ_OP_SINK: return true; /* its sources are evaluated already */
  case UJ_OP_CONST:
    words_of(ev, u)[0] = word_normalize((uj_scalar)u->dtype.scalar, (uint64_t)u->ints[0]);
    return true;
  case UJ_OP_DEFINE_VAR: return eval_var(ev, u);
  case UJ_OP_PARAM:
  case UJ_OP_BUFFER: return eval_memory_root(ev, u);
  case UJ_OP_INDEX: return eval_index(ev, u);
  case UJ_OP_LOAD: return eval_load(ev, u);
  case UJ_OP_STORE: return eval_store(ev, u);
  case UJ_OP_CALL: return fail(ev, u, "CALL is not evaluable");
  default:
    if (op_has((Op)u->op, OPF_ALU) && u->nsrc <= 3) return eval_alu(ev, u);
    return fail(ev, u, "the evaluator does not know this op");
  }
}

/* ---- the run ---- */

bool eval_run(Eval *ev, const UOp *root) {
  results_clear(ev);
  Ctx *ctx = ev->ctx;
  if (!root || root->id >= ctx->nnodes || ctx->nodes[root->id] != root) {
    ctx_set_error(ctx, "eval_run: the root is not a node of this context");
    return false;
  }
  if (!spec_check_graph(ctx, root)) return false;
  bool ok = results_alloc(ev, root) || fail_nomem(ev);
  for (size_t i = 0; ok && i < ev->norder; i++) ok = eval_node(ev, ev->order[i]);
  if (!ok) {
    results_clear(ev);
    return false;
  }
  for (size_t i = 0; i < ev->nstores; i++) /* phase 3 */
    mem_write(ev->stores[i].at, ev->stores[i].dtype, ev->stores[i].words);
  return true;
}

const uint64_t *eval_value(const Eval *ev, const UOp *u) {
  if (!u || u->id >= ev->nwhere || ev->where[u->id] == 0) return NULL;
  if (dt_is_ptr(u->dtype) || dt_is_void(u->dtype)) return NULL;
  return words_of(ev, u);
}

bool eval_expr(Ctx *ctx, const UOp *expr, const char *const *names, const int64_t *values,
               size_t nvars, uint64_t *out) {
  Eval *ev = eval_new(ctx);
  bool ok = ev != NULL;
  for (size_t i = 0; ok && i < nvars; i++) ok = eval_bind_var(ev, names[i], values[i]);
  ok = ok && eval_run(ev, expr);
  const uint64_t *w = ok ? eval_value(ev, expr) : NULL;
  if (ok && !w) ctx_set_error(ctx, "eval_expr: %s is not a value", op_table[expr->op].name);
  if (w) memcpy(out, w, expr->dtype.lanes * sizeof *out);
  eval_free(ev);
  return w != NULL;
}
