/* kernel.c — what a kernel takes and which elements it touches, read from
 * its graph through the public API.
 *
 * In: a kernel's root and its compiled program. Out: sig_read: the
 * program's PARAM slots with their dtypes and whether STOREs go through
 * them, and its DEFINE_VARs sorted by name (the order uj_run takes them
 * in), from the library (uj_program_param, uj_program_var). sig_accesses: with the variables bound to values, the range of
 * elements each slot's LOADs and STOREs may touch, from the bounds of their
 * indexes (docs/ir.md, "Bounds") after the bound graph is simplified. */
#include <stdlib.h>
#include <string.h>

#include "tool.h"


/* The nodes under root, sources before users, each once: malloc'd, the
 * count in *n; NULL on no memory. An explicit stack: graphs may be deep. */
static const uj_uop **graph_nodes(uj_ctx *ctx, const uj_uop *root, size_t *n) {
  size_t cap = uj_ctx_node_count(ctx), sp = 0;
  typedef struct Frame {
    const uj_uop *u;
    size_t next; /* the next source to visit */
  } Frame;
  bool *seen = calloc(cap, sizeof *seen);
  Frame *stack = malloc(cap * sizeof *stack);
  const uj_uop **out = malloc(cap * sizeof *out);
  *n = 0;
  if (seen && stack && out) {
    stack[sp++] = (Frame){root, 0}, seen[uj_uop_id(root)] = true;
    while (sp > 0) {
      Frame *f = &stack[sp - 1];
      const uj_uop *s = f->next < uj_uop_nsrc(f->u) ? uj_uop_src(f->u, f->next++) : NULL;
      if (!s) out[(*n)++] = f->u, sp--;
      else if (!seen[uj_uop_id(s)]) stack[sp++] = (Frame){s, 0}, seen[uj_uop_id(s)] = true;
    }
  } else {
    free(out), out = NULL;
    report("out of memory");
  }
  free(seen);
  free(stack);
  return out;
}

/* ---- the signature ---- */

bool sig_read(const uj_program *prog, Sig *sig) {
  memset(sig, 0, sizeof *sig);
  sig->nparams = uj_program_nparams(prog), sig->nvars = uj_program_nvars(prog);
  sig->params = calloc(sig->nparams + 1, sizeof *sig->params);
  sig->vars = calloc(sig->nvars + 1, sizeof *sig->vars);
  if (!sig->params || !sig->vars) return sig_free(sig), report("out of memory"), false;
  for (size_t i = 0; i < sig->nparams; i++) {
    SigParam *p = &sig->params[i];
    p->used = uj_program_param(prog, i, &p->dtype, &p->stored);
  }
  for (size_t i = 0; i < sig->nvars; i++) {
    SigVar *v = &sig->vars[i];
    v->name = uj_program_var_name(prog, i);
    uj_program_var(prog, i, &v->dtype, &v->min, &v->max);
  }
  return true;
}

void sig_free(Sig *sig) {
  free(sig->params);
  free(sig->vars);
  memset(sig, 0, sizeof *sig);
}

long sig_var(const Sig *sig, const char *name) {
  for (size_t i = 0; i < sig->nvars; i++)
    if (!strcmp(sig->vars[i].name, name)) return (long)i;
  return -1;
}

/* ---- accesses ---- */

/* u with its sources replaced by their images in map (by node id), and each
 * DEFINE_VAR by one whose range is its value alone. */
static const uj_uop *bind_node(uj_ctx *ctx, const uj_uop *u, const uj_uop **map, const Sig *sig,
                               const int64_t *values, const uj_uop **src) {
  uj_arg arg = uj_uop_arg(u);
  if (uj_uop_op(u) == UJ_OP_DEFINE_VAR) {
    int64_t v = values[sig_var(sig, arg.name)];
    return uj_var(ctx, uj_uop_dtype(u), arg.name, v, v);
  }
  bool same = true;
  for (size_t i = 0; i < uj_uop_nsrc(u); i++) {
    src[i] = map[uj_uop_id(uj_uop_src(u, i))];
    same = same && src[i] == uj_uop_src(u, i);
  }
  return same ? u : uj_uop_new(ctx, uj_uop_op(u), uj_uop_dtype(u), src, uj_uop_nsrc(u), arg);
}

/* root with every variable bound to its value, simplified. */
static const uj_uop *bind_vars(uj_ctx *ctx, const uj_uop *root, const Sig *sig,
                               const int64_t *values) {
  size_t n, maxsrc = 1;
  const uj_uop **nodes = graph_nodes(ctx, root, &n), *bound = NULL;
  for (size_t i = 0; nodes && i < n; i++)
    if (uj_uop_nsrc(nodes[i]) > maxsrc) maxsrc = uj_uop_nsrc(nodes[i]);
  const uj_uop **map = calloc(uj_ctx_node_count(ctx), sizeof *map);
  const uj_uop **src = malloc(maxsrc * sizeof *src);
  for (size_t i = 0; nodes && map && src && i < n; i++) {
    const uj_uop *u = bind_node(ctx, nodes[i], map, sig, values, src);
    if (!u) break;
    map[uj_uop_id(nodes[i])] = u;
    if (i + 1 == n) bound = u;
  }
  if (nodes && (!map || !src)) report("out of memory");
  else if (nodes && !bound) report("bounds check: %s", uj_error(ctx));
  const uj_uop *simple = bound ? uj_simplify(ctx, bound) : NULL;
  free(nodes);
  free(map);
  free(src);
  return simple ? simple : bound;
}

/* Adds the access of a LOAD or STORE through ptr to acc (by slot). */
static void access_add(const uj_uop *ptr, SigAccess *acc, size_t nparams) {
  int64_t lo = 0, hi = 0, a, b;
  bool known = true;
  for (; uj_uop_op(ptr) == UJ_OP_INDEX; ptr = uj_uop_src(ptr, 0)) {
    if (uj_uop_nsrc(ptr) > 2) return; /* gated: the gate keeps it in bounds */
    known = known && uj_uop_bounds(uj_uop_src(ptr, 1), &a, &b) &&
            !__builtin_add_overflow(lo, a, &lo) && !__builtin_add_overflow(hi, b, &hi);
  }
  int64_t slot = uj_uop_op(ptr) == UJ_OP_PARAM ? uj_uop_arg(ptr).ints[0] : -1;
  if (slot < 0 || (size_t)slot >= nparams) return;
  SigAccess *s = &acc[slot];
  s->unknown = s->unknown || !known;
  if (known && s->any) s->lo = lo < s->lo ? lo : s->lo, s->hi = hi > s->hi ? hi : s->hi;
  else if (known) s->lo = lo, s->hi = hi;
  s->any = s->any || known;
}

bool sig_accesses(uj_ctx *ctx, const uj_uop *root, const Sig *sig, const int64_t *values,
                  SigAccess *acc) {
  memset(acc, 0, sig->nparams * sizeof *acc);
  const uj_uop *bound = bind_vars(ctx, root, sig, values);
  size_t n;
  const uj_uop **nodes = bound ? graph_nodes(ctx, bound, &n) : NULL;
  bool ok = nodes != NULL;
  for (size_t i = 0; ok && i < n; i++) {
    uj_op op = uj_uop_op(nodes[i]);
    if (op == UJ_OP_LOAD || op == UJ_OP_STORE)
      access_add(uj_uop_src(nodes[i], 0), acc, sig->nparams);
  }
  free(nodes);
  return ok;
}
