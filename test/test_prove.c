/* test_prove.c — the prover of the symbolic tests (prove.c), checked.
 *
 * In: pairs of expressions with the verdict z3 must reach: equal ones
 * whose equality rests on one corner of the semantics (C division by 0 and
 * MIN/-1, shift counts mod the width, wrap-around, saturating float->int
 * casts, NaN, -0.0, float16/bfloat16 rounding, fused multiply-add), and
 * different ones, among them pairs that differ at one point of millions,
 * which sampling misses and a proof must not. A wrong encoding shows as a
 * wrong verdict here, or as PROVE_MISMATCH (z3's point, rechecked by the
 * evaluator, is not one). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "prove.h"
#include "uop/text.h"

static const char prelude[] =
    "%z = (DEFINE_VAR:int32 z -8 8)\n"
    "%n = (DEFINE_VAR:int32 n 0 1000)\n"
    "%w = (DEFINE_VAR:int32 w 0 2147483647)\n"
    "%m = (DEFINE_VAR:int32 m -2147483648 2147483647)\n"
    "%u = (DEFINE_VAR:uint32 u 0 4294967295)\n"
    "%l = (DEFINE_VAR:int64 l -9223372036854775808 9223372036854775807)\n"
    "%b = (DEFINE_VAR:int8 b -128 127)\n"
    "%h = (DEFINE_VAR:int32 h 0 2048)\n"
    "%c = (DEFINE_VAR:int8 c -128 127)\n"
    "%f = (CAST:float32 %z)\n"
    "%g = (CAST:float32 %w)\n";

static const struct {
  const char *a, *b;
  ProveVerdict want;
} cases[] = {
    /* integer division: truncation, x/0 all ones, x%0 x, MIN/-1 wraps */
    {"(IDIV:int32 %z (CONST:int32 0))", "(CONST:int32 -1)", PROVE_SAME},
    {"(MOD:int32 %z (CONST:int32 0))", "%z", PROVE_SAME},
    {"(IDIV:int32 %m (CONST:int32 -1))", "(NEG:int32 %m)", PROVE_SAME},
    {"(MOD:int32 %m (CONST:int32 -1))", "(CONST:int32 0)", PROVE_SAME},
    {"(IDIV:int32 %z (CONST:int32 2))", "(SHR:int32 %z (CONST:int32 1))", PROVE_DIFFERENT}, /* -1/2 = 0, -1>>1 = -1 */
    {"(ADD:int8 (MUL:int8 (IDIV:int8 %b %c) %c) (MOD:int8 %b %c))", "%b", PROVE_SAME},
    {"(IDIV:uint32 %u (CONST:uint32 0))", "(CONST:uint32 4294967295)", PROVE_SAME},
    {"(MOD:int64 %l (CONST:int64 -7))", "(MOD:int64 %l (CONST:int64 7))", PROVE_SAME},
    {"(IDIV:int64 %l (CONST:int64 -7))", "(NEG:int64 (IDIV:int64 %l (CONST:int64 7)))", PROVE_SAME},
    /* shifts: the count mod the width, arithmetic right shift of signed */
    {"(SHL:int32 %z (CONST:int32 33))", "(MUL:int32 %z (CONST:int32 2))", PROVE_SAME},
    {"(SHL:int32 %m (CONST:int32 -1))", "(SHL:int32 %m (CONST:int32 31))", PROVE_SAME},
    {"(SHR:int32 %m (CONST:int32 31))", "(NEG:int32 (CAST:int32 (CMPLT:bool %m (CONST:int32 0))))", PROVE_SAME},
    {"(SHR:uint32 %u (CONST:uint32 31))", "(IDIV:uint32 %u (CONST:uint32 2147483648))", PROVE_SAME},
    {"(SHL:int8 %b (CAST:int8 %z))", "(SHL:int8 %b (CAST:int8 (ADD:int32 %z (CONST:int32 8))))", PROVE_SAME},
    /* wrap-around */
    {"(ADD:int32 %w (CONST:int32 1))", "(SUB:int32 %w (CONST:int32 -1))", PROVE_SAME},
    {"(CMPLT:bool %w (ADD:int32 %w (CONST:int32 1)))", "(CONST:bool true)", PROVE_DIFFERENT}, /* MAX + 1 */
    {"(CAST:int8 (ADD:int32 (CAST:int32 %b) (CONST:int32 256)))", "%b", PROVE_SAME},
    {"(MUL:int64 %l (CONST:int64 -1))", "(NEG:int64 %l)", PROVE_SAME},
    {"(XOR:int32 (XOR:int32 %m %w) %w)", "%m", PROVE_SAME},
    {"(AND:int32 %w (CONST:int32 255))", "(MOD:int32 %w (CONST:int32 256))", PROVE_SAME},
    {"(AND:int32 %m (CONST:int32 255))", "(MOD:int32 %m (CONST:int32 256))", PROVE_DIFFERENT},
    /* one point in millions: sampling misses these, a proof does not */
    {"(WHERE:int32 (CMPEQ:bool %w (CONST:int32 1234567891)) (CONST:int32 0) %w)", "%w", PROVE_DIFFERENT},
    {"(MOD:int32 %w (CONST:int32 2147483647))", "%w", PROVE_DIFFERENT},
    {"(IDIV:int32 (MUL:int32 %n (CONST:int32 3)) (CONST:int32 3))", "%n", PROVE_SAME},
    /* floats: NaN, -0.0, saturating casts, rounding, fused multiply-add */
    {"(CMPNE:bool (FDIV:float32 %f %f) (FDIV:float32 %f %f))", "(CMPEQ:bool %z (CONST:int32 0))", PROVE_SAME},
    {"(MAX:float32 (NEG:float32 %f) (CONST:float32 -0.0))", "(MAX:float32 (NEG:float32 %f) (CONST:float32 0.0))",
     PROVE_DIFFERENT},
    {"(MAX:float32 (FDIV:float32 %f %f) (CONST:float32 1.0))", "(CONST:float32 1.0)", PROVE_DIFFERENT},
    {"(CAST:int8 (MUL:float32 %f (CONST:float32 100.0)))",
     "(WHERE:int8 (CMPLT:bool %z (CONST:int32 2)) (WHERE:int8 (CMPLT:bool %z (CONST:int32 -1)) (CONST:int8 -128)"
     " (CAST:int8 (MUL:int32 %z (CONST:int32 100)))) (CONST:int8 127))",
     PROVE_SAME},
    {"(CAST:int32 (FDIV:float32 %f (CONST:float32 0.0)))",
     "(WHERE:int32 (CMPLT:bool %z (CONST:int32 0)) (CONST:int32 -2147483648)"
     " (WHERE:int32 (CMPLT:bool (CONST:int32 0) %z) (CONST:int32 2147483647) (CONST:int32 0)))",
     PROVE_SAME},
    {"(CAST:int32 (CAST:float16 %h))", "%h", PROVE_SAME},
    {"(CAST:int32 (CAST:float16 (ADD:int32 %h (CONST:int32 1))))", "(ADD:int32 %h (CONST:int32 1))",
     PROVE_DIFFERENT}, /* 2049 -> 2048 */
    {"(CAST:int32 (CAST:bfloat16 (AND:int32 %h (CONST:int32 255))))", "(AND:int32 %h (CONST:int32 255))",
     PROVE_SAME},
    {"(CAST:int32 (CAST:bfloat16 %h))", "%h", PROVE_DIFFERENT},
    {"(CAST:int32 %g)", "%w", PROVE_DIFFERENT}, /* 2^24 + 1 rounds */
    {"(ADD:float32 (MUL:float32 %g %g) (NEG:float32 (MUL:float32 %g %g)))", "(CONST:float32 0.0)", PROVE_SAME},
    {"(MULACC:float32 %g %g (NEG:float32 (MUL:float32 %g %g)))", "(CONST:float32 0.0)", PROVE_DIFFERENT},
    {"(BITCAST:int32 (FDIV:float32 %f %f))",
     "(WHERE:int32 (CMPEQ:bool %z (CONST:int32 0)) (CONST:int32 2143289344) (CONST:int32 1065353216))",
     PROVE_SAME},
    /* unknown functions: equal under any function, or a real difference */
    {"(EXP2:float32 (ADD:float32 %f (CONST:float32 0.0)))", "(EXP2:float32 %f)", PROVE_SAME},
    {"(EXP2:float32 %f)", "%f", PROVE_DIFFERENT},
    /* outside the encoding */
    {"(LOAD:int32 (INDEX:int32* (PARAM:int32* 0) %n))", "(LOAD:int32 (INDEX:int32* (PARAM:int32* 0) %n))",
     PROVE_UNSUPPORTED},
};

