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
 * schedule order, "compiled in" or "loaded from the disk cache in", and
 * "ran in". */
typedef struct KernelProfile {
  int nkernels;
  double compile_ms; /* sum of "compiled in": the library's timer around uj_compile */
  int ncompiled;
  double load_ms;    /* sum of "loaded from the disk cache in" */
  int nloaded;
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
  double first_warm_ms; /* the first realize of a fresh session, the disk cache warm */
  KernelProfile first_warm;
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
  bool flops;  /* work counts flops (rated against peak), else bytes (against the bandwidth of their mix) */
  double work;
  double written; /* of work's bytes, those written (the rest are read) */
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
  double read_gbs[NLINES];     /* a read-only stream on 1 and 2 threads */
  double copy_nt_gbs[NLINES];  /* a copy with non-temporal stores, bytes read + written */
  double copy_gbs[NLINES];     /* memcpy, bytes read + written (for comparison) */
  char openblas[96], numpy[32], torch[32]; /* versions, or "absent" */
} Machine;

/* The CPU's model, cores, SIMD width, its clock and FMA units (measured
 * where it can), and peak from them. */
void machine_read(Machine *m);
/* Memory bandwidth probes: a read-only stream, a copy with non-temporal
 * stores, memcpy. */
typedef enum Probe { PROBE_READ, PROBE_COPY_NT, PROBE_MEMCPY } Probe;
/* The best GB/s of runs probes over a 256 MiB buffer split over threads
 * threads (bytes read, plus written for the copies); 0 on failure. */
double machine_bandwidth(Probe kind, int runs, int threads);
/* The most GB/s a kernel reading read_bytes and writing written_bytes can
 * reach on line's threads: the time to read at read_gbs plus the time to
 * write at the rate the non-temporal copy leaves for its writes once its
 * reads are paid; so a read-only line is rated against the read stream
 * and a line reading as much as it writes against the copy. 0: unknown. */
double machine_ceiling_gbs(const Machine *m, int line, double read_bytes, double written_bytes);
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
