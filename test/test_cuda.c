/* test_cuda.c — the CUDA runtime (backends/cuda) where no GPU is: device
 * names, a missing driver, the toolkit's stub library, and, through a
 * fake driver (fake_cuda.c, UJ_CUDA_LIBRARY), every call the runtime makes:
 * opening and its refusals, copies (small ones and ones through pinned
 * staging), PTX compiled for the device's arch and loaded, launches whose
 * arguments the fake checks against the PTX, the program cache and the
 * memory pool on a second run, the driver's log of a refused module, and
 * everything given back when the session ends. On a GPU the tensor
 * suites run on "CUDA" instead (their `*_cuda` tests). */
#define _DEFAULT_SOURCE /* setenv */
#include <stdlib.h>
#include <string.h>

#include "fake_driver.h"
#include "cuda/cuda_device.h"
#include "runtime/device.h"
#include "tensor/tensor_impl.h"

typedef struct FakeStats {
  long allocs, frees, live_allocs, host_allocs, live_host, modules, live_modules, launches, bad_launches, copies_in,
      copies_out, events_live, contexts;
  char last_error[256];
} FakeStats;

static const FakeStats *stats;


static void test_names(void) {
  const char *why = open_error("CUDA:x");
  CHECK(why && strstr(why, "the number after ':'"), "CUDA:x: %s", why ? why : "opened");
  why = open_error("CUDA:300");
  CHECK(why && strstr(why, "the number after ':'"), "CUDA:300: %s", why ? why : "opened");
  why = open_error("CPU:1");
  CHECK(why && strstr(why, "takes no number"), "CPU:1: %s", why ? why : "opened");
  why = open_error("CUDAX");
  CHECK(why && strstr(why, "unknown device"), "CUDAX: %s", why ? why : "opened");
}

static void test_absent(void) {
  setenv("UJ_CUDA_LIBRARY", "/nonexistent/libcuda.so.1", 1);
  const char *why = open_error("CUDA");
  CHECK(why && strncmp(why, "no CUDA device: cannot open the driver library", 46) == 0, "absent: %s", why ? why : "opened");
#ifdef UJ_CUDA_STUB
  setenv("UJ_CUDA_LIBRARY", UJ_CUDA_STUB, 1);
  why = open_error("CUDA");
  CHECK(why && strncmp(why, "no CUDA device: ", 16) == 0, "stub: %s", why ? why : "opened");
#endif
}

