/* test_symbolic.c — the symbolic rules, case by case, checked three ways.
 *
 * In: test/data/symbolic.txt (a prelude of variables, then one case a line:
 * INPUT => EXPECTED). For each case: the simplified INPUT must be the node
 * EXPECTED parses to; the reference evaluator must give the same value for
 * INPUT and the result on random points of the variables' ranges (and their
 * ends); z3 must prove them equal for every value (prove.h); and the
 * result must not be a larger graph. Then whole graphs whose nodes have
 * several users (graph_cases below), checked the same way source by
 * source. UJ_SYMBOLIC_CASES=FILE reads the cases from FILE instead. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "prove.h"
#include "symbolic/symbolic.h"
#include "uop/eval.h"
#include "uop/text.h"

enum { MAX_VARS = 32, POINTS = 64 };

static ProveStats proofs;

/* a == b for every value of the variables, proved by z3 (prove.h). */
static void check_proved(Ctx *ctx, const UOp *a, const UOp *b, const char *where) {
  char why[512];
  ProveVerdict v = prove_same(ctx, a, b, PROVE_RLIMIT_GOLDEN, &proofs, why, sizeof why);
  CHECK(v != PROVE_DIFFERENT, "%s: not equal %s", where, why);
  CHECK(v != PROVE_MISMATCH, "%s: z3 and the evaluator disagree (prove.c's encoding) %s", where, why);
  CHECK(v != PROVE_UNKNOWN && v != PROVE_UNSUPPORTED, "%s: not proved: %s", where, why);
}

typedef struct Vars {
  const char *names[MAX_VARS];
  int64_t lo[MAX_VARS], hi[MAX_VARS];
  size_t n;
} Vars;

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *text = malloc((size_t)size + 1);
  if (text && fread(text, 1, (size_t)size, f) != (size_t)size) size = 0;
  if (text) text[size] = '\0';
  fclose(f);
  return text;
}

static void collect_vars(Ctx *ctx, const UOp *root, Vars *vars) {
  for (size_t id = 0; id <= root->id; id++) {
    const UOp *u = ctx->nodes[id];
    if (u->op != UJ_OP_DEFINE_VAR || vars->n == MAX_VARS) continue;
    bool known = false;
    for (size_t i = 0; i < vars->n; i++) known |= strcmp(vars->names[i], u->name) == 0;
    if (known) continue;
    vars->names[vars->n] = u->name;
    vars->lo[vars->n] = u->ints[0];
    vars->hi[vars->n++] = u->ints[1];
  }
}

static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
  return *state;
}

/* Point p: the low ends, the high ends, then random points. */
static void pick_point(const Vars *vars, int p, uint64_t *rng, int64_t *values) {
  for (size_t i = 0; i < vars->n; i++) {
    uint64_t span = (uint64_t)vars->hi[i] - (uint64_t)vars->lo[i] + 1;
    if (p == 0) values[i] = vars->lo[i];
    else if (p == 1) values[i] = vars->hi[i];
    else values[i] = (int64_t)((uint64_t)vars->lo[i] + (span ? next_random(rng) % span : next_random(rng)));
  }
}

/* a and b (the case `where`) give equal values at POINTS points. */
static void check_values(Ctx *ctx, const UOp *a, const UOp *b, const char *where) {
  Vars vars = {0};
  collect_vars(ctx, a, &vars);
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (const char *c = where; *c; c++) rng = (rng ^ (unsigned char)*c) * 0x100000001b3ull;
  for (int p = 0; p < POINTS; p++) {
    int64_t values[MAX_VARS];
    uint64_t wa[16] = {0}, wb[16] = {0};
    pick_point(&vars, p, &rng, values);
    bool ok_a = eval_expr(ctx, a, vars.names, values, vars.n, wa);
    bool ok_b = ok_a && eval_expr(ctx, b, vars.names, values, vars.n, wb);
    CHECK(ok_a && ok_b, "%s: evaluation failed: %s", where, uj_error(ctx));
    if (!ok_a || !ok_b) return;
    CHECK(memcmp(wa, wb, sizeof wa) == 0, "%s: values differ at point %d: %llx vs %llx",
          where, p, (unsigned long long)wa[0], (unsigned long long)wb[0]);
  }
}

/* Graphs whose nodes have several users: the size-weighing rules must
 * fold in them what they fold in each expression alone. (Variable names
 * differ from the prelude's: check_values binds variables by name.) */
