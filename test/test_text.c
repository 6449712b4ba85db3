/* test_text.c — the text form: printer and parser (docs/text-form.md).
 *
 * In: the .uop corpus in test/data/roundtrip, tables of inputs with their
 * canonical print or their exact error message, graphs built in C. Checks:
 * parse(print(g)) is g itself and printing is a fixpoint; messages carry
 * where:line:col; a chain a million nodes deep prints and parses (both are
 * iterative); text_print_node's depth and truncation. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "uop/alu.h"
#include "uop/spec.h"
#include "uop/text.h"

/* ---- helpers ---- */

static char *read_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  char *text = NULL;
  size_t len = 0, cap = 0, n;
  char chunk[4096];
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
    if (len + n + 1 > cap) {
      cap = (len + n + 1) * 2;
      char *t = realloc(text, cap);
      if (!t) break;
      text = t;
    }
    memcpy(text + len, chunk, n);
    len += n;
  }
  fclose(f);
  if (text) text[len] = '\0';
  return text ? text : calloc(1, 1);
}

/* Checks the round trip of g: parse(print(g)) == g, print is a fixpoint.
 * Returns the print (malloc'd) or NULL. */
static char *check_round_trip(Ctx *ctx, const UOp *g, const char *name) {
  char *first = text_print(ctx, g);
  CHECK(first != NULL, "%s: print failed: %s", name, ctx->error);
  if (!first) return NULL;
  const UOp *again = text_parse(ctx, first, name);
  CHECK(again == g, "%s: parse(print(g)) is not g: %s\n%s", name, ctx->error, first);
  char *second = again ? text_print(ctx, again) : NULL;
  CHECK_STR(second, first, "%s: print(parse(print(g))) differs", name);
  free(second);
  return first;
}

/* A CONST from a word without uop_const_word (which hands memcpy a NULL
 * source array). */
static const UOp *const_word(Ctx *ctx, DType dt, uint64_t word) {
  const UOp *none[1] = {NULL};
  int64_t v = (int64_t)word_normalize((uj_scalar)dt.scalar, word);
  return uop_new(ctx, UJ_OP_CONST, dt, none, 0, (Arg){NULL, &v, 1});
}

/* ---- the corpus ---- */

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void check_corpus_file(const char *dir, const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  char *text = read_file(path);
  CHECK(text != NULL, "cannot read %s", path);
  if (!text) return;
  Ctx *ctx = uj_ctx_new();
  const UOp *g = text_parse(ctx, text, file);
  CHECK(g != NULL, "%s: %s", file, ctx->error);
  if (g) CHECK(spec_check_graph(ctx, g), "%s: spec: %s", file, ctx->error);
  if (g) free(check_round_trip(ctx, g, file));
  uj_ctx_free(ctx);
  free(text);
}

static void test_corpus(void) {
  const char *dir = UJ_TEST_DATA "/roundtrip";
  DIR *d = opendir(dir);
  CHECK(d != NULL, "cannot open %s", dir);
  if (!d) return;
  char *names[512];
  size_t n = 0;
  for (struct dirent *e; (e = readdir(d)) && n < 512;) {
    size_t len = strlen(e->d_name);
    if (len > 4 && strcmp(e->d_name + len - 4, ".uop") == 0) names[n++] = strdup(e->d_name);
  }
  closedir(d);
  qsort(names, n, sizeof *names, compare_names);
  CHECK(n >= 30, "the corpus has %zu programs, want at least 30", n);
  for (size_t i = 0; i < n; i++) {
    check_corpus_file(dir, names[i]);
    free(names[i]);
  }
}

/* ---- canonical prints ---- */

