/* test_jit_diff.c — the kernel corpus (kernel_corpus.h) through the CPU JIT,
 * diffed with the reference evaluator: bit-exact, except EXP2/LOG2/SIN
 * (libm; 2 ulps allowed, docs/semantics.md). Also: loops with a variable
 * bound, nested loops, gated loads and stores, value PARAMs. */
#include "kernel_corpus.h"

static void diff_one(Ctx *ctx, const CorpusKernel *k, void *user) {
  int *count = user;
  (*count)++;
  jit_vs_eval(ctx, k->kernel, &k->bufs, NULL, NULL, 0, k->transcendental ? 2 : 0, k->what);
}

static void test_corpus(void) {
  Ctx *ctx = uj_ctx_new();
  int count = 0;
  corpus_each(ctx, diff_one, &count);
  printf("corpus: %d kernels\n", count);
  CHECK(count > 600, "the corpus has %d kernels", count);
  uj_ctx_free(ctx);
}

int main(void) {
  test_corpus();
  return check_report("test_jit_diff");
}
