/* test_device.c — the device API (runtime/device.h) on both devices it
 * has: a kernel with a variable launched on the CPU with its value
 * (LaunchArgs); the evaluator as a device ("EVAL", shaped for sm_90): a
 * workgroup kernel launched through the API gives the evaluator's words
 * once synchronized (not before: launches are deferred, as a GPU's), a
 * racy one fails at the synchronize with the race's message, a launch
 * with the wrong buffers fails at once with a message, a copy runs what
 * was issued before it; tensor sessions on EVAL (max and int sums over
 * rows as workgroups, elementwise ops) give what the CPU's give; the
 * BEAM keys read the device's description, not its name. A kernel's grid
 * (signature.h) puts its innermost `global` RANGE on x; launch_dims gives
 * the blocks and threads of a launch and refuses sizes past the target's
 * limits; a device whose memory is not the host's is not poisoned by the
 * pool (checked under AddressSanitizer). */
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
  CHECK(p && device_launch(d, p, &(LaunchArgs){.buffers = bufs, .bytes = bytes, .n = 1, .vars = &n, .nvars = 1}) && d->ops->synchronize(d, NULL), "launch: %s",
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
  CHECK(p && device_launch(d, p, &(LaunchArgs){.buffers = bufs, .bytes = bytes, .n = 2}), "launch: %s", uj_error(ctx));
  CHECK(out[0] == 0, "a launch ran before a synchronize: EVAL defers them, as a GPU may");
  CHECK(d->ops->synchronize(d, NULL), "synchronize: %s", uj_error(ctx));
  CHECK(memcmp(out, want, sizeof out) == 0, "EVAL gives the evaluator's words: %g, want %g", out[0], want[0]);
  memset(out, 0, sizeof out);
  float copy[ROWS] = {0};
  CHECK(p && device_launch(d, p, &(LaunchArgs){.buffers = bufs, .bytes = bytes, .n = 2}) && d->ops->copy_out(d, copy, out, sizeof copy) &&
            memcmp(copy, want, sizeof copy) == 0,
        "a copy after a launch reads its result: %g, want %g", copy[0], want[0]);
  CHECK(p && !device_launch(d, p, &(LaunchArgs){.buffers = bufs, .bytes = bytes, .n = 1}) &&
            strstr(uj_error(ctx), "EVAL: the kernel takes 2 buffers and 0 variables, not 1 and 0"),
        "too few buffers: %s", uj_error(ctx));
  const UOp *racy = uj_parse(ctx, row_sum_text(1), "racy");
  p = racy ? device_program(d, racy, "racy") : NULL;
  float keep[ROWS] = {7, 7, 7};
  bufs[0] = keep;
  CHECK(p && device_launch(d, p, &(LaunchArgs){.buffers = bufs, .bytes = bytes, .n = 2}) && !d->ops->synchronize(d, NULL) &&
            strstr(uj_error(ctx), "a race"),
        "a racy kernel fails at the synchronize: %s", uj_error(ctx));
  CHECK(keep[0] == 7, "nothing written");
  CHECK(d->ops->synchronize(d, NULL), "a failure is reported once");
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

/* relu(a @ b + bias) on dev, 128 x 48 by 48 x 192: a GEMM the GPU list
 * tiles in shared memory (gemm.c), in k order as the CPU's. */
static void run_gemm(const char *dev, float *out) {
  const char *error = NULL;
  uj_session *s = uj_session_new(dev, &error);
  CHECK(s != NULL, "%s: %s", dev, error ? error : "");
  if (!s) return;
  uj_tensor *a = uj_tensor_randn(s, (int64_t[]){128, 48}, 2, 1), *b = uj_tensor_randn(s, (int64_t[]){48, 192}, 2, 2);
  uj_tensor *bias = uj_tensor_randn(s, (int64_t[]){192}, 1, 3);
  uj_tensor *y = uj_tensor_unary(UJ_UN_RELU, uj_tensor_binary(UJ_BIN_ADD, uj_tensor_matmul(a, b), bias));
  CHECK(y && uj_tensor_to_host(y, out, 128 * 192 * sizeof *out) == UJ_OK, "%s: gemm: %s", dev, uj_session_error(s));
  uj_session_free(s);
}

/* A convolution, 2 x 4 x 16 x 16 by 32 x 4 x 3 x 3, padding 1: on a GPU
 * target an implicit GEMM (gemm.c: the output channels are its rows, the
 * images and pixels its columns, the channels and the window its k). */
static void run_conv(const char *dev, float *out) {
  const char *error = NULL;
  uj_session *s = uj_session_new(dev, &error);
  CHECK(s != NULL, "%s: %s", dev, error ? error : "");
  if (!s) return;
  uj_tensor *x = uj_tensor_randn(s, (int64_t[]){2, 4, 16, 16}, 4, 4), *w = uj_tensor_randn(s, (int64_t[]){32, 4, 3, 3}, 4, 5);
  uj_tensor *y = uj_tensor_conv2d(x, w, NULL, NULL, (int64_t[]){1, 1}, NULL, 1);
  CHECK(y && uj_tensor_to_host(y, out, 2 * 32 * 16 * 16 * sizeof *out) == UJ_OK, "%s: conv: %s", dev, uj_session_error(s));
  uj_session_free(s);
}

static void test_gemm_session(void) {
  static float conv_cpu[2 * 32 * 16 * 16], conv_eval[2 * 32 * 16 * 16];
  run_conv("CPU", conv_cpu);
  run_conv("EVAL", conv_eval);
  CHECK(!memcmp(conv_cpu, conv_eval, sizeof conv_cpu) && conv_cpu[5] != 0, "EVAL's implicit-GEMM convolution gives the CPU's words");
  static float cpu[128 * 192], eval[128 * 192];
  run_gemm("CPU", cpu);
  run_gemm("EVAL", eval);
  size_t positive = 0;
  for (size_t i = 0; i < 128 * 192; i++) positive += cpu[i] > 0;
  CHECK(!memcmp(cpu, eval, sizeof cpu) && positive > 1000, "EVAL's tiled GEMM gives the CPU's words (%zu positive)", positive);
}

/* ---- grids and launch sizes ---- */

static void test_launch_dims(Ctx *ctx) {
  const TargetDesc *sm90 = target_desc_find("sm_90");
  const UOp *k = uj_parse(ctx, "%n = (DEFINE_VAR:int32 n 1 200000)\n%r = (RANGE global 0 (CONST:int32 6))\n"
                               "%c = (RANGE global 1 %n)\n"
                               "(SINK (END %r (END %c (STORE (INDEX (PARAM:int32* 0) (ADD (MUL %r %n) %c)) %c))))", "grid");
  KernelSig sig;
  CHECK(k && kernel_sig_build(ctx, k, &sig), "grid kernel: %s", uj_error(ctx));
  if (!k) return;
  const UOp *rows = k->src[0]->src[0], *cols = k->src[0]->src[1]->src[0];
  CHECK(sig.grid.nglobal == 2 && sig.grid.global[0] == cols && sig.grid.global[1] == rows && !sig.grid.workgroups,
        "the innermost RANGE (the columns) goes on x, the rows on y");
  uint32_t grid[3], block[3];
  int64_t n = 1000;
  CHECK(launch_dims(ctx, sm90, &sig, &n, grid, block) && grid[0] == 4 && grid[1] == 6 && grid[2] == 1 &&
            block[0] == 256 && block[1] == 1 && block[2] == 1,
        "n = 1000: grid %u %u %u, block %u %u %u: %s", grid[0], grid[1], grid[2], block[0], block[1], block[2], uj_error(ctx));
  n = 10;
  CHECK(launch_dims(ctx, sm90, &sig, &n, grid, block) && grid[0] == 1 && block[0] == 16,
        "n = 10: one block of 16 threads along x, not %u of %u", grid[0], block[0]);
  kernel_sig_free(&sig);
  const UOp *tall = uj_parse(ctx, "%n = (DEFINE_VAR:int32 n 1 200000)\n%r = (RANGE global 0 %n)\n"
                                  "%c = (RANGE global 1 (CONST:int32 4))\n"
                                  "(SINK (END %r (END %c (STORE (INDEX (PARAM:int32* 0) (ADD (MUL %r (CONST:int32 4)) %c)) %c))))", "tall");
  n = 100000;
  CHECK(tall && kernel_sig_build(ctx, tall, &sig) && !launch_dims(ctx, sm90, &sig, &n, grid, block) &&
            strstr(uj_error(ctx), "launch: the grid's blocks along y is 100000, past sm_90's limit 65535"),
        "a grid past the target's limit: %s", uj_error(ctx));
  kernel_sig_free(&sig);
  const UOp *wg = uj_parse(ctx, row_sum_text(-1), "row sum");
  CHECK(wg && kernel_sig_build(ctx, wg, &sig) && sig.grid.workgroups && launch_dims(ctx, sm90, &sig, NULL, grid, block) &&
            grid[0] == ROWS && grid[1] == 1 && block[0] == THREADS && block[1] == 1,
        "a workgroup a row: grid %u, block %u: %s", grid[0], block[0], uj_error(ctx));
  kernel_sig_free(&sig);
}

/* A device whose memory is not the host's (a GPU's addresses): the pool
 * must not poison it. Here it is host memory in disguise, read after it
 * went to the pool: AddressSanitizer reports the read if it was poisoned. */
static unsigned char fake_memory[4096];
static void *fake_alloc(Device *d, size_t bytes) { return (void)d, bytes <= sizeof fake_memory ? fake_memory : NULL; }
static void fake_free(Device *d, void *mem) { (void)d, (void)mem; }
static const TargetDesc *fake_target(Device *d) { return (void)d, target_desc_find("sm_90"); }

static void test_device_memory_not_poisoned(Ctx *ctx) {
  DeviceOps ops = {.alloc = fake_alloc, .free = fake_free, .target = fake_target, .host_memory = false};
  Device d = {.name = "FAKE", .ops = &ops, .ctx = ctx, .pool.limit = 1 << 20};
  d.desc = ops.target(&d);
  RtBuffer *b = rt_buffer_new(&d, 1000);
  CHECK(b && b->mem == fake_memory, "a buffer of the fake device");
  rt_buffer_unref(b); /* to the pool */
  CHECK(d.pool.n == 1, "the pool holds it");
  volatile unsigned char *m = fake_memory;
  m[0] = 1; /* under ASan: a use after poison if the pool poisoned device memory */
  CHECK(m[0] == 1, "device memory in the pool is left alone");
  device_pool_drain(&d);
}

int main(void) {
  Ctx *ctx = uj_ctx_new();
  test_cpu_vars(ctx);
  test_eval_device(ctx);
  test_launch_dims(ctx);
  test_device_memory_not_poisoned(ctx);
  uj_ctx_free(ctx);
  test_sessions();
  test_gemm_session();
  return check_report("test_device");
}
