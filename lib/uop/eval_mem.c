/* eval_mem.c — the reference evaluator's bindings and memory (eval.h).
 *
 * In: variable values and memory bound by the caller; pointer and memory
 * nodes of a run. Out: the Pointer of PARAM/BUFFER/ALLOC/INDEX nodes, the
 * words of DEFINE_VARs and LOADs, and STOREs: checked and queued (an
 * ALLOC's land at once), written by eval_write_stores after the run. A
 * LOAD of global memory an earlier STORE of the run wrote is an error (a
 * kernel reads memory as it was before it ran); a LOAD of an ALLOC's
 * element nothing was stored to is one too (its contents are undefined). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "uop/alu.h"
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
    *pointer_of(ev, u) = (Pointer){m->data, count, 0, true, false, false, m->errs};
    return true;
  }
  if (m->bytes != elem)
    return eval_fail(ev, u, "PARAM slot %lld is bound to %zu bytes, its value has %zu",
                (long long)u->ints[0], m->bytes, elem);
  mem_read(m->data, u->dtype, words_of(ev, u));
  return true;
}

/* ALLOC: memory of the kernel's own for this run, made once. */
bool eval_alloc(Eval *ev, const UOp *u) {
  Pointer *p = pointer_of(ev, u);
  if (p->data) return true;
  size_t count = (size_t)u->ints[1];
  void **a = NULL;
  for (int k = 0; k <= ev->track; k++) /* the memory, and its bounds when tracking */
    if ((a = eval_grow(ev->allocs, ev->nallocs + (size_t)k, &ev->cap_allocs, sizeof *a))) ev->allocs = a;
  unsigned char *mem = a ? calloc(count, elem_bytes(dt_base(u->dtype))) : NULL;
  double *errs = mem && ev->track ? calloc(count * dt_base(u->dtype).lanes, sizeof *errs) : NULL;
  if (!mem || (ev->track && !errs)) return free(mem), eval_fail_nomem(ev);
  ev->allocs[ev->nallocs++] = mem;
  if (errs) ev->allocs[ev->nallocs++] = errs;
  *p = (Pointer){mem, u->ints[1], 0, true, true, false, errs};
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

/* ---- the set of elements stored to in this run ---- */

static size_t written_slot(const Eval *ev, uintptr_t at) {
  size_t mask = ev->cap_written - 1, i = (size_t)((at * 0x9e3779b97f4a7c15ull) >> 17) & mask;
  while (ev->written[i] && ev->written[i] != at) i = (i + 1) & mask;
  return i;
}

static bool was_written(const Eval *ev, const unsigned char *at) {
  return ev->cap_written && ev->written[written_slot(ev, (uintptr_t)at)] != 0;
}

static bool mark_written(Eval *ev, const unsigned char *at) {
  if (2 * (ev->nwritten + 1) > ev->cap_written) { /* rehash at half full */
    size_t cap = ev->cap_written ? 2 * ev->cap_written : 64;
    uintptr_t *old = ev->written, *fresh = calloc(cap, sizeof *fresh);
    if (!fresh) return eval_fail_nomem(ev);
    size_t old_cap = ev->cap_written;
    ev->written = fresh, ev->cap_written = cap;
    for (size_t i = 0; i < old_cap; i++)
      if (old[i]) ev->written[written_slot(ev, old[i])] = old[i];
    free(old);
  }
  size_t i = written_slot(ev, (uintptr_t)at);
  if (!ev->written[i]) ev->written[i] = (uintptr_t)at, ev->nwritten++;
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
  if (!access_ok(ev, u, p)) return false;
  const unsigned char *at = p->data + (size_t)p->index * elem_bytes(u->dtype);
  if (p->own && !was_written(ev, at))
    return eval_fail(ev, u, "element %lld of an ALLOC is read before anything was stored there", (long long)p->index);
  if (!p->own && was_written(ev, at))
    return eval_fail(ev, u, "element %lld was stored earlier in this run (a kernel reads memory as it was before it ran)",
                (long long)p->index);
  mem_read(at, u->dtype, out);
  if (errs && p->errs && !p->uncertain) memcpy(errs, p->errs + (size_t)p->index * lanes, lanes * sizeof *errs);
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
  unsigned char *at = p->data + (size_t)p->index * elem_bytes(d);
  if (!mark_written(ev, at)) return false;
  double *err_at = ev->track && p->errs ? p->errs + (size_t)p->index * d.lanes : NULL;
  const double *errs = ev->track ? errs_of(ev, u->src[1]) : NULL;
  if (p->own) { /* an ALLOC's: at once */
    mem_write(at, d, words_of(ev, u->src[1]));
    for (unsigned l = 0; err_at && l < d.lanes; l++) err_at[l] = p->uncertain ? INFINITY : errs[l];
    return true;
  }
  memcpy(ev->store_words + ev->nstore_words, words_of(ev, u->src[1]), d.lanes * sizeof(uint64_t));
  for (unsigned l = 0; errs && l < d.lanes; l++) ev->store_errs[ev->nstore_words + l] = p->uncertain ? INFINITY : errs[l];
  ev->stores[ev->nstores++] = (Store){at, d, ev->nstore_words, err_at};
  ev->nstore_words += d.lanes;
  return true;
}


void eval_write_stores(Eval *ev) {
  for (size_t i = 0; i < ev->nstores; i++) {
    const Store *st = &ev->stores[i];
    mem_write(st->at, st->dtype, ev->store_words + st->words);
    if (st->err_at) memcpy(st->err_at, ev->store_errs + st->words, st->dtype.lanes * sizeof(double));
  }
}
