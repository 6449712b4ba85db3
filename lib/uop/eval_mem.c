/* eval_mem.c — the reference evaluator's bindings and memory (eval.h).
 *
 * In: variable values and memory bound by the caller; pointer and memory
 * nodes of a run. Out: the Pointer of PARAM/BUFFER/ALLOC/INDEX nodes, the
 * words of DEFINE_VARs and LOADs, and STOREs: checked and queued (an
 * ALLOC's land at once), written by eval_write_stores after the run. A
 * LOAD of global memory an earlier STORE of the run wrote is an error (a
 * kernel reads memory as it was before it ran); a LOAD of an ALLOC's
 * element nothing was stored to in its life is one too (its contents are
 * undefined): a `local` ALLOC lives for a workgroup, a `reg` one has a
 * block per thread of it. In a workgroup, races are errors
 * (docs/semantics.md, "Workgroups"): two threads storing one element, or
 * one reading what another stored, in one phase (no BARRIER between). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"
#include "uop/eval_bound.h"
#include "uop/eval_impl.h"

/* ---- bindings ---- */

bool eval_bind_var(Eval *ev, const char *name, int64_t value) {
  for (size_t i = 0; i < ev->nvars; i++) {
    if (strcmp(ev->vars[i].name, name) == 0) {
      ev->vars[i].value = value;
      return true;
    }
  }
  VarBinding *vars = eval_grow(ev->vars, ev->nvars, &ev->cap_vars, sizeof *vars);
  if (!vars) return eval_fail_nomem(ev);
  ev->vars = vars;
  size_t len = strlen(name);
  char *copy = malloc(len + 1);
  if (!copy) return eval_fail_nomem(ev);
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
    Memory *mems = eval_grow(ev->mems, ev->nmems, &ev->cap_mems, sizeof *mems);
    if (!mems) return eval_fail_nomem(ev);
    ev->mems = mems;
    m = &ev->mems[ev->nmems++];
    m->errs = NULL;
  }
  *m = (Memory){buffer, slot, data, bytes, m->errs}; /* bounds bound stay */
  return true;
}

void eval_track_bounds(Eval *ev, bool on) { ev->track = on; }

