/* fuzz_ir.c — fuzz target: the IR text form, through parse, check, print
 * and simplify (docs/text-form.md, docs/symbolic.md).
 *
 * In: any bytes, read as a program in the text form (up to the first NUL;
 * longer than FUZZ_IR_MAX_LEN: declined). What must hold, in one context:
 *
 *   parse     fails with a message "<fuzz>:LINE:COL: ...", or gives a
 *             root that the spec checker (uj_check) passes;
 *   print     of the root parses back to the very same node (interned:
 *             pointer equality);
 *   simplify  succeeds (no rule cycle, no rule that builds a node the op
 *             table refuses), and its result passes uj_check, prints and
 *             parses back to itself, and is a fixpoint: simplifying it
 *             again gives it back;
 *   values    where the program is pure values (CONST, DEFINE_VAR, ALU
 *             ops, VECTORIZE, GEP; a SINK of them at the root) of at most
 *             VALUE_MAX_NODES nodes, the reference evaluator (uop/eval.h)
 *             gives the simplified program the values of the program at
 *             VALUE_POINTS points of its variables' ranges (the low ends,
 *             the high ends, points drawn from a hash of the input), and
 *             every integer a node of either computes lies in the node's
 *             bounds (vmin, vmax), which simplification relies on.
 *
 * Anything else aborts (fuzz_fail) and the fuzzer keeps the input. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "uop/eval.h"
#include "uop/text.h"
#include "uop/uop.h"
#include "uopjit/uopjit.h"

enum {
  FUZZ_IR_MAX_LEN = 1 << 20,
  VALUE_MAX_NODES = 1 << 14, /* larger programs are not evaluated */
  VALUE_MAX_VARS = 32,
  VALUE_MAX_OUTPUTS = 16, /* of a SINK's sources, the first 16 are compared */
  VALUE_POINTS = 4,
};

/* Where a failed parse must say it failed: "<fuzz>:LINE:COL: ". */
static bool has_location(const char *msg, const char *where) {
  size_t n = strlen(where);
  if (strncmp(msg, where, n) != 0 || msg[n] != ':') return false;
  char *end;
  strtoul(msg + n + 1, &end, 10);
  if (end == msg + n + 1 || *end != ':') return false;
  const char *col = end + 1;
  strtoul(col, &end, 10);
  return end != col && *end == ':';
}

/* root passes the checker and prints to text that parses back to root. */
static void check_round_trip(uj_ctx *ctx, const uj_uop *root, const char *what) {
  if (uj_check(ctx, root) != UJ_OK) fuzz_fail("%s fails the spec checker: %s", what, uj_error(ctx));
  char *text = uj_print(ctx, root);
  if (!text) fuzz_fail("%s does not print: %s", what, uj_error(ctx));
  const uj_uop *again = uj_parse(ctx, text, "<printed>");
  if (!again) fuzz_fail("%s: its print does not parse: %s\n%s", what, uj_error(ctx), text);
  if (again != root) {
    char *other = uj_print(ctx, again);
    fuzz_fail("%s: its print\n%s\nparses to another node:\n%s", what, text, other ? other : "?");
  }
  free(text);
}

/* ---- values: what the program computes, before and after simplify ---- */

/* The variables of a program, each name once, with the range every node
 * of that name allows. */
typedef struct Vars {
  const char *names[VALUE_MAX_VARS];
  int64_t lo[VALUE_MAX_VARS], hi[VALUE_MAX_VARS];
  size_t n;
} Vars;

static bool is_pure(const UOp *u) {
  return op_has(u->op, OPF_ALU) || u->op == UJ_OP_CONST || u->op == UJ_OP_DEFINE_VAR ||
         u->op == UJ_OP_VECTORIZE || u->op == UJ_OP_GEP;
}

/* False when there are too many names, or a name's ranges do not meet. */
static bool vars_add(Vars *v, const UOp *var) {
  size_t i = 0;
  while (i < v->n && strcmp(v->names[i], var->name) != 0) i++;
  if (i == VALUE_MAX_VARS) return false;
  if (i == v->n) v->names[v->n++] = var->name, v->lo[i] = INT64_MIN, v->hi[i] = INT64_MAX;
  if (var->ints[0] > v->lo[i]) v->lo[i] = var->ints[0];
  if (var->ints[1] < v->hi[i]) v->hi[i] = var->ints[1];
  return v->lo[i] <= v->hi[i];
}

/* The nodes under root (*nodes, malloc'd; their count) when the program
 * is pure values of at most max nodes, with its variables in vars; else 0. */
static size_t pure_nodes(Ctx *ctx, const UOp *root, size_t max, Vars *vars, const UOp ***nodes) {
  size_t n = uop_toposort(ctx, root, nodes);
  bool ok = n > 0 && n <= max;
  for (size_t i = 0; ok && i < n; i++) {
    const UOp *u = (*nodes)[i];
    if (u == root && u->op == UJ_OP_SINK) continue;
    ok = is_pure(u) && (u->op != UJ_OP_DEFINE_VAR || vars_add(vars, u));
  }
  if (!ok) free(*nodes), *nodes = NULL;
  return ok ? n : 0;
}

