/* peers_machine.c — the machine bench_peers rates against (bench_peers.h).
 *
 * In: /proc/cpuinfo, and this CPU itself. Out: the CPU model; physical
 * cores (distinct physical id / core id pairs, else the online CPUs); the
 * float32 lanes of one FMA (16 with avx512f, 8 with avx2 and fma, else 4);
 * and peak on t threads = min(t, cores) x GHz x FMA units x lanes x 2
 * flops, where on x86-64 the clock and the units are measured: GHz from a
 * chain of dependent integer adds (one a cycle), units from a loop of 12
 * independent vector FMAs of that width (FMAs a ns / GHz, rounded to a
 * whole unit). A nominal clock ("cpu MHz", cpufreq) is not the clock the
 * core runs at under load, and the units differ by core (one 512-bit FMA
 * a cycle on Zen 4, two on Zen 5 and on Xeons with two AVX-512 FMA
 * ports): assumed, the peak read 164 % on one machine. Elsewhere, the
 * clock from cpufreq's cpuinfo_max_freq, the model name or "cpu MHz", and
 * 2 units assumed. Memory bandwidth is measured on a 256 MiB buffer in
 * huge pages (touched first), split in equal parts over 1 or 2 threads,
 * best of several runs, three ways: a read-only stream (16-byte loads,
 * and 32-byte ones where the CPU has AVX2; bytes read / time), a copy
 * with non-temporal stores, which skip the read a cached store makes of
 * its line first (bytes read + written / time), and memcpy (the same). A
 * line moving R bytes in and W out is rated against what the first two
 * allow for that mix (machine_ceiling_gbs). */
#define _DEFAULT_SOURCE /* madvise */
#include <dirent.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/mman.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_peers.h"
#include "bench_util.h"

#if defined(__x86_64__)
#include <immintrin.h> /* SSE2 non-temporal stores (every x86-64); AVX2 loads where the CPU has them */
#endif

enum { ASSUMED_FMA_UNITS = 2, MAX_CPUS = 1024, PROBE_RUNS = 15 };
static const long PROBE_ITERS = 2000000; /* a few ms a probe run */
static const size_t COPY_BYTES = (size_t)256 << 20, HUGE_PAGE = (size_t)2 << 20;

/* The value after "key<spaces>: " in a /proc/cpuinfo line, or NULL. */
static const char *cpuinfo_value(const char *line, const char *key) {
  size_t n = strlen(key);
  if (strncmp(line, key, n) || !strchr(line, ':')) return NULL;
  const char *v = strchr(line, ':') + 1;
  return v + strspn(v, " \t");
}

/* Counts distinct (physical id, core id) pairs while reading. */
typedef struct CoreSet {
  long pairs[MAX_CPUS];
  int n;
  long physical;
} CoreSet;

static void coreset_add(CoreSet *c, long core) {
  long key = c->physical * 65536 + core;
  for (int i = 0; i < c->n; i++)
    if (c->pairs[i] == key) return;
  if (c->n < MAX_CPUS) c->pairs[c->n++] = key;
}

/* Model, "cpu MHz", flags and cores from /proc/cpuinfo. */
static void read_cpuinfo(Machine *m, double *cpu_mhz, bool *avx512, bool *avx2_fma) {
  FILE *f = fopen("/proc/cpuinfo", "r");
  CoreSet *cores = calloc(1, sizeof *cores);
  if (!f || !cores) {
    if (f) fclose(f);
    free(cores);
    return;
  }
  char line[8192];
  const char *v;
  while (fgets(line, sizeof line, f)) {
    line[strcspn(line, "\n")] = 0;
    if ((v = cpuinfo_value(line, "model name")) && !m->model[0]) snprintf(m->model, sizeof m->model, "%s", v);
    else if ((v = cpuinfo_value(line, "cpu MHz")) && *cpu_mhz == 0) *cpu_mhz = atof(v);
    else if ((v = cpuinfo_value(line, "physical id"))) cores->physical = atol(v);
    else if ((v = cpuinfo_value(line, "core id"))) coreset_add(cores, atol(v));
    else if ((v = cpuinfo_value(line, "flags"))) {
      *avx512 = strstr(v, " avx512f") != NULL;
      *avx2_fma = strstr(v, " avx2") && strstr(v, " fma");
    }
  }
  fclose(f);
  m->cores = cores->n;
  free(cores);
}

