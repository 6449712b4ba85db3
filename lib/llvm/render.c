/* render.c — the structure of a rendered kernel (render.h): the function
 * and its parameters, loops, memory access, and the walk that emits every
 * node once where it is valid.
 *
 * Effects (SINK, END, STORE) are emitted from the root, left to right, the
 * way the evaluator runs them; an END opens a loop (header with a phi, body,
 * latch, exit) or, on a GPU, an if-guarded grid index. A value is emitted
 * in the current block on first use and reused while the loop it was
 * emitted in is open; when that loop closes it is forgotten, and a later
 * use emits it again (LLVM's LICM and GVN hoist and merge the copies). So
 * every use is dominated by its definition, with no analysis of our own. */
#include <assert.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <llvm-c/Analysis.h>

#include "llvm/render.h"
#include "uop/alu.h"
#include "uop/nodemap.h"

enum { MAX_LOOPS = 64, MAX_GROUP = 32, MAX_UNROLL = 64 };

typedef struct Loop {
  const UOp *range;
  LLVMBasicBlockRef pre, header, exit;
  LLVMValueRef phi;   /* NULL for a grid index */
  LLVMValueRef start; /* the phi's first value: 0, or a part's start */
  LLVMValueRef acc[MAX_GROUP]; /* the accumulator phis of the REDUCEs it runs */
  unsigned naccs;
  uint64_t serial;
} Loop;

typedef struct Frame {
  const UOp *u;
  uint32_t next;
} Frame;

typedef struct State {
  Renderer r;
  const KernelSig *sig;
  LLVMValueRef fn;
  LLVMValueRef *params, *vars; /* the function's arguments by slot / var index */
  NodeMap num; /* the kernel's nodes and its rescales', numbered (nodemap.h) */
  /* by number (ix): value, gate (pointers), loop depth and loop serial it
   * was emitted in, the walk that pushed it, emitted as an effect at depth 0 */
  LLVMValueRef *val, *gate;
  uint32_t *lvl;
  uint64_t *ser, *pushed, walks, walk_id; /* walk_id: the walk in progress */
  unsigned char *done0, *busy; /* busy: a REDUCE whose group is being emitted */
  Frame *walk, *steps;
  size_t walk_top, walk_cap; /* walks nest (REDUCE): each pushes above the last */
  Loop loops[MAX_LOOPS];
  unsigned depth;
  uint64_t serials;
  const UOp *parallel;        /* CPU: the RANGE split in parts, or NULL */
  LLVMValueRef part, nparts;  /* CPU: the body's last two arguments (i64) */
  /* the kernel's REDUCEs over RANGEs that may share a loop with another
   * (no REDUCE in their value), each with the RANGEs its value uses
   * beyond its own: outer[first[i] .. first[i + 1]) */
  const UOp **reduces, **outer;
  size_t nreduces, *first;
  const OnlineMax *online; /* the kernel's running maxima (codegen/online.h) */
  size_t nonline;
  const UOp ***rescale_nodes; /* per online max: its rescale's nodes */
  size_t *nrescale_nodes;
} State;

/* u's number: the tables are as long as the kernel, not the context. */
static uint32_t ix(const State *s, const UOp *u) {
  uint32_t k = nodemap_find(&s->num, u);
  assert(k != NODEMAP_NONE);
  return k;
}

static uint64_t serial_at(const State *s, uint32_t lvl) { return lvl ? s->loops[lvl - 1].serial : 0; }

static bool valid(const State *s, const UOp *u) {
  uint32_t l = s->lvl[ix(s, u)];
  return s->val[ix(s, u)] && l <= s->depth && s->ser[ix(s, u)] == serial_at(s, l);
}

static void set_value(State *s, const UOp *u, LLVMValueRef v, LLVMValueRef gate) {
  s->val[ix(s, u)] = v, s->gate[ix(s, u)] = gate;
  s->lvl[ix(s, u)] = s->depth, s->ser[ix(s, u)] = serial_at(s, s->depth);
}

static unsigned elem_align(DType d) { return d.scalar == UJ_BOOL ? 1 : dt_bits(d) / 8; }

static bool fail(State *s, const UOp *u, const char *msg) {
  ctx_set_error(s->r.ctx, "render: %s: %s", op_table[u->op].name, msg);
  return false;
}

/* ---- memory ---- */

/* INDEX(ptr, idx[, gate]): a GEP of idx elements; gates AND up. An element
 * of N lanes is N scalars packed (docs/semantics.md), so the GEP steps in
 * scalars, idx * N: LLVM's <3 x i32> would take 16 bytes, not 12. */
static void emit_index(State *s, const UOp *u) {
  LLVMBuilderRef B = s->r.b;
  LLVMValueRef idx = s->val[ix(s, u->src[1])];
  LLVMTypeRef i64 = LLVMInt64TypeInContext(s->r.lc);
  bool sign = dt_is_signed(u->src[1]->dtype);
  DType elem = dt_base(u->dtype);
  if (dt_bits(u->src[1]->dtype) < 64) idx = sign ? LLVMBuildSExt(B, idx, i64, "") : LLVMBuildZExt(B, idx, i64, "");
  if (elem.lanes > 1) idx = LLVMBuildMul(B, idx, LLVMConstInt(i64, elem.lanes, 0), "");
  LLVMTypeRef scalar = render_mem_type(&s->r, dt_lane(elem));
  LLVMValueRef p;
  const UOp *i = u->src[1];
  if (i->op == UJ_OP_ADD && i->src[1]->op == UJ_OP_CONST) {
    /* e + k (codegen/offsets.h): the constant as a GEP of its own, last;
     * e alone may point outside the buffer, so neither is inbounds */
    LLVMValueRef e = s->val[ix(s, i->src[0])];
    int64_t k = (int64_t)uop_const_value(i->src[1]) * elem.lanes;
    if (dt_bits(i->dtype) < 64) e = sign ? LLVMBuildSExt(B, e, i64, "") : LLVMBuildZExt(B, e, i64, "");
    if (elem.lanes > 1) e = LLVMBuildMul(B, e, LLVMConstInt(i64, elem.lanes, 0), "");
    LLVMValueRef kv = LLVMConstInt(i64, (unsigned long long)k, 1);
    p = LLVMBuildGEPWithNoWrapFlags(B, scalar, s->val[ix(s, u->src[0])], &e, 1, "", LLVMGEPFlagNUSW);
    p = LLVMBuildGEPWithNoWrapFlags(B, scalar, p, &kv, 1, "", LLVMGEPFlagNUSW);
  } else {
    p = LLVMBuildInBoundsGEP2(B, scalar, s->val[ix(s, u->src[0])], &idx, 1, "");
  }
  LLVMValueRef g = s->gate[ix(s, u->src[0])];
  if (u->nsrc == 3) g = g ? LLVMBuildAnd(B, g, s->val[ix(s, u->src[2])], "") : s->val[ix(s, u->src[2])];
  set_value(s, u, p, g);
}

