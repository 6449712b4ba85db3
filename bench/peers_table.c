/* peers_table.c — bench_peers' results as markdown (bench_peers.h).
 *
 * In: one RowResult per benchmark and the machine. Out: a table with two
 * lines per benchmark (1 and 2 threads for the peers) — times, peer /
 * uopjit ratios, uopjit's rate and share of peak, compile time, runs,
 * the check — then notes: the machine and versions, how peak was
 * computed, the copy bandwidth, what was timed, the goal and where it
 * was missed, and every wrong or failed uopjit result. A wrong result
 * shows no time and no ratio. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "bench_peers.h"

enum { CELL = 96 };

static const char *const header =
    "| benchmark | threads | uopjit | OpenBLAS | PyTorch | NumPy | OpenBLAS / uopjit | PyTorch / uopjit "
    "| NumPy / uopjit | uopjit rate | % of peak | compile | runs | check |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";

static const char *const timing_note =
    "Times are medians over the runs column (uopjit / peers); in each round every contender runs once, in turn. "
    "Ratios are peer time / uopjit time (above 1x: uopjit is faster). What is timed: uopjit, uj_tensor_realize "
    "of the output, its graph built again on the same input buffers each run (the output before freed, so the "
    "kernels run again from the program cache): scheduling, memory for the output and intermediates, the "
    "kernels. Compile: uopjit's first realize minus the median. uopjit runs on its thread pool with every core "
    "(UJ_THREADS unset: 2 here) and runs once a round: the same samples fill both of its lines. OpenBLAS: one cblas_sgemm (cblas_sgemv for GEMV) into a "
    "ready output. PyTorch and NumPy (bench/peers.py): one call of the expression, which allocates its "
    "output; PyTorch 1.13 has no scaled_dot_product_attention, so attention is softmax(q @ k^T / sqrt(d)) @ v "
    "there as here. NumPy runs one thread (1-thread lines only). Check: max |uopjit - peer| / max |peer| "
    "against OpenBLAS, else PyTorch, else NumPy, on the same inputs.\n\n";

/* The peers of one line of the table, by thread count. */
static const Contender line_blas[] = {C_BLAS1, C_BLAS2}, line_torch[] = {C_TORCH1, C_TORCH2};

static void fmt_time(char *b, double ms) {
  if (ms >= 1000) snprintf(b, CELL, "%.2f s", ms / 1e3);
  else if (ms >= 10) snprintf(b, CELL, "%.1f ms", ms);
  else if (ms >= 1) snprintf(b, CELL, "%.2f ms", ms);
  else snprintf(b, CELL, "%.3f ms", ms);
}

/* Two significant digits, no exponent below 1000. */
static void fmt_number(char *b, double v, const char *unit) {
  if (v >= 100) snprintf(b, CELL, "%.0f%s", v, unit);
  else if (v >= 10) snprintf(b, CELL, "%.1f%s", v, unit);
  else if (v >= 0.01) snprintf(b, CELL, "%.2f%s", v, unit);
  else snprintf(b, CELL, "%.2g%s", v, unit);
}

static bool uopjit_ok(const RowResult *r) { return !r->error[0] && !r->wrong && !r->missing[C_UOPJIT]; }

static void cell_uopjit(char *b, const RowResult *r) {
  if (r->error[0]) snprintf(b, CELL, "failed");
  else if (r->wrong) snprintf(b, CELL, "**wrong**");
  else if (r->missing[C_UOPJIT]) snprintf(b, CELL, "%s", r->missing[C_UOPJIT]);
  else {
    fmt_time(b, r->median_ms[C_UOPJIT]);
    if (r->one_run) strcat(b, " (1 run)");
  }
}

static void cell_peer(char *b, const RowResult *r, Contender c) {
  if (r->missing[c]) snprintf(b, CELL, "%s", r->missing[c]);
  else fmt_time(b, r->median_ms[c]);
}

static void cell_ratio(char *b, const RowResult *r, Contender c) {
  if (!uopjit_ok(r) || r->missing[c]) snprintf(b, CELL, "—");
  else fmt_number(b, r->median_ms[c] / r->median_ms[C_UOPJIT], "x");
}

static void cell_rate(char *rate, char *share, const RowResult *r, const Machine *m) {
  if (!uopjit_ok(r)) {
    snprintf(rate, CELL, "—"), snprintf(share, CELL, "—");
    return;
  }
  double per_s = r->work / (r->median_ms[C_UOPJIT] * 1e6), peak = r->flops ? m->peak_gflops : m->copy_gbs;
  fmt_number(rate, per_s, r->flops ? " GFLOP/s" : " GB/s");
  if (peak > 0) fmt_number(share, 100 * per_s / peak, " %");
  else snprintf(share, CELL, "unknown");
}

static void cell_check(char *b, const RowResult *r) {
  if (r->error[0]) snprintf(b, CELL, "uopjit failed");
  else if (!r->ref) snprintf(b, CELL, "no peer to check against");
  else if (r->wrong) snprintf(b, CELL, "**mismatch** %.2g vs %s (tol %.0e)", r->err, r->ref, r->tol);
  else snprintf(b, CELL, "ok, %.1e vs %s", r->err, r->ref);
}