static const struct {
  const char *in, *out;
} canonical[] = {
    {"(ADD (CONST:int 1) (CONST:int 2))", "(ADD:int32 (CONST:int32 1) (CONST:int32 2))\n"},
    {"%x = (DEFINE_VAR:int n 0 10)\n(ADD (MUL %x %x) (CONST:int 1))",
     "%0 = (DEFINE_VAR:int32 n 0 10)\n(ADD:int32 (MUL:int32 %0 %0) (CONST:int32 1))\n"},
    {"(SINK)", "(SINK)\n"},
    {"(SINK:void)", "(SINK)\n"},
    {"(STORE (PARAM:float* 0) (CONST:float 1))",
     "(STORE (PARAM:float32* 0) (CONST:float32 1.0))\n"},
    {"(SINK (CONST:float32 0.1) (CONST:float16 65504) (CONST:float32 1e-45) (CONST:float64 100))",
     "(SINK (CONST:float32 0.1) (CONST:float16 65504.0) (CONST:float32 1e-45) (CONST:float64 "
     "100.0))\n"},
    {"(SINK (CONST:float32 -0.0) (CONST:float32 nan) (CONST:float32 -inf) (CONST:bfloat16 "
     "3.14159))",
     "(SINK (CONST:float32 -0.0) (CONST:float32 nan) (CONST:float32 -inf) (CONST:bfloat16 "
     "3.14))\n"},
    {"(SINK (CONST:uint64 18446744073709551615) (CONST:int64 -9223372036854775808) (CONST:bool 1))",
     "(SINK (CONST:uint64 18446744073709551615) (CONST:int64 -9223372036854775808) (CONST:bool "
     "true))\n"},
    /* a CONST used twice stays inline; a shared non-CONST gets a binding */
    {"%c = (CONST:int 3)\n(MUL %c %c)", "(MUL:int32 (CONST:int32 3) (CONST:int32 3))\n"},
    {"%a = (PARAM:int 0) %b = (NEG %a) (SUB (ADD %a %b) %b)",
     "%0 = (PARAM:int32 0)\n%1 = (NEG:int32 %0)\n(SUB:int32 (ADD:int32 %0 %1) %1)\n"},
    {"(BUFFER:float*local 0 16 \"CUDA:0\")", "(BUFFER:float32*local 0 16 \"CUDA:0\")\n"},
    {"(CALL f 1 2 (SINK))", "(CALL f 1 2 (SINK))\n"},
};

static void test_canonical(void) {
  for (size_t i = 0; i < sizeof canonical / sizeof *canonical; i++) {
    Ctx *ctx = uj_ctx_new();
    const UOp *g = text_parse(ctx, canonical[i].in, "<canon>");
    CHECK(g != NULL, "parse of %s: %s", canonical[i].in, ctx->error);
    char *s = g ? check_round_trip(ctx, g, canonical[i].in) : NULL;
    CHECK_STR(s, canonical[i].out, "canonical print of %s", canonical[i].in);
    free(s);
    uj_ctx_free(ctx);
  }
}

/* ---- parse errors ---- */