static LLVMValueRef load_plain(State *s, DType d, LLVMValueRef p) {
  LLVMValueRef v = LLVMBuildLoad2(s->r.b, render_mem_type(&s->r, d), p, "");
  LLVMSetAlignment(v, elem_align(d));
  if (d.scalar == UJ_BOOL) v = LLVMBuildICmp(s->r.b, LLVMIntNE, v, LLVMConstNull(LLVMTypeOf(v)), "");
  return v;
}

/* LOAD(ptr[, alt]): behind a branch when the pointer has a gate. */
static void emit_load(State *s, const UOp *u) {
  LLVMValueRef p = s->val[ix(s, u->src[0])], g = s->gate[ix(s, u->src[0])];
  if (!g) return set_value(s, u, load_plain(s, u->dtype, p), NULL);
  LLVMBuilderRef B = s->r.b;
  LLVMValueRef alt = u->nsrc == 2 ? s->val[ix(s, u->src[1])] : LLVMConstNull(render_type(&s->r, u->dtype));
  LLVMBasicBlockRef from = LLVMGetInsertBlock(B);
  LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "load");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "loaded");
  LLVMBuildCondBr(B, g, then, join);
  LLVMPositionBuilderAtEnd(B, then);
  LLVMValueRef v = load_plain(s, u->dtype, p);
  LLVMBasicBlockRef then_end = LLVMGetInsertBlock(B);
  LLVMBuildBr(B, join);
  LLVMPositionBuilderAtEnd(B, join);
  LLVMValueRef phi = LLVMBuildPhi(B, render_type(&s->r, u->dtype), "");
  LLVMValueRef vals[2] = {v, alt};
  LLVMBasicBlockRef blocks[2] = {then_end, from};
  LLVMAddIncoming(phi, vals, blocks, 2);
  set_value(s, u, phi, NULL);
}

static void emit_store(State *s, const UOp *u) {
  LLVMBuilderRef B = s->r.b;
  LLVMValueRef p = s->val[ix(s, u->src[0])], g = s->gate[ix(s, u->src[0])], v = s->val[ix(s, u->src[1])];
  DType d = u->src[1]->dtype;
  LLVMBasicBlockRef join = NULL;
  if (d.scalar == UJ_BOOL) v = LLVMBuildZExt(B, v, render_mem_type(&s->r, d), "");
  if (g) {
    LLVMBasicBlockRef then = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "store");
    join = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "stored");
    LLVMBuildCondBr(B, g, then, join);
    LLVMPositionBuilderAtEnd(B, then);
  }
  LLVMSetAlignment(LLVMBuildStore(B, v, p), elem_align(d));
  if (join) {
    LLVMBuildBr(B, join);
    LLVMPositionBuilderAtEnd(B, join);
  }
}

/* ---- values ---- */

static LLVMValueRef lane_index(State *s, int64_t lane) {
  return LLVMConstInt(LLVMInt32TypeInContext(s->r.lc), (unsigned long long)lane, 0);
}

/* VECTORIZE: the lanes inserted one by one (LLVM folds constant ones). */
static LLVMValueRef emit_vectorize(State *s, const UOp *u) {
  LLVMValueRef v = LLVMGetPoison(render_type(&s->r, u->dtype));
  for (uint32_t i = 0; i < u->nsrc; i++)
    v = LLVMBuildInsertElement(s->r.b, v, s->val[ix(s, u->src[i])], lane_index(s, i), "");
  return v;
}

static bool emit_value(State *s, const UOp *u);
static bool loop_open(State *s, const UOp *user, const UOp *range, bool grid);
static void loop_close(State *s, LLVMValueRef *acc_next);

/* Whether x's outer ranges (REDUCE i's) are all open here. */
static bool ranges_open(const State *s, size_t i) {
  for (size_t k = s->first[i]; k < s->first[i + 1]; k++) {
    bool open = false;
    for (unsigned d = 0; d < s->depth && !open; d++) open = s->loops[d].range == s->outer[k];
    if (!open) return false;
  }
  return true;
}

/* u and the REDUCEs that run in its loops: those over the same RANGEs
 * (in order) not yet computed here, whose values hold no REDUCE and use
 * only RANGEs open here. A register-blocked GEMM's rows are such REDUCEs
 * (docs/opt.md): one loop over k feeds all their accumulators. */
static unsigned reduce_group(const State *s, const UOp *u, const UOp **group) {
  unsigned n = 0;
  group[n++] = u;
  for (size_t i = 0; i < s->nreduces && n < MAX_GROUP; i++) {
    const UOp *v = s->reduces[i];
    bool same = v != u && v->nsrc == u->nsrc && !valid(s, v) && !s->busy[ix(s, v)];
    for (uint32_t k = 1; same && k < u->nsrc; k++) same = v->src[k] == u->src[k];
    if (same && ranges_open(s, i)) group[n++] = v;
  }
  return n;
}

/* The REDUCEs in x's value, at any depth, that bind one of u's RANGEs
 * again (they shadow it: docs/semantics.md), added to found[0 .. *n)
 * once each; false when out of memory. */
static bool find_shadows(State *s, const UOp *x, const UOp *u, const UOp **found, unsigned *n, unsigned cap) {
  const UOp **nodes = NULL;
  size_t m = uop_toposort(s->r.ctx, x->src[0], &nodes);
  for (size_t i = 0; i < m; i++) {
    const UOp *v = nodes[i];
    bool shadow = false;
    for (uint32_t j = 1; v->op == UJ_OP_REDUCE && j < v->nsrc && !shadow; j++)
      for (uint32_t k = 1; k < u->nsrc && !shadow; k++) shadow = v->src[j] == u->src[k];
    for (unsigned k = 0; shadow && k < *n; k++) shadow = found[k] != v;
    if (shadow && *n < cap) found[(*n)++] = v;
  }
  free(nodes);
  return m > 0;
}

/* Scalar x in every lane of vector type d. */
static LLVMValueRef splat(State *s, DType d, LLVMValueRef x) {
  LLVMValueRef v = LLVMBuildInsertElement(s->r.b, LLVMGetPoison(render_type(&s->r, d)), x, lane_index(s, 0), "");
  LLVMTypeRef mask = LLVMVectorType(LLVMInt32TypeInContext(s->r.lc), d.lanes);
  return LLVMBuildShuffleVector(s->r.b, v, LLVMGetPoison(LLVMTypeOf(v)), LLVMConstNull(mask), "");
}

static const OnlineMax *online_of(const State *s, const UOp *u, size_t *at) {
  for (size_t i = 0; i < s->nonline; i++)
    if (s->online[i].max == u) return *at = i, &s->online[i];
  return NULL;
}