/* cpufreq's maximum in GHz, 0 when the file is absent (as in many VMs). */
static double cpufreq_max_ghz(void) {
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r");
  double khz = 0;
  if (f) {
    if (fscanf(f, "%lf", &khz) != 1) khz = 0;
    fclose(f);
  }
  return khz / 1e6;
}

/* The nominal clock and where it came from. */
static void nominal_clock(Machine *m, double cpu_mhz) {
  const char *at = strstr(m->model, "@ ");
  double model_ghz = at ? atof(at + 2) : 0;
  m->ghz = cpufreq_max_ghz();
  if (m->ghz > 0) snprintf(m->clock_source, sizeof m->clock_source, "cpufreq cpuinfo_max_freq");
  else if ((m->ghz = model_ghz) > 0) snprintf(m->clock_source, sizeof m->clock_source, "the model name");
  else if ((m->ghz = cpu_mhz / 1e3) > 0)
    snprintf(m->clock_source, sizeof m->clock_source, "\"cpu MHz\" in /proc/cpuinfo (turbo not counted)");
  else snprintf(m->clock_source, sizeof m->clock_source, "unknown");
}

#if defined(__x86_64__)
/* Dependent integer adds a ns: 4 a trip, each waiting for the last. A
 * register operand, not an immediate: Golden Cove (Sapphire Rapids) folds
 * a chain of add-immediates at rename, four a cycle (it measured 14.8 GHz
 * on a 3.9 GHz core); an add of a register it cannot. */
static double probe_adds_per_ns(void) {
  long x = 0, one = 1;
  double t0 = bench_now_ms();
  for (long i = 0; i < PROBE_ITERS; i++)
    __asm__ volatile("add %1, %0\n\tadd %1, %0\n\tadd %1, %0\n\tadd %1, %0" : "+r"(x) : "r"(one));
  return 4.0 * (double)PROBE_ITERS / ((bench_now_ms() - t0) * 1e6);
}

#define FMA12(R)                                                                                                   \
  "vfmadd231ps %%" R "0, %%" R "0, %%" R "1\n\tvfmadd231ps %%" R "0, %%" R "0, %%" R "2\n\t"                         \
  "vfmadd231ps %%" R "0, %%" R "0, %%" R "3\n\tvfmadd231ps %%" R "0, %%" R "0, %%" R "4\n\t"                         \
  "vfmadd231ps %%" R "0, %%" R "0, %%" R "5\n\tvfmadd231ps %%" R "0, %%" R "0, %%" R "6\n\t"                         \
  "vfmadd231ps %%" R "0, %%" R "0, %%" R "7\n\tvfmadd231ps %%" R "0, %%" R "0, %%" R "8\n\t"                         \
  "vfmadd231ps %%" R "0, %%" R "0, %%" R "9\n\tvfmadd231ps %%" R "0, %%" R "0, %%" R "10\n\t"                        \
  "vfmadd231ps %%" R "0, %%" R "0, %%" R "11\n\tvfmadd231ps %%" R "0, %%" R "0, %%" R "12\n\t"
#define FMA_CLOBBERS "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12"

/* Independent vector FMAs of `lanes` float32 lanes a ns (16: zmm, 8: ymm,
 * else xmm): 12 accumulators, more than latency x units on any core. */
static double probe_fmas_per_ns(int lanes) {
  double t0 = bench_now_ms();
  if (lanes == 16)
    __asm__ volatile("vxorps %%zmm0, %%zmm0, %%zmm0\n\tmov %0, %%rcx\n1:\n\t" FMA12("zmm") "dec %%rcx\n\tjnz 1b"
                     : : "r"(PROBE_ITERS) : "rcx", FMA_CLOBBERS);
  else if (lanes == 8)
    __asm__ volatile("vxorps %%ymm0, %%ymm0, %%ymm0\n\tmov %0, %%rcx\n1:\n\t" FMA12("ymm") "dec %%rcx\n\tjnz 1b"
                     : : "r"(PROBE_ITERS) : "rcx", FMA_CLOBBERS);
  else return 0;
  return 12.0 * (double)PROBE_ITERS / ((bench_now_ms() - t0) * 1e6);
}

