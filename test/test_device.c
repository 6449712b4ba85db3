/* test_device.c — the device API (runtime/device.h) on both devices it
 * has: a kernel with a variable launched on the CPU with its value
 * (LaunchArgs); the evaluator as a device ("EVAL", shaped for sm_90): a
 * workgroup kernel launched through the API gives the evaluator's words,
 * a racy one fails with the race's message, a launch with the wrong
 * buffers fails with a message; tensor sessions on EVAL (max and int sums
 * over rows as workgroups, elementwise ops) give what the CPU's give; the
 * BEAM keys read the device's description, not its name. */
#include <stdlib.h>

#include "check.h"
#include "runtime/device.h"
#include "uop/eval.h"
#include "uopjit/tensor.h"
#include "uopjit/uopjit.h"
#include "workgroup_kernels.h"

static void test_cpu_vars(Ctx *ctx) {
  const char *why = NULL;
  Device *d = device_open(ctx, "CPU", &why);
  CHECK(d && d->desc && d->desc->kind == TARGET_DESC_CPU, "the CPU device: %s", why ? why : "no target");
  const UOp *k = uj_parse(ctx, "%n = (DEFINE_VAR:int32 n 1 64)\n%i = (RANGE loop 0 %n)\n"
                               "(SINK (END %i (STORE (INDEX (PARAM:int32* 0) %i) (MUL %i %n))))", "vars");
  CHECK(k != NULL, "vars: %s", uj_error(ctx));
  void *p = d && k ? device_program(d, k, "vars") : NULL;
  CHECK(p && device_program(d, k, "vars") == p, "compiled once: %s", uj_error(ctx));
  int32_t out[16] = {0};
  void *bufs[] = {out};
  size_t bytes[] = {sizeof out};
  int64_t n = 10;
  CHECK(p && d->ops->launch(d, p, &(LaunchArgs){bufs, bytes, 1, &n, 1}) && d->ops->synchronize(d), "launch: %s",
        uj_error(ctx));
  for (int i = 0; i < 16; i++) CHECK(out[i] == (i < 10 ? i * 10 : 0), "out[%d] = %d", i, out[i]);
  char machine[512] = "";
  if (d) d->ops->describe(d, machine, sizeof machine);
  CHECK(machine[0] != 0 && d->ops->threads(d) >= 1, "the CPU describes itself: '%s'", machine);
  device_close(d);
}

static void test_eval_device(Ctx *ctx) {
  const char *why = NULL;
  Device *d = device_open(ctx, "EVAL", &why);
  CHECK(d && d->desc == target_desc_find("sm_90"), "the EVAL device is shaped for sm_90: %s", why ? why : "");
  if (!d) return;
  static float in[ROWS * COLS];
  float out[ROWS] = {0}, want[ROWS] = {0};
  for (int i = 0; i < ROWS * COLS; i++) in[i] = (float)((i * 37) % 101) * 0.013f + 0.5f;
  const UOp *k = uj_parse(ctx, row_sum_text(-1), "row sum");
  Eval *ev = eval_new(ctx);
  eval_bind_param(ev, 0, want, sizeof want), eval_bind_param(ev, 1, in, sizeof in);
  CHECK(k && eval_run(ev, k), "the evaluator: %s", uj_error(ctx));
  eval_free(ev);
  void *p = k ? device_program(d, k, "row_sum") : NULL;
  void *bufs[] = {out, in};
  size_t bytes[] = {sizeof out, sizeof in};
  CHECK(p && d->ops->launch(d, p, &(LaunchArgs){bufs, bytes, 2, NULL, 0}), "launch: %s", uj_error(ctx));
  CHECK(memcmp(out, want, sizeof out) == 0, "EVAL gives the evaluator's words: %g, want %g", out[0], want[0]);
  CHECK(p && !d->ops->launch(d, p, &(LaunchArgs){bufs, bytes, 1, NULL, 0}) &&
            strstr(uj_error(ctx), "EVAL: the kernel takes 2 buffers and 0 variables, not 1 and 0"),
        "too few buffers: %s", uj_error(ctx));
  const UOp *racy = uj_parse(ctx, row_sum_text(1), "racy");
  p = racy ? device_program(d, racy, "racy") : NULL;
  float keep[ROWS] = {7, 7, 7};
  bufs[0] = keep;
  CHECK(p && !d->ops->launch(d, p, &(LaunchArgs){bufs, bytes, 2, NULL, 0}) && strstr(uj_error(ctx), "a race"),
        "a racy kernel fails: %s", uj_error(ctx));
  CHECK(keep[0] == 7, "nothing written");
  CHECK(d->ops->describe == NULL && d->ops->threads == NULL, "EVAL: no machine of its own");
  device_close(d);
}

/* Realizes max and int sum over rows, and an elementwise op, on dev. */
static void run_session(const char *dev, float *max_out, int32_t *sum_out, float *ew_out) {
  const char *error = NULL;
  uj_session *s = uj_session_new(dev, &error);
  CHECK(s != NULL, "%s: %s", dev, error ? error : "");
  if (!s) return;
  enum { R = 4, C = 300 };
  static float x[R * C];
  static int32_t y[R * C];
  for (int i = 0; i < R * C; i++) x[i] = (float)((i * 53) % 97) - 40.5f, y[i] = (i * 31) % 1001 - 500;
  int64_t shape[2] = {R, C};
  int axis = 1;
  uj_tensor *a = uj_tensor_from_data(s, UJ_FLOAT32, shape, 2, x), *b = uj_tensor_from_data(s, UJ_INT32, shape, 2, y);
  uj_tensor *m = uj_tensor_reduce(UJ_RED_MAX, a, &axis, 1, false), *t = uj_tensor_reduce(UJ_RED_SUM, b, &axis, 1, false);
  uj_tensor *e = uj_tensor_binary_scalar(UJ_BIN_MUL, uj_tensor_unary(UJ_UN_RELU, a), 3.0, false);
  uj_tensor *all[] = {m, t, e};
  CHECK(uj_tensor_realize(all, 3) == UJ_OK, "%s: realize: %s", dev, uj_session_error(s));
  CHECK(uj_tensor_to_host(m, max_out, R * sizeof *max_out) == UJ_OK && uj_tensor_to_host(t, sum_out, R * sizeof *sum_out) == UJ_OK &&
            uj_tensor_to_host(e, ew_out, R * C * sizeof *ew_out) == UJ_OK,
        "%s: to host: %s", dev, uj_session_error(s));
  uj_session_free(s);
}

static void test_sessions(void) {
  static float max_cpu[4], max_eval[4], ew_cpu[1200], ew_eval[1200];
  int32_t sum_cpu[4] = {0}, sum_eval[4] = {0};
  run_session("CPU", max_cpu, sum_cpu, ew_cpu);
  run_session("EVAL", max_eval, sum_eval, ew_eval);
  CHECK(!memcmp(max_cpu, max_eval, sizeof max_cpu) && !memcmp(sum_cpu, sum_eval, sizeof sum_cpu) &&
            !memcmp(ew_cpu, ew_eval, sizeof ew_cpu),
        "EVAL (workgroups for sm_90) gives the CPU's words: max %g / %g, sum %d / %d", max_cpu[0], max_eval[0], sum_cpu[0],
        sum_eval[0]);
  CHECK(sum_cpu[1] != 0 && max_cpu[2] > 0, "the data are not trivial");
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_cpu_vars(ctx);
  test_eval_device(ctx);
  uj_ctx_free(ctx);
  test_sessions();
  return check_report("test_device");
}