static const struct { const char *name, *input, *expected; } graph_cases[] = {
  /* Reduced from conv2d's kernel (3x3, padding 1): each lane's row gate
   * (s//3)%3 is ky (s = kx + 3·ky + 9·(...)), but its sum shares the
   * filter position k and the batch offset 18·n with the other lane, so
   * the quotient s//3, rebuilt flat, costs more than the division: the
   * remainder must be folded without it. */
  {"conv gates",
   "%n0 = (DEFINE_VAR:int64 n0 0 3)\n%n1 = (DEFINE_VAR:int64 n1 0 1)\n"
   "%n2 = (DEFINE_VAR:int64 n2 0 1)\n%n3 = (DEFINE_VAR:int64 n3 0 1)\n"
   "%oy = (DEFINE_VAR:int64 oy 0 55)\n%kx = (DEFINE_VAR:int64 kx 0 2)\n"
   "%ky = (DEFINE_VAR:int64 ky 0 2)\n"
   "%n = (ADD:int64 (ADD:int64 (ADD:int64 %n0 (MUL:int64 %n1 (CONST:int64 4)))"
   " (MUL:int64 %n2 (CONST:int64 8))) (MUL:int64 %n3 (CONST:int64 16)))\n"
   "%k = (ADD:int64 (MUL:int64 %ky (CONST:int64 3)) %kx)\n"
   "%nn = (MUL:int64 %n (CONST:int64 18))\n"
   "%s0 = (ADD:int64 (ADD:int64 %k (MUL:int64 %oy (CONST:int64 9))) %nn)\n"
   "%s1 = (ADD:int64 (ADD:int64 %k (MUL:int64 %oy (CONST:int64 18))) %nn)\n"
   "(SINK (MOD:int64 (IDIV:int64 %s0 (CONST:int64 3)) (CONST:int64 3))"
   " (MOD:int64 (IDIV:int64 %s1 (CONST:int64 3)) (CONST:int64 3)))",
   "(SINK (DEFINE_VAR:int64 ky 0 2) (DEFINE_VAR:int64 ky 0 2))"},
  /* x+0 -> x where x and 0 have other users: x is no new node */
  {"shared x+0",
   "%ox = (DEFINE_VAR:int64 ox 0 6)\n%oz = (DEFINE_VAR:int64 oz -8 8)\n"
   "%x7 = (MUL:int64 %ox (CONST:int64 7))\n"
   "(SINK (ADD:int64 %x7 (CONST:int64 0)) (ADD:int64 %x7 %oz) (CMPLT:bool (CONST:int64 0) %oz))",
   "%ox = (DEFINE_VAR:int64 ox 0 6)\n%oz = (DEFINE_VAR:int64 oz -8 8)\n"
   "%x7 = (MUL:int64 %ox (CONST:int64 7))\n"
   "(SINK %x7 (ADD:int64 %x7 %oz) (CMPLT:bool (CONST:int64 0) %oz))"},
};

static void run_graph_case(Ctx *ctx, int i) {
  const UOp *in = text_parse(ctx, graph_cases[i].input, graph_cases[i].name);
  const UOp *want = in ? text_parse(ctx, graph_cases[i].expected, graph_cases[i].name) : NULL;
  CHECK(in && want, "%s: %s", graph_cases[i].name, uj_error(ctx));
  const UOp *got = want ? symbolic_simplify(ctx, in) : NULL;
  CHECK(!want || got, "%s: simplify failed: %s", graph_cases[i].name, uj_error(ctx));
  if (!got) return;
  if (got != want) {
    char *g = text_print(ctx, got), *w = text_print(ctx, want);
    CHECK_STR(g, w, "%s", graph_cases[i].name);
    free(g);
    free(w);
  }
  CHECK(uop_graph_size(ctx, got) <= uop_graph_size(ctx, in), "%s: graph grew", graph_cases[i].name);
  for (uint32_t k = 0; k < in->nsrc && k < got->nsrc; k++) {
    check_values(ctx, in->src[k], got->src[k], graph_cases[i].name);
    check_proved(ctx, in->src[k], got->src[k], graph_cases[i].name);
  }
}

static const UOp *parse_with(Ctx *ctx, const char *prelude, const char *expr, int line) {
  size_t n = strlen(prelude) + strlen(expr) + 2;
  char *text = malloc(n);
  snprintf(text, n, "%s\n%s", prelude, expr);
  const UOp *u = text_parse(ctx, text, "symbolic.txt");
  CHECK(u != NULL, "line %d: %s", line, uj_error(ctx));
  free(text);
  return u;
}

