/* test_transcendental.c — the lowering of EXP2, LOG2 and SIN to polynomial
 * code (lib/codegen/transcendental.c) against the reference evaluator.
 *
 * For float64, float32, float16 and bfloat16 and each op, a loop kernel
 * out[i] = OP(in[i]) is lowered with the dtype masked and run by the
 * evaluator beside the kernel as it was; the outputs are compared in ulps
 * (the maximum is printed per op and dtype) over edge cases (±0, ±inf, NaN,
 * subnormals, the ends of the exponent range, multiples of pi/2, huge
 * arguments), random bit patterns over the whole range and random values
 * in each op's interesting range; float16 and bfloat16 over every bit
 * pattern. Then exact special values, that no masked op remains, that other
 * dtypes are untouched, and that 4-lane vectors, lowered with vector ops,
 * give each lane the scalar lowering's result bit for bit. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/transcendental.h"
#include "eval_util.h"
#include "uopjit/uopjit.h"

enum { MAX_ULP = 4, RANDOM = 20000, MAX_INPUTS = 1 << 16 };
static const double PI = 0x1.921fb54442d18p+1, PIO2 = 0x1.921fb54442d18p+0; /* rounded */

typedef struct Format {
  uj_scalar s;
  const char *name;
  int emax;     /* 2^emax overflows */
  int emin_sub; /* 2^emin_sub is the smallest subnormal */
} Format;

static const Format formats[] = {
  {UJ_FLOAT64, "float64", 1024, -1074},
  {UJ_FLOAT32, "float32", 128, -149},
  {UJ_FLOAT16, "float16", 16, -24},
  {UJ_BFLOAT16, "bfloat16", 128, -133},
};

static const Op ops[] = {UJ_OP_EXP2, UJ_OP_LOG2, UJ_OP_SIN};

/* ---- inputs ---- */

typedef struct Inputs {
  uint64_t w[MAX_INPUTS];
  size_t n;
  uint64_t rng;
} Inputs;

static uint64_t next_random(Inputs *in) {
  in->rng ^= in->rng << 13, in->rng ^= in->rng >> 7, in->rng ^= in->rng << 17;
  return in->rng;
}

static double uniform(Inputs *in, double lo, double hi) {
  return lo + (hi - lo) * (double)(next_random(in) >> 11) * 0x1p-53;
}

static void add(Inputs *in, uj_scalar s, double v) {
  if (in->n < MAX_INPUTS) in->w[in->n++] = word_from_double(s, v);
}

static void add_bits(Inputs *in, uj_scalar s, uint64_t bits) {
  if (in->n < MAX_INPUTS) in->w[in->n++] = word_from_mem_bits(s, bits);
}

/* Arguments whose remainder modulo pi/2 is smallest: for float32 the worst
 * ones of some binades (found by an exhaustive search), for float64 the
 * worst of all doubles (Muller, Elementary Functions); and the two sides
 * of the switch from Cody-Waite to Payne-Hanek. */
static const double near_pio2[] = {
  0x1.f37c8ap+95, 0x1.47d0fep+34, 0x1.f9cbe2p+7, 0x1.32ede2p+85, 0x1.628d4cp+40,
  0x1.2d97c8p+2, 0x1.4ac55cp+21, 0x1.04ccbcp+20, 6381956970095103.0 * 0x1p797,
  0x1.fffffep19, 0x1p20, 0x1.fffffffffffffp29, 0x1p30,
};

/* Values every op sees: zeros, infinities, NaN, subnormals, the ends of the
 * range, numbers near 1 and near multiples of pi/2, both signs. */
