/* peers_table.c — bench_peers' results as markdown (bench_peers.h).
 *
 * In: one RowResult per benchmark and the machine. Out: a table with two
 * lines per benchmark (1 and 2 threads, uopjit and the peers alike) —
 * best times, the threads uopjit kept busy, its rate and share of the
 * peak (or of the memory bandwidth its traffic allows) on as many threads,
 * the line's goal, the measured value and whether it is met, the first
 * realize compiling and with the disk cache, kernels, runs, the
 * check — then notes: what was timed, the goals, the machine and how
 * peak was computed, and one line per missed goal giving the measured
 * reason (time against the floor, kernel time against the realize, the
 * hottest kernel and its hot loop's instructions). A wrong result shows
 * no time and misses its goal. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench_peers.h"

enum { CELL = 96, NOTE = 1024 };

static const char *const header =
    "| benchmark | threads | uopjit | busy threads | OpenBLAS | PyTorch | NumPy | uopjit rate | % of peak | goal "
    "| measured | goal met | first realize: compiling | first realize: disk cache | kernels | runs | check |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---|\n";

static const char *const timing_note =
    "Times are the best of the runs column (uopjit / its peers); in each round every contender runs once, in "
    "turn, and the next waits until no thread of the contenders still runs (OpenBLAS's and OpenMP's spin about "
    "130 ms after a call; schedstat of this process's and the Python child's threads), so every run starts with "
    "idle threads. What is timed: uopjit, uj_tensor_realize of the output, its graph built again on the same input "
    "buffers each run (the output before freed, so the kernels run again from the program cache): scheduling, "
    "memory for the output and intermediates, the kernels. uopjit runs in two sessions, one on 1 thread and one "
    "on 2 (UJ_THREADS set before each realize; a context's pool takes it when made); busy threads = uopjit's "
    "CPU time / wall time over its timed runs (getrusage), the threads that really ran (a pool thread's wait "
    "for the next launch spins up to 200 us, which counts; fewer than 2 on 2 threads: a thread waited for a "
    "core). First realize: the time of the first uj_tensor_realize of the line in a fresh session (its inputs "
    "made first), scheduling and compiling every kernel into an empty disk cache (in parentheses the library's "
    "own compile time, UJ_DEBUG=1 \"compiled in\"), then the same in another fresh session, which loads every "
    "kernel from that cache as a second process would (in parentheses the load time, \"loaded from the disk "
    "cache in\"; its result must equal the first bit for bit); each line has a cache folder of its own. Both "
    "include the first touch of the output's memory (a fresh session has no pool of freed blocks). Kernels: "
    "how many one realize runs. OpenBLAS: one cblas_sgemm (cblas_sgemv "
    "for GEMV) into a ready output, openblas_set_num_threads. PyTorch and NumPy (bench/peers.py): one call of "
    "the expression, which allocates its output, torch.set_num_threads; PyTorch 1.13 has no "
    "scaled_dot_product_attention, so attention is softmax(q @ k^T / sqrt(d)) @ v there as here. NumPy runs "
    "one thread (1-thread lines only). Check: max |uopjit - peer| / max |peer|, both sessions, against "
    "OpenBLAS, else PyTorch, else NumPy, on the same inputs.\n\n";

static const char *const goal_note =
    "Goals (issue 5), per line: ratio = peer time / uopjit time (higher is better). sgemm: OpenBLAS / uopjit "
    "at least 1.0x where M, K and N are all 1024 or more on 2 threads, at least 0.9x elsewhere (other sizes, "
    "GEMV, 1 thread). Elementwise relu(x*y+z) and sum: uopjit's GB/s at least 0.85 of the bandwidth its "
    "traffic allows on as many threads (below). conv2d, softmax, layernorm, attention: PyTorch / uopjit at least "
    "1.0x.";

static void fmt_time_in(char *b, size_t n, double ms) {
  if (ms >= 1000) snprintf(b, n, "%.2f s", ms / 1e3);
  else if (ms >= 10) snprintf(b, n, "%.1f ms", ms);
  else if (ms >= 1) snprintf(b, n, "%.2f ms", ms);
  else snprintf(b, n, "%.3f ms", ms);
}

static void fmt_time(char *b, double ms) { fmt_time_in(b, CELL, ms); }

/* Two significant digits, no exponent below 1000. */
static void fmt_number(char *b, double v, const char *unit) {
  if (v >= 100) snprintf(b, CELL, "%.0f%s", v, unit);
  else if (v >= 10) snprintf(b, CELL, "%.1f%s", v, unit);
  else if (v >= 0.01) snprintf(b, CELL, "%.2f%s", v, unit);
  else snprintf(b, CELL, "%.2g%s", v, unit);
}

