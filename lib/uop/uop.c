/* uop.c — the context: its arena, string interning, node interning
 * (hash-consing) and error message; the public node API.
 *
 * In: op, dtype, sources and arg of a node. Out: the one node with those
 * parts in this context, with its id, structural key, bounds and shape.
 * Afterwards: equal nodes are one pointer; uj_ctx_free frees them all, a
 * collection (collect.c) those no root reaches. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"
#include "uop/asan.h"
#include "uop/hash.h"
#include "uop/nodemap.h"
#include "uop/spec.h"
#include "uop/uop.h"
#include "rewrite/rewrite.h"

/* ---- arena: big blocks, bump allocation, chunks recycled by class ---- */

typedef struct Arena {
  struct Arena *next;
  size_t used, cap;
  _Alignas(16) unsigned char data[];
} Arena;

enum { ARENA_BLOCK = 1 << 20 };

/* The class of a request of size bytes and the size of its chunks. */
static unsigned size_class(size_t size, size_t *chunk) {
  size = (size + 15) & ~(size_t)15;
  if (size <= 16 * CTX_SMALL_CLASSES) return *chunk = size ? size : 16, size ? (unsigned)(size / 16 - 1) : 0;
  unsigned log = 64 - (unsigned)__builtin_clzll((unsigned long long)(size - 1)); /* 2^log >= size */
  *chunk = (size_t)1 << log;
  return CTX_SMALL_CLASSES + log - 11;
}

void *ctx_alloc(Ctx *ctx, size_t size) {
  size_t chunk;
  unsigned c = size_class(size, &chunk);
  void *p = ctx->free_chunks[c];
  if (p) {
    ASAN_UNPOISON_MEMORY_REGION(p, chunk);
    memcpy(&ctx->free_chunks[c], p, sizeof p);
    return p;
  }
  Arena *a = ctx->arena;
  if (!a || a->cap - a->used < chunk) {
    size_t cap = chunk > ARENA_BLOCK ? chunk : ARENA_BLOCK;
    Arena *b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->next = a;
    b->used = 0;
    b->cap = cap;
    ctx->arena = a = b;
    ctx->arena_bytes += cap;
  }
  p = a->data + a->used;
  a->used += chunk;
  return p;
}

/* The chunk goes on its class's list (poisoned under AddressSanitizer: a
 * node used after a collection freed it is reported). */
void ctx_release(Ctx *ctx, void *p, size_t size) {
  if (!p) return;
  size_t chunk;
  unsigned c = size_class(size, &chunk);
  memcpy(p, &ctx->free_chunks[c], sizeof p);
  ctx->free_chunks[c] = p;
  ASAN_POISON_MEMORY_REGION(p, chunk);
}

/* ---- hashing ---- */

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 32);
}


/* ---- strings ---- */

static bool grow_strings(Ctx *ctx) {
  size_t cap = ctx->cap_strings ? ctx->cap_strings * 2 : 256;
  const char **t = calloc(cap, sizeof *t);
  if (!t) return false;
  for (size_t i = 0; i < ctx->cap_strings; i++) {
    const char *s = ctx->strings[i];
    if (!s) continue;
    size_t j = fnv1a(FNV_OFFSET, s, strlen(s)) & (cap - 1);
    while (t[j]) j = (j + 1) & (cap - 1);
    t[j] = s;
  }
  free(ctx->strings);
  ctx->strings = t;
  ctx->cap_strings = cap;
  return true;
}

const char *ctx_intern_string(Ctx *ctx, const char *s, size_t len) {
  if (ctx->nstrings * 2 >= ctx->cap_strings && !grow_strings(ctx)) return NULL;
  size_t mask = ctx->cap_strings - 1, j = fnv1a(FNV_OFFSET, s, len) & mask;
  for (; ctx->strings[j]; j = (j + 1) & mask) {
    const char *t = ctx->strings[j];
    if (strncmp(t, s, len) == 0 && t[len] == '\0') return t;
  }
  char *copy = ctx_alloc(ctx, len + 1);
  if (!copy) return NULL;
  memcpy(copy, s, len);
  copy[len] = '\0';
  ctx->strings[j] = copy;
  ctx->nstrings++;
  return copy;
}

/* ---- errors ---- */

void ctx_set_error(Ctx *ctx, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
  va_end(ap);
}