/* exp2((old - now) * c) of online max i, 1 where old == now (both -inf
 * at the start of a masked row); its graph emitted afresh each time. */
static LLVMValueRef emit_rescale(State *s, size_t i, LLVMValueRef old, LLVMValueRef now) {
  const OnlineMax *o = &s->online[i];
  for (size_t k = 0; k < s->nrescale_nodes[i]; k++) s->val[ix(s, s->rescale_nodes[i][k])] = NULL;
  set_value(s, o->old, old, NULL), set_value(s, o->now, now, NULL);
  if (!emit_value(s, o->rescale)) return NULL;
  LLVMValueRef same = LLVMBuildFCmp(s->r.b, LLVMRealOEQ, old, now, "");
  LLVMValueRef one = render_const(&s->r, o->max->dtype, word_from_double((uj_scalar)o->max->dtype.scalar, 1.0));
  return LLVMBuildSelect(s->r.b, same, one, s->val[ix(s, o->rescale)], "");
}

/* Whether every RANGE of REDUCE u has a bound above 0 (its loops ran);
 * the bounds were emitted before the loops. */
static LLVMValueRef loops_ran(State *s, const UOp *u) {
  LLVMValueRef ran = LLVMConstInt(LLVMInt1TypeInContext(s->r.lc), 1, 0);
  for (uint32_t k = 1; k < u->nsrc; k++) {
    const UOp *r = u->src[k];
    LLVMValueRef b = s->val[ix(s, r->src[0])];
    LLVMValueRef more = LLVMBuildICmp(s->r.b, dt_is_signed(r->dtype) ? LLVMIntSGT : LLVMIntNE, b, LLVMConstNull(LLVMTypeOf(b)), "");
    ran = LLVMBuildAnd(s->r.b, ran, more, "");
  }
  return ran;
}

/* REDUCE(v, r0, r1, ...): counted loops over r0 (outermost) .. rn, an
 * accumulator phi in each header; acc = op(acc, v) in the innermost body,
 * in loop order (the evaluator's order, so float sums agree bit for bit).
 * An innermost rn of kind `unroll` (constant bound U) is no loop: the
 * body holds U copies of the step, rn = 0 .. U-1, in that order.
 * The REDUCEs of its group (reduce_group) run in the same loops, each
 * with its own accumulators. A REDUCE a value of the group reads that
 * binds the group's RANGEs again (a shadow) is computed before the loops;
 * an online max (codegen/online.h) instead runs in them first, as the
 * maximum so far, and the accumulators of the REDUCEs that read it are
 * scaled by its rescale before they add their values. */
static bool emit_group(State *s, const UOp *u, const UOp **group, unsigned ng, unsigned n, unsigned first);
static bool group_close(State *s, const UOp *u, const UOp **group, unsigned ng, unsigned first, LLVMValueRef *next,
                        const int *reads_max);

static bool emit_reduce(State *s, const UOp *u) {
  const UOp *group[MAX_GROUP];
  unsigned ng = reduce_group(s, u, group), n = u->nsrc - 1, first = s->depth;
  for (unsigned g = 0; g < ng; g++) s->busy[ix(s, group[g])] = 1; /* the shadows computed first do not take them */
  bool ok = emit_group(s, u, group, ng, n, first);
  for (unsigned g = 0; g < ng; g++) s->busy[ix(s, group[g])] = 0;
  return ok;
}

/* One step of the group: each member's accumulator advanced by its value
 * (maxima so far first: the others read them), next[] the new ones. */
static bool group_step(State *s, const UOp **group, unsigned ng, const Op *op, const int *online, const int *reads_max,
                       LLVMValueRef *acc, LLVMValueRef *next, LLVMValueRef *scale, LLVMValueRef *empty) {
  for (unsigned g = 0; g < ng; g++) { /* maxima so far first: the others read them */
    if (online[g] < 0) continue;
    if (!emit_value(s, group[g]->src[0])) return false;
    next[g] = render_accumulate(&s->r, group[g], op[g], acc[g], s->val[ix(s, group[g]->src[0])], NULL);
    scale[g] = emit_rescale(s, (size_t)online[g], acc[g], next[g]);
    if (!scale[g]) return false;
    empty[g] = LLVMBuildFCmp(s->r.b, LLVMRealOEQ, next[g], render_const(&s->r, group[g]->dtype,
                             word_from_double((uj_scalar)group[g]->dtype.scalar, -INFINITY)), "");
    set_value(s, group[g], next[g], NULL);
  }
  for (unsigned g = 0; g < ng; g++) {
    if (online[g] >= 0) continue;
    const UOp *x = group[g]->src[0];
    if (!emit_value(s, x)) return false;
    LLVMValueRef a = acc[g];
    if (reads_max[g] >= 0) { /* scaled to the new maximum; while it is -inf, every value read is -inf: none adds */
      LLVMValueRef f = scale[reads_max[g]];
      a = LLVMBuildFMul(s->r.b, a, group[g]->dtype.lanes > 1 ? splat(s, group[g]->dtype, f) : f, "");
    }
    bool product = reduce_fused_product(group[g]) != NULL; /* fused (docs/semantics.md) */
    LLVMValueRef ab[2] = {product ? s->val[ix(s, x->src[0])] : NULL, product ? s->val[ix(s, x->src[1])] : NULL};
    next[g] = render_accumulate(&s->r, group[g], op[g], a, s->val[ix(s, x)], product ? ab : NULL);
    if (reads_max[g] >= 0) next[g] = LLVMBuildSelect(s->r.b, empty[reads_max[g]], acc[g], next[g], "");
  }
  return true;
}

/* The innermost RANGE of REDUCE u when it is an `unroll` RANGE with a
 * constant bound above 0 (opt/unroll.c): its steps are emitted as that
 * many copies of the step, not a loop. */
static const UOp *unrolled_range(const UOp *u) {
  const UOp *r = u->nsrc > 1 ? u->src[u->nsrc - 1] : NULL, *b = r ? r->src[0] : NULL;
  return r && range_kind(r) == AXIS_UNROLL && b->op == UJ_OP_CONST && b->bounded && b->vmin > 0 && b->vmin <= MAX_UNROLL ? r : NULL;
}

/* A copy of an unrolled step: a scope like a loop's (the values emitted
 * in it are forgotten when it ends), its RANGE the constant c. */
static void copy_open(State *s, const UOp *range, int64_t c) {
  s->loops[s->depth] = (Loop){.range = range, .pre = LLVMGetInsertBlock(s->r.b), .serial = ++s->serials};
  s->depth++;
  set_value(s, range, LLVMConstInt(render_type(&s->r, range->dtype), (unsigned long long)c, 1), NULL);
}

