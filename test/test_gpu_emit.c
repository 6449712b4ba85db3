/* test_gpu_emit.c — every kernel of the corpus (kernel_corpus.h) emitted
 * as PTX for sm_90 and as an AMD code object for gfx90a.
 *
 * PTX: assembled by the CUDA toolkit's ptxas (-arch=sm_90) when it is on the
 * machine ($CUDA_HOME/bin or /usr/local/cuda/bin); any ptxas error fails. Without
 * ptxas that check is skipped with a message, the emission still checked.
 * Code objects: llvm-readelf --notes must show each kernel's name and its
 * kernel descriptor symbol (name.kd) in the AMDGPU metadata. Also: each
 * sm_* and gfx* arch we accept emits, and an unknown arch is an error.
 *
 * Under the sanitizers (UJ_SANITIZE) every kernel's IR for both GPUs is
 * still rendered and verified (our code, instrumented), but only every
 * EMIT_STRIDE-th goes through LLVM's backends and ld.lld: those are not
 * instrumented, and all 1248 took 320 s of the sanitizer suite's CPU time
 * for what the normal build checks already. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel_corpus.h"
#include "workgroup_kernels.h"

typedef struct GpuRun {
  char dir[256];
  const char *ptxas, *readelf;
  int n, nobj, seen; /* emitted as PTX and code objects; objects; kernels seen */
} GpuRun;

static bool write_all(const char *path, const char *data, size_t n) {
  FILE *f = fopen(path, "wb");
  bool ok = f && fwrite(data, 1, n, f) == n;
  return (f && fclose(f) == 0) && ok;
}

/* Runs a shell command; its output in out (if not NULL); the exit status. */
static int run_cmd(const char *cmd, char *out, size_t size) {
  FILE *p = popen(cmd, "r");
  if (!p) return -1;
  size_t n = 0;
  if (out) {
    n = fread(out, 1, size - 1, p);
    out[n] = 0;
  } else {
    char sink[4096];
    while (fread(sink, 1, sizeof sink, p) > 0) continue;
  }
  return pclose(p);
}

/* A kernel's PTX and code object go to files k<N>.ptx, k<N>.hsaco in
 * the run's directory; the tools check them all at the end, in batches. */
static void emit_gpu(Ctx *ctx, const CorpusKernel *k, GpuRun *g) {
  char path[300];
  size_t len = 0;
  char *ptx = uj_emit(ctx, k->kernel, UJ_EMIT_PTX, "sm_90", &len);
  CHECK(ptx && strstr(ptx, ".visible .entry kernel("), "%s: PTX: %s", k->what, ptx ? "no entry" : uj_error(ctx));
  snprintf(path, sizeof path, "%s/k%04d.ptx", g->dir, g->n);
  if (ptx) write_all(path, ptx, len);
  free(ptx);
  char *obj = uj_emit(ctx, k->kernel, UJ_EMIT_HSACO, "gfx90a", &len);
  CHECK(obj && len > 4 && memcmp(obj, "\177ELF", 4) == 0, "%s: code object: %s", k->what,
        obj ? "not an ELF" : uj_error(ctx));
  snprintf(path, sizeof path, "%s/k%04d.hsaco", g->dir, g->n);
  if (obj) write_all(path, obj, len), g->nobj++;
  free(obj);
  g->n++;
}

#ifdef UJ_SANITIZE
enum { EMIT_STRIDE = 8 };
#else
enum { EMIT_STRIDE = 1 };
#endif

/* A corpus kernel: its IR for both GPUs rendered and verified, then
 * every EMIT_STRIDE-th emitted (emit_gpu). */
static void emit_one(Ctx *ctx, const CorpusKernel *k, void *user) {
  GpuRun *g = user;
  static const char *const arch[] = {"sm_90", "gfx90a"};
  for (size_t a = 0; a < 2; a++) {
    char *ir = uj_emit(ctx, k->kernel, UJ_EMIT_IR, arch[a], NULL);
    CHECK(ir && strstr(ir, "define"), "%s: IR for %s: %s", k->what, arch[a], ir ? "no define" : uj_error(ctx));
    free(ir);
  }
  if (g->seen++ % EMIT_STRIDE == 0) emit_gpu(ctx, k, g);
}

