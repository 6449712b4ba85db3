/* test_amd.c — the AMD runtime (backends/amd) where no AMD GPU is: a
 * missing runtime, the real one's hsa_init failing without /dev/kfd
 * (where libhsa-runtime64 is installed), the kernarg layout and the AQL
 * packet, and, through a fake runtime (fake_hsa.c, UJ_HSA_LIBRARY),
 * every call the device makes: opening and its refusals, copies through
 * the staging block, code objects linked for gfx90a, gfx942 and gfx1100
 * and loaded with their kernarg sizes read from their metadata, dispatch
 * packets checked as the packet processor would, and everything given
 * back when the session ends. */
#define _DEFAULT_SOURCE /* setenv */
#include <stdlib.h>
#include <string.h>

#include "amd/dispatch.h"
#include "fake_driver.h"
#include "tensor/tensor_impl.h"

typedef struct FakeStats {
  long live_allocs, live_queues, live_signals, live_execs, live_readers, dispatches, bad, copies, inits;
  uint32_t last_kernarg_bytes;
  char last_error[256];
} FakeStats;

static const FakeStats *stats;


static void test_absent(void) {
  setenv("UJ_HSA_LIBRARY", "/nonexistent/libhsa-runtime64.so.1", 1);
  const char *why = open_error("AMD");
  CHECK(why && strncmp(why, "no AMD GPU: cannot open the HSA runtime", 39) == 0, "absent: %s", why ? why : "opened");
  why = open_error("AMD:x");
  CHECK(why && strstr(why, "the number after ':'"), "AMD:x: %s", why ? why : "opened");
#ifdef UJ_HSA_REAL
  setenv("UJ_HSA_LIBRARY", UJ_HSA_REAL, 1);
  why = open_error("AMD");
  CHECK(!why || strncmp(why, "no AMD GPU: ", 12) == 0, "the real runtime: %s", why);
#endif
}

/* Pointers 8 bytes, an int32 variable 4, an int64 one aligned to 8. */
static void test_kernargs(void) {
  DType ptr = {UJ_FLOAT32, UJ_AS_GLOBAL, 1};
  KernelParam params[3] = {{true, true, false, ptr}, {false, false, false, ptr}, {true, false, false, dt_scalar(UJ_FLOAT32)}};
  KernelVar vars[2] = {{"m", dt_scalar(UJ_INT32), 0, 9}, {"n", dt_scalar(UJ_INT64), 0, 9}};
  KernelSig sig = {.params = params, .nparams = 3, .vars = vars, .nvars = 2};
  float value = 2.5f;
  int dev = 0;
  void *buffers[3] = {&dev, NULL, &value};
  int64_t vals[2] = {-7, 1ll << 40};
  LaunchArgs a = {.buffers = buffers, .n = 3, .vars = vals, .nvars = 2};
  unsigned char out[64];
  memset(out, 0xee, sizeof out);
  size_t n = amd_kernargs(&sig, &a, out);
  CHECK(n == 32 && amd_kernargs(&sig, NULL, NULL) == 32, "kernargs: %zu bytes, want 32", n);
  uint64_t p0;
  float f;
  int32_t m;
  int64_t nn;
  memcpy(&p0, out, 8), memcpy(&f, out + 16, 4), memcpy(&m, out + 20, 4), memcpy(&nn, out + 24, 8);
  CHECK(p0 == (uint64_t)(uintptr_t)&dev && f == 2.5f && m == -7 && nn == (1ll << 40), "kernarg values");
  AmdProgram prog = {.kernel_object = 77, .group_bytes = 512, .private_bytes = 16};
  HsaDispatchPacket pk;
  memset(&pk, 0xff, sizeof pk);
  LaunchArgs l = {.grid = {3, 2, 1}, .block = {256, 1, 1}};
  amd_packet_fill(&pk, &prog, &l, out, (HsaSignal){5});
  CHECK(pk.grid_size[0] == 768 && pk.grid_size[1] == 2 && pk.grid_size[2] == 1 && pk.workgroup_size[0] == 256 &&
            pk.workgroup_size[1] == 1 && (pk.setup & 3) == 2 && (pk.header & 0xff) == HSA_PACKET_DISPATCH &&
            (pk.header >> HSA_HEADER_BARRIER & 1) && pk.kernel_object == 77 && pk.group_segment_size == 512 &&
            pk.private_segment_size == 16 && pk.kernarg_address == out && pk.completion_signal.handle == 5,
        "packet: grid %u %u, setup %u, header 0x%x", pk.grid_size[0], pk.grid_size[1], pk.setup, pk.header);
}

