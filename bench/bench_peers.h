/* bench_peers.h — what the files of build/bench_peers share: the
 * contenders, one benchmark's results and goal, the machine, the Python
 * peers process and what uopjit says about its own kernels.
 *
 *   bench_peers.c    the benchmarks and their goals, uopjit's graphs (one
 *                    session a thread count), OpenBLAS, the interleaved
 *                    rounds, main
 *   peers_proc.c     bench/peers.py (NumPy, PyTorch) as a child over
 *                    pipes; uopjit's UJ_DEBUG lines caught from stderr;
 *                    the instruction mix of a kernel's hottest loop
 *   peers_machine.c  CPU model, cores, clock, SIMD width, peak GFLOP/s,
 *                    copy bandwidth on 1 and 2 threads
 *   peers_table.c    the markdown table, its notes and the reasons of
 *                    the missed goals */
#ifndef UJ_BENCH_PEERS_H
#define UJ_BENCH_PEERS_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

/* The table's lines: 1 and 2 threads for every contender. */
enum { NLINES = 2, KERNEL_NAME_MAX = 64 };

/* Who runs, in the order of a round. uopjit runs in two sessions, one a
 * thread count (UJ_THREADS=1 and 2 when each one's pool is made). */
typedef enum Contender { C_UJ1, C_UJ2, C_BLAS1, C_BLAS2, C_TORCH1, C_TORCH2, C_NUMPY, C_COUNT } Contender;

/* What uopjit's UJ_DEBUG=1 lines say of one realize: per kernel, in
 * schedule order, "compiled in" (cold) and "ran in". */
typedef struct KernelProfile {
  int nkernels;
  double compile_ms; /* sum of "compiled in": the library's timer around uj_compile */
  double run_ms;     /* sum of "ran in" */
  int hottest;       /* the kernel with the largest "ran in"; -1: none */
  double hottest_ms;
  char hottest_name[KERNEL_NAME_MAX];
} KernelProfile;

/* The instruction mix of a kernel's largest innermost loop, read from
 * its assembly (AT&T syntax, as uj_emit gives it). */
typedef struct AsmMix {
  bool found;          /* a loop (a backward jump) was there */
  int instructions;    /* in the loop */
  int fma[4];          /* scalar, xmm, ymm, zmm */
  int fp_packed, fp_scalar; /* other floating-point arithmetic */
  int broadcasts, gathers, shuffles;
  int reads, writes, nontemporal; /* vector instructions with a memory source / destination; vmovnt* */
  int widest; /* 0 none, 1 xmm, 2 ymm, 3 zmm: the widest vector register used anywhere */
} AsmMix;

/* uopjit on one line (thread count). */
typedef struct UjLine {
  double first_ms;      /* the first realize: compile + run */
  KernelProfile cold;   /* of the first realize: compile times */
  KernelProfile warm;   /* of one realize after the timed runs */
  double warm_ms;       /* that realize's time */
  AsmMix mix;           /* of warm's hottest kernel */
  double cpu_ms, wall_ms; /* over the timed runs: cpu / wall = threads busy */
  double page_faults;     /* minor page faults (getrusage), over the timed runs */
  bool one_run;         /* too slow to repeat: the first run is its sample */
  bool profiled;        /* cold, warm and mix were caught */
} UjLine;

/* A line's goal: peer time / uopjit time at least min_ratio against peer
 * (the line's OpenBLAS or PyTorch), or, when peer is C_COUNT, uopjit's
 * GB/s at least min_ratio of the copy bandwidth on as many threads. */
typedef struct Goal {
  Contender peer;
  double min_ratio;
} Goal;

/* What one benchmark measured. missing[c] is NULL when c ran, else what
 * its cell says: "—" (not this benchmark's peer), "absent", "failed". */
typedef struct RowResult {
  const char *name;
  bool flops;  /* work counts flops (rated against peak), else bytes (against copy bandwidth) */
  double work;
  Goal goal[NLINES];
  const char *missing[C_COUNT];
  double best_ms[C_COUNT]; /* the fastest of the runs */
  int nsamples[C_COUNT];
  UjLine uj[NLINES];
  const char *ref;   /* whose output uopjit's was checked against; NULL: none */
  double err, tol;   /* max |uopjit - ref| / max |ref|, and the bound */
  bool wrong;
  char error[256]; /* uopjit's failure, "" when none */
} RowResult;

typedef struct Machine {
  char model[128];
  int cores;
  double ghz, nominal_ghz; /* the clock used, and what cpufreq / cpuinfo say */
  char clock_source[160];
  bool measured;           /* ghz and fma_units measured (x86-64), else nominal and assumed */
  int fma_units;           /* vector FMAs a cycle, a whole number */
  double fma_per_cycle;    /* as measured (0: not) */
  const char *simd; /* "AVX-512", "AVX2", "SSE" */
  int lanes;        /* float32 lanes of one FMA */
  double peak_gflops[NLINES];  /* on 1 and 2 threads */
  double copy_gbs[NLINES];     /* memcpy bandwidth on 1 and 2 threads, bytes read + written */
  char openblas[96], numpy[32], torch[32]; /* versions, or "absent" */
} Machine;

/* The CPU's model, cores, SIMD width, its clock and FMA units (measured
 * where it can), and peak from them. */
void machine_read(Machine *m);
/* The best GB/s of runs memcpys of a 256 MiB buffer (read + written),
 * split over threads threads; 0 on failure. */
double machine_copy_bandwidth(int runs, int threads);
/* Waits until the threads of this process and of process other (0: none)
 * ran less than a quarter of a 2 ms window (from their schedstat, in ns),
 * at most max_ms: a peer's threads that spin after its call (OpenBLAS's
 * and OpenMP's) would take a core from the next contender. The ms waited. */
double machine_wait_quiet(pid_t other, double max_ms);

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

/* UJ_DEBUG=1 with stderr sent to a temporary file, from begin to end;
 * end restores both and reads the lines into *out. */
typedef struct DebugCapture {
  int saved_fd;
  FILE *file;
} DebugCapture;
bool debug_capture_begin(DebugCapture *c);
void debug_capture_end(DebugCapture *c, KernelProfile *out);
/* The mix of the largest innermost loop of asm. */
void asm_mix_read(const char *asm_text, AsmMix *out);

/* The table of n results, then the machine, peak, what was timed and a
 * reason for each missed goal. */
void table_print(FILE *f, const RowResult *rows, size_t n, const Machine *m);

#endif