static bool emit_group(State *s, const UOp *u, const UOp **group, unsigned ng, unsigned n, unsigned first) {
  int online[MAX_GROUP]; /* per member: the online table's index when it runs as a maximum so far, else -1 */
  int reads_max[MAX_GROUP]; /* per other member: the maximum so far it reads (its index), or -1 */
  const UOp *reads_online[MAX_GROUP] = {NULL};
  bool drop[MAX_GROUP] = {false};
  for (unsigned g = 0; g < ng; g++) { /* a shadow not online: computed first, unless it is u */
    const UOp *reads[MAX_GROUP];
    unsigned nreads = 0;
    if (!find_shadows(s, group[g], u, reads, &nreads, MAX_GROUP)) return fail(s, u, "out of memory");
    for (unsigned k = 0; k < nreads; k++) {
      size_t at;
      unsigned h = 0;
      while (h < ng && group[h] != reads[k]) h++;
      if (h < ng && online_of(s, reads[k], &at)) {
        reads_online[g] = reads[k];
        continue;
      }
      if (reads[k] == u) drop[g] = true; /* g runs after u, on its own */
      else if (h < ng) drop[h] = true;
      if (reads[k] != u && !emit_value(s, reads[k])) return false;
    }
  }
  unsigned kept = 0;
  for (unsigned g = 0; g < ng; g++)
    if (!drop[g]) group[kept] = group[g], reads_online[kept++] = reads_online[g];
  ng = kept;
  for (unsigned g = 0; g < ng; g++) {
    size_t at;
    online[g] = online_of(s, group[g], &at) ? (int)at : -1;
    reads_max[g] = -1;
    for (unsigned h = 0; h < ng && online[g] < 0; h++)
      if (group[h] == reads_online[g]) reads_max[g] = (int)h;
  }
  Op op[MAX_GROUP];
  LLVMValueRef acc[MAX_GROUP], next[MAX_GROUP], scale[MAX_GROUP];
  for (unsigned g = 0; g < ng; g++) {
    op_from_name(group[g]->name, strlen(group[g]->name), &op[g]);
    DType d = group[g]->dtype;
    acc[g] = render_const(&s->r, d, alu_identity(op[g], (uj_scalar)d.scalar));
  }
  const UOp *unrolled = unrolled_range(u);
  if (unrolled) {
    if (s->depth == MAX_LOOPS) return fail(s, u, "loops nest deeper than 64");
    if (!emit_value(s, u->src[n]->src[0])) return false; /* its bound: loops_ran reads it */
    n--;
  }
  for (unsigned k = 0; k < n; k++) {
    if (!loop_open(s, u, u->src[1 + k], false)) return false;
    Loop *L = &s->loops[s->depth - 1];
    LLVMBasicBlockRef body = LLVMGetInsertBlock(s->r.b);
    LLVMPositionBuilderBefore(s->r.b, LLVMGetFirstInstruction(L->header));
    for (unsigned g = 0; g < ng; g++) {
      L->acc[g] = LLVMBuildPhi(s->r.b, render_type(&s->r, group[g]->dtype), "acc");
      LLVMAddIncoming(L->acc[g], &acc[g], &L->pre, 1);
      acc[g] = L->acc[g];
    }
    L->naccs = ng;
    LLVMPositionBuilderAtEnd(s->r.b, body);
  }
  LLVMValueRef empty[MAX_GROUP]; /* per maximum so far: it is -inf after this step */
  if (!unrolled)
    return group_step(s, group, ng, op, online, reads_max, acc, next, scale, empty) &&
           group_close(s, u, group, ng, first, next, reads_max);
  for (int64_t c = 0; c < unrolled->src[0]->vmin; c++) { /* the innermost RANGE's steps, one copy each, in order */
    copy_open(s, unrolled, c);
    bool ok = group_step(s, group, ng, op, online, reads_max, acc, next, scale, empty);
    s->depth--; /* the copy's values are forgotten: the next one computes its own */
    if (!ok) return false;
    memcpy(acc, next, ng * sizeof *acc);
  }
  return group_close(s, u, group, ng, first, next, reads_max);
}

/* Closes the group's loops, their accumulators' exit values in next; the
 * NaN of a max still -inf; the group's values set. */
static bool group_close(State *s, const UOp *u, const UOp **group, unsigned ng, unsigned first, LLVMValueRef *next,
                        const int *reads_max) {
  while (s->depth > first) {
    Loop *L = &s->loops[s->depth - 1];
    LLVMValueRef exit_value[MAX_GROUP]; /* the header's phis, at the exit */
    memcpy(exit_value, L->acc, ng * sizeof *exit_value);
    loop_close(s, next);
    memcpy(next, exit_value, ng * sizeof *next);
  }
  /* a maximum still -inf after steps ran: the evaluator read x - M = -inf - -inf, NaN, at every step */
  LLVMValueRef ran = NULL;
  for (unsigned g = 0; g < ng; g++) {
    if (reads_max[g] < 0) continue;
    if (!ran) ran = loops_ran(s, u);
    LLVMValueRef m = next[reads_max[g]], ninf = render_const(&s->r, group[reads_max[g]]->dtype,
                     word_from_double((uj_scalar)group[g]->dtype.scalar, -INFINITY));
    LLVMValueRef nan = render_const(&s->r, group[g]->dtype, word_from_double((uj_scalar)group[g]->dtype.scalar, NAN));
    LLVMValueRef none = LLVMBuildAnd(s->r.b, ran, LLVMBuildFCmp(s->r.b, LLVMRealOEQ, m, ninf, ""), "");
    next[g] = LLVMBuildSelect(s->r.b, none, nan, next[g], "");
  }
  for (unsigned g = 0; g < ng; g++) set_value(s, group[g], next[g], NULL);
  return true;
}

static bool emit_node(State *s, const UOp *u) {
  switch (u->op) {
  case UJ_OP_CONST: set_value(s, u, render_const(&s->r, u->dtype, uop_const_value(u)), NULL); return true;
  case UJ_OP_DEFINE_VAR: set_value(s, u, s->vars[kernel_sig_var(s->sig, u->name)], NULL); return true;
  case UJ_OP_PARAM: set_value(s, u, s->params[u->ints[0]], NULL); return true;
  case UJ_OP_INDEX: emit_index(s, u); return true;
  case UJ_OP_LOAD: emit_load(s, u); return true;
  case UJ_OP_RANGE: return fail(s, u, "RANGE is used outside its END");
  case UJ_OP_ALLOC: return fail(s, u, "an ALLOC the kernel's entry did not make"); /* emit_allocs */
  case UJ_OP_VECTORIZE: set_value(s, u, emit_vectorize(s, u), NULL); return true;
  case UJ_OP_REDUCE:
    if (u->nsrc == 1) return fail(s, u, "a tensor REDUCE (over axes) reaches the renderer: kernels reduce over RANGEs");
    return emit_reduce(s, u);
  case UJ_OP_GEP:
    set_value(s, u, LLVMBuildExtractElement(s->r.b, s->val[ix(s, u->src[0])], lane_index(s, u->ints[0]), ""), NULL);
    return true;
  default: break;
  }
  if (!op_has((Op)u->op, OPF_ALU)) return fail(s, u, "not a value op the renderer knows");
  LLVMValueRef src[3];
  for (uint32_t i = 0; i < u->nsrc && i < 3; i++) src[i] = s->val[ix(s, u->src[i])];
  LLVMValueRef v = render_alu(&s->r, u, src);
  if (v) set_value(s, u, v, NULL);
  return v != NULL;
}