static Contender uj_of(int line) { return (Contender)(C_UJ1 + line); }

static bool uopjit_ok(const RowResult *r, int line) {
  return !r->error[0] && !r->wrong && !r->missing[uj_of(line)];
}

/* GFLOP/s or GB/s of a run of ms, and what it is rated against. */
static double rate_of(const RowResult *r, double ms) { return r->work / (ms * 1e6); }
static double ceiling_of(const RowResult *r, const Machine *m, int line) {
  return r->flops ? m->peak_gflops[line] : machine_ceiling_gbs(m, line, r->work - r->written, r->written);
}

/* The measured value the goal of line is about; -1 when unknown. */
static double goal_value(const RowResult *r, const Machine *m, int line) {
  const Goal *g = &r->goal[line];
  if (!uopjit_ok(r, line)) return -1;
  if (g->peer == C_COUNT)
    return ceiling_of(r, m, line) > 0 ? rate_of(r, r->best_ms[uj_of(line)]) / ceiling_of(r, m, line) : -1;
  return r->missing[g->peer] ? -1 : r->best_ms[g->peer] / r->best_ms[uj_of(line)];
}

/* 1 met, 0 missed, -1 unknown (the goal's peer did not run). */
static int goal_met(const RowResult *r, const Machine *m, int line) {
  if (r->error[0] || r->wrong || r->missing[uj_of(line)]) return 0;
  double v = goal_value(r, m, line);
  return v < 0 ? -1 : v >= r->goal[line].min_ratio;
}

static const char *peer_name(Contender c) {
  return c == C_BLAS1 || c == C_BLAS2 ? "OpenBLAS" : c == C_TORCH1 || c == C_TORCH2 ? "PyTorch" : "NumPy";
}

static void cell_goal(char *goal, char *value, const RowResult *r, const Machine *m, int line) {
  const Goal *g = &r->goal[line];
  double v = goal_value(r, m, line);
  if (g->peer == C_COUNT) snprintf(goal, CELL, "≥ %.2f of bandwidth", g->min_ratio);
  else snprintf(goal, CELL, "%s / uopjit ≥ %.1fx", peer_name(g->peer), g->min_ratio);
  if (v < 0) snprintf(value, CELL, "—");
  else fmt_number(value, v, g->peer == C_COUNT ? "" : "x");
}

static void cell_uopjit(char *b, const RowResult *r, int line) {
  if (r->error[0]) snprintf(b, CELL, "failed");
  else if (r->wrong) snprintf(b, CELL, "**wrong**");
  else if (r->missing[uj_of(line)]) snprintf(b, CELL, "%s", r->missing[uj_of(line)]);
  else {
    fmt_time(b, r->best_ms[uj_of(line)]);
    if (r->uj[line].one_run) strcat(b, " (1 run)");
  }
}

static void cell_peer(char *b, const RowResult *r, Contender c) {
  if (r->missing[c]) snprintf(b, CELL, "%s", r->missing[c]);
  else fmt_time(b, r->best_ms[c]);
}

static void cell_rate(char *rate, char *share, const RowResult *r, const Machine *m, int line) {
  if (!uopjit_ok(r, line)) {
    snprintf(rate, CELL, "—"), snprintf(share, CELL, "—");
    return;
  }
  double per_s = rate_of(r, r->best_ms[uj_of(line)]), ceiling = ceiling_of(r, m, line);
  fmt_number(rate, per_s, r->flops ? " GFLOP/s" : " GB/s");
  if (ceiling > 0) fmt_number(share, 100 * per_s / ceiling, " %");
  else snprintf(share, CELL, "unknown");
}