bool eval_bind_bounds(Eval *ev, int64_t slot, double *errs) {
  Memory *m = slot >= 0 ? mem_find(ev, NULL, slot) : NULL;
  if (!m) {
    ctx_set_error(ev->ctx, "eval_bind_bounds: PARAM slot %lld is not bound", (long long)slot);
    return false;
  }
  m->errs = errs;
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
/* ---- pointer and memory nodes ---- */

bool eval_var(Eval *ev, const UOp *u) {
  const VarBinding *b = NULL;
  for (size_t i = 0; i < ev->nvars && !b; i++)
    if (strcmp(ev->vars[i].name, u->name) == 0) b = &ev->vars[i];
  if (!b) return eval_fail(ev, u, "variable %s is not bound", u->name);
  if (b->value < u->ints[0] || b->value > u->ints[1])
    return eval_fail(ev, u, "variable %s = %lld is outside [%lld, %lld]", u->name, (long long)b->value,
                (long long)u->ints[0], (long long)u->ints[1]);
  words_of(ev, u)[0] = word_from_int((uj_scalar)u->dtype.scalar, b->value);
  return true;
}

/* A PARAM or BUFFER: a pointer to element 0 of its memory, or (a value
 * PARAM) the value in its bytes. */
bool eval_memory_root(Eval *ev, const UOp *u) {
  bool is_buffer = u->op == UJ_OP_BUFFER;
  const Memory *m = mem_find(ev, is_buffer ? u : NULL, is_buffer ? 0 : u->ints[0]);
  size_t elem = elem_bytes(u->dtype);
  if (!m && is_buffer) return eval_fail(ev, u, "BUFFER is not bound");
  if (!m) return eval_fail(ev, u, "PARAM slot %lld is not bound", (long long)u->ints[0]);
  if (dt_is_ptr(u->dtype)) {
    int64_t count = is_buffer ? u->ints[1] : elem ? (int64_t)(m->bytes / elem) : 0;
    *pointer_of(ev, u) = (Pointer){m->data, count, 0, true, false, m->errs, NULL, u};
    return true;
  }
  if (m->bytes != elem)
    return eval_fail(ev, u, "PARAM slot %lld is bound to %zu bytes, its value has %zu",
                (long long)u->ints[0], m->bytes, elem);
  mem_read(m->data, u->dtype, words_of(ev, u));
  return true;
}

/* ALLOC: memory of the kernel's own for this run, made once (one block;
 * a `reg` ALLOC grows a block per thread when a workgroup uses it). */
bool eval_alloc(Eval *ev, const UOp *u) {
  Pointer *p = pointer_of(ev, u);
  if (p->alloc) return true;
  AllocMem **all = eval_grow(ev->allocs, ev->nallocs, &ev->cap_allocs, sizeof *all);
  AllocMem *a = all ? calloc(1, sizeof *a) : NULL;
  if (all) ev->allocs = all;
  if (!a) return eval_fail_nomem(ev);
  ev->allocs[ev->nallocs++] = a;
  size_t count = (size_t)u->ints[1];
  *a = (AllocMem){.u = u, .count = count, .blocks = 1};
  a->data = calloc(count, elem_bytes(dt_base(u->dtype)));
  a->born = calloc(count, sizeof *a->born);
  a->errs = ev->track ? calloc(count * dt_base(u->dtype).lanes, sizeof *a->errs) : NULL;
  if (!a->data || !a->born || (ev->track && !a->errs)) return eval_fail_nomem(ev);
  *p = (Pointer){NULL, u->ints[1], 0, true, false, NULL, a, u};
  return true;
}

/* Room for n blocks in a (zeroed: never stored); false when out of memory. */
static bool alloc_blocks(AllocMem *a, size_t n, size_t elem, size_t lanes) {
  if (n <= a->blocks) return true;
  size_t old = a->count * a->blocks, all = a->count * n;
  unsigned char *data = realloc(a->data, all * elem);
  if (data) a->data = data;
  uint64_t *born = data ? realloc(a->born, all * sizeof *born) : NULL;
  if (born) a->born = born;
  double *errs = born && a->errs ? realloc(a->errs, all * lanes * sizeof *errs) : NULL;
  if (errs) a->errs = errs;
  if (!born || (a->errs && !errs)) return false;
  memset(a->data + old * elem, 0, (all - old) * elem);
  memset(a->born + old, 0, (all - old) * sizeof *born);
  if (errs) memset(errs + old * lanes, 0, (all - old) * lanes * sizeof *errs);
  a->blocks = n;
  return true;
}

/* Where p's element is (p valid, in bounds): its bytes, its bounds
 * (tracking; else NULL) and, in an ALLOC, its slot there (a `reg` ALLOC's
 * in the running thread's block). */
static bool element_at(Eval *ev, const Pointer *p, DType d, unsigned char **at, double **err_at, size_t *slot) {
  size_t elem = elem_bytes(d), index = (size_t)p->index;
  AllocMem *a = p->alloc;
  if (!a) {
    *at = p->data + index * elem;
    *err_at = ev->track && p->errs ? p->errs + index * d.lanes : NULL;
    return true;
  }
  size_t block = ev->group && a->u->dtype.space == UJ_AS_REG ? (size_t)ev->thread : 0;
  if (!alloc_blocks(a, block + 1, elem, d.lanes)) return eval_fail_nomem(ev);
  *slot = block * a->count + index;
  *at = a->data + *slot * elem;
  *err_at = a->errs ? a->errs + *slot * d.lanes : NULL;
  return true;
}

/* INDEX(ptr, idx[, gate]): idx elements further; off where gate is false. */
bool eval_index(Eval *ev, const UOp *u) {
  const Pointer *base = pointer_of(ev, u->src[0]);
  uint64_t w = words_of(ev, u->src[1])[0];
  bool gate = u->nsrc < 3 || words_of(ev, u->src[2])[0];
  Pointer *p = pointer_of(ev, u);
  *p = *base;
  p->valid = base->valid && gate;
  if (ev->track && (errs_of(ev, u->src[1])[0] > 0 || (u->nsrc == 3 && errs_of(ev, u->src[2])[0] > 0)))
    p->uncertain = true;
  bool fits = dt_is_signed(u->src[1]->dtype) || w <= (uint64_t)INT64_MAX;
  if (fits && !__builtin_add_overflow(base->index, (int64_t)w, &p->index)) return true;
  p->index = 0;
  return p->valid ? eval_fail(ev, u, "element index overflows int64") : true;
}

static bool access_ok(Eval *ev, const UOp *u, const Pointer *p) {
  if (p->index >= 0 && p->index < p->count) return true;
  return eval_fail(ev, u, "element %lld is out of bounds [0, %lld)", (long long)p->index,
              (long long)p->count);
}

/* ---- races and the global elements stored to in this run ---- */

/* "PARAM 0", "BUFFER 5", "ALLOC 2 (local)": the memory p points into. */
static const char *mem_name(const Pointer *p, char *buf, size_t size) {
  const UOp *m = p->mem;
  if (m->op == UJ_OP_ALLOC)
    snprintf(buf, size, "ALLOC %lld (%s)", (long long)m->ints[0], m->dtype.space == UJ_AS_LOCAL ? "local" : "reg");
  else snprintf(buf, size, "%s %lld", op_table[m->op].name, (long long)m->ints[0]);
  return buf;
}

/* A race on element `index` of p's memory: thread `first` did `did` it in
 * this phase, the running thread `does` it now. */
static bool race(Eval *ev, const UOp *u, const Pointer *p, int32_t first, const char *did, const char *does) {
  char mem[48], a[64], b[64];
  eval_thread_name(ev, first, a, sizeof a), eval_thread_name(ev, ev->thread, b, sizeof b);
  return eval_fail(ev, u,
                   "element %lld of %s was %s by thread %s%s since the last BARRIER, and thread %s %s "
                   "it: a race (a BARRIER between them orders them)",
                   (long long)p->index, mem_name(p, mem, sizeof mem), did, a, eval_group_name(ev), b, does);
}

/* In a workgroup, a `local` ALLOC's element at slot is read (store false)
 * or stored by the running thread: a race when another thread stored it,
 * or (storing) read it, in this phase. */
static bool race_check(Eval *ev, const UOp *u, const Pointer *p, size_t slot, bool store) {
  AllocMem *a = p->alloc;
  if (!a || !ev->group || a->u->dtype.space != UJ_AS_LOCAL) return true;
  size_t n = a->count * a->blocks;
  if (!a->phase) {
    a->writer = malloc(n * sizeof *a->writer), a->reader = malloc(n * sizeof *a->reader);
    a->reader2 = malloc(n * sizeof *a->reader2), a->phase = calloc(n, sizeof *a->phase);
    if (!a->writer || !a->reader || !a->reader2 || !a->phase) return eval_fail_nomem(ev);
  }
  int32_t t = ev->thread;
  if (a->phase[slot] != ev->phase) a->phase[slot] = ev->phase, a->writer[slot] = a->reader[slot] = a->reader2[slot] = -1;
  int32_t w = a->writer[slot], r1 = a->reader[slot], r2 = a->reader2[slot];
  if (w >= 0 && w != t) return race(ev, u, p, w, "stored", store ? "stores" : "reads");
  if (store) {
    int32_t other = r1 >= 0 && r1 != t ? r1 : r2 >= 0 && r2 != t ? r2 : -1;
    if (other >= 0) return race(ev, u, p, other, "read", "stores");
    a->writer[slot] = t;
  } else if (r1 < 0) {
    a->reader[slot] = t;
  } else if (r1 != t && r2 < 0) {
    a->reader2[slot] = t;
  }
  return true;
}

static size_t written_slot(const Eval *ev, uintptr_t at) {
  size_t mask = ev->cap_written - 1, i = (size_t)((at * 0x9e3779b97f4a7c15ull) >> 17) & mask;
  while (ev->written[i].at && ev->written[i].at != at) i = (i + 1) & mask;
  return i;
}

static bool was_written(const Eval *ev, const unsigned char *at) {
  return ev->cap_written && ev->written[written_slot(ev, (uintptr_t)at)].at != 0;
}

/* Records a STORE of the running thread to the global element at; in a
 * workgroup, one by another of its threads in this phase is a race. */
static bool mark_written(Eval *ev, const UOp *u, const Pointer *p, const unsigned char *at) {
  if (2 * (ev->nwritten + 1) > ev->cap_written) { /* rehash at half full */
    size_t cap = ev->cap_written ? 2 * ev->cap_written : 64;
    Written *old = ev->written, *fresh = calloc(cap, sizeof *fresh);
    if (!fresh) return eval_fail_nomem(ev);
    size_t old_cap = ev->cap_written;
    ev->written = fresh, ev->cap_written = cap;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i].at) ev->written[written_slot(ev, old[i].at)] = old[i];
    free(old);
  }
  Written *w = &ev->written[written_slot(ev, (uintptr_t)at)];
  bool add = u->op == UJ_OP_STORE_ADD, same = w->at && ev->group && w->life == ev->life && w->phase == ev->phase;
  bool other = w->thread != ev->thread || w->many; /* another thread touched it */
  if (same && other && !(add && w->added))
    return race(ev, u, p, w->thread, w->added ? "added to" : "stored", add ? "adds to" : "stores");
  if (!w->at) ev->nwritten++;
  if (same && add && w->added) w->many |= other;
  else *w = (Written){(uintptr_t)at, ev->life, ev->phase, ev->thread, add && !same, false}; /* after a STORE: no longer only added to */
  return true;
}

