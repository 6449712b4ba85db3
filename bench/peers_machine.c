/* peers_machine.c — the machine bench_peers rates against (bench_peers.h).
 *
 * In: /proc/cpuinfo and /sys/devices/system/cpu/cpu0/cpufreq. Out: the CPU
 * model; physical cores (distinct physical id / core id pairs, else the
 * online CPUs); the clock, from the first of cpufreq's cpuinfo_max_freq,
 * an "@ x.xxGHz" in the model name, /proc/cpuinfo's "cpu MHz" (saying
 * which); the float32 lanes of one FMA (16 with avx512f, 8 with avx2 and
 * fma, else 4); and peak on t threads = min(t, cores) x GHz x 2 FMA
 * units x lanes x 2 flops. The copy bandwidth is measured: memcpy of a
 * 256 MiB buffer, both buffers touched first, split in equal parts over
 * 1 or 2 threads, bytes read plus written over the best time. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_peers.h"
#include "bench_util.h"

enum { FMA_UNITS = 2, MAX_CPUS = 1024 };
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

/* The clock and where it came from. */
static void machine_clock(Machine *m, double cpu_mhz) {
  const char *at = strstr(m->model, "@ ");
  double model_ghz = at ? atof(at + 2) : 0;
  m->ghz = cpufreq_max_ghz();
  if (m->ghz > 0) snprintf(m->clock_source, sizeof m->clock_source, "cpufreq cpuinfo_max_freq");
  else if ((m->ghz = model_ghz) > 0) snprintf(m->clock_source, sizeof m->clock_source, "the model name");
  else if ((m->ghz = cpu_mhz / 1e3) > 0)
    snprintf(m->clock_source, sizeof m->clock_source,
             "\"cpu MHz\" in /proc/cpuinfo (no cpufreq max, none in the model name; turbo not counted)");
  else snprintf(m->clock_source, sizeof m->clock_source, "unknown");
}

void machine_read(Machine *m) {
  double cpu_mhz = 0;
  bool avx512 = false, avx2_fma = false;
  read_cpuinfo(m, &cpu_mhz, &avx512, &avx2_fma);
  if (!m->model[0]) snprintf(m->model, sizeof m->model, "unknown CPU");
  if (m->cores <= 0) m->cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  machine_clock(m, cpu_mhz);
  m->simd = avx512 ? "AVX-512" : avx2_fma ? "AVX2 + FMA" : "SSE";
  m->lanes = avx512 ? 16 : avx2_fma ? 8 : 4;
  for (int t = 1; t <= NLINES; t++)
    m->peak_gflops[t - 1] = (t < m->cores ? t : m->cores) * m->ghz * FMA_UNITS * m->lanes * 2;
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