/* The best of PROBE_RUNS runs of probe (its first run warms the units). */
static double probe_best(double (*probe)(int), int lanes) {
  double best = 0;
  for (int i = 0; i <= PROBE_RUNS; i++) {
    double v = probe(lanes);
    if (i > 0 && v > best) best = v;
  }
  return best;
}

static double adds_probe(int unused) { return (void)unused, probe_adds_per_ns(); }

/* Measures the clock and the FMA units of this core; false when it
 * cannot (no FMA of the width). */
static bool measured_clock(Machine *m) {
  if (m->lanes < 8) return false;
  double fmas = probe_best(probe_fmas_per_ns, m->lanes);
  m->ghz = probe_best(adds_probe, 0);
  if (fmas <= 0 || m->ghz <= 0) return false;
  m->fma_per_cycle = fmas / m->ghz;
  m->fma_units = (int)(m->fma_per_cycle + 0.5) < 1 ? 1 : (int)(m->fma_per_cycle + 0.5);
  snprintf(m->clock_source, sizeof m->clock_source,
           "measured: a chain of dependent integer adds, one a cycle; the nominal clock says %.2f GHz", m->nominal_ghz);
  return true;
}
#else
static bool measured_clock(Machine *m) { return (void)m, false; }
#endif

void machine_read(Machine *m) {
  double cpu_mhz = 0;
  bool avx512 = false, avx2_fma = false;
  read_cpuinfo(m, &cpu_mhz, &avx512, &avx2_fma);
  if (!m->model[0]) snprintf(m->model, sizeof m->model, "unknown CPU");
  if (m->cores <= 0) m->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  m->simd = avx512 ? "AVX-512" : avx2_fma ? "AVX2 + FMA" : "SSE";
  m->lanes = avx512 ? 16 : avx2_fma ? 8 : 4;
  nominal_clock(m, cpu_mhz);
  m->nominal_ghz = m->ghz;
  m->fma_units = ASSUMED_FMA_UNITS, m->fma_per_cycle = 0;
  m->measured = measured_clock(m);
  for (int t = 1; t <= NLINES; t++)
    m->peak_gflops[t - 1] = (t < m->cores ? t : m->cores) * m->ghz * m->fma_units * m->lanes * 2;
}

/* One thread's part of a bandwidth probe. */
typedef struct ProbePart {
  Probe kind;
  char *dst;
  const char *src;
  size_t n;
  bool wide;    /* PROBE_READ with AVX2 */
  uint64_t sum; /* PROBE_READ: what it read, so the reads are used */
} ProbePart;

/* Eight 64-bit words a step, in four independent accumulators: the
 * loads, not the adds, bound it (16-byte vectors on any x86-64). */
typedef uint64_t Words __attribute__((vector_size(16)));

static uint64_t read_stream(const char *src, size_t n) {
  const Words *w = (const Words *)src;
  Words a = {0, 0}, b = a, c = a, d = a;
  for (size_t i = 0; i + 4 <= n / sizeof *w; i += 4) a += w[i], b += w[i + 1], c += w[i + 2], d += w[i + 3];
  a += b + c + d;
  return a[0] + a[1];
}

#if defined(__x86_64__)
/* The same with 32-byte loads, eight streams of accumulation, where the
 * CPU has AVX2: on some cores one thread's loads reach more of the
 * bandwidth this way; the probe keeps the better of the two. */