static void add_edges(Inputs *in, const Format *f) {
  const double v[] = {0, INFINITY, NAN, 1, 2, 0.5, 3, 10, 0.1, 1e-5, 0.75, 1.5,
                      ldexp(1, f->emin_sub), ldexp(3, f->emin_sub), ldexp(1, f->emin_sub + 10),
                      ldexp(1, -f->emax + 2), ldexp(1, f->emax - 1), ldexp(1.75, f->emax - 1),
                      f->emax, f->emax - 1, f->emax - 0.001, f->emin_sub, f->emin_sub - 1,
                      f->emin_sub - 0.5, f->emin_sub + 0.5, -f->emax + 2, PI, PIO2, PIO2 / 2,
                      1e5, 1e6, 1e10, 1e22, 1e300};
  for (size_t k = 0; k < sizeof v / sizeof *v; k++) add(in, f->s, v[k]), add(in, f->s, -v[k]);
  for (size_t k = 0; k < sizeof near_pio2 / sizeof *near_pio2; k++) add(in, f->s, near_pio2[k]);
  for (int k = 1; k < 2000; k += 7) add(in, f->s, k * PIO2);
  for (int e = 0; e < 1000; e += 3) add(in, f->s, ldexp(PIO2, e) * uniform(in, 1, 2));
}

static void add_random(Inputs *in, const Format *f, Op op) {
  unsigned bits = scalar_table[f->s].bits;
  uint64_t mask = bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
  for (int k = 0; k < RANDOM; k++) add_bits(in, f->s, next_random(in) & mask);
  for (int k = 0; k < RANDOM; k++) {
    if (op == UJ_OP_EXP2) add(in, f->s, uniform(in, f->emin_sub - 10, f->emax + 2));
    if (op == UJ_OP_LOG2) {
      double near1 = 1 + uniform(in, -1, 1) * 1e-6;
      add(in, f->s, k % 2 ? uniform(in, 0.7, 1.5) : near1);
    }
    if (op == UJ_OP_SIN) { /* up to 2^40: Cody-Waite and beyond */
      double scale = ldexp(1, (int)(next_random(in) % 40)), m = rint(uniform(in, 0, scale));
      double near_multiple = m * PIO2 * (1 + uniform(in, -1, 1) * 1e-15);
      add(in, f->s, k % 3 ? uniform(in, -scale, scale) : near_multiple);
    }
  }
}

/* Every bit pattern of a 16-bit format, or edges and random values. */
static void make_inputs(Inputs *in, const Format *f, Op op) {
  in->n = 0;
  in->rng = 0x9e3779b97f4a7c15ull ^ (uint64_t)f->s * 977 ^ (uint64_t)op;
  if (scalar_table[f->s].bits == 16) {
    for (uint64_t b = 0; b < 65536; b++) add_bits(in, f->s, b);
    return;
  }
  add_edges(in, f);
  add_random(in, f, op);
}

/* ---- running kernels ---- */

static size_t scalar_size(uj_scalar s) { return scalar_table[s].bits / 8; }

/* END(RANGE n, STORE(out[i], OP(in[i]))) with in at slot 0, out at 1;
 * elements of `lanes` lanes (n counts elements). */
static const UOp *kernel_lanes(Ctx *ctx, Op op, uj_scalar s, size_t n, unsigned lanes) {
  char text[512], dt[32];
  dtype_str(uj_dtype_vec(s, lanes), dt, sizeof dt);
  snprintf(text, sizeof text,
           "%%i = (RANGE loop 0 (CONST:int32 %zu))\n"
           "(END %%i (STORE (INDEX (PARAM:%s* 1) %%i) (%s (LOAD (INDEX (PARAM:%s* 0) %%i)))))",
           n, dt, op_table[op].name, dt);
  const UOp *u = uj_parse(ctx, text, "<kernel>");
  CHECK(u != NULL, "parse: %s\n%s", uj_error(ctx), text);
  return u;
}

static const UOp *kernel(Ctx *ctx, Op op, uj_scalar s, size_t n) { return kernel_lanes(ctx, op, s, n, 1); }