/* ptxas on every .ptx, two at a time; the names of those that fail. */
static void check_ptx(GpuRun *g) {
  char cmd[1200], out[8192];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && ls *.ptx | xargs -P 2 -n 1 sh -c '%s -arch=sm_90 -o /dev/null \"$0\" > \"$0.log\" 2>&1 "
           "|| { echo \"$0:\"; cat \"$0.log\"; }'",
           g->dir, g->ptxas);
  int st = run_cmd(cmd, out, sizeof out);
  CHECK(st == 0 && out[0] == 0, "ptxas -arch=sm_90 fails on (k<N>.ptx is the Nth corpus kernel):\n%s", out);
}

/* llvm-readelf --notes on all code objects: each names its kernel and
 * kernel descriptor, for gfx90a. */
static void check_code_objects(GpuRun *g) {
  char cmd[800];
  snprintf(cmd, sizeof cmd, "%s --notes '%s'/*.hsaco 2>&1", g->readelf, g->dir);
  FILE *p = popen(cmd, "r");
  int names = 0, symbols = 0, targets = 0;
  char line[512];
  while (p && fgets(line, sizeof line, p)) {
    names += strstr(line, ".name:           kernel") != NULL;
    symbols += strstr(line, ".symbol:         kernel.kd") != NULL;
    targets += strstr(line, "amdgcn-amd-amdhsa--gfx90a") != NULL;
  }
  int st = p ? pclose(p) : -1;
  CHECK(st == 0 && names == g->nobj && symbols == g->nobj && targets == g->nobj,
        "llvm-readelf --notes: %d code objects, %d kernel names, %d .kd symbols, %d gfx90a targets", g->nobj, names,
        symbols, targets);
}

static const char *find_tool(const char *const *candidates, char *buf, size_t size) {
  for (; *candidates; candidates++) {
    if ((*candidates)[0] == '$') {
      const char *home = getenv((*candidates) + 1);
      if (!home) continue;
      snprintf(buf, size, "%s/bin/ptxas", home);
    } else {
      snprintf(buf, size, "%s", *candidates);
    }
    if (access(buf, X_OK) == 0) return buf;
  }
  return NULL;
}

static void test_archs(Ctx *ctx, const UOp *k) {
  const char *nv[] = {"sm_80", "sm_86", "sm_89", "sm_90", "sm_90a"};
  const char *amd[] = {"gfx90a", "gfx908", "gfx942", "gfx1030", "gfx1100"};
  for (size_t i = 0; i < 5; i++) {
    char *ptx = uj_emit(ctx, k, UJ_EMIT_PTX, nv[i], NULL);
    char want[32];
    snprintf(want, sizeof want, ".target %s", nv[i]);
    CHECK(ptx && strstr(ptx, want), "PTX for %s: %s", nv[i], ptx ? "no .target" : uj_error(ctx));
    free(ptx);
    char *gcn = uj_emit(ctx, k, UJ_EMIT_AMDGCN, amd[i], NULL);
    snprintf(want, sizeof want, "%s", amd[i]);
    CHECK(gcn && strstr(gcn, want), "AMDGCN for %s: %s", amd[i], gcn ? "no arch" : uj_error(ctx));
    free(gcn);
  }
  CHECK(!uj_emit(ctx, k, UJ_EMIT_PTX, "sm_99", NULL) && strstr(uj_error(ctx), "unknown nvptx arch 'sm_99'"),
        "unknown sm arch: %s", uj_error(ctx));
  CHECK(!uj_emit(ctx, k, UJ_EMIT_AMDGCN, "gfx999", NULL) && strstr(uj_error(ctx), "unknown amdgpu arch 'gfx999'"),
        "unknown gfx arch: %s", uj_error(ctx));
}