/* LOAD(ptr[, alt]): the element at ptr; alt (or zero) when ptr is off. An
 * element this run stored to already is an error: a kernel reads memory as
 * it was before it ran, which a compiled loop cannot do once it wrote. */
bool eval_load(Eval *ev, const UOp *u) {
  const Pointer *p = pointer_of(ev, u->src[0]);
  uint64_t *out = words_of(ev, u);
  size_t lanes = u->dtype.lanes;
  double *errs = ev->track ? errs_of(ev, u) : NULL;
  if (errs)
    for (size_t l = 0; l < lanes; l++) errs[l] = p->uncertain ? INFINITY : 0;
  if (!p->valid) {
    if (u->nsrc == 2) memcpy(out, words_of(ev, u->src[1]), lanes * sizeof *out);
    else memset(out, 0, lanes * sizeof *out);
    if (errs && u->nsrc == 2 && !p->uncertain) memcpy(errs, errs_of(ev, u->src[1]), lanes * sizeof *errs);
    return true;
  }
  unsigned char *at;
  double *err_at;
  size_t slot = 0;
  if (!access_ok(ev, u, p) || !element_at(ev, p, u->dtype, &at, &err_at, &slot)) return false;
  bool local = p->alloc && p->alloc->u->dtype.space == UJ_AS_LOCAL;
  if (p->alloc && p->alloc->born[slot] != ev->life && local && ev->group) {
    eval_group_undefined(ev, u, p->index); /* a race if another thread stores it in this phase */
  } else if (p->alloc && p->alloc->born[slot] != ev->life) {
    return eval_fail(ev, u, "element %lld of an ALLOC is read before anything was stored there%s", (long long)p->index,
                     ev->group ? " by this thread in this workgroup" : "");
  }
  if (!p->alloc && was_written(ev, at))
    return eval_fail(ev, u, "element %lld was stored earlier in this run (a kernel reads memory as it was before it ran)",
                (long long)p->index);
  if (!race_check(ev, u, p, slot, false)) return false;
  mem_read(at, u->dtype, out);
  if (errs && err_at && !p->uncertain) memcpy(errs, err_at, lanes * sizeof *errs);
  return true;
}