/* splitmix64 */
static uint64_t mix(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* Point p of the variables: their low ends, their high ends, then drawn. */
static void pick_point(const Vars *v, int p, uint64_t *rng, int64_t *values) {
  for (size_t i = 0; i < v->n; i++) {
    uint64_t span = (uint64_t)v->hi[i] - (uint64_t)v->lo[i] + 1; /* 0: all of int64 */
    uint64_t r = mix(rng);
    values[i] = p == 0   ? v->lo[i]
                : p == 1 ? v->hi[i]
                         : (int64_t)((uint64_t)v->lo[i] + (span ? r % span : r));
  }
}

/* Every integer value the last run computed among nodes[0..n) lies in its
 * node's bounds. */
static void check_bounds(const Eval *ev, const UOp *const *nodes, size_t n, const char *what) {
  for (size_t i = 0; i < n; i++) {
    const UOp *u = nodes[i];
    const uint64_t *w = u->bounded ? eval_value(ev, u) : NULL;
    for (unsigned l = 0; w && l < u->dtype.lanes; l++) {
      if ((int64_t)w[l] >= u->vmin && (int64_t)w[l] <= u->vmax) continue;
      char node[256];
      text_print_node(u, 2, node, sizeof node);
      fuzz_fail("%s: a node computes %lld, outside its bounds [%lld, %lld]: %s", what,
                (long long)w[l], (long long)u->vmin, (long long)u->vmax, node);
    }
  }
}

/* Runs value u; its words copied to out (u->dtype.lanes of them). */
static bool eval_words(Eval *ev, const UOp *u, uint64_t *out) {
  const uint64_t *w = eval_run(ev, u) ? eval_value(ev, u) : NULL;
  if (w) memcpy(out, w, u->dtype.lanes * sizeof *w);
  return w != NULL;
}

/* The values of a and b at one point (the variables bound in ev). */
static void check_point(Eval *ev, const UOp *a, const UOp *b, const UOp *const *na, size_t nna,
                        const UOp *const *nb, size_t nnb) {
  if (!dt_eq(a->dtype, b->dtype)) fuzz_fail("simplify changes a value's dtype");
  uint64_t *wa = malloc(2 * a->dtype.lanes * sizeof *wa), *wb = wa + a->dtype.lanes;
  if (!wa) fuzz_fail("out of memory");
  if (eval_words(ev, a, wa)) { /* a program the evaluator refuses is not compared */
    check_bounds(ev, na, nna, "the program");
    if (!eval_words(ev, b, wb)) fuzz_fail("the simplified program does not evaluate");
    check_bounds(ev, nb, nnb, "the simplified program");
    if (memcmp(wa, wb, a->dtype.lanes * sizeof *wa) != 0)
      fuzz_fail("simplify changes a value: %#llx before, %#llx after (lane 0)",
                (unsigned long long)wa[0], (unsigned long long)wb[0]);
  }
  free(wa);
}

/* The values a SINK (or a value) root computes: pairs of a and b. */
static size_t value_outputs(const UOp *a, const UOp *b, const UOp **oa, const UOp **ob) {
  if (a->op != UJ_OP_SINK) return oa[0] = a, ob[0] = b, !dt_is_void(a->dtype);
  if (b->op != UJ_OP_SINK || b->nsrc != a->nsrc) return 0;
  size_t n = 0;
  for (size_t i = 0; i < a->nsrc && n < VALUE_MAX_OUTPUTS; i++)
    if (!dt_is_void(a->src[i]->dtype)) oa[n] = a->src[i], ob[n++] = b->src[i];
  return n;
}

static void check_values(Ctx *ctx, const UOp *a, const UOp *b, uint64_t seed) {
  Vars va = {0}, vb = {0};
  const UOp **na = NULL, **nb = NULL, *oa[VALUE_MAX_OUTPUTS], *ob[VALUE_MAX_OUTPUTS];
  size_t nna = pure_nodes(ctx, a, VALUE_MAX_NODES, &va, &na);
  size_t nnb = nna ? pure_nodes(ctx, b, SIZE_MAX, &vb, &nb) : 0;
  size_t nout = nnb ? value_outputs(a, b, oa, ob) : 0;
  if (nna && !nnb) fuzz_fail("simplify makes a program of pure values impure");
  for (int p = 0; p < VALUE_POINTS && nout; p++) {
    int64_t values[VALUE_MAX_VARS];
    pick_point(&va, p, &seed, values);
    Eval *ev = eval_new(ctx);
    if (!ev) fuzz_fail("out of memory");
    for (size_t i = 0; i < va.n; i++)
      if (!eval_bind_var(ev, va.names[i], values[i])) fuzz_fail("out of memory");
    for (size_t i = 0; i < nout; i++) check_point(ev, oa[i], ob[i], na, nna, nb, nnb);
    eval_free(ev);
  }
  free(na);
  free(nb);
}

static uint64_t text_hash(const char *s) {
  uint64_t h = 0xcbf29ce484222325u; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3u;
  return h;
}

/* ---- one input ---- */

static void fuzz_program(uj_ctx *ctx, const char *text) {
  const uj_uop *root = uj_parse(ctx, text, "<fuzz>");
  if (!root) {
    if (!has_location(uj_error(ctx), "<fuzz>"))
      fuzz_fail("parse error without \"<fuzz>:LINE:COL:\": %s", uj_error(ctx));
    return;
  }
  check_round_trip(ctx, root, "the parsed program");
  const uj_uop *simple = uj_simplify(ctx, root);
  if (!simple) fuzz_fail("simplify fails: %s", uj_error(ctx));
  check_round_trip(ctx, simple, "the simplified program");
  const uj_uop *again = uj_simplify(ctx, simple);
  if (again != simple) fuzz_fail("simplify is not at a fixpoint: once more changes the program");
  check_values(ctx, root, simple, text_hash(text));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > FUZZ_IR_MAX_LEN) return -1;
  char *text = fuzz_text(data, size);
  uj_ctx *ctx = uj_ctx_new();
  if (!ctx) fuzz_fail("no context");
  fuzz_program(ctx, text);
  uj_ctx_free(ctx);
  free(text);
  return 0;
}