__attribute__((target("avx2"))) static uint64_t read_stream_avx2(const char *src, size_t n) {
  __m256i acc[8];
  for (int k = 0; k < 8; k++) acc[k] = _mm256_setzero_si256();
  for (size_t i = 0; i + 256 <= n; i += 256)
    for (int k = 0; k < 8; k++) acc[k] = _mm256_add_epi64(acc[k], _mm256_load_si256((const __m256i *)(src + i + 32 * k)));
  for (int k = 1; k < 8; k++) acc[0] = _mm256_add_epi64(acc[0], acc[k]);
  uint64_t w[4];
  memcpy(w, &acc[0], sizeof w);
  return w[0] + w[1] + w[2] + w[3];
}
#endif

static void copy_nt(char *dst, const char *src, size_t n) {
#if defined(__x86_64__)
  for (size_t i = 0; i + 64 <= n; i += 64) { /* 64 bytes a step, stored past the caches */
    __m128i x0 = _mm_load_si128((const __m128i *)(src + i)), x1 = _mm_load_si128((const __m128i *)(src + i + 16));
    __m128i x2 = _mm_load_si128((const __m128i *)(src + i + 32)), x3 = _mm_load_si128((const __m128i *)(src + i + 48));
    _mm_stream_si128((__m128i *)(dst + i), x0), _mm_stream_si128((__m128i *)(dst + i + 16), x1);
    _mm_stream_si128((__m128i *)(dst + i + 32), x2), _mm_stream_si128((__m128i *)(dst + i + 48), x3);
  }
  _mm_sfence();
#else
  memcpy(dst, src, n);
#endif
}

static void *probe_part(void *arg) {
  ProbePart *c = arg;
#if defined(__x86_64__)
  if (c->kind == PROBE_READ && c->wide) c->sum = read_stream_avx2(c->src, c->n);
  else
#endif
  if (c->kind == PROBE_READ) c->sum = read_stream(c->src, c->n);
  else if (c->kind == PROBE_COPY_NT) copy_nt(c->dst, c->src, c->n);
  else memcpy(c->dst, c->src, c->n);
  return NULL;
}

/* The probe's threads, started once and held at a barrier between runs
 * (as uopjit's pool is), so a run times the memory traffic, not thread
 * creation (0.1 ms of a 7 ms 2-thread read stream: enough for a kernel to
 * beat the probe). */
typedef struct Prober {
  ProbePart part[NLINES];
  pthread_barrier_t start, done;
  bool stop;
} Prober;

typedef struct Helper {
  Prober *pr;
  int index;
} Helper;

static void *prober_thread(void *arg) {
  Helper *h = arg;
  for (;;) {
    pthread_barrier_wait(&h->pr->start);
    if (h->pr->stop) return NULL;
    probe_part(&h->pr->part[h->index]);
    pthread_barrier_wait(&h->pr->done);
  }
}

/* One run: n bytes split over the threads (parts 64-byte aligned); its
 * milliseconds. */
static double probe_once(Prober *pr, int threads, Probe kind, bool wide, char *dst, const char *src, size_t n, uint64_t *sum) {
  size_t step = n / (size_t)threads / 64 * 64;
  for (int i = 0; i < threads; i++)
    pr->part[i] = (ProbePart){kind, dst ? dst + (size_t)i * step : NULL, src + (size_t)i * step,
                              i + 1 == threads ? n - (size_t)i * step : step, wide, 0};
  double t0 = bench_now_ms();
  pthread_barrier_wait(&pr->start);
  probe_part(&pr->part[0]);
  pthread_barrier_wait(&pr->done);
  double ms = bench_now_ms() - t0;
  for (int i = 0; i < threads; i++) *sum += pr->part[i].sum;
  return ms;
}

/* A buffer as uopjit's CPU device makes one (backends/cpu/device.c): in
 * transparent huge pages where the kernel gives them, which one thread's
 * stream needs to reach the bandwidth (measured on an AMD EPYC: 23 GB/s
 * read in 4 KiB pages, 33.6 in 2 MiB ones). */
static char *probe_buffer(void) {
  char *p = aligned_alloc(HUGE_PAGE, COPY_BYTES);
#ifdef MADV_HUGEPAGE
  if (p) (void)madvise(p, COPY_BYTES, MADV_HUGEPAGE);
#endif
  return p;
}