static const struct {
  const char *in, *message;
} parse_errors[] = {
    {"", "<t>:1:1: empty program"},
    {"  ; just a comment\n", "<t>:2:1: empty program"},
    {"(ADDD 1 2)", "<t>:1:2: unknown op 'ADDD'"},
    {"(CONST:flot32 1)", "<t>:1:8: unknown dtype 'flot32'"},
    {"(CONST 1)", "<t>:1:1: CONST needs a dtype (write CONST:float32)"},
    {"(CAST (CONST:int32 1))", "<t>:1:1: CAST needs a dtype (write CAST:float32)"},
    {"(ADD %3 %3)", "<t>:1:6: undefined reference '%3'"},
    {"%a = (CONST:int 1)\n%a = (CONST:int 2)\n%a", "<t>:2:1: reference '%a' defined twice"},
    {"(ADD:int32 (CONST:int32 1)\n  (CONST:int32 2)",
     "<t>:2:18: unexpected end of input, expected ')'"},
    {"(CONST:int32 1) (CONST:int32 2)", "<t>:1:17: more than one expression at top level"},
    {"(CONST:int32 1)\n%0 = (CONST:int32 2)", "<t>:2:1: more than one expression at top level"},
    {"(CONST:int32 1))", "<t>:1:16: expected end of input but found ')'"},
    {"(CONST:int32 99999999999999999999)", "<t>:1:14: integer 99999999999999999999 out of range"},
    {"(PARAM:int32 9223372036854775808)", "<t>:1:14: integer 9223372036854775808 out of range"},
    {"(CONST:int8 300)", "<t>:1:13: CONST: 300 out of range for int8"},
    {"(CONST:int8 -129)", "<t>:1:13: CONST: -129 out of range for int8"},
    {"(CONST:uint8 -1)", "<t>:1:14: CONST: -1 out of range for uint8"},
    {"(CONST:uint64 18446744073709551616)", "<t>:1:15: integer 18446744073709551616 out of range"},
    {"(CONST:int32 1.5)", "<t>:1:14: CONST: expected an integer but found '1.5'"},
    {"(CONST:bool 2)", "<t>:1:13: CONST: expected true or false but found '2'"},
    {"(CONST:float32 1e)", "<t>:1:16: CONST: expected a number but found '1e'"},
    {"(CONST:float32 infinity)", "<t>:1:16: CONST: expected a number but found 'infinity'"},
    {"(CONST:int32)", "<t>:1:13: CONST: expected a value but found ')'"},
    {"(CONST:int32 1 2)", "<t>:1:16: CONST: unexpected arg '2'"},
    {"(CONST:float32* 1)", "<t>:1:1: CONST must have a value dtype, not float32*"},
    {"(CONST:int32x4 1)", "<t>:1:1: CONST must be a scalar, not int32x4"},
    {"(ADD:int32 5 (CONST:int32 1))", "<t>:1:12: ADD: unexpected arg '5'"},
    {"(ADD:int32 (CONST:int32 1) 5)", "<t>:1:28: expected ')' but found '5'"},
    {"(ADD (CONST:int32 1) (CONST:float32 1))",
     "<t>:1:1: ADD: sources have different dtypes int32 and float32"},
    {"(ADD:float32 (CONST:int32 1) (CONST:int32 2))",
     "<t>:1:1: ADD must have dtype int32, not float32"},
    {"(SUB (CONST:int32 1)\n     (SQRT (CONST:int32 4)))",
     "<t>:2:6: SQRT does not take dtype int32"},
    {"(WHERE (CONST:int32 1) (CONST:int32 1) (CONST:int32 1))",
     "<t>:1:1: WHERE condition must be bool, not int32"},
    {"(LOAD (CONST:int32 1))", "<t>:1:1: LOAD needs a pointer, not int32"},
    {"(DEFINE_VAR:int32 n 10 0)", "<t>:1:1: DEFINE_VAR n has min 10 > max 0"},
    {"(DEFINE_VAR:int32 5 0 1)", "<t>:1:19: DEFINE_VAR: expected a name but found '5'"},
    {"(DEFINE_VAR:int32 n 0)", "<t>:1:22: DEFINE_VAR: expected a max but found ')'"},
    {"(PARAM:float32* x)", "<t>:1:17: PARAM: expected a slot number but found 'x'"},
    {"(BUFFER:float32* 0 16)", "<t>:1:22: BUFFER: expected a device name but found ')'"},
    {"(BUFFER:float32* 0 16 \"abc)", "<t>:1:23: unterminated string"},
    {"(BUFFER:float32* 0 16 \"a\\q\")",
     "<t>:1:25: bad escape in string (write \\\" \\\\ or \\xHH, HH not 00)"},
    {"(BUFFER:float32* 0 16 \"a\\x00\")",
     "<t>:1:25: bad escape in string (write \\\" \\\\ or \\xHH, HH not 00)"},
    {"(CALL 1 2)", "<t>:1:7: CALL: expected a callee name but found '1'"},
    {"(CALL f 1 \"x\")", "<t>:1:11: CALL: unexpected arg '\"x\"'"},
    {"%0 = (CONST:int32 1)\n", "<t>:2:1: unexpected end of input, expected an expression"},
    {"%", "<t>:1:1: expected a reference name after '%'"},
    {"(ADD % %)", "<t>:1:6: expected a reference name after '%'"},
    {"()", "<t>:1:2: expected an op name but found ')'"},
    {"(ADD:)", "<t>:1:6: expected a dtype but found ')'"},
    {"(ADD:int32 (CONST:int32 1)", "<t>:1:27: unexpected end of input, expected ')'"},
    {"= (SINK)", "<t>:1:1: expected an expression but found '='"},
    {"%a = = (SINK)", "<t>:1:6: expected an expression but found '='"},
    {"(NEG:int32 (CONST:int32 1) (CONST:int32 1))", "<t>:1:1: NEG takes 1 source, not 2"},
    {"(SINK (INDEX (PARAM:float32* 0)))", "<t>:1:7: INDEX of a pointer takes an index and a gate, not 0 sources"},
    {"\n\n   (SINK\n\t(CONST:float32 1)\n\t(STORE (PARAM:float32* 0) (CONST:int32 1)))",
     "<t>:5:2: STORE of int32 through float32*"},
    {"(CONST:int32 "
     "1234567890123456789012345678901234567890123456789012345678901234567890)",
     "<t>:1:14: integer 1234567890123456789012345678901234567890123456789012345678901234567890 out "
     "of range"},
    {"(ADD:int32 (CONST:int32 1) "
     "abcdefghijabcdefghijabcdefghijabcdefghijabcdefghij)",
     "<t>:1:28: expected ')' but found 'abcdefghijabcdefghijabcdefghijabcdefghij...'"},
};