/* Runs root on in[0..n) and reads out[0..n); false when the run fails. */
static bool run(Ctx *ctx, const UOp *root, uj_scalar s, const uint64_t *in, uint64_t *out,
                size_t n) {
  size_t b = scalar_size(s);
  unsigned char *src = calloc(n, b), *dst = calloc(n, b);
  Eval *ev = eval_new(ctx);
  bool ok = src && dst && ev;
  for (size_t i = 0; ok && i < n; i++) {
    uint64_t bits = word_to_mem_bits(s, in[i]);
    memcpy(src + i * b, &bits, b); /* little endian */
  }
  ok = ok && eval_bind_param(ev, 0, src, n * b) && eval_bind_param(ev, 1, dst, n * b) &&
       eval_run(ev, root);
  for (size_t i = 0; ok && i < n; i++) {
    uint64_t bits = 0;
    memcpy(&bits, dst + i * b, b);
    out[i] = word_from_mem_bits(s, bits);
  }
  CHECK(ok, "eval: %s", uj_error(ctx));
  eval_free(ev);
  free(src);
  free(dst);
  return ok;
}

/* Whether a node op of a masked scalar remains under root. */
static bool has_masked(Ctx *ctx, const UOp *root, unsigned mask) {
  const UOp **nodes;
  size_t n = uop_toposort(ctx, root, &nodes);
  bool found = false;
  for (size_t k = 0; k < n; k++) {
    Op op = (Op)nodes[k]->op;
    bool trans = op == UJ_OP_EXP2 || op == UJ_OP_LOG2 || op == UJ_OP_SIN;
    if (trans && (mask & (1u << nodes[k]->dtype.scalar))) found = true;
  }
  free(nodes);
  return found;
}

/* ---- comparing ---- */

/* The distance in ulps of two non-NaN values of s: how many values of s
 * lie between them, counted from their bit patterns (inf after the largest
 * finite, ±0 one value). */
static double ulps_between(uj_scalar s, uint64_t a, uint64_t b) {
  uint64_t sign = 1ull << (scalar_table[s].bits - 1);
  uint64_t x = word_to_mem_bits(s, a), y = word_to_mem_bits(s, b);
  uint64_t mx = x & ~sign, my = y & ~sign;
  if ((x & sign) != (y & sign)) return (double)(mx + my);
  return (double)(mx > my ? mx - my : my - mx);
}

/* The distance in ulps; NaN against a number, or zeros of two signs, are
 * infinitely far. */
static double ulps(uj_scalar s, uint64_t got, uint64_t want) {
  double g = w2d(got), w = w2d(want);
  if (isnan(g) || isnan(w)) return isnan(g) && isnan(w) ? 0 : INFINITY;
  if (g == 0 && w == 0) return signbit(g) == signbit(w) ? 0 : INFINITY;
  return ulps_between(s, got, want);
}

typedef struct Worst {
  double ulps;
  uint64_t in, got, want;
} Worst;

static Worst compare(uj_scalar s, const uint64_t *in, const uint64_t *got, const uint64_t *want,
                     size_t n) {
  Worst worst = {0, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    double d = ulps(s, got[i], want[i]);
    if (d > worst.ulps) worst = (Worst){d, in[i], got[i], want[i]};
  }
  return worst;
}

/* The simplifier keeps the lowered code's results bit for bit: its float
 * rules must not undo the exact tricks (rint by 1.5·2^mant, TwoSum). */
static void check_simplified(Ctx *ctx, const UOp *low, const Format *f, const Inputs *in,
                             const uint64_t *got) {
  const UOp *simple = uj_simplify(ctx, low);
  uint64_t *out = calloc(in->n, sizeof *out);
  CHECK(simple != NULL, "simplify: %s", uj_error(ctx));
  if (simple && out && run(ctx, simple, f->s, in->w, out, in->n)) {
    size_t i = 0;
    while (i < in->n && out[i] == got[i]) i++;
    CHECK(i == in->n, "%s: simplified code differs at %a: %a, not %a", f->name, w2d(in->w[i]),
          w2d(out[i]), w2d(got[i]));
  }
  free(out);
}

/* The 4-lane kernel lowered with vector ops gives, lane by lane, exactly
 * what the scalar lowering gave (`scalar`) on the same inputs. */