static void print_line(FILE *f, const RowResult *r, int t, const Machine *m) {
  char uj[CELL], blas[CELL], torch[CELL], np[CELL], rb[CELL], rt[CELL], rn[CELL], rate[CELL], share[CELL],
      compile[CELL], check[CELL];
  Contender cb = line_blas[t - 1], ct = line_torch[t - 1];
  cell_uopjit(uj, r), cell_peer(blas, r, cb), cell_peer(torch, r, ct);
  cell_ratio(rb, r, cb), cell_ratio(rt, r, ct);
  if (t == 1) cell_peer(np, r, C_NUMPY), cell_ratio(rn, r, C_NUMPY);
  else snprintf(np, CELL, "—"), snprintf(rn, CELL, "—");
  cell_rate(rate, share, r, m), cell_check(check, r);
  if (r->one_run) snprintf(compile, CELL, "in the run");
  else if (r->nsamples[C_UOPJIT] == 0) snprintf(compile, CELL, "—");
  else if (r->compile_ms < 0) snprintf(compile, CELL, "< noise"); /* the first run was the faster */
  else fmt_time(compile, r->compile_ms);
  int peer_runs = r->nsamples[cb] > r->nsamples[ct] ? r->nsamples[cb] : r->nsamples[ct];
  fprintf(f, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d / %d | %s |\n", r->name, t, uj, blas,
          torch, np, rb, rt, rn, rate, share, compile, r->nsamples[C_UOPJIT], peer_runs, check);
}

/* The fastest peer's time on line t, or 0 when none ran. */
static double best_peer_ms(const RowResult *r, int t) {
  const Contender cs[] = {line_blas[t - 1], line_torch[t - 1], t == 1 ? C_NUMPY : line_torch[t - 1]};
  double best = 0;
  for (size_t i = 0; i < sizeof cs / sizeof *cs; i++)
    if (!r->missing[cs[i]] && (best == 0 || r->median_ms[cs[i]] < best)) best = r->median_ms[cs[i]];
  return best;
}

/* The goal line: which lines reach the fastest peer. */
static void print_goal(FILE *f, const RowResult *rows, size_t n) {
  int lines = 0, missed = 0;
  for (size_t i = 0; i < n; i++)
    for (int t = 1; t <= 2; t++) {
      double best = best_peer_ms(&rows[i], t);
      if (best == 0) continue;
      lines++;
      missed += !uopjit_ok(&rows[i]) || rows[i].median_ms[C_UOPJIT] > best;
    }
  fprintf(f, "Goal, uopjit at least as fast as the fastest peer of its line (every ratio at least 1x): "
             "missed on %d of %d lines%s.\n\n", missed, lines, missed == lines ? " (all)" : "");
}

/* Wrong, failed and run-once uopjit results, one note each. */
static void print_exceptions(FILE *f, const RowResult *rows, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const RowResult *r = &rows[i];
    if (r->wrong)
      fprintf(f, "**%s: uopjit's result disagrees with %s's**: max |uopjit - %s| / max |%s| = %.3g, above %.0e; "
                 "its time (%.4g ms) is left out.\n\n", r->name, r->ref, r->ref, r->ref, r->err, r->tol,
              r->median_ms[C_UOPJIT]);
    if (r->error[0]) fprintf(f, "**%s: uopjit failed**: %s\n\n", r->name, r->error);
    if (r->one_run)
      fprintf(f, "%s: one uopjit run took %.1f s (over 30 s), so it ran once and that time includes the compile.\n\n",
              r->name, r->first_ms / 1e3);
  }
}

static void print_machine(FILE *f, const Machine *m) {
  char date[32];
  time_t now = time(NULL);
  strftime(date, sizeof date, "%Y-%m-%d", gmtime(&now));
  fprintf(f, "%s, %d cores, %s; OpenBLAS %s, PyTorch %s, NumPy %s; %s.\n\n", m->model, m->cores, m->simd, m->openblas,
          m->torch, m->numpy, date);
  fprintf(f, "Peak: %d cores x %.2f GHz (%s) x 2 FMA units a core (assumed) x %d float32 lanes (%s) x 2 flops "
             "= %.1f GFLOP/s. Copy bandwidth, measured here: %.1f GB/s (memcpy of 256 MiB, one thread, bytes read "
             "+ written). GB/s counts each input read once and the output written once; GB/s rows give their "
             "share of the copy bandwidth as \"%% of peak\".\n\n",
          m->cores, m->ghz, m->clock_source, m->lanes, m->simd, m->peak_gflops, m->copy_gbs);
}

void table_print(FILE *f, const RowResult *rows, size_t n, const Machine *m) {
  fputs(header, f);
  for (size_t i = 0; i < n; i++)
    for (int t = 1; t <= 2; t++) print_line(f, &rows[i], t, m);
  fputc('\n', f);
  fputs(timing_note, f);
  print_goal(f, rows, n);
  print_exceptions(f, rows, n);
  print_machine(f, m);
}