/* STORE(ptr, val): checked and queued with a copy of val (written after
 * the run; into an ALLOC's memory at once); nothing when ptr is off. */
bool eval_store(Eval *ev, const UOp *u) {
  const Pointer *p = pointer_of(ev, u->src[0]);
  DType d = u->src[1]->dtype;
  if (!p->valid) return true;
  if (!access_ok(ev, u, p)) return false;
  Store *stores = eval_grow(ev->stores, ev->nstores, &ev->cap_stores, sizeof *stores);
  if (stores) ev->stores = stores;
  while (stores && ev->nstore_words + d.lanes > ev->cap_store_words) {
    uint64_t *w = eval_grow(ev->store_words, ev->cap_store_words, &ev->cap_store_words, sizeof *w);
    if (!w) return eval_fail_nomem(ev);
    ev->store_words = w;
    double *e = ev->track ? realloc(ev->store_errs, ev->cap_store_words * sizeof *e) : NULL;
    if (ev->track && !e) return eval_fail_nomem(ev);
    if (e) ev->store_errs = e;
  }
  if (!stores) return eval_fail_nomem(ev);
  unsigned char *at;
  double *err_at;
  size_t slot = 0;
  if (!element_at(ev, p, d, &at, &err_at, &slot) || (!p->alloc && !mark_written(ev, u, p, at))) return false;
  const double *errs = ev->track ? errs_of(ev, u->src[1]) : NULL;
  if (p->alloc) { /* an ALLOC's: at once */
    if (!race_check(ev, u, p, slot, true)) return false;
    p->alloc->born[slot] = ev->life;
    mem_write(at, d, words_of(ev, u->src[1]));
    for (unsigned l = 0; err_at && l < d.lanes; l++) err_at[l] = p->uncertain ? INFINITY : errs[l];
    return true;
  }
  memcpy(ev->store_words + ev->nstore_words, words_of(ev, u->src[1]), d.lanes * sizeof(uint64_t));
  for (unsigned l = 0; errs && l < d.lanes; l++) ev->store_errs[ev->nstore_words + l] = p->uncertain ? INFINITY : errs[l];
  ev->stores[ev->nstores++] = (Store){at, d, u->op == UJ_OP_STORE_ADD, ev->nstore_words, err_at};
  ev->nstore_words += d.lanes;
  return true;
}