static void test_parse_errors(void) {
  Ctx *ctx = uj_ctx_new();
  for (size_t i = 0; i < sizeof parse_errors / sizeof *parse_errors; i++) {
    const UOp *g = text_parse(ctx, parse_errors[i].in, "<t>");
    CHECK(g == NULL, "parse of %s should fail", parse_errors[i].in);
    CHECK_STR(ctx->error, parse_errors[i].message, "message for %s", parse_errors[i].in);
  }
  uj_ctx_free(ctx);
}

/* ---- deep graphs ---- */

enum { DEEP = 1000000 };

/* ADD(ADD(...ADD(c, c)..., c), c): every ADD has one user, so the whole
 * chain prints as one nested expression a million levels deep. */
static void test_deep_chain(void) {
  Ctx *ctx = uj_ctx_new();
  const UOp *c = text_parse(ctx, "(CONST:int32 1)", "<c>");
  const UOp *x = c;
  for (int i = 0; i < DEEP && x; i++) x = uop_binary(ctx, UJ_OP_ADD, x, c);
  CHECK(x != NULL, "building the chain: %s", ctx->error);
  char *s = x ? check_round_trip(ctx, x, "<deep chain>") : NULL;
  CHECK(s && strncmp(s, "(ADD:int32 (ADD:int32 (ADD:int32 ", 33) == 0, "chain print starts %.40s",
        s ? s : "");
  CHECK(s && strlen(s) == (size_t)DEEP * strlen("(ADD:int32  (CONST:int32 1))") +
                              strlen("(CONST:int32 1)\n"),
        "chain print has length %zu", s ? strlen(s) : 0);
  free(s);
  uj_ctx_free(ctx);
}

/* x = ADD(x, x): every node is shared, so a million bindings. */
static void test_deep_shared(void) {
  Ctx *ctx = uj_ctx_new();
  const UOp *x = text_parse(ctx, "(PARAM:int64 0)", "<p>");
  for (int i = 0; i < DEEP && x; i++) x = uop_binary(ctx, UJ_OP_ADD, x, x);
  char *s = x ? check_round_trip(ctx, x, "<deep shared>") : NULL;
  const char *tail = s ? strstr(s, "%999999 = ") : NULL;
  CHECK_STR(tail, "%999999 = (ADD:int64 %999998 %999998)\n(ADD:int64 %999999 %999999)\n",
            "end of the shared chain");
  free(s);
  uj_ctx_free(ctx);
}

/* ---- text_print_node ---- */

static void test_print_node(void) {
  Ctx *ctx = uj_ctx_new();
  const UOp *g = text_parse(
      ctx, "(MUL:int32 (ADD:int32 (PARAM:int32 0) (CONST:int32 1)) (CONST:int32 2))", "<n>");
  char buf[256];
  text_print_node(g, 0, buf, sizeof buf);
  CHECK_STR(buf, "(MUL:int32 ... ...)", "depth 0");
  text_print_node(g, 1, buf, sizeof buf);
  CHECK_STR(buf, "(MUL:int32 (ADD:int32 ... ...) (CONST:int32 2))", "depth 1");
  text_print_node(g, 2, buf, sizeof buf);
  CHECK_STR(buf, "(MUL:int32 (ADD:int32 (PARAM:int32 0) (CONST:int32 1)) (CONST:int32 2))",
            "depth 2");
  text_print_node(g, 1000, buf, sizeof buf);
  CHECK_STR(buf, "(MUL:int32 (ADD:int32 (PARAM:int32 0) (CONST:int32 1)) (CONST:int32 2))",
            "depth 1000");
  text_print_node(g, -1, buf, sizeof buf);
  CHECK_STR(buf, "(MUL:int32 ... ...)", "negative depth");
  text_print_node(g, 2, buf, 20);
  CHECK_STR(buf, "(MUL:int32 (ADD:...", "cut to 20 bytes");
  text_print_node(g, 0, buf, 20); /* "(MUL:int32 ... ...)" is 19: fits exactly */
  CHECK_STR(buf, "(MUL:int32 ... ...)", "exact fit");
  text_print_node(g, 0, buf, 19);
  CHECK_STR(buf, "(MUL:int32 ... ...", "one short");
  text_print_node(g, 0, buf, 3);
  CHECK_STR(buf, "..", "tiny buffer");
  text_print_node(g, 0, buf, 1);
  CHECK_STR(buf, "", "one byte");
  buf[0] = 'x';
  text_print_node(g, 0, buf, 0);
  CHECK(buf[0] == 'x', "size 0 writes nothing");
  /* deep graphs: depth is bounded, the walk does not recurse */
  const UOp *x = g;
  for (int i = 0; i < 100000; i++) x = uop_unary(ctx, UJ_OP_NEG, x);
  text_print_node(x, 1 << 30, buf, sizeof buf);
  CHECK(strlen(buf) == sizeof buf - 1 && strcmp(buf + sizeof buf - 4, "...") == 0, "deep node: %s",
        buf);
  uj_ctx_free(ctx);
}