static void run_case(Ctx *ctx, const char *prelude, char *line_text, int line) {
  char *arrow = strstr(line_text, "=>");
  CHECK(arrow != NULL, "line %d: no '=>'", line);
  if (!arrow) return;
  *arrow = '\0';
  const UOp *in = parse_with(ctx, prelude, line_text, line);
  const UOp *want = parse_with(ctx, prelude, arrow + 2, line);
  if (!in || !want) return;
  const UOp *got = symbolic_simplify(ctx, in);
  CHECK(got != NULL, "line %d: simplify failed: %s", line, uj_error(ctx));
  if (!got) return;
  if (got != want) {
    char *g = text_print(ctx, got), *w = text_print(ctx, want);
    CHECK_STR(g, w, "line %d: %s", line, line_text);
    free(g);
    free(w);
  }
  CHECK(uop_graph_size(ctx, got) <= uop_graph_size(ctx, in), "line %d: graph grew", line);
  char where[32];
  snprintf(where, sizeof where, "line %d", line);
  check_values(ctx, in, got, where);
  check_proved(ctx, in, got, where);
}

/* uj_simplify gives a fixpoint: a rule that declined to copy a shared
 * node (IDIV(4x + y, 4) beside MOD(4x + y, 4)) fires once the other user
 * let it go (MOD(y, 4)), in the same call (graph_rewrite_fixpoint). */
static void test_fixpoint(Ctx *ctx) {
  const char *prelude = "%x = (DEFINE_VAR:int32 x 0 15)\n%y = (DEFINE_VAR:int32 y 0 6)\n%i = (ADD (MUL %x (CONST:int32 4)) %y)";
  const UOp *in = parse_with(ctx, prelude, "(SINK (IDIV %i (CONST:int32 4)) (MOD %i (CONST:int32 4)))", __LINE__);
  const UOp *want = parse_with(ctx, prelude, "(SINK (ADD %x (IDIV %y (CONST:int32 4))) (MOD %y (CONST:int32 4)))", __LINE__);
  const UOp *once = in ? symbolic_simplify(ctx, in) : NULL, *got = in ? uj_simplify(ctx, in) : NULL;
  CHECK(once && once != want, "one walk stops short (else this case tests nothing)");
  char *g = got ? text_print(ctx, got) : NULL, *w = want ? text_print(ctx, want) : NULL;
  CHECK(got == want, "uj_simplify: the fixpoint\n got:  %s\n want: %s", g ? g : uj_error(ctx), w ? w : "");
  CHECK(got && uj_simplify(ctx, got) == got, "simplifying the result again gives it back");
  free(g), free(w);
  for (uint32_t k = 0; got && k < 2; k++) check_values(ctx, in->src[k], got->src[k], "fixpoint");
}

int main(void) {
  const char *cases_path = getenv("UJ_SYMBOLIC_CASES"); /* another case file, for debugging */
  char *text = read_file(cases_path ? cases_path : UJ_TEST_DATA "/symbolic.txt");
  CHECK(text != NULL, "cannot read symbolic.txt");
  if (!text) return check_report("test_symbolic");
  char *sep = strstr(text, "\n---\n");
  CHECK(sep != NULL, "no prelude separator");
  if (!sep) return free(text), check_report("test_symbolic");
  *sep = '\0';
  int line = 1, cases = 0;
  for (char *p = text; p < sep; p++) line += *p == '\n';
  line += 2; /* the "---" line, then the first case */
  uj_ctx *ctx = uj_ctx_new();
  for (char *s = sep + 5, *nl; *s; s = nl + 1, line++) {
    nl = strchr(s, '\n');
    if (!nl) nl = s + strlen(s) - 1;
    char saved = nl[0];
    nl[0] = '\0';
    if (s[0] && s[0] != ';') run_case(ctx, text, s, line), cases++;
    nl[0] = saved;
    if (!saved) break;
  }
  for (size_t i = 0; i < sizeof graph_cases / sizeof *graph_cases; i++)
    run_graph_case(ctx, (int)i), cases++;
  test_fixpoint(ctx);
  printf("%d cases\n", cases);
  prove_report("test_symbolic", &proofs);
  CHECK(cases >= 100, "only %d cases", cases);
  uj_ctx_free(ctx);
  free(text);
  return check_report("test_symbolic");
}