void ctx_clear_error(Ctx *ctx) { ctx->error[0] = '\0'; }

/* ---- node interning ---- */

static uint64_t node_key(Op op, DType dt, const UOp *const *src, size_t nsrc, Arg arg) {
  uint64_t h = mix((uint64_t)op, (uint64_t)dt.scalar | (uint64_t)dt.space << 8 | (uint64_t)dt.lanes << 16);
  h = mix(h, nsrc);
  for (size_t i = 0; i < nsrc; i++) h = mix(h, src[i]->key);
  if (arg.name) h = mix(h, fnv1a(FNV_OFFSET, arg.name, strlen(arg.name)));
  for (uint32_t i = 0; i < arg.nints; i++) h = mix(h, (uint64_t)arg.ints[i]);
  return h;
}

static bool node_equal(const UOp *u, Op op, DType dt, const UOp *const *src, size_t nsrc,
                       Arg arg) {
  if (u->op != op || !dt_eq(u->dtype, dt) || u->nsrc != nsrc ||
      u->name != arg.name || u->nints != arg.nints)
    return false;
  for (size_t i = 0; i < nsrc; i++)
    if (u->src[i] != src[i]) return false;
  for (uint32_t i = 0; i < arg.nints; i++)
    if (u->ints[i] != arg.ints[i]) return false;
  return true;
}

void ctx_set_table(Ctx *ctx, InternSlot *t, size_t cap) {
  for (size_t i = 0; i < ctx->nnodes; i++) {
    size_t j = ctx->nodes[i]->key & (cap - 1);
    while (t[j].node) j = (j + 1) & (cap - 1);
    t[j] = (InternSlot){ctx->nodes[i]->key, ctx->nodes[i]};
  }
  free(ctx->table);
  ctx->table = t;
  ctx->cap_table = cap;
}

static bool grow_table(Ctx *ctx) {
  size_t cap = ctx->cap_table ? 2 * ctx->cap_table : 4096;
  InternSlot *t = calloc(cap, sizeof *t);
  if (!t) return false;
  ctx_set_table(ctx, t, cap);
  return true;
}

static bool grow_nodes(Ctx *ctx) {
  size_t cap = ctx->cap_nodes ? ctx->cap_nodes * 2 : 4096;
  const UOp **n = realloc(ctx->nodes, cap * sizeof *n);
  if (!n) return false;
  ctx->nodes = n;
  ctx->cap_nodes = cap;
  return true;
}

static UOp *node_make(Ctx *ctx, uint64_t key, Op op, DType dt, const UOp *const *src,
                      size_t nsrc, Arg arg) {
  UOp *u = ctx_alloc(ctx, sizeof *u + nsrc * sizeof(UOp *) + arg.nints * sizeof(int64_t)); /* uop_node_bytes */
  if (!u) return NULL;
  memset(u, 0, sizeof *u);
  u->id = (uint32_t)ctx->nnodes;
  u->op = (uint16_t)op;
  u->dtype = dt;
  u->nsrc = (uint32_t)nsrc;
  u->nints = arg.nints;
  u->key = key;
  u->name = arg.name;
  if (nsrc) memcpy(u->src, src, nsrc * sizeof *src);
  int64_t *ints = (int64_t *)(u->src + nsrc);
  if (arg.nints) memcpy(ints, arg.ints, arg.nints * sizeof *ints);
  u->ints = ints;
  uop_compute_bounds(u);
  if (!uop_compute_shape(ctx, u)) return ctx_release(ctx, u, uop_node_bytes(u)), NULL;
  return u;
}

const UOp *uop_new(Ctx *ctx, Op op, DType dt, const UOp *const *src, size_t nsrc, Arg arg) {
  if (arg.name && !(arg.name = ctx_intern_string(ctx, arg.name, strlen(arg.name)))) goto nomem;
  if ((ctx->nnodes + 1) * 2 >= ctx->cap_table && !grow_table(ctx)) goto nomem;
  uint64_t key = node_key(op, dt, src, nsrc, arg);
  size_t mask = ctx->cap_table - 1, j = key & mask;
  for (; ctx->table[j].node; j = (j + 1) & mask)
    if (ctx->table[j].key == key && node_equal(ctx->table[j].node, op, dt, src, nsrc, arg))
      return ctx->table[j].node;
  if (ctx->nnodes == ctx->cap_nodes && !grow_nodes(ctx)) goto nomem;
  UOp *u = node_make(ctx, key, op, dt, src, nsrc, arg);
  if (!u) goto nomem;
  ctx->table[j] = (InternSlot){key, u};
  ctx->nodes[ctx->nnodes++] = u;
  return u;
nomem:
  ctx_set_error(ctx, "out of memory interning a %s node", op_table[op].name);
  return NULL;
}