/* A STORE_ADD's words: what memory holds plus the value, lane by lane
 * (bounds: this order's, each addition's rounding added). */
static void add_into(Eval *ev, const Store *st) {
  uint64_t *v = ev->store_words + st->words, have;
  uj_scalar s = (uj_scalar)st->dtype.scalar;
  DType one = dt_lane(st->dtype);
  for (unsigned l = 0; l < st->dtype.lanes; l++) {
    mem_read(st->at + l * elem_bytes(one), one, &have);
    uint64_t args[3] = {have, v[l], 0};
    double es[3] = {st->err_at ? st->err_at[l] : 0, st->err_at ? ev->store_errs[st->words + l] : 0, 0};
    v[l] = alu_eval(UJ_OP_ADD, s, s, args);
    if (st->err_at) ev->store_errs[st->words + l] = bound_alu(UJ_OP_ADD, s, s, args, es, v[l]);
  }
}

void eval_write_stores(Eval *ev) {
  for (size_t i = 0; i < ev->nstores; i++) {
    const Store *st = &ev->stores[i];
    if (st->add) add_into(ev, st);
    mem_write(st->at, st->dtype, ev->store_words + st->words);
    if (st->err_at) memcpy(st->err_at, ev->store_errs + st->words, st->dtype.lanes * sizeof(double));
  }
}
