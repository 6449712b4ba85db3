/* test_symbolic.c — the symbolic rules, case by case, checked two ways.
 *
 * In: test/data/symbolic.txt (a prelude of variables, then one case a line:
 * INPUT => EXPECTED). For each case: the simplified INPUT must be the node
 * EXPECTED parses to; the reference evaluator must give the same value for
 * INPUT and the result on random points of the variables' ranges (and their
 * ends); and the result must not be a larger graph. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "symbolic/symbolic.h"
#include "uop/eval.h"
#include "uop/text.h"

enum { MAX_VARS = 16, POINTS = 64 };

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

static void check_values(Ctx *ctx, const UOp *a, const UOp *b, int line) {
  Vars vars = {0};
  collect_vars(ctx, a, &vars);
  uint64_t rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)line;
  for (int p = 0; p < POINTS; p++) {
    int64_t values[MAX_VARS];
    uint64_t wa[16] = {0}, wb[16] = {0};
    pick_point(&vars, p, &rng, values);
    bool ok_a = eval_expr(ctx, a, vars.names, values, vars.n, wa);
    bool ok_b = ok_a && eval_expr(ctx, b, vars.names, values, vars.n, wb);
    CHECK(ok_a && ok_b, "line %d: evaluation failed: %s", line, uj_error(ctx));
    if (!ok_a || !ok_b) return;
    CHECK(memcmp(wa, wb, sizeof wa) == 0, "line %d: values differ at point %d: %llx vs %llx",
          line, p, (unsigned long long)wa[0], (unsigned long long)wb[0]);
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
  check_values(ctx, in, got, line);
}

int main(void) {
  char *text = read_file(UJ_TEST_DATA "/symbolic.txt");
  CHECK(text != NULL, "cannot read symbolic.txt");
  if (!text) return check_report("test_symbolic");
  char *sep = strstr(text, "\n---\n");
  CHECK(sep != NULL, "no prelude separator");
  if (!sep) return free(text), check_report("test_symbolic");
  *sep = '\0';
  int line = 1, cases = 0;
  for (char *p = text; p < sep; p++) line += *p == '\n';
  line++;
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
  printf("%d cases\n", cases);
  CHECK(cases >= 100, "only %d cases", cases);
  uj_ctx_free(ctx);
  free(text);
  return check_report("test_symbolic");
}