static bool needed(const State *s, const UOp *u) {
  return !op_has(u->op, OPF_EFFECT) && !valid(s, u) && s->pushed[ix(s, u)] != s->walk_id;
}

static bool walk_push(State *s, const UOp *u) {
  if (s->walk_top == s->walk_cap) {
    size_t cap = 2 * s->walk_cap + 64;
    Frame *w = realloc(s->walk, cap * sizeof *w);
    if (!w) return ctx_set_error(s->r.ctx, "render: out of memory"), false;
    s->walk = w, s->walk_cap = cap;
  }
  s->walk[s->walk_top++] = (Frame){u, 0};
  s->pushed[ix(s, u)] = s->walk_id;
  return true;
}

/* Emits value u after the sources it needs; iterative (any depth). A
 * REDUCE's sources are its own business (emit_reduce), which walks again,
 * nested, above this walk on the same stack. */
static bool emit_value(State *s, const UOp *u) {
  uint64_t outer = s->walk_id;
  size_t base = s->walk_top;
  bool ok = true;
  s->walk_id = ++s->walks;
  if (needed(s, u)) ok = walk_push(s, u);
  while (ok && s->walk_top > base) {
    Frame *f = &s->walk[s->walk_top - 1];
    if (f->u->op != UJ_OP_REDUCE && f->next < f->u->nsrc) {
      const UOp *src = f->u->src[f->next++];
      if (needed(s, src)) ok = walk_push(s, src);
      continue;
    }
    const UOp *v = f->u;
    s->walk_top--;
    ok = emit_node(s, v);
  }
  s->walk_top = base, s->walk_id = outer;
  return ok;
}

/* ---- loops ---- */

/* The part of range this call runs: [k*c, min((k+1)*c, bound)) for part k
 * of n, c = ceil(bound / n), in int64, then in the range's type. */
static void part_bounds(State *s, const UOp *range, LLVMValueRef *start, LLVMValueRef *bound) {
  LLVMBuilderRef B = s->r.b;
  LLVMTypeRef i64 = LLVMInt64TypeInContext(s->r.lc), t = LLVMTypeOf(*bound);
  bool sign = dt_is_signed(range->dtype);
  LLVMValueRef n = *bound, zero = LLVMConstInt(i64, 0, 0), one = LLVMConstInt(i64, 1, 0);
  if (dt_bits(range->dtype) < 64) n = sign ? LLVMBuildSExt(B, n, i64, "") : LLVMBuildZExt(B, n, i64, "");
  n = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntSLT, n, zero, ""), zero, n, ""); /* no trips below 0 */
  LLVMValueRef chunk = LLVMBuildUDiv(B, LLVMBuildSub(B, LLVMBuildAdd(B, n, s->nparts, ""), one, ""), s->nparts, "");
  LLVMValueRef lo = LLVMBuildMul(B, chunk, s->part, ""), hi = LLVMBuildAdd(B, lo, chunk, "");
  lo = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, lo, n, ""), lo, n, "");
  hi = LLVMBuildSelect(B, LLVMBuildICmp(B, LLVMIntULT, hi, n, ""), hi, n, "");
  *start = dt_bits(range->dtype) < 64 ? LLVMBuildTrunc(B, lo, t, "") : lo;
  *bound = dt_bits(range->dtype) < 64 ? LLVMBuildTrunc(B, hi, t, "") : hi;
}

/* Opens the loop of range (for `user`, an END or REDUCE, in messages): a
 * grid index when grid and the target has one, else a counted loop. */
static bool loop_open(State *s, const UOp *user, const UOp *range, bool grid) {
  for (unsigned i = 0; i < s->depth; i++)
    if (s->loops[i].range == range) return fail(s, user, "its RANGE is already open (inside its own loop)");
  if (s->depth == MAX_LOOPS) return fail(s, user, "loops nest deeper than 64");
  if (!emit_value(s, range->src[0])) return false;
  LLVMBuilderRef B = s->r.b;
  LLVMValueRef bound = s->val[ix(s, range->src[0])];
  LLVMTypeRef t = render_type(&s->r, range->dtype);
  Loop *L = &s->loops[s->depth];
  *L = (Loop){.range = range, .pre = LLVMGetInsertBlock(B), .serial = ++s->serials};
  LLVMBasicBlockRef body = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "body");
  L->exit = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "exit");
  LLVMValueRef i = NULL, more = NULL;
  if (grid && !grid_open(&s->r, &s->sig->grid, range, bound, &i, &more)) return false;
  if (!i) {
    L->start = LLVMConstNull(t);
    if (range == s->parallel) part_bounds(s, range, &L->start, &bound);
    L->header = LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "loop");
    LLVMBuildBr(B, L->header);
    LLVMPositionBuilderAtEnd(B, L->header);
    i = L->phi = LLVMBuildPhi(B, t, "i");
    more = LLVMBuildICmp(B, dt_is_signed(range->dtype) ? LLVMIntSLT : LLVMIntULT, i, bound, "");
  }
  LLVMBuildCondBr(B, more, body, L->exit);
  LLVMPositionBuilderAtEnd(B, body);
  s->depth++;
  set_value(s, range, i, NULL);
  return true;
}

/* Closes the innermost loop; acc_next: its accumulators' values at the
 * latch (NULL when it has none). */
static void loop_close(State *s, LLVMValueRef *acc_next) {
  LLVMBuilderRef B = s->r.b;
  Loop *L = &s->loops[--s->depth];
  if (L->phi) {
    LLVMValueRef next = LLVMBuildAdd(B, L->phi, LLVMConstInt(LLVMTypeOf(L->phi), 1, 0), "");
    LLVMSetNUW(next, 1); /* i < bound: i + 1 does not wrap */
    if (dt_is_signed(L->range->dtype)) LLVMSetNSW(next, 1);
    LLVMValueRef vals[2] = {L->start, next};
    LLVMBasicBlockRef blocks[2] = {L->pre, LLVMGetInsertBlock(B)};
    LLVMBuildBr(B, L->header);
    LLVMAddIncoming(L->phi, vals, blocks, 2);
    for (unsigned g = 0; g < L->naccs; g++) LLVMAddIncoming(L->acc[g], &acc_next[g], &blocks[1], 1);
  } else {
    LLVMBuildBr(B, L->exit);
  }
  LLVMPositionBuilderAtEnd(B, L->exit);
}