static void test_refusals(void) {
  static const struct {
    const char *mode, *want;
  } cases[] = {
      {"nodevice", "no CUDA device: cuInit: CUDA_ERROR_NO_DEVICE"},
      {"old", "no CUDA device: the driver is CUDA 11.8; uopjit needs 12.0 or later"},
      {"cc75", "no CUDA device: Fake GPU has compute capability 7.5; uopjit needs 8.0 or later"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    setenv("FAKE_CUDA", cases[i].mode, 1);
    const char *why = open_error("CUDA");
    CHECK(why && strncmp(why, cases[i].want, strlen(cases[i].want)) == 0, "%s: %s", cases[i].mode, why ? why : "opened");
  }
  unsetenv("FAKE_CUDA");
  const char *why = open_error("CUDA:1");
  CHECK(why && strstr(why, "device 1 asked for, 1 present"), "CUDA:1: %s", why ? why : "opened");
  CHECK(stats->contexts == 0 && stats->live_allocs == 0, "a refused open keeps nothing: %ld contexts", stats->contexts);
}

/* Data copied in and out, bit for bit: n floats (a large n goes through
 * the pinned staging buffers, several chunks of them). */
static void round_trip(uj_session *s, int64_t n) {
  float *in = malloc((size_t)n * sizeof *in), *out = malloc((size_t)n * sizeof *out);
  for (int64_t i = 0; i < n; i++) in[i] = (float)i * 0.5f - 3;
  long before = stats->copies_in;
  uj_tensor *t = uj_tensor_from_data(s, UJ_FLOAT32, &n, 1, in);
  memset(out, 0, (size_t)n * sizeof *out);
  CHECK(t && uj_tensor_to_host(t, out, (size_t)n * sizeof *out) == UJ_OK, "round trip %lld: %s", (long long)n,
        uj_session_error(s));
  CHECK(memcmp(in, out, (size_t)n * sizeof *out) == 0, "round trip of %lld floats differs", (long long)n);
  long chunks = (long)(((size_t)n * sizeof *in + (8 << 20) - 1) / (8 << 20));
  long want = (size_t)n * sizeof *in < (1 << 20) ? 1 : chunks;
  CHECK(stats->copies_in - before == want, "%lld floats: %ld copies in, want %ld", (long long)n,
        stats->copies_in - before, want);
  uj_tensor_free(t);
  free(in), free(out);
}

/* A program (the max of the row sums of x * 2 + 1) realized twice: the
 * second loads no module. */
static void test_program(uj_session *s) {
  int64_t shape[2] = {64, 300};
  float *data = calloc(64 * 300, sizeof *data);
  long modules = 0;
  for (int round = 0; round < 2; round++) {
    uj_tensor *x = uj_tensor_from_data(s, UJ_FLOAT32, shape, 2, data);
    uj_tensor *y = uj_tensor_binary_scalar(UJ_BIN_ADD, uj_tensor_binary_scalar(UJ_BIN_MUL, x, 2, false), 1, false);
    uj_tensor *r = uj_tensor_reduce(UJ_RED_SUM, y, (int[]){1}, 1, false);
    uj_tensor *m = uj_tensor_reduce(UJ_RED_MAX, r, (int[]){0}, 1, false);
    long launches = stats->launches;
    CHECK(m && uj_tensor_realize(&m, 1) == UJ_OK, "realize: %s", uj_session_error(s));
    CHECK(stats->launches > launches, "round %d: no launch", round);
    CHECK(stats->bad_launches == 0, "round %d: %s", round, stats->last_error);
    if (round >= 1) CHECK(stats->modules == modules, "run %d loaded %ld modules", round, stats->modules - modules);
    modules = stats->modules;
    uj_tensor_free(m), uj_tensor_free(r), uj_tensor_free(y), uj_tensor_free(x);
  }
  CHECK(stats->modules >= 1, "no module was loaded");
  free(data);
}

/* Freed device memory is kept for the next allocation of its size; the
 * pool's drain gives it back to the driver. */
static void test_pool(uj_session *s) {
  Device *d = s->device;
  RtBuffer *a = rt_buffer_new(d, 1000);
  long allocs = stats->allocs;
  void *mem = a ? a->mem : NULL;
  rt_buffer_unref(a);
  RtBuffer *b = rt_buffer_new(d, 1000);
  CHECK(b && b->mem == mem && stats->allocs == allocs, "the pool's block is used again: %ld new", stats->allocs - allocs);
  rt_buffer_unref(b);
  long live = stats->live_allocs;
  device_pool_drain(d);
  CHECK(stats->live_allocs < live, "the drain frees the pool's blocks");
}

/* The driver's log reaches the user, with the kernel's name. */
static void test_refused_ptx(void) {
  setenv("FAKE_CUDA", "badptx", 1);
  const char *why = NULL;
  uj_session *s = uj_session_new("CUDA", &why);
  CHECK(s != NULL, "open: %s", why ? why : "?");
  uj_tensor *x = s ? uj_tensor_ones(s, UJ_FLOAT32, (int64_t[]){8}, 1) : NULL;
  uj_tensor *y = x ? uj_tensor_unary(UJ_UN_EXP, x) : NULL;
  CHECK(y && uj_tensor_realize(&y, 1) != UJ_OK, "a refused module must fail the realize");
  const char *e = s ? uj_session_error(s) : "";
  CHECK(strstr(e, "the driver cannot load its PTX") && strstr(e, "CUDA_ERROR_INVALID_PTX") &&
            strstr(e, "ptxas fatal   : fake refusal"),
        "the log: %s", e);
  uj_tensor_free(y), uj_tensor_free(x);
  uj_session_free(s);
  unsetenv("FAKE_CUDA");
}

/* The disk cache on a GPU: a second session (a second process, as far as
 * compiling goes) loads each kernel's PTX from the cache the first filled,
 * and the module it loads works as the compiled one did. */
static void test_disk_cache(void) {
  char dir[] = "/tmp/uj_test_cuda_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(false, "mkdtemp");
    return;
  }
  setenv("UJ_CACHE_DIR", dir, 1), setenv("UJ_CACHE", "1", 1);
  for (int round = 0; round < 2; round++) {
    const char *why = NULL;
    uj_session *s = uj_session_new("CUDA", &why);
    CHECK(s != NULL, "open: %s", why ? why : "?");
    if (!s) break;
    long launches = stats->launches;
    uj_tensor *x = uj_tensor_ones(s, UJ_FLOAT32, (int64_t[]){8, 8}, 2);
    uj_tensor *y = uj_tensor_reduce(UJ_RED_SUM, uj_tensor_unary(UJ_UN_EXP, x), (int[]){1}, 1, false);
    CHECK(y && uj_tensor_realize(&y, 1) == UJ_OK, "round %d: %s", round, uj_session_error(s));
    CHECK(stats->launches > launches && stats->bad_launches == 0, "round %d: launches: %s", round, stats->last_error);
    size_t n = s->device->ncache, loaded = 0;
    for (size_t i = 0; i < n; i++) loaded += s->device->cache[i].program && ((CudaProgram *)s->device->cache[i].program)->loaded;
    CHECK(n > 0 && loaded == (round ? n : 0), "round %d: %zu of %zu kernels from the disk cache", round, loaded, n);
    uj_tensor_free(y), uj_tensor_free(x);
    uj_session_free(s);
  }
  unsetenv("UJ_CACHE"), unsetenv("UJ_CACHE_DIR");
  char cmd[64];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  CHECK(system(cmd) == 0, "%s", cmd);
}