static void check_vector(Ctx *ctx, Op op, const Format *f, const Inputs *in, const uint64_t *scalar) {
  size_t n = in->n / 4 * 4;
  const UOp *ref = kernel_lanes(ctx, op, f->s, n / 4, 4);
  const UOp *low = ref ? transcendental_lower(ctx, ref, 1u << f->s) : NULL;
  CHECK(low && !has_masked(ctx, low, 1u << f->s), "%s %sx4: lowering: %s", op_table[op].name, f->name,
        uj_error(ctx));
  uint64_t *got = calloc(n + 1, sizeof *got);
  if (low && got && run(ctx, low, f->s, in->w, got, n)) {
    size_t bad = 0;
    while (bad < n && got[bad] == scalar[bad]) bad++;
    CHECK(bad == n, "%s %sx4: lane %zu of input %a: %a, scalar lowering %a", op_table[op].name, f->name, bad % 4,
          bad < n ? w2d(in->w[bad]) : 0.0, bad < n ? w2d(got[bad]) : 0.0, bad < n ? w2d(scalar[bad]) : 0.0);
  }
  free(got);
}

/* The lowered kernel against the evaluator's own op, over `in`. */
static void check_accuracy(Ctx *ctx, Op op, const Format *f, Inputs *in) {
  const char *name = op_table[op].name;
  make_inputs(in, f, op);
  const UOp *ref = kernel(ctx, op, f->s, in->n);
  const UOp *low = ref ? transcendental_lower(ctx, ref, 1u << f->s) : NULL;
  CHECK(low != NULL && low != ref, "%s %s: lowering: %s", name, f->name, uj_error(ctx));
  if (!low) return;
  CHECK(!has_masked(ctx, low, 1u << f->s), "%s %s: an op remains after lowering", name, f->name);
  uint64_t *want = calloc(in->n, sizeof *want), *got = calloc(in->n, sizeof *got);
  bool ran = want && got && run(ctx, ref, f->s, in->w, want, in->n) &&
             run(ctx, low, f->s, in->w, got, in->n);
  if (ran) {
    Worst w = compare(f->s, in->w, got, want, in->n);
    printf("  %-4s %-8s max %g ulp over %zu inputs (kernel of %zu nodes)", name, f->name, w.ulps, in->n,
           uop_graph_size(ctx, low));
    if (w.ulps > 0) printf(", at %a: %a, libm %a", w2d(w.in), w2d(w.got), w2d(w.want));
    printf("\n");
    CHECK(w.ulps <= MAX_ULP, "%s %s(%a) = %a, libm %a: %g ulps", f->name, name, w2d(w.in),
          w2d(w.got), w2d(w.want), w.ulps);
    check_simplified(ctx, low, f, in, got);
    check_vector(ctx, op, f, in, got);
  }
  free(want);
  free(got);
}

/* ---- exact values ---- */

typedef struct Exact {
  Op op;
  double x, want; /* the wanted value, before rounding to the format */
} Exact;

/* OP(x) of the lowered kernel, bit for bit, for each case. */
static void check_exact(Ctx *ctx, const Format *f, const Exact *cases, size_t n) {
  for (size_t k = 0; k < n; k++) {
    Op op = cases[k].op;
    const UOp *low = transcendental_lower(ctx, kernel(ctx, op, f->s, 1), 1u << f->s);
    uint64_t x = word_from_double(f->s, cases[k].x), want = word_from_double(f->s, cases[k].want);
    uint64_t got = 0;
    CHECK(low && run(ctx, low, f->s, &x, &got, 1) && got == want, "%s %s(%a) = %a, want %a",
          f->name, op_table[op].name, w2d(x), w2d(got), w2d(want));
  }
}

