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
 * 2 units assumed. The copy bandwidth is measured: memcpy of a 256 MiB
 * buffer, both buffers touched first, split in equal parts over 1 or 2
 * threads, bytes read plus written over the best time. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_peers.h"
#include "bench_util.h"

enum { ASSUMED_FMA_UNITS = 2, MAX_CPUS = 1024, PROBE_RUNS = 15 };
static const long PROBE_ITERS = 2000000; /* a few ms a probe run */
static const size_t COPY_BYTES = (size_t)256 << 20;

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

/* One thread's part of a copy. */
typedef struct CopyPart {
  char *dst;
  const char *src;
  size_t n;
} CopyPart;

static void *copy_part(void *arg) {
  CopyPart *c = arg;
  memcpy(c->dst, c->src, c->n);
  return NULL;
}

/* One memcpy of n bytes split over threads threads; its milliseconds, or
 * -1 when a thread cannot start. */
static double copy_once(char *dst, const char *src, size_t n, int threads) {
  pthread_t tid[NLINES];
  CopyPart part[NLINES];
  size_t step = n / (size_t)threads;
  int started = 0;
  double t0 = bench_now_ms();
  for (int i = 0; i < threads; i++) {
    part[i] = (CopyPart){dst + (size_t)i * step, src + (size_t)i * step, i + 1 == threads ? n - (size_t)i * step : step};
    if (i > 0 && pthread_create(&tid[i], NULL, copy_part, &part[i]) == 0) started++;
  }
  copy_part(&part[0]);
  for (int i = 1; i <= started; i++) pthread_join(tid[i], NULL);
  return started == threads - 1 ? bench_now_ms() - t0 : -1;
}

double machine_copy_bandwidth(int runs, int threads) {
  char *src = malloc(COPY_BYTES), *dst = malloc(COPY_BYTES);
  double best = -1;
  if (!src || !dst || threads < 1 || threads > NLINES) {
    free(src), free(dst);
    return 0;
  }
  memset(src, 1, COPY_BYTES), memset(dst, 2, COPY_BYTES); /* pages in before timing */
  for (int i = 0; i < runs; i++) {
    double ms = copy_once(dst, src, COPY_BYTES, threads);
    if (ms > 0 && (best < 0 || ms < best)) best = ms;
    src[i] = dst[COPY_BYTES - 1 - (size_t)i]; /* the copy is used */
  }
  free(src), free(dst);
  return best > 0 ? 2.0 * (double)COPY_BYTES / (best * 1e6) : 0;
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