static void cell_check(char *b, const RowResult *r) {
  if (r->error[0]) snprintf(b, CELL, "uopjit failed");
  else if (!r->ref) snprintf(b, CELL, "no peer to check against");
  else if (r->wrong) snprintf(b, CELL, "**mismatch** %.2g vs %s (tol %.0e)", r->err, r->ref, r->tol);
  else snprintf(b, CELL, "ok, %.1e vs %s", r->err, r->ref);
}

/* A first realize: its time, and in parentheses the compile or load time. */
static void cell_first(char *b, double ms, const KernelProfile *p, bool loads) {
  char t[CELL / 3], part[CELL / 3];
  if (ms <= 0 || p->nkernels == 0) {
    snprintf(b, CELL, "—");
    return;
  }
  fmt_time_in(t, sizeof t, ms), fmt_time_in(part, sizeof part, loads ? p->load_ms : p->compile_ms);
  snprintf(b, CELL, "%s (%s %s)", t, part, loads ? "load" : "compile");
  if (loads && p->ncompiled > 0) snprintf(b + strlen(b), CELL - strlen(b), ", %d compiled", p->ncompiled);
}

static void cell_profile(char *busy, char *cold, char *warm, char *kernels, const UjLine *u) {
  if (u->wall_ms > 0) snprintf(busy, CELL, "%.2f", u->cpu_ms / u->wall_ms);
  else snprintf(busy, CELL, "—");
  cell_first(cold, u->first_ms, &u->cold, false);
  cell_first(warm, u->first_warm_ms, &u->first_warm, true);
  if (u->warm.nkernels > 0) snprintf(kernels, CELL, "%d", u->warm.nkernels);
  else snprintf(kernels, CELL, "—");
}

static void print_line(FILE *f, const RowResult *r, int line, const Machine *m) {
  char uj[CELL], busy[CELL], blas[CELL], torch[CELL], np[CELL], rate[CELL], share[CELL], goal[CELL], value[CELL],
      cold[CELL], warm[CELL], kernels[CELL], check[CELL];
  Contender cb = line ? C_BLAS2 : C_BLAS1, ct = line ? C_TORCH2 : C_TORCH1;
  cell_uopjit(uj, r, line), cell_peer(blas, r, cb), cell_peer(torch, r, ct);
  if (line == 0) cell_peer(np, r, C_NUMPY);
  else snprintf(np, CELL, "—");
  cell_rate(rate, share, r, m, line), cell_goal(goal, value, r, m, line), cell_check(check, r);
  cell_profile(busy, cold, warm, kernels, &r->uj[line]);
  int met = goal_met(r, m, line), peer_runs = r->nsamples[cb] > r->nsamples[ct] ? r->nsamples[cb] : r->nsamples[ct];
  fprintf(f, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d | %s |\n", r->name,
          line + 1, uj, busy, blas, torch, np, rate, share, goal, value,
          met > 0 ? "met" : met == 0 ? "**missed**" : "unknown", cold, warm, kernels, r->nsamples[uj_of(line)],
          peer_runs, check);
}

/* ---- the reasons of the missed goals ---- */

static const char *const width_name[] = {"scalar", "xmm", "ymm", "zmm"};

/* "4 FMA zmm, 2 gathers, ..." : the non-zero classes of mix. */
static void mix_text(char *b, size_t n, const AsmMix *x) {
  const struct { int count; const char *what; } parts[] = {
      {x->fma[3], "FMA zmm"}, {x->fma[2], "FMA ymm"}, {x->fma[1], "FMA xmm"}, {x->fma[0], "FMA scalar"},
      {x->fp_packed, "other vector FP"}, {x->fp_scalar, "scalar FP"}, {x->broadcasts, "broadcasts"},
      {x->gathers, "gathers"}, {x->shuffles, "shuffles"},
  };
  int counted = 0;
  size_t len = (size_t)snprintf(b, n, "%d instructions:", x->instructions);
  for (size_t i = 0; i < sizeof parts / sizeof *parts && len < n; i++) {
    if (!parts[i].count) continue;
    counted += parts[i].count;
    len += (size_t)snprintf(b + len, n - len, " %d %s,", parts[i].count, parts[i].what);
  }
  if (len < n)
    snprintf(b + len, n - len, " %d integer / moves / other; %d read memory, %d write it (%d non-temporal); widest "
             "register in the kernel %s", x->instructions - counted, x->reads, x->writes, x->nontemporal,
             width_name[x->widest]);
}