/* A GLOBAL range is the grid's x index on GPUs: thread and block ids. */
static void test_grid(Ctx *ctx, GpuRun *g) {
  const UOp *k = uj_parse(ctx,
                          "%i = (RANGE global 0 (DEFINE_VAR:int32 n 1 1048576))\n"
                          "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (LOAD (INDEX (PARAM:float32* 1) %i)))))",
                          "grid");
  char *ptx = k ? uj_emit(ctx, k, UJ_EMIT_PTX, NULL, NULL) : NULL;
  CHECK(ptx && strstr(ptx, "%tid.x") && strstr(ptx, "%ctaid.x") && strstr(ptx, "%ntid.x") && strstr(ptx, "ld.global.nc"),
        "grid index in PTX:\n%s", ptx ? ptx : uj_error(ctx));
  free(ptx);
  char *gcn = k ? uj_emit(ctx, k, UJ_EMIT_AMDGCN, NULL, NULL) : NULL;
  CHECK(gcn && strstr(gcn, ".amdhsa_kernel kernel") && strstr(gcn, "global_load_dword"),
        "grid kernel in AMDGCN:\n%s", gcn ? gcn : uj_error(ctx));
  free(gcn);
  if (k) test_archs(ctx, k);
  /* the bound n * 1 is simplified before rendering, which makes the RANGE
   * another node: it is still the grid's x (by its axis number), not a
   * loop that every thread would run whole */
  const UOp *k1 = uj_parse(ctx,
                           "%i = (RANGE global 0 (MUL (DEFINE_VAR:int32 n 1 1048576) (CONST:int32 1)))\n"
                           "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (LOAD (INDEX (PARAM:float32* 1) %i)))))",
                           "grid, bound simplified");
  ptx = k1 ? uj_emit(ctx, k1, UJ_EMIT_PTX, "sm_90", NULL) : NULL;
  CHECK(ptx && strstr(ptx, "%ctaid.x") && strstr(ptx, "%tid.x"), "a simplified bound keeps its grid index:\n%s", ptx ? ptx : uj_error(ctx));
  free(ptx);
  const UOp *twice = uj_parse(ctx,
                              "%a = (RANGE global 0 (CONST:int32 8))\n%b = (RANGE global 0 (CONST:int32 16))\n"
                              "(SINK (END %a (STORE (INDEX (PARAM:float32* 0) %a) (CONST:float32 1.0)))"
                              " (END %b (STORE (INDEX (PARAM:float32* 1) %b) (CONST:float32 2.0))))",
                              "two RANGEs, one axis number");
  CHECK(twice && !uj_emit(ctx, twice, UJ_EMIT_PTX, "sm_90", NULL) && strstr(uj_error(ctx), "one axis number"),
        "two grid RANGEs with one axis number are refused: %s", uj_error(ctx));
  /* an int8 grid index is compared with its bound at 32 bits, then narrowed */
  const UOp *k8 = uj_parse(ctx, "%i = (RANGE global 0 (CONST:int8 100))\n"
                               "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (CONST:float32 1.0))))", "grid8");
  char *ir = k8 ? uj_emit(ctx, k8, UJ_EMIT_IR, "sm_90", NULL) : NULL;
  const char *cmp = ir ? strstr(ir, "icmp slt i32") : NULL, *trunc = ir ? strstr(ir, "trunc i32") : NULL;
  CHECK(cmp && trunc && cmp < trunc && !strstr(ir, "icmp slt i8"), "int8 grid guard:\n%s", ir ? ir : uj_error(ctx));
  free(ir);
  /* a matrix-vector product: a grid index and a REDUCE loop; its PTX and
   * code object join the corpus's for ptxas and llvm-readelf */
  const UOp *mv = uj_parse(ctx,
                           "%i = (RANGE global 0 (CONST:int32 256))\n%j = (RANGE reduce 1 (CONST:int32 512))\n"
                           "(SINK (END %i (STORE (INDEX (PARAM:float32* 0) %i) (REDUCE ADD (MUL (LOAD (INDEX (PARAM:float32* 1)"
                           " (ADD (MUL %i (CONST:int32 512)) %j))) (LOAD (INDEX (PARAM:float32* 2) %j))) %j))))",
                           "matvec");
  CorpusKernel ck = {.kernel = mv};
  snprintf(ck.what, sizeof ck.what, "matvec");
  if (mv) emit_gpu(ctx, &ck, g);
  else CHECK(mv != NULL, "matvec: %s", uj_error(ctx));
  /* ALLOCs: a per-thread tile (stack) and workgroup-shared memory (read
   * at another thread's element: emission only, there is no barrier yet) */
  const UOp *al = uj_parse(ctx,
                           "%r = (ALLOC:float32*reg 0 4)\n%l = (ALLOC:float32*local 1 256)\n"
                           "%i = (RANGE global 0 (CONST:int32 256))\n%k = (RANGE loop 1 (CONST:int32 4))\n"
                           "%q = (RANGE loop 2 (CONST:int32 4))\n"
                           "(SINK (END %i (END %k (STORE (INDEX %r %k) (LOAD (INDEX (PARAM:float32* 1) (ADD (MUL %i (CONST:int32 4)) %k)))))"
                           " (STORE (INDEX %l %i) (LOAD (INDEX %r (CONST:int32 3))))"
                           " (END %q (STORE (INDEX (PARAM:float32* 0) (ADD (MUL %i (CONST:int32 4)) %q)) (ADD (LOAD (INDEX %r %q)) (LOAD (INDEX %l (SUB (CONST:int32 255) %i))))))))",
                           "alloc");
  char *shared = al ? uj_emit(ctx, al, UJ_EMIT_PTX, "sm_80", NULL) : NULL;
  CHECK(shared && strstr(shared, ".shared .align 16 .b8 alloc_1[1024]") && strstr(shared, "st.shared.f32"), "ALLOC in PTX:\n%s",
        shared ? shared : uj_error(ctx));
  free(shared);
  char *amd = al ? uj_emit(ctx, al, UJ_EMIT_AMDGCN, "gfx90a", NULL) : NULL;
  CHECK(amd && strstr(amd, "ds_write") && strstr(amd, ".amdhsa_group_segment_fixed_size 1024"), "ALLOC in AMDGCN:\n%s",
        amd ? amd : uj_error(ctx));
  free(amd);
  CorpusKernel ca = {.kernel = al};
  snprintf(ca.what, sizeof ca.what, "alloc");
  if (al) emit_gpu(ctx, &ca, g);
  else CHECK(al != NULL, "alloc: %s", uj_error(ctx));
}