static const char *verdict_name(ProveVerdict v) {
  static const char *names[] = {"same", "different", "mismatch", "unknown", "unsupported"};
  return names[v];
}

static const UOp *parse(Ctx *ctx, const char *expr, int i) {
  size_t n = strlen(prelude) + strlen(expr) + 1;
  char *text = malloc(n);
  snprintf(text, n, "%s%s", prelude, expr);
  const UOp *u = text_parse(ctx, text, "test_prove");
  CHECK(u != NULL, "case %d: %s", i, uj_error(ctx));
  free(text);
  return u;
}

int main(void) {
  uj_ctx *ctx = uj_ctx_new();
  ProveStats stats = {0};
  for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
    const UOp *a = parse(ctx, cases[i].a, i), *b = parse(ctx, cases[i].b, i);
    if (!a || !b) continue;
    char why[512];
    ProveVerdict v = prove_same(ctx, a, b, PROVE_RLIMIT_GOLDEN, &stats, why, sizeof why);
    CHECK(v == cases[i].want, "case %d: %s vs %s: %s, want %s (%s)", i, cases[i].a, cases[i].b, verdict_name(v),
          verdict_name(cases[i].want), why);
    if (v == PROVE_DIFFERENT) CHECK(strstr(why, "at ") == why, "case %d: no point in \"%s\"", i, why);
  }
  /* the point of a difference names the values where the two differ */
  for (int i = 0; i < (int)(sizeof cases / sizeof *cases); i++) {
    if (!strstr(cases[i].a, "1234567891")) continue;
    const UOp *a = parse(ctx, cases[i].a, i), *b = parse(ctx, cases[i].b, i);
    char why[512] = "";
    CHECK(a && b && prove_same(ctx, a, b, PROVE_RLIMIT_GOLDEN, NULL, why, sizeof why) == PROVE_DIFFERENT &&
              strstr(why, "w=1234567891") != NULL,
          "case %d: the point is \"%s\"", i, why);
  }
  prove_report("test_prove", &stats);
  uj_ctx_free(ctx);
  return check_report("test_prove");
}
