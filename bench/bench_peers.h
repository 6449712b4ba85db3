/* bench_peers.h — what the files of build/bench_peers share: the
 * contenders, one benchmark's results, the machine, and the Python peers
 * process.
 *
 *   bench_peers.c    the benchmarks, uopjit's graphs, OpenBLAS, the
 *                    interleaved rounds, main
 *   peers_proc.c     bench/peers.py (NumPy, PyTorch) as a child over pipes
 *   peers_machine.c  CPU model, cores, clock, SIMD width, peak GFLOP/s,
 *                    copy bandwidth
 *   peers_table.c    the markdown table and its notes */
#ifndef UJ_BENCH_PEERS_H
#define UJ_BENCH_PEERS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* Who runs, in the order of a round. uopjit runs on its pool with every
 * core (UJ_THREADS unset), once a round; its samples count for both
 * thread counts. */
typedef enum Contender { C_UOPJIT, C_BLAS1, C_BLAS2, C_TORCH1, C_TORCH2, C_NUMPY, C_COUNT } Contender;

/* What one benchmark measured. missing[c] is NULL when c ran, else what
 * its cell says: "—" (not this benchmark's peer), "absent", "failed". */
typedef struct RowResult {
  const char *name;
  bool flops;  /* work counts flops (rated against peak), else bytes (against copy bandwidth) */
  double work;
  const char *missing[C_COUNT];
  double median_ms[C_COUNT];
  int nsamples[C_COUNT];
  double first_ms;   /* uopjit's first realize: compile + run */
  double compile_ms; /* first - median (< 0: lost in the noise; unset when one_run) */
  bool one_run;      /* uopjit too slow to repeat: the first run is its sample */
  const char *ref;   /* whose output uopjit's was checked against; NULL: none */
  double err, tol;   /* max |uopjit - ref| / max |ref|, and the bound */
  bool wrong;
  char error[256]; /* uopjit's failure, "" when none */
} RowResult;

typedef struct Machine {
  char model[128];
  int cores;
  double ghz;
  char clock_source[128];
  const char *simd; /* "AVX-512", "AVX2", "SSE" */
  int lanes;        /* float32 lanes of one FMA */
  double peak_gflops;
  double copy_gbs; /* memcpy bandwidth, bytes read + written */
  char openblas[96], numpy[32], torch[32]; /* versions, or "absent" */
} Machine;

/* The CPU's model, cores, clock and SIMD width, and peak from them. */
void machine_read(Machine *m);
/* Median GB/s of runs memcpys of a 256 MiB buffer (read + written); 0 on
 * failure. */
double machine_copy_bandwidth(int runs);

/* bench/peers.py, started with /usr/bin/python3, one command a line. */
typedef struct PeerProc {
  pid_t pid;
  FILE *to, *from;
  bool numpy, torch; /* what imported */
  char numpy_version[32], torch_version[32];
} PeerProc;

/* Starts python on script and says hello; false (the reason on stderr)
 * when it cannot, and then both peers are absent. */
bool peerproc_start(PeerProc *p, const char *python, const char *script);
/* Sends one command line, reads one reply line (without its newline). */
bool peerproc_ask(PeerProc *p, const char *cmd, char *reply, size_t n);
/* One run of the benchmark set up on peer ("torch", "numpy"): ms or -1. */
double peerproc_run(PeerProc *p, const char *peer, int threads);
void peerproc_stop(PeerProc *p);

/* The table of n results, then the machine, peak and what was timed. */
void table_print(FILE *f, const RowResult *rows, size_t n, const Machine *m);

#endif