/* ---- effects ---- */

static bool effect_start(State *s, const UOp *u, size_t *top) {
  if (s->depth == 0) { /* outside loops an effect runs once */
    if (s->done0[ix(s, u)]) return true;
    s->done0[ix(s, u)] = 1;
  }
  if (u->op == UJ_OP_SINK || u->op == UJ_OP_BARRIER) {
    s->steps[(*top)++] = (Frame){u, 0};
    return true;
  }
  if (u->op == UJ_OP_END) {
    if (!loop_open(s, u, u->src[0], true)) return false;
    s->steps[(*top)++] = (Frame){u, 1};
    return true;
  }
  if (!emit_value(s, u->src[0]) || !emit_value(s, u->src[1])) return false;
  emit_store(s, u);
  return true;
}

/* A BARRIER, its effects emitted: the target's barrier inside a `local`
 * RANGE (render_grid.c), nothing outside one. After it every value
 * emitted inside the workgroup is forgotten, the loops' own indices
 * excepted, so a LOAD of local memory is emitted again: values after a
 * BARRIER are computed after it (docs/semantics.md, "Workgroups"); LLVM
 * merges the pure ones again. */
static bool emit_barrier(State *s, const UOp *u) {
  unsigned first = s->depth;
  for (unsigned i = s->depth; i-- > 0;)
    if (range_kind(s->loops[i].range) == AXIS_LOCAL) first = i;
  if (first < s->depth && !s->r.h->barrier)
    return fail(s, u, "a BARRIER in a workgroup (inside a `local` RANGE) needs a target with workgroups");
  if (!grid_barrier(&s->r, first < s->depth)) return false;
  for (unsigned i = first; i < s->depth; i++) {
    uint32_t r = ix(s, s->loops[i].range);
    bool index_here = valid(s, s->loops[i].range) && s->lvl[r] == i + 1;
    s->loops[i].serial = ++s->serials;
    if (index_here) s->ser[r] = s->loops[i].serial;
  }
  return true;
}

static bool emit_effects(State *s, const UOp *root) {
  size_t top = 0;
  if (!effect_start(s, root, &top)) return false;
  while (top > 0) {
    Frame *f = &s->steps[top - 1];
    if (f->next < f->u->nsrc) {
      if (!effect_start(s, f->u->src[f->next++], &top)) return false;
      continue;
    }
    if (f->u->op == UJ_OP_END) loop_close(s, NULL);
    if (f->u->op == UJ_OP_BARRIER && !emit_barrier(s, f->u)) return false;
    top--;
  }
  return true;
}

/* ---- the function ---- */

static unsigned addrspace(const State *s, DType d) {
  return d.space == UJ_AS_LOCAL ? s->r.h->local_space : s->r.h->global_space;
}

static LLVMTypeRef param_type(const State *s, const KernelParam *p) {
  if (!p->used || dt_is_ptr(p->dtype))
    return LLVMPointerTypeInContext(s->r.lc, p->used ? addrspace(s, p->dtype) : 0);
  return render_type(&s->r, p->dtype);
}

static void add_attr(State *s, LLVMValueRef fn, unsigned idx, const char *name, uint64_t val) {
  unsigned kind = LLVMGetEnumAttributeKindForName(name, strlen(name));
  LLVMAddAttributeAtIndex(fn, idx, LLVMCreateEnumAttribute(s->r.lc, kind, val));
}

static void add_string_attr(State *s, LLVMValueRef fn, const char *k, const char *v) {
  LLVMAddAttributeAtIndex(fn, LLVMAttributeFunctionIndex,
                          LLVMCreateStringAttribute(s->r.lc, k, (unsigned)strlen(k), v, (unsigned)strlen(v)));
}

/* noalias, aligned to the element, readonly / writeonly as used. On the
 * CPU, whose entry inlines the body, noalias only where the kernel stores:
 * the inliner turns each noalias pointer into an alias scope and lists, on
 * every load and store, the scopes of the others (n read-only buffers: n^2
 * metadata, and GVN's alias queries, each as long as a list, cost n^2 in
 * all: a sum of 2000 buffers took 5.8 s to compile); a store's scope on the
 * loads says all that matters, that they read no memory it writes. On GPUs
 * the kernel is not inlined (BasicAA reads the attributes directly) and a
 * noalias read-only pointer loads through the non-coherent cache. */
static void pointer_attrs(State *s, LLVMValueRef fn, unsigned i, const KernelParam *p) {
  if (p->stored || s->r.h->kernel_cc) add_attr(s, fn, i + 1, "noalias", 0);
  add_attr(s, fn, i + 1, "nocapture", 0);
  add_attr(s, fn, i + 1, "align", elem_align(dt_base(p->dtype)));
  if (!p->stored) add_attr(s, fn, i + 1, "readonly", 0);
  if (!p->loaded) add_attr(s, fn, i + 1, "writeonly", 0);
}

/* The kernel function: params by slot, then the variables. */
static LLVMValueRef make_function(State *s, const char *name) {
  size_t np = s->sig->nparams, nv = s->sig->nvars, n = np + nv + (s->r.h->kernel_cc ? 0 : 2);
  LLVMTypeRef *types = malloc((n + 1) * sizeof *types);
  if (!types) return NULL;
  for (size_t i = 0; i < np; i++) types[i] = param_type(s, &s->sig->params[i]);
  for (size_t i = 0; i < nv; i++) types[np + i] = render_type(&s->r, s->sig->vars[i].dtype);
  for (size_t i = np + nv; i < n; i++) types[i] = LLVMInt64TypeInContext(s->r.lc); /* CPU: part, nparts */
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(s->r.lc), types, (unsigned)n, 0);
  free(types);
  LLVMValueRef fn = LLVMAddFunction(s->r.mod, name, fty);
  for (size_t i = 0; i < np; i++)
    if (s->sig->params[i].used && dt_is_ptr(s->sig->params[i].dtype)) pointer_attrs(s, fn, (unsigned)i, &s->sig->params[i]);
  add_attr(s, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  if (!s->r.h->kernel_cc) { /* called by the CPU entry */
    LLVMSetLinkage(fn, LLVMInternalLinkage);
    add_attr(s, fn, LLVMAttributeFunctionIndex, "alwaysinline", 0);
  } else {
    LLVMSetFunctionCallConv(fn, s->r.h->kernel_cc);
  }
  if (s->r.t->cpu[0]) add_string_attr(s, fn, "target-cpu", s->r.t->cpu);
  if (s->r.t->features[0]) add_string_attr(s, fn, "target-features", s->r.t->features);
  /* LLVM vectorizes loops 256 bits wide on AVX-512 CPUs unless told (docs/compile.md) */
  if (s->r.t->kind == TARGET_CPU && s->r.t->vector_bytes >= 64) add_string_attr(s, fn, "prefer-vector-width", "512");
  return fn;
}