/* uopjit's time against the floor (work at peak or at its traffic's bandwidth). */
static void reason_floor(char *b, size_t n, const RowResult *r, const Machine *m, int line) {
  double ms = r->best_ms[uj_of(line)], ceiling = ceiling_of(r, m, line), rate = rate_of(r, ms);
  char t[CELL], floor_t[CELL];
  fmt_time(t, ms), fmt_time(floor_t, ceiling > 0 ? r->work / (ceiling * 1e6) : 0);
  if (r->flops)
    snprintf(b, n, "uopjit %s, %.1f GFLOP/s = %.1f %% of the %d-thread peak (floor at peak %s)", t, rate,
             100 * rate / ceiling, line + 1, floor_t);
  else
    snprintf(b, n, "uopjit %s, %.2f GB/s = %.2f of the %d-thread bandwidth of its traffic, %.1f GB/s (floor %s)", t,
             rate, rate / ceiling, line + 1, ceiling, floor_t);
}

/* The goal's peer, rated the same way. */
static void reason_peer(char *b, size_t n, const RowResult *r, const Machine *m, int line) {
  Contender c = r->goal[line].peer;
  b[0] = 0;
  if (c == C_COUNT || r->missing[c]) return;
  double rate = rate_of(r, r->best_ms[c]), ceiling = ceiling_of(r, m, line);
  char t[CELL];
  fmt_time(t, r->best_ms[c]);
  snprintf(b, n, "; %s %s = %.1f %% of %s", peer_name(c), t, 100 * rate / ceiling, r->flops ? "peak" : "copy");
}

/* The kernels: their time within the realize, the hottest one's loop. */
static void reason_kernels(char *b, size_t n, const RowResult *r, int line) {
  const UjLine *u = &r->uj[line];
  char mix[NOTE / 2];
  if (!u->profiled) {
    snprintf(b, n, "no kernel profile (UJ_DEBUG lines not caught)");
    return;
  }
  if (u->mix.found) mix_text(mix, sizeof mix, &u->mix);
  else snprintf(mix, sizeof mix, "no loop found in its assembly");
  int runs = r->nsamples[uj_of(line)];
  snprintf(b, n, "%d kernel%s ran %.4g ms of a %.4g ms realize%s; %.2f threads busy; %.0f page faults a realize; "
           "hottest %s, %.0f %% of kernel time, its hot loop: %s", u->warm.nkernels, u->warm.nkernels == 1 ? "" : "s",
           u->warm.run_ms, u->warm_ms, u->one_run ? " (with compile)" : "", u->wall_ms > 0 ? u->cpu_ms / u->wall_ms : 0,
           runs > 0 ? u->page_faults / runs : 0,
           u->warm.hottest_name, 100 * u->warm.hottest_ms / (u->warm.run_ms > 0 ? u->warm.run_ms : 1), mix);
}

static void print_reason(FILE *f, const RowResult *r, const Machine *m, int line) {
  char value[CELL], floor_text[NOTE], peer[NOTE], kernels[NOTE];
  fprintf(f, "- %s, %d thread%s: ", r->name, line + 1, line ? "s" : "");
  if (r->error[0]) fprintf(f, "uopjit failed: %s\n", r->error);
  else if (r->wrong) fprintf(f, "uopjit's result is wrong (%.3g vs %s)\n", r->err, r->ref);
  else if (r->missing[uj_of(line)]) fprintf(f, "uopjit %s\n", r->missing[uj_of(line)]);
  else {
    fmt_number(value, goal_value(r, m, line), r->goal[line].peer == C_COUNT ? " of bandwidth" : "x");
    reason_floor(floor_text, sizeof floor_text, r, m, line);
    reason_peer(peer, sizeof peer, r, m, line);
    reason_kernels(kernels, sizeof kernels, r, line);
    fprintf(f, "%s < %.2g. %s%s. %s.\n", value, r->goal[line].min_ratio, floor_text, peer, kernels);
  }
}