/* Workgroups: with `local` RANGEs, `global` ones are block ids and
 * `local` ones thread ids, and a BARRIER inside them is bar.sync on
 * NVPTX, s_barrier between workgroup fences on AMDGPU; both kernels of
 * workgroup_kernels.h join the corpus's for ptxas and llvm-readelf. */
static void test_workgroups(Ctx *ctx, GpuRun *g) {
  const char *names[] = {"row_sum", "gemm"};
  const UOp *ks[] = {uj_parse(ctx, row_sum_text(-1), "row sum"), uj_parse(ctx, gemm_text(true), "gemm")};
  for (int i = 0; i < 2; i++) {
    CHECK(ks[i] != NULL, "%s: %s", names[i], uj_error(ctx));
    if (!ks[i]) continue;
    char *ptx = uj_emit(ctx, ks[i], UJ_EMIT_PTX, "sm_90", NULL);
    CHECK(ptx && strstr(ptx, "bar.sync") && strstr(ptx, "%tid.x") && strstr(ptx, "%ctaid.x") && !strstr(ptx, "%ntid") &&
              strstr(ptx, "st.shared.f32") && strstr(ptx, "ld.shared.f32"),
          "%s: workgroup in PTX:\n%s", names[i], ptx ? ptx : uj_error(ctx));
    free(ptx);
    char *ir = uj_emit(ctx, ks[i], UJ_EMIT_IR, "gfx942", NULL);
    CHECK(ir && strstr(ir, "fence syncscope(\"workgroup\") release") && strstr(ir, "@llvm.amdgcn.s.barrier") &&
              strstr(ir, "fence syncscope(\"workgroup\") acquire") && strstr(ir, "@llvm.amdgcn.workitem.id.x") &&
              !strstr(ir, "dispatch.ptr"),
          "%s: workgroup in AMDGPU IR:\n%s", names[i], ir ? ir : uj_error(ctx));
    free(ir);
    char *gcn = uj_emit(ctx, ks[i], UJ_EMIT_AMDGCN, "gfx942", NULL);
    CHECK(gcn && strstr(gcn, "s_barrier") && strstr(gcn, "ds_write"), "%s: workgroup in AMDGCN:\n%s", names[i],
          gcn ? gcn : uj_error(ctx));
    free(gcn);
    CorpusKernel ck = {.kernel = ks[i]};
    snprintf(ck.what, sizeof ck.what, "%s", names[i]);
    emit_gpu(ctx, &ck, g);
  }
  /* The 2D workgroup of the GEMM: two thread ids, two block ids. */
  char *ptx = ks[1] ? uj_emit(ctx, ks[1], UJ_EMIT_PTX, "sm_90", NULL) : NULL;
  CHECK(ptx && strstr(ptx, "%tid.y") && strstr(ptx, "%ctaid.y"), "gemm: 2D blocks:\n%s", ptx ? ptx : uj_error(ctx));
  free(ptx);
  /* A LOAD of local memory is emitted again after a BARRIER (the same node
   * read before it would be stale): two loads of alloc_0's element 0. */
  const UOp *reload = uj_parse(ctx, reload_text(), "reload");
  char *rir = reload ? uj_emit(ctx, reload, UJ_EMIT_IR, "sm_90", NULL) : NULL;
  size_t loads = 0;
  for (const char *at = rir; at && (at = strstr(at, "load i32, ptr addrspace(3)")); at++) loads++;
  CHECK(loads == 2, "reload: %zu loads of local memory, want 2:\n%s", loads, rir ? rir : uj_error(ctx));
  free(rir);
  /* Outside a workgroup a BARRIER is nothing; a `local` bound must be a
   * constant, and a block has three dimensions. */
  const UOp *outside = uj_parse(ctx, "%i = (RANGE global 0 (CONST:int32 64))\n"
                                     "(SINK (END %i (BARRIER (STORE (INDEX (PARAM:int32* 0) %i) %i))))", "outside");
  ptx = outside ? uj_emit(ctx, outside, UJ_EMIT_PTX, "sm_90", NULL) : NULL;
  CHECK(ptx && !strstr(ptx, "bar.sync") && strstr(ptx, "%ntid.x"), "no workgroup, no barrier:\n%s", ptx ? ptx : uj_error(ctx));
  free(ptx);
  const UOp *var = uj_parse(ctx, "%l = (RANGE local 0 (DEFINE_VAR:int32 n 1 256))\n"
                                 "(SINK (END %l (STORE (INDEX (PARAM:int32* 0) %l) %l)))", "var");
  ptx = var ? uj_emit(ctx, var, UJ_EMIT_PTX, "sm_90", NULL) : NULL;
  CHECK(!ptx && strstr(uj_error(ctx), "a `local` RANGE's bound must be a constant"), "%s", uj_error(ctx));
  free(ptx);
  const UOp *four = uj_parse(ctx, "%a = (RANGE local 0 (CONST:int32 2))\n%b = (RANGE local 1 (CONST:int32 2))\n"
                                  "%c = (RANGE local 2 (CONST:int32 2))\n%d = (RANGE local 3 (CONST:int32 2))\n"
                                  "(SINK (END %a (END %b (END %c (END %d (STORE (INDEX (PARAM:int32* 0) %d) %a))))))", "four");
  ptx = four ? uj_emit(ctx, four, UJ_EMIT_PTX, "sm_90", NULL) : NULL;
  CHECK(!ptx && strstr(uj_error(ctx), "more than 3 `local` RANGEs"), "%s", uj_error(ctx));
  free(ptx);
}