/* ---- CONSTs of every scalar round-trip ---- */

static uint64_t next_random(uint64_t *state) {
  *state ^= *state << 13, *state ^= *state >> 7, *state ^= *state << 17;
  return *state;
}

static void test_const_words(void) {
  Ctx *ctx = uj_ctx_new();
  uint64_t rng = 0x9e3779b97f4a7c15ull;
  for (int s = UJ_BOOL; s < UJ_SCALAR_COUNT; s++) {
    for (int i = 0; i < 2000; i++) {
      /* random bit patterns: every exponent, subnormals, NaNs, ints */
      uint64_t word = word_from_mem_bits((uj_scalar)s, next_random(&rng));
      const UOp *c = const_word(ctx, dt_scalar((uj_scalar)s), word);
      char name[64];
      snprintf(name, sizeof name, "<const %s %d>", scalar_table[s].name, i);
      free(check_round_trip(ctx, c, name));
    }
  }
  uj_ctx_free(ctx);
}

/* ---- names, the public API ---- */

/* A DEFINE_VAR through the public API; not uj_var, which hands memcpy a
 * NULL source array. */
static const uj_uop *var(uj_ctx *ctx, const char *name) {
  const uj_uop *none[1] = {NULL};
  int64_t range[2] = {0, 3};
  return uj_uop_new(ctx, UJ_OP_DEFINE_VAR, uj_dtype_scalar(UJ_INT32), none, 0,
                    (uj_arg){name, range, 2});
}

static void test_names_and_api(void) {
  uj_ctx *ctx = uj_ctx_new();
  const uj_uop *v = var(ctx, "odd \"name\"\\\n\x7f");
  const uj_uop *w = var(ctx, "inf");
  const uj_uop *sum = uj_uop_new(ctx, UJ_OP_ADD, uj_dtype_scalar(UJ_INT32),
                                 (const uj_uop *[]){v, w}, 2, (uj_arg){0});
  char *s = uj_print(ctx, sum);
  CHECK_STR(s,
            "(ADD:int32 (DEFINE_VAR:int32 \"odd \\\"name\\\"\\\\\\x0a\\x7f\" 0 3) "
            "(DEFINE_VAR:int32 inf 0 3))\n",
            "quoted names");
  CHECK(s && uj_parse(ctx, s, "<api>") == sum, "uj_parse of the print: %s", uj_error(ctx));
  free(s);
  CHECK(uj_parse(ctx, "(SINK", "<api>") == NULL, "bad text");
  CHECK_STR(uj_error(ctx), "<api>:1:6: unexpected end of input, expected ')'", "uj_parse error");
  CHECK(uj_parse(ctx, "(SINK)", NULL) != NULL, "uj_parse ok");
  CHECK_STR(uj_error(ctx), "", "uj_parse clears the error");
  CHECK(uj_parse(ctx, "(", NULL) == NULL, "no where");
  CHECK_STR(uj_error(ctx), "<input>:1:2: unexpected end of input, expected an op name",
            "default where");
  CHECK(uj_print(ctx, NULL) == NULL, "print of NULL");
  uj_ctx *other = uj_ctx_new();
  CHECK(uj_print(other, sum) == NULL, "print of a node from another context");
  CHECK_STR(uj_error(other), "print: the node is not from this context", "foreign node");
  uj_ctx_free(other);
  uj_ctx_free(ctx);
}

int main(void) {
  test_corpus();
  test_canonical();
  test_parse_errors();
  test_print_node();
  test_const_words();
  test_names_and_api();
  test_deep_chain();
  test_deep_shared();
  return check_report("test_text");
}