static void test_fake(void) {
  setenv("UJ_CUDA_LIBRARY", UJ_FAKE_CUDA, 1);
  void *lib = NULL;
  stats = fake_stats(UJ_FAKE_CUDA, "fake_cuda_stats", &lib);
  if (!stats) return;
  test_refusals();
  const char *why = NULL;
  setenv("UJ_DEBUG", "1", 1); /* launches timed by events: all destroyed by the end */
  uj_session *s = uj_session_new("CUDA", &why);
  CHECK(s != NULL, "open: %s", why ? why : "?");
  if (s) {
    const TargetDesc *t = s->device->desc;
    CHECK(strcmp(t->name, "sm_90") == 0 && t->cores == 7 && t->l2_bytes == (1 << 20), "target %s, %u SMs", t->name,
          t->cores);
    char model[256];
    s->device->ops->describe(s->device, model, sizeof model);
    CHECK(strstr(model, "Fake GPU sm_90 8192 MiB") != NULL, "describe: %s", model);
    round_trip(s, 10);
    round_trip(s, 3 * (1 << 20) + 100); /* 12 MiB: two chunks */
    round_trip(s, 6 * (1 << 20) + 5);   /* 24 MiB: three, each pinned buffer used twice */
    test_program(s);
    test_pool(s);
  }
  uj_session_free(s);
  unsetenv("UJ_DEBUG");
  test_refused_ptx();
  test_disk_cache();
  CHECK(stats->live_allocs == 0 && stats->live_host == 0 && stats->live_modules == 0 && stats->events_live == 0 &&
            stats->contexts == 0,
        "left behind: %ld allocations, %ld pinned, %ld modules, %ld events, %ld contexts", stats->live_allocs,
        stats->live_host, stats->live_modules, stats->events_live, stats->contexts);
  dlclose(lib);
}

int main(void) {
  test_names();
  test_absent();
  test_fake();
  return check_report("test_cuda");
}