/* The CPU entry `void name(void **args, int64_t *vars, int64_t part,
 * int64_t nparts)` calling the body (part k of n of its parallel RANGE;
 * 0 of 1 runs it all); false when out of memory. */
static bool make_cpu_entry(State *s, LLVMValueRef body, const char *name) {
  LLVMContextRef lc = s->r.lc;
  LLVMBuilderRef B = s->r.b;
  LLVMTypeRef ptr = LLVMPointerTypeInContext(lc, 0), i64 = LLVMInt64TypeInContext(lc);
  LLVMTypeRef fty = LLVMFunctionType(LLVMVoidTypeInContext(lc), (LLVMTypeRef[]){ptr, ptr, i64, i64}, 4, 0);
  LLVMValueRef fn = LLVMAddFunction(s->r.mod, name, fty);
  add_attr(s, fn, LLVMAttributeFunctionIndex, "nounwind", 0);
  add_string_attr(s, fn, "target-cpu", s->r.t->cpu);
  add_string_attr(s, fn, "target-features", s->r.t->features);
  if (s->r.t->vector_bytes >= 64) add_string_attr(s, fn, "prefer-vector-width", "512"); /* as the body's */
  LLVMPositionBuilderAtEnd(B, LLVMAppendBasicBlockInContext(lc, fn, "entry"));
  size_t np = s->sig->nparams, nv = s->sig->nvars;
  LLVMValueRef *args = malloc((np + nv + 2) * sizeof *args);
  if (!args) return false;
  for (size_t i = 0; i < np; i++) {
    const KernelParam *p = &s->sig->params[i];
    LLVMValueRef at = LLVMBuildInBoundsGEP2(B, ptr, LLVMGetParam(fn, 0), (LLVMValueRef[]){LLVMConstInt(i64, i, 0)}, 1, "");
    LLVMValueRef a = LLVMBuildLoad2(B, ptr, at, "");
    args[i] = !p->used || dt_is_ptr(p->dtype) ? a : load_plain(s, p->dtype, a);
  }
  for (size_t i = 0; i < nv; i++) {
    LLVMValueRef at = LLVMBuildInBoundsGEP2(B, i64, LLVMGetParam(fn, 1), (LLVMValueRef[]){LLVMConstInt(i64, i, 0)}, 1, "");
    LLVMValueRef v = LLVMBuildLoad2(B, i64, at, "");
    LLVMTypeRef t = render_type(&s->r, s->sig->vars[i].dtype);
    args[np + i] = dt_bits(s->sig->vars[i].dtype) < 64 ? LLVMBuildTrunc(B, v, t, "") : v;
  }
  args[np + nv] = LLVMGetParam(fn, 2), args[np + nv + 1] = LLVMGetParam(fn, 3); /* part, nparts */
  LLVMBuildCall2(B, LLVMGlobalGetValueType(body), body, args, (unsigned)(np + nv + 2), "");
  LLVMBuildRetVoid(B);
  free(args);
  return true;
}

/* The tables, by the number of each node of the kernel (root) and of its
 * rescales (the nodes emit_rescale forgets before each use). */
static bool state_alloc(State *s, const UOp *root) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(s->r.ctx, root, &nodes);
  bool ok = n > 0 && nodemap_number(&s->num, nodes, n);
  free(nodes);
  s->rescale_nodes = calloc(s->nonline + 1, sizeof *s->rescale_nodes);
  s->nrescale_nodes = calloc(s->nonline + 1, sizeof *s->nrescale_nodes);
  ok = ok && s->rescale_nodes && s->nrescale_nodes;
  for (size_t i = 0; ok && i < s->nonline; i++) {
    ok = (s->nrescale_nodes[i] = uop_toposort(s->r.ctx, s->online[i].rescale, &s->rescale_nodes[i])) > 0;
    for (size_t k = 0; ok && k < s->nrescale_nodes[i]; k++) ok = nodemap_add(&s->num, s->rescale_nodes[i][k]) != NODEMAP_NONE;
  }
  n = s->num.count;
  s->val = calloc(n, sizeof *s->val), s->gate = calloc(n, sizeof *s->gate);
  s->lvl = calloc(n, sizeof *s->lvl), s->ser = calloc(n, sizeof *s->ser);
  s->pushed = calloc(n, sizeof *s->pushed), s->done0 = calloc(n, 1), s->busy = calloc(n, 1);
  s->steps = malloc(n * sizeof *s->steps);
  size_t na = s->sig->nparams + s->sig->nvars + 1;
  s->params = calloc(na, sizeof *s->params);
  s->vars = s->params + s->sig->nparams;
  return ok && s->val && s->gate && s->lvl && s->ser && s->pushed && s->done0 && s->busy && s->steps && s->params;
}

static void state_free(State *s) {
  void *owned[] = {s->val, s->gate, s->lvl, s->ser, s->pushed, s->done0, s->busy, s->walk, s->steps, s->params,
                   s->reduces, s->outer, s->first, s->nrescale_nodes};
  for (size_t i = 0; i < sizeof owned / sizeof *owned; i++) free(owned[i]);
  for (size_t i = 0; s->rescale_nodes && i < s->nonline; i++) free(s->rescale_nodes[i]);
  free(s->rescale_nodes);
  nodemap_free(&s->num);
}

static bool check_params(Ctx *ctx, const KernelSig *sig) {
  for (size_t i = 0; i < sig->nparams; i++) {
    const KernelParam *p = &sig->params[i];
    if (p->used && dt_is_ptr(p->dtype) && p->dtype.space != UJ_AS_GLOBAL) {
      ctx_set_error(ctx, "render: PARAM slot %zu points into %s memory; kernel parameters are global", i,
                    p->dtype.space == UJ_AS_LOCAL ? "local" : "register");
      return false;
    }
  }
  return true;
}

/* ALLOCs, in the entry block: an alloca (stack: register memory, and
 * local memory where the target has no workgroup memory), or a global in
 * workgroup-shared local memory. Contents start undefined. */