const UOp *uop_replace_src(Ctx *ctx, const UOp *u, const UOp *const *src, size_t nsrc) {
  if (nsrc == u->nsrc && (nsrc == 0 || memcmp(src, u->src, nsrc * sizeof *src) == 0)) return u;
  Arg arg = {u->name, u->ints, u->nints};
  return uop_new(ctx, (Op)u->op, u->dtype, src, nsrc, arg);
}

/* The dtype an ALU node gets from its operands (compares give bool). */
static DType alu_dtype(Op op, const UOp *first_value) {
  DType d = first_value->dtype;
  return op_has(op, OPF_COMPARE) ? dt_with_scalar(d, UJ_BOOL) : d;
}

const UOp *uop_unary(Ctx *ctx, Op op, const UOp *a) {
  return uop_new(ctx, op, a->dtype, &a, 1, arg_none());
}

const UOp *uop_binary(Ctx *ctx, Op op, const UOp *a, const UOp *b) {
  const UOp *src[2] = {a, b};
  return uop_new(ctx, op, alu_dtype(op, a), src, 2, arg_none());
}

const UOp *uop_ternary(Ctx *ctx, Op op, const UOp *a, const UOp *b, const UOp *c) {
  const UOp *src[3] = {a, b, c};
  return uop_new(ctx, op, op == UJ_OP_WHERE ? b->dtype : a->dtype, src, 3, arg_none());
}

const UOp *uop_const_word(Ctx *ctx, DType dt, uint64_t word) {
  int64_t v = (int64_t)word_normalize((uj_scalar)dt.scalar, word);
  return uop_new(ctx, UJ_OP_CONST, dt, NULL, 0, (Arg){NULL, &v, 1});
}

const UOp *uop_const_int(Ctx *ctx, DType dt, int64_t value) {
  return uop_const_word(ctx, dt, word_from_int((uj_scalar)dt.scalar, value));
}

int uop_cmp_id(const void *a, const void *b) {
  uint32_t x = (*(const UOp *const *)a)->id, y = (*(const UOp *const *)b)->id;
  return (x > y) - (x < y);
}

/* Sources are made before their users, so ascending ids is a topological
 * order. The walk's tables are as long as the graph (nodemap.h). */
size_t uop_toposort(Ctx *ctx, const UOp *root, const UOp ***out) {
  NodeMap seen = nodemap_make(ctx);
  size_t n = 0, top = 0, cap = 0;
  const UOp **stack = NULL, **nodes = NULL;
  bool ok = nodemap_add(&seen, root) != NODEMAP_NONE;
  for (const UOp *u = root; ok; u = top ? stack[--top] : NULL) {
    if (seen.count + u->nsrc > cap) { /* stack and list hold at most the nodes seen */
      cap = 2 * (seen.count + u->nsrc) + 64;
      const UOp **s = realloc(stack, cap * sizeof *s), **l = s ? realloc(nodes, cap * sizeof *l) : NULL;
      if (s) stack = s;
      if (l) nodes = l;
      if (!l) break;
    }
    nodes[n++] = u;
    for (uint32_t i = 0; i < u->nsrc && ok; i++) {
      size_t before = seen.count;
      ok = nodemap_add(&seen, u->src[i]) != NODEMAP_NONE;
      if (ok && seen.count > before) stack[top++] = u->src[i];
    }
    if (!top) break;
  }
  if (ok && n == seen.count) {
    qsort(nodes, n, sizeof *nodes, uop_cmp_id);
    ctx->work += n;
  } else {
    ctx_set_error(ctx, "out of memory walking a graph");
    free(nodes), nodes = NULL, n = 0;
  }
  nodemap_free(&seen);
  free(stack);
  *out = nodes;
  return n;
}

size_t uop_graph_size(Ctx *ctx, const UOp *root) {
  const UOp **nodes;
  size_t n = uop_toposort(ctx, root, &nodes);
  free(nodes);
  return n;
}

/* ---- public API ---- */