static void round_trip(uj_session *s, int64_t n) {
  float *in = malloc((size_t)n * sizeof *in), *out = calloc((size_t)n, sizeof *out);
  for (int64_t i = 0; i < n; i++) in[i] = (float)i - 0.25f;
  uj_tensor *t = uj_tensor_from_data(s, UJ_FLOAT32, &n, 1, in);
  CHECK(t && uj_tensor_to_host(t, out, (size_t)n * sizeof *out) == UJ_OK, "round trip: %s", uj_session_error(s));
  CHECK(!memcmp(in, out, (size_t)n * sizeof *out), "round trip of %lld floats differs", (long long)n);
  uj_tensor_free(t);
  free(in), free(out);
}

/* A session on the fake GPU of arch: its kernels link for it, load, and
 * dispatch as the fake's packet processor wants. */
static void test_arch(const char *arch) {
  setenv("FAKE_HSA_ARCH", arch, 1);
  const char *why = NULL;
  uj_session *s = uj_session_new("AMD", &why);
  CHECK(s != NULL, "%s: %s", arch, why ? why : "?");
  if (!s) return;
  CHECK(!strcmp(s->device->desc->name, arch) && s->device->desc->cores == 7, "%s: target %s", arch, s->device->desc->name);
  round_trip(s, 10);
  round_trip(s, 3 * (1 << 20) + 7); /* 12 MiB: two pieces of the staging block */
  float data[40 * 30];
  for (int i = 0; i < 40 * 30; i++) data[i] = (float)(i % 7);
  uj_tensor *x = uj_tensor_from_data(s, UJ_FLOAT32, (int64_t[]){40, 30}, 2, data);
  uj_tensor *y = uj_tensor_binary_scalar(UJ_BIN_ADD, uj_tensor_binary_scalar(UJ_BIN_MUL, x, 2, false), 1, false);
  uj_tensor *r = uj_tensor_reduce(UJ_RED_SUM, y, (int[]){1}, 1, false);
  uj_tensor *m = uj_tensor_softmax(r, 0);
  long before = stats->dispatches;
  CHECK(m && uj_tensor_realize(&m, 1) == UJ_OK, "%s: realize: %s", arch, uj_session_error(s));
  CHECK(stats->dispatches > before && stats->bad == 0, "%s: %ld dispatches: %s", arch, stats->dispatches - before,
        stats->last_error);
  CHECK(stats->last_kernarg_bytes != UINT32_MAX && stats->last_kernarg_bytes >= 16, "%s: kernarg segment %u", arch,
        stats->last_kernarg_bytes);
  uj_tensor_free(m), uj_tensor_free(r), uj_tensor_free(y), uj_tensor_free(x);
  uj_session_free(s);
}

static void test_fake(void) {
  setenv("UJ_HSA_LIBRARY", UJ_FAKE_HSA, 1);
  void *lib = NULL;
  stats = fake_stats(UJ_FAKE_HSA, "fake_hsa_stats", &lib);
  if (!stats) return;
  static const struct {
    const char *mode, *arch, *name, *want;
  } refusals[] = {
      {"noinit", "", "AMD", "no AMD GPU: "},
      {"nogpu", "", "AMD", "no AMD GPU: GPU 0 asked for, 0 present"},
      {"", "gfx803", "AMD", "no AMD GPU: its arch gfx803 is not one uopjit compiles for"},
      {"", "", "AMD:1", "no AMD GPU: GPU 1 asked for, 1 present"},
  };
  for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++) {
    setenv("FAKE_HSA", refusals[i].mode, 1), setenv("FAKE_HSA_ARCH", refusals[i].arch, 1);
    const char *why = open_error(refusals[i].name);
    CHECK(why && !strncmp(why, refusals[i].want, strlen(refusals[i].want)), "%s %s: %s", refusals[i].mode,
          refusals[i].arch, why ? why : "opened");
  }
  unsetenv("FAKE_HSA");
  test_arch("gfx90a");
  test_arch("gfx942");
  test_arch("gfx1100");
  CHECK(stats->live_allocs == 0 && stats->live_queues == 0 && stats->live_signals == 0 && stats->live_execs == 0 &&
            stats->live_readers == 0 && stats->inits == 0,
        "left behind: %ld allocations, %ld queues, %ld signals, %ld executables, %ld readers, %ld inits",
        stats->live_allocs, stats->live_queues, stats->live_signals, stats->live_execs, stats->live_readers, stats->inits);
  dlclose(lib);
}

int main(void) {
  test_absent();
  test_kernargs();
  test_fake();
  return check_report("test_amd");
}