/* How many goals were met, then one reason line per missed one. */
static void print_goals(FILE *f, const RowResult *rows, size_t n, const Machine *m) {
  int lines = 0, met = 0, unknown = 0;
  for (size_t i = 0; i < n; i++)
    for (int l = 0; l < NLINES; l++) {
      int g = goal_met(&rows[i], m, l);
      lines++, met += g > 0, unknown += g < 0;
    }
  fprintf(f, "%s Met on %d of %d lines%s.\n\n", goal_note, met, lines, unknown ? " (some unknown: a peer absent)" : "");
  if (met + unknown == lines) return;
  fprintf(f, "Why each missed goal is missed, measured in the same run: the best time against its floor "
             "(flops at peak, or bytes at the bandwidth their traffic allows on as many threads) and the goal's peer rated the "
             "same way; the kernels' own time (UJ_DEBUG \"ran in\", one realize after the rounds) against the "
             "realize; the hottest kernel's assembly (uj_emit of its UOps) and the instructions of its hot loop "
             "(the innermost loop with the most floating-point arithmetic).\n\n");
  for (size_t i = 0; i < n; i++)
    for (int l = 0; l < NLINES; l++)
      if (goal_met(&rows[i], m, l) == 0) print_reason(f, &rows[i], m, l);
  fputc('\n', f);
}

/* Failed and run-once uopjit results, one note each. */
static void print_exceptions(FILE *f, const RowResult *rows, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const RowResult *r = &rows[i];
    if (r->error[0]) fprintf(f, "**%s: uopjit failed**: %s\n\n", r->name, r->error);
    for (int l = 0; l < NLINES; l++)
      if (r->uj[l].one_run)
        fprintf(f, "%s, %d thread%s: one uopjit run took %.1f s, so it ran once (its kernels loaded from the disk "
                   "cache, not compiled).\n\n", r->name, l + 1, l ? "s" : "", r->best_ms[uj_of(l)] / 1e3);
  }
}

static void print_machine(FILE *f, const Machine *m) {
  char date[32];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  fprintf(f, "%s, %d cores, %s; OpenBLAS %s, PyTorch %s, NumPy %s; %s.\n\n", m->model, m->cores, m->simd, m->openblas,
          m->torch, m->numpy, date);
  char units[128];
  if (m->measured) snprintf(units, sizeof units, "%d FMA unit%s a core (measured: %.2f %s FMAs a cycle)", m->fma_units,
                            m->fma_units == 1 ? "" : "s", m->fma_per_cycle, m->lanes == 16 ? "zmm" : "ymm");
  else snprintf(units, sizeof units, "%d FMA units a core (assumed)", m->fma_units);
  fprintf(f, "Peak on t threads: t cores (at most %d) x %.2f GHz (%s) x %s x %d float32 lanes (%s) x 2 flops = "
             "%.1f GFLOP/s on 1 thread, %.1f on 2.\n\n",
          m->cores, m->ghz, m->clock_source, units, m->lanes, m->simd, m->peak_gflops[0], m->peak_gflops[1]);
  fprintf(f, "Memory bandwidth, measured here on a 256 MiB buffer in huge pages split over the threads, the best of 20 "
             "runs at the start, before each memory line and at the end (as many tries as a line's timed runs at "
             "most): a read-only "
             "stream %.1f GB/s on 1 thread, %.1f on 2; a copy with non-temporal stores %.1f and %.1f (bytes read + "
             "written); memcpy %.1f and %.1f (its stores read each line first). GB/s counts each input read once and "
             "the output written once. A line reading R bytes and writing W is rated against (R + W) / (R / read + "
             "W / write), where write is the rate the non-temporal copy leaves for its writes once its reads are "
             "paid: the read stream for sum (W about 0), the copy for softmax and layernorm (R = W), between them "
             "for relu(x*y+z) (R = 3W); its share is the \"%% of peak\" of GB/s lines, at most 100 %% unless a "
             "kernel outruns the probes.\n\n",
          m->read_gbs[0], m->read_gbs[1], m->copy_nt_gbs[0], m->copy_nt_gbs[1], m->copy_gbs[0], m->copy_gbs[1]);
}

void table_print(FILE *f, const RowResult *rows, size_t n, const Machine *m) {
  fputs(header, f);
  for (size_t i = 0; i < n; i++)
    for (int l = 0; l < NLINES; l++) print_line(f, &rows[i], l, m);
  fputc('\n', f);
  print_goals(f, rows, n, m);
  fputs(timing_note, f);
  print_exceptions(f, rows, n);
  print_machine(f, m);
}
