/* tensor_train.c — the tensor API in one page: lazy tensors, autodiff and
 * an optimizer. Fits y = x @ w + b to data made from known weights, with
 * SGD and momentum, and prints the loss as it falls and the weights found.
 * Built and run by the tests (test/CMakeLists.txt: example_tensor_train),
 * and outside the tree by the install test (test/install_test.sh). */
#include <stdio.h>
#include <uopjit/tensor.h>

enum { ROWS = 64, COLS = 4, STEPS = 150 };

static int fail(uj_session *s) {
  fprintf(stderr, "tensor_train: %s\n", uj_session_error(s));
  uj_session_free(s);
  return 1;
}

int main(void) {
  const char *why = NULL;
  uj_session *s = uj_session_new("CPU", &why);
  if (!s) return fprintf(stderr, "tensor_train: %s\n", why), 1;

  /* The data: x random, y from the weights to find (1, -2, 3, 0.5) and 0.25. */
  const float truth[COLS] = {1, -2, 3, 0.5f};
  uj_tensor *x = uj_tensor_randn(s, (int64_t[]){ROWS, COLS}, 2, 1);
  uj_tensor *w_true = uj_tensor_from_data(s, UJ_FLOAT32, (int64_t[]){COLS, 1}, 2, truth);
  uj_tensor *y = uj_tensor_binary_scalar(UJ_BIN_ADD, uj_tensor_matmul(x, w_true), 0.25, false);
  if (!y || uj_tensor_realize(&y, 1) != UJ_OK) return fail(s);

  /* The parameters, and the optimizer that steps them. */
  uj_tensor *w = uj_tensor_zeros(s, UJ_FLOAT32, (int64_t[]){COLS, 1}, 2);
  uj_tensor *b = uj_tensor_zeros(s, UJ_FLOAT32, (int64_t[]){1}, 1);
  if (uj_tensor_set_requires_grad(w, true) != UJ_OK || uj_tensor_set_requires_grad(b, true) != UJ_OK)
    return fail(s);
  uj_tensor *params[] = {w, b};
  uj_optimizer *opt = uj_optim_new(s, &(uj_optim_config){.kind = UJ_OPTIM_SGD, .lr = 0.1, .momentum = 0.9},
                                   params, 2);
  if (!opt) return fail(s);

  for (int step = 0; step < STEPS; step++) {
    uj_optim_zero_grad(opt);
    /* loss = mean((x @ w + b - y)^2): a graph, computed by the step below */
    uj_tensor *xw = uj_tensor_matmul(x, w), *pred = uj_tensor_binary(UJ_BIN_ADD, xw, b);
    uj_tensor *err = uj_tensor_binary(UJ_BIN_SUB, pred, y), *sq = uj_tensor_binary(UJ_BIN_MUL, err, err);
    uj_tensor *loss = uj_tensor_reduce(UJ_RED_MEAN, sq, NULL, 0, false);
    float l = 0;
    if (!loss || uj_tensor_backward(loss) != UJ_OK || uj_optim_step(opt, &loss, 1) != UJ_OK ||
        uj_tensor_to_host(loss, &l, sizeof l) != UJ_OK)
      return fail(s);
    if (step % 50 == 0) printf("step %3d  loss %.6f\n", step, l);
    uj_tensor *step_tensors[] = {xw, pred, err, sq, loss}; /* a step's graph: freed, so memory stays flat */
    for (size_t i = 0; i < sizeof step_tensors / sizeof *step_tensors; i++) uj_tensor_free(step_tensors[i]);
  }

  float wf[COLS], bf;
  if (uj_tensor_to_host(w, wf, sizeof wf) != UJ_OK || uj_tensor_to_host(b, &bf, sizeof bf) != UJ_OK)
    return fail(s);
  printf("w %.3f %.3f %.3f %.3f  b %.3f\n", wf[0], wf[1], wf[2], wf[3], bf);
  uj_optim_free(opt);
  uj_session_free(s); /* frees every tensor of the session */
  return 0;
}