uj_ctx *uj_ctx_new(void) { return calloc(1, sizeof(uj_ctx)); }

void uj_ctx_free(uj_ctx *ctx) {
  if (!ctx) return;
  for (int i = CTX_PART_COUNT; i-- > 0;)
    if (ctx->parts[i].free) ctx->parts[i].free(ctx->parts[i].state);
  ruleset_free(ctx->symbolic_rules);
  for (Arena *a = ctx->arena, *next; a; a = next) {
    next = a->next;
    free(a);
  }
  free(ctx->nodes);
  free(ctx->table);
  free(ctx->strings);
  free(ctx);
}

const char *uj_error(const uj_ctx *ctx) { return ctx->error; }
size_t uj_ctx_node_count(const uj_ctx *ctx) { return ctx->nnodes; }

const uj_uop *uj_uop_new(uj_ctx *ctx, uj_op op, uj_dtype dtype, const uj_uop *const *src,
                         size_t nsrc, uj_arg arg) {
  if ((unsigned)op >= UJ_OP_COUNT) {
    ctx_set_error(ctx, "unknown op %d", (int)op);
    return NULL;
  }
  for (size_t i = 0; i < nsrc; i++) {
    if (!src[i]) {
      ctx_set_error(ctx, "%s: source %zu is NULL", op_table[op].name, i);
      return NULL;
    }
  }
  if (!spec_check_shape(ctx, op, dtype, nsrc, arg)) return NULL;
  const UOp *u = uop_new(ctx, op, dtype, src, nsrc, arg);
  return u && spec_check_node(ctx, u) ? u : NULL;
}

const uj_uop *uj_const_int(uj_ctx *ctx, uj_dtype dtype, int64_t value) {
  if (!dt_is_int(dtype) && !dt_is_bool(dtype) && !dt_is_float(dtype)) {
    char b[32];
    ctx_set_error(ctx, "CONST of dtype %s", dtype_str(dtype, b, sizeof b));
    return NULL;
  }
  if (dt_is_float(dtype)) return uj_const_float(ctx, dtype, (double)value);
  return uj_uop_new(ctx, UJ_OP_CONST, dtype, NULL, 0,
                    (Arg){NULL, &(int64_t){(int64_t)word_from_int((uj_scalar)dtype.scalar, value)}, 1});
}

/* A float value in any dtype, converted as CAST converts a float64. */
const uj_uop *uj_const_float(uj_ctx *ctx, uj_dtype dtype, double value) {
  if (!dt_is_float(dtype) && !dt_is_int(dtype) && !dt_is_bool(dtype)) {
    char b[32];
    ctx_set_error(ctx, "CONST of dtype %s", dtype_str(dtype, b, sizeof b));
    return NULL;
  }
  uint64_t in = word_from_double(UJ_FLOAT64, value);
  int64_t w = (int64_t)alu_eval(UJ_OP_CAST, (uj_scalar)dtype.scalar, UJ_FLOAT64, &in);
  return uj_uop_new(ctx, UJ_OP_CONST, dtype, NULL, 0, (Arg){NULL, &w, 1});
}

const uj_uop *uj_const_bool(uj_ctx *ctx, bool value) {
  return uj_const_int(ctx, dt_scalar(UJ_BOOL), value);
}

const uj_uop *uj_var(uj_ctx *ctx, uj_dtype dtype, const char *name, int64_t min, int64_t max) {
  int64_t range[2] = {min, max};
  return uj_uop_new(ctx, UJ_OP_DEFINE_VAR, dtype, NULL, 0, (Arg){name, range, 2});
}

uj_op uj_uop_op(const uj_uop *u) { return (uj_op)u->op; }
uj_dtype uj_uop_dtype(const uj_uop *u) { return u->dtype; }
size_t uj_uop_nsrc(const uj_uop *u) { return u->nsrc; }
const uj_uop *uj_uop_src(const uj_uop *u, size_t i) { return i < u->nsrc ? u->src[i] : NULL; }
uj_arg uj_uop_arg(const uj_uop *u) { return (uj_arg){u->name, u->ints, u->nints}; }
uint32_t uj_uop_id(const uj_uop *u) { return u->id; }

bool uj_uop_bounds(const uj_uop *u, int64_t *vmin, int64_t *vmax) {
  if (!u->bounded) return false;
  *vmin = u->vmin;
  *vmax = u->vmax;
  return true;
}