int main(void) {
  GpuRun g = {.n = 0};
  char ptxas[512], readelf[512];
  const char *ptxas_at[] = {"$CUDA_HOME", "/usr/local/cuda/bin/ptxas", NULL};
  const char *readelf_at[] = {"/usr/bin/llvm-readelf-19", "/usr/lib/llvm-19/bin/llvm-readelf", NULL};
  g.ptxas = find_tool(ptxas_at, ptxas, sizeof ptxas);
  g.readelf = find_tool(readelf_at, readelf, sizeof readelf);
  if (!g.ptxas) printf("test_gpu_emit: no ptxas ($CUDA_HOME/bin, /usr/local/cuda/bin): PTX not assembled\n");
  if (!g.readelf) printf("test_gpu_emit: no llvm-readelf-19: code object notes not read\n");
  snprintf(g.dir, sizeof g.dir, "%s/uj-gpu-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(g.dir)) return perror("mkdtemp"), 1;
  Ctx *ctx = uj_ctx_new();
  test_grid(ctx, &g);
  test_workgroups(ctx, &g);
  corpus_each(ctx, emit_one, &g);
  printf("test_gpu_emit: %d kernels, %d emitted for the GPUs\n", g.seen, g.n);
  if (g.ptxas) check_ptx(&g);
  if (g.readelf) check_code_objects(&g);
  uj_ctx_free(ctx);
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g.dir);
  run_cmd(cmd, NULL, 0);
  return check_report("test_gpu_emit");
}