static void check_specials(Ctx *ctx, const Format *f) {
  double inf = INFINITY, sub = ldexp(1, f->emin_sub), top = ldexp(1, f->emax - 1);
  const Exact cases[] = {
    {UJ_OP_EXP2, -inf, 0}, {UJ_OP_EXP2, inf, inf}, {UJ_OP_EXP2, NAN, NAN},
    {UJ_OP_EXP2, 0, 1}, {UJ_OP_EXP2, -0.0, 1}, {UJ_OP_EXP2, 1, 2}, {UJ_OP_EXP2, -1, 0.5},
    {UJ_OP_EXP2, 10, 1024}, {UJ_OP_EXP2, f->emax, inf}, {UJ_OP_EXP2, 1e30, inf},
    {UJ_OP_EXP2, f->emax - 1, top}, {UJ_OP_EXP2, f->emin_sub, sub},
    {UJ_OP_EXP2, f->emin_sub - 1, 0}, {UJ_OP_EXP2, -1e30, 0},
    {UJ_OP_LOG2, 0, -inf}, {UJ_OP_LOG2, -0.0, -inf}, {UJ_OP_LOG2, -1, NAN},
    {UJ_OP_LOG2, -sub, NAN}, {UJ_OP_LOG2, -inf, NAN}, {UJ_OP_LOG2, inf, inf},
    {UJ_OP_LOG2, NAN, NAN}, {UJ_OP_LOG2, 1, 0}, {UJ_OP_LOG2, 2, 1}, {UJ_OP_LOG2, 0.5, -1},
    {UJ_OP_LOG2, sub, f->emin_sub}, {UJ_OP_LOG2, top, f->emax - 1},
    {UJ_OP_SIN, inf, NAN}, {UJ_OP_SIN, -inf, NAN}, {UJ_OP_SIN, NAN, NAN}, {UJ_OP_SIN, 0, 0},
    {UJ_OP_SIN, -0.0, -0.0}, {UJ_OP_SIN, sub, sub}, {UJ_OP_SIN, -sub, -sub},
  };
  check_exact(ctx, f, cases, sizeof cases / sizeof *cases);
}

/* ---- the mask ---- */

/* Only masked scalars are lowered: the others' nodes stay as they were. */
static void check_mask(Ctx *ctx) {
  const char *text = "(SINK (EXP2 (PARAM:float64 0)) (EXP2 (PARAM:float32 1))"
                     " (LOG2 (PARAM:half 2)) (SIN (PARAM:bfloat16 3))"
                     " (SIN (PARAM:float32x4 4)) (SQRT (PARAM:float64 5)))";
  const UOp *root = uj_parse(ctx, text, "<mask>");
  CHECK(root != NULL, "parse: %s", uj_error(ctx));
  if (!root) return;
  const UOp *low = transcendental_lower(ctx, root, 1u << UJ_FLOAT64 | 1u << UJ_FLOAT16);
  CHECK(low && low->nsrc == 6, "lowering: %s", uj_error(ctx));
  if (!low) return;
  for (uint32_t k = 0; k < 6; k++) {
    bool lowered = k == 0 || k == 2;
    CHECK((low->src[k] != root->src[k]) == lowered, "source %u lowered: %d", k, !lowered);
  }
  CHECK(!has_masked(ctx, low, 1u << UJ_FLOAT64 | 1u << UJ_FLOAT16), "a masked op remains");
  CHECK(transcendental_lower(ctx, root, 0) == root, "mask 0 changes the graph");
  const UOp *low32 = transcendental_lower(ctx, root, 1u << UJ_FLOAT32);
  CHECK(low32 && low32->src[4] != root->src[4] && !has_masked(ctx, low32, 1u << UJ_FLOAT32),
        "float32 and float32x4 are lowered: %s", uj_error(ctx));
}

int main(void) {
  uj_ctx *ctx = uj_ctx_new();
  Inputs *in = malloc(sizeof *in);
  if (!ctx || !in) return 1;
  printf("max ulp error of the lowered ops against the evaluator (libm):\n");
  for (size_t f = 0; f < sizeof formats / sizeof *formats; f++) {
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++)
      check_accuracy(ctx, ops[k], &formats[f], in);
    check_specials(ctx, &formats[f]);
  }
  check_mask(ctx);
  free(in);
  uj_ctx_free(ctx);
  return check_report("test_transcendental");
}