static bool emit_allocs(State *s, const UOp *root) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(s->r.ctx, root, &nodes);
  unsigned long stack = 0, shared = 0;
  bool ok = n > 0;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *u = nodes[i];
    if (u->op != UJ_OP_ALLOC) continue;
    DType e = dt_base(u->dtype);
    unsigned long bytes = (unsigned long)u->ints[1] * elem_bytes(e);
    LLVMTypeRef at = LLVMArrayType2(render_mem_type(&s->r, dt_lane(e)), (uint64_t)u->ints[1] * e.lanes);
    bool workgroup = u->dtype.space == UJ_AS_LOCAL && s->r.h->workgroup_bytes;
    unsigned long *used = workgroup ? &shared : &stack, limit = workgroup ? s->r.h->workgroup_bytes : s->r.h->stack_bytes;
    *used += bytes;
    if (*used > limit) {
      char msg[160];
      snprintf(msg, sizeof msg, "%lu bytes of %s memory; this target allows %lu", *used, workgroup ? "workgroup" : "stack", limit);
      ok = fail(s, u, msg);
      break;
    }
    LLVMValueRef v;
    if (workgroup) {
      char name[32];
      snprintf(name, sizeof name, "alloc_%lld", (long long)u->ints[0]); /* a PTX identifier */
      v = LLVMAddGlobalInAddressSpace(s->r.mod, at, name, s->r.h->local_space);
      LLVMSetInitializer(v, LLVMGetUndef(at));
      LLVMSetLinkage(v, LLVMInternalLinkage);
    } else {
      v = LLVMBuildAlloca(s->r.b, at, "alloc");
    }
    LLVMSetAlignment(v, 16);
    set_value(s, u, v, NULL);
  }
  free(nodes);
  return ok;
}

/* Appends REDUCE r to the list of those that may join another's loops
 * (reduce_group), with the RANGEs its value uses beyond its own and those
 * REDUCEs in it bind; false when out of memory. */
static bool add_reduce(State *s, const UOp *r, size_t nranges) {
  const UOp **inner = NULL;
  size_t m = uop_toposort(s->r.ctx, r->src[0], &inner), at = s->first[s->nreduces];
  const UOp **outer = m ? realloc(s->outer, (at + nranges) * sizeof *outer) : NULL;
  if (outer) s->outer = outer;
  for (size_t k = 0; k < m && outer; k++) {
    bool own = inner[k]->op != UJ_OP_RANGE;
    for (uint32_t j = 1; j < r->nsrc && !own; j++) own = r->src[j] == inner[k];
    for (size_t i = 0; i < m && !own; i++) /* bound inside */
      for (uint32_t j = 1; inner[i]->op == UJ_OP_REDUCE && j < inner[i]->nsrc && !own; j++) own = inner[i]->src[j] == inner[k];
    if (!own) s->outer[at++] = inner[k];
  }
  if (outer) s->reduces[s->nreduces] = r, s->first[++s->nreduces] = at;
  free(inner);
  return outer != NULL;
}

/* s->reduces, s->first, s->outer for the kernel (add_reduce). */
static bool find_reduces(State *s, const UOp *root) {
  const UOp **nodes = NULL;
  size_t n = uop_toposort(s->r.ctx, root, &nodes), nranges = 0;
  s->reduces = malloc((n + 1) * sizeof *s->reduces), s->first = calloc(n + 2, sizeof *s->first);
  bool ok = n > 0 && s->reduces && s->first;
  for (size_t i = 0; i < n; i++) nranges += nodes[i]->op == UJ_OP_RANGE;
  for (size_t i = 0; ok && i < n; i++)
    if (nodes[i]->op == UJ_OP_REDUCE && nodes[i]->nsrc > 1) ok = add_reduce(s, nodes[i], nranges);
  free(nodes);
  return ok;
}

static bool render_body(State *s, const UOp *root, const char *name) {
  char body_name[256];
  snprintf(body_name, sizeof body_name, "%s%s", name, s->r.h->kernel_cc ? "" : ".body");
  s->fn = make_function(s, body_name);
  if (!s->fn) return ctx_set_error(s->r.ctx, "render: out of memory"), false;
  size_t n = s->sig->nparams + s->sig->nvars;
  for (size_t i = 0; i < n; i++) s->params[i] = LLVMGetParam(s->fn, (unsigned)i);
  if (!s->r.h->kernel_cc) {
    s->part = LLVMGetParam(s->fn, (unsigned)n), s->nparts = LLVMGetParam(s->fn, (unsigned)n + 1);
    s->parallel = kernel_parallel_range(root);
  }
  LLVMPositionBuilderAtEnd(s->r.b, LLVMAppendBasicBlockInContext(s->r.lc, s->fn, "entry"));
  if (!find_reduces(s, root)) return ctx_set_error(s->r.ctx, "render: out of memory"), false;
  if (!emit_allocs(s, root) || !emit_effects(s, root)) return false;
  LLVMBuildRetVoid(s->r.b);
  if (!s->r.h->kernel_cc && !make_cpu_entry(s, s->fn, name)) return ctx_set_error(s->r.ctx, "render: out of memory"), false;
  return true;
}

static void module_setup(State *s) {
  LLVMSetTarget(s->r.mod, s->r.t->triple);
  if (s->r.h->code_object_version) {
    LLVMValueRef v = LLVMConstInt(LLVMInt32TypeInContext(s->r.lc), (unsigned)s->r.h->code_object_version, 0);
    const char *key = "amdhsa_code_object_version";
    LLVMAddModuleFlag(s->r.mod, LLVMModuleFlagBehaviorError, key, strlen(key), LLVMValueAsMetadata(v));
  }
}

LLVMModuleRef render_kernel(Ctx *ctx, LLVMContextRef lc, const Target *t, LLVMTargetDataRef layout, const UOp *root,
                            const KernelSig *sig, const char *name, const OnlineMax *online, size_t nonline) {
  State s = {.r = {ctx, t, &target_hooks[t->kind], lc, NULL, NULL}, .sig = sig, .online = online, .nonline = nonline,
             .num = nodemap_make(ctx)};
  if (!check_params(ctx, sig)) return NULL;
  if (!state_alloc(&s, root)) {
    state_free(&s);
    ctx_set_error(ctx, "render: out of memory");
    return NULL;
  }
  s.r.mod = LLVMModuleCreateWithNameInContext(name, lc);
  if (layout) LLVMSetModuleDataLayout(s.r.mod, layout); /* allocas take its address space */
  s.r.b = LLVMCreateBuilderInContext(lc);
  module_setup(&s);
  bool ok = render_body(&s, root, name);
  char *msg = NULL;
  if (ok && LLVMVerifyModule(s.r.mod, LLVMReturnStatusAction, &msg)) {
    ctx_set_error(ctx, "render: LLVM rejects the module (a bug in uopjit): %s", msg);
    ok = false;
  }
  LLVMDisposeMessage(msg);
  LLVMDisposeBuilder(s.r.b);
  state_free(&s);
  if (!ok) LLVMDisposeModule(s.r.mod);
  return ok ? s.r.mod : NULL;
}