double machine_bandwidth(Probe kind, int runs, int threads) {
  char *src = probe_buffer(), *dst = kind == PROBE_READ ? NULL : probe_buffer();
  double best = -1;
  uint64_t sum = 0;
  if (!src || (!dst && kind != PROBE_READ) || threads < 1 || threads > NLINES) {
    free(src), free(dst);
    return 0;
  }
  memset(src, 1, COPY_BYTES); /* pages in before timing */
  if (dst) memset(dst, 2, COPY_BYTES);
  bool avx2 = false;
#if defined(__x86_64__)
  avx2 = __builtin_cpu_supports("avx2");
#endif
  Prober pr = {0};
  Helper helpers[NLINES];
  pthread_t tid[NLINES];
  int started = 0;
  pthread_barrier_init(&pr.start, NULL, (unsigned)threads);
  pthread_barrier_init(&pr.done, NULL, (unsigned)threads);
  for (int i = 1; i < threads; i++) {
    helpers[i] = (Helper){&pr, i};
    if (pthread_create(&tid[i], NULL, prober_thread, &helpers[i]) == 0) started++;
  }
  for (int i = 0; started == threads - 1 && i < runs * (kind == PROBE_READ && avx2 ? 2 : 1); i++) {
    double ms = probe_once(&pr, threads, kind, kind == PROBE_READ && avx2 && i % 2, dst, src, COPY_BYTES, &sum);
    if (ms > 0 && (best < 0 || ms < best)) best = ms;
    src[i] = dst ? dst[COPY_BYTES - 1 - (size_t)i] : (char)sum; /* the result is used */
  }
  if (started == threads - 1) { /* release the helpers to leave */
    pr.stop = true;
    pthread_barrier_wait(&pr.start);
  }
  for (int i = 1; i <= started; i++) pthread_join(tid[i], NULL);
  pthread_barrier_destroy(&pr.start), pthread_barrier_destroy(&pr.done);
  free(src), free(dst);
  if (started != threads - 1) return 0;
  double bytes = kind == PROBE_READ ? (double)COPY_BYTES : 2.0 * (double)COPY_BYTES;
  return best > 0 ? bytes / (best * 1e6) : 0;
}

double machine_ceiling_gbs(const Machine *m, int line, double read_bytes, double written_bytes) {
  double rd = m->read_gbs[line], copy = m->copy_nt_gbs[line];
  if (rd <= 0 || copy <= 0 || read_bytes + written_bytes <= 0) return 0;
  double write_s_per_gb = 2 / copy - 1 / rd; /* a copy of N: N read, then N written */
  if (write_s_per_gb <= 0) write_s_per_gb = 1 / copy;
  return (read_bytes + written_bytes) / (read_bytes / rd + written_bytes * write_s_per_gb);
}

/* The ns the threads of /proc/PID ("self" or a number) have run: the
 * first field of each task's schedstat; 0 when unreadable. */
static double threads_ran_ns(const char *pid) {
  char path[96];
  snprintf(path, sizeof path, "/proc/%s/task", pid);
  DIR *d = opendir(path);
  double ns = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof path, "/proc/%s/task/%.32s/schedstat", pid, e->d_name);
    FILE *f = fopen(path, "r");
    double t = 0;
    if (f && fscanf(f, "%lf", &t) == 1) ns += t;
    if (f) fclose(f);
  }
  if (d) closedir(d);
  return ns;
}

static double peers_ran_ns(pid_t other) {
  char pid[24];
  snprintf(pid, sizeof pid, "%ld", (long)other);
  return threads_ran_ns("self") + (other > 0 ? threads_ran_ns(pid) : 0);
}

double machine_wait_quiet(pid_t other, double max_ms) {
  const double window_ms = 2, quiet_ns = window_ms * 1e6 / 4;
  double t0 = bench_now_ms(), ran = peers_ran_ns(other);
  while (bench_now_ms() - t0 < max_ms) {
    struct timespec ts = {0, (long)(window_ms * 1e6)};
    nanosleep(&ts, NULL);
    double now = peers_ran_ns(other);
    if (now - ran < quiet_ns) break;
    ran = now;
  }
  return bench_now_ms() - t0;
}
