/* device.h — a device as a small vtable, and the buffers that live on it.
 *
 * In: a device name ("CPU"; "EVAL", the reference evaluator shaped for
 * sm_90, workgroups and race checks included: runtime/eval_device.c; the
 * CUDA and HSA devices come later and are reported absent until then). Out: a Device that allocates memory, copies
 * it in and out, compiles kernels (cached per device by kernel node, so a
 * schedule run again compiles nothing) and launches them; RtBuffers,
 * counted references to device memory, whose memory goes back to the
 * device's pool when the last reference goes (below). Errors: false/NULL
 * with the message in the device's context. */
#ifndef UJ_DEVICE_H
#define UJ_DEVICE_H

#include "llvm/signature.h"
#include "opt/target.h"
#include "uop/nodemap.h"
#include "uop/uop.h"

typedef struct Device Device;

/* A device's in-order stream of work (a CUDA stream, an HSA queue):
 * launches and copies on one queue run in the order they were issued.
 * NULL names the device's default queue. */
typedef struct DeviceQueue DeviceQueue;

/* What a launch runs a program on: its buffers by PARAM slot, each's
 * size, the values of its variables, sorted by name (as uj_run), the
 * queue, and on a GPU target the grid: blocks and threads per block along
 * x, y, z (device_launch computes them from the kernel's grid, signature.h,
 * and the variables; the CPU and EVAL read none). */
typedef struct LaunchArgs {
  void *const *buffers;
  const size_t *bytes;
  size_t n;
  const int64_t *vars;
  size_t nvars;
  uint32_t grid[3], block[3];
  DeviceQueue *queue;
} LaunchArgs;

typedef struct DeviceOps {
  /* Opens device number `ordinal` of the kind (0 unless the name said
   * "KIND:N"); NULL: a device that needs no opening. False with the
   * reason written to why[size] ("the driver library is missing"). */
  bool (*open)(Device *d, int ordinal, char *why, size_t size);
  void *(*alloc)(Device *d, size_t bytes);
  void (*free)(Device *d, void *mem);
  bool (*copy_in)(Device *d, void *dst, const void *host, size_t bytes);
  bool (*copy_out)(Device *d, void *host, const void *src, size_t bytes);
  /* What its kernels are shaped for (opt/target.h: vector width, index
   * width, caches, limits): the scheduler and the optimizer read it. */
  const TargetDesc *(*target)(Device *d);
  /* The machine in words, for caches of measurements (BEAM): its model
   * and features; "" when the target's name says it all. */
  void (*describe)(Device *d, char *buf, size_t size);
  /* The threads a launch runs on (the best split of a kernel depends on
   * them); 0 when the hardware schedules its own. */
  unsigned (*threads)(Device *d);
  /* The device's memory in bytes (its pool keeps an eighth at most). */
  size_t (*memory_bytes)(Device *d);
  /* A program for kernel (a SINK over PARAM slots), or NULL. */
  void *(*compile)(Device *d, const UOp *kernel, const char *name);
  /* The program's parameters, variables and grid. */
  const KernelSig *(*signature)(Device *d, void *program);
  /* Issues the program on args->queue. It may return before the kernel
   * ran (a GPU, EVAL): its buffers must stay until a synchronize, and the
   * host reads them after one. Copies in and out and freeing memory wait
   * for what was issued before them (a default stream's order). */
  bool (*launch)(Device *d, void *program, const LaunchArgs *args);
  void (*program_free)(Device *d, void *program);
  /* Waits for what was issued on queue (NULL: on every queue); false
   * with the error set when a kernel failed. */
  bool (*synchronize)(Device *d, DeviceQueue *queue);
  /* Frees what the device keeps beside its programs and memory (its
   * queues, its driver; NULL: nothing), last thing in device_close,
   * after the programs and the pool's memory went back to it. */
  void (*close)(Device *d);
  /* Its memory is host memory that nothing reads once the pool holds it:
   * the pool poisons it under AddressSanitizer (never a device address,
   * which has no shadow in the host, nor memory a deferred launch may
   * still read in queue order: EVAL's). */
  bool host_memory;
} DeviceOps;

typedef struct CachedProgram {
  const UOp *kernel;
  void *program;
} CachedProgram;

/* Freed memory kept for the next allocation of its size class, so a
 * realize that frees an output and makes one of the same size again gets
 * pages already mapped (fresh ones fault on first touch: 65k faults for
 * 256 MiB). Classes are sizes rounded up to RT_POOL_GRAIN bytes; a freed
 * block that would take the pool past `limit` bytes or `RT_POOL_BLOCKS`
 * blocks pushes out the oldest blocks first (one bigger than the limit is
 * freed at once). Taken newest first: the warmest in the caches. */
enum { RT_POOL_GRAIN = 64, RT_POOL_BLOCKS = 256 };
typedef struct PooledBlock {
  void *mem;
  size_t bytes; /* its size class */
} PooledBlock;

typedef struct BufferPool {
  PooledBlock blocks[RT_POOL_BLOCKS]; /* oldest first */
  size_t n;
  size_t bytes;  /* held in blocks */
  size_t limit;  /* an eighth of the device's memory; host memory: 1 GiB at most */
} BufferPool;

struct Device {
  char name[16];          /* as opened: "CPU", "CUDA", "CUDA:1" */
  const TargetDesc *desc; /* ops->target: what its kernels are shaped for (ScheduleTarget) */
  const DeviceOps *ops;
  Ctx *ctx;              /* kernels and error messages */
  CachedProgram *cache;  /* compiled kernels, by their kernel's number in `compiled` */
  size_t ncache, cap_cache;
  NodeMap compiled;      /* the kernels asked for (a kernel's program may be NULL: its compile failed) */
  BufferPool pool;       /* freed memory, for reuse (rt_buffer_new) */
  bool timing;           /* set: kernel_ms grows by each launch's time (CUDA: events, read at the
                          * synchronize; the CPU: the launch's wall time); benchmarks zero it */
  double kernel_ms;
  void *state;           /* the backend's own (its queues, its driver's handles) */
};

/* The device by name ("CPU", "EVAL", "CUDA", "CUDA:N", "AMD", "AMD:N");
 * name NULL: UJ_DEVICE from the environment, else "CPU". NULL when the
 * device is unknown or absent, with the reason in *error ("no CUDA
 * device: why"; the text lives until the thread's next device_open). */
Device *device_open(Ctx *ctx, const char *name, const char **error);
extern const char device_known[]; /* the names device_open knows: "CPU, EVAL, CUDA, CUDA:N, ..." */
/* Frees its programs and the memory in its pool. */
void device_close(Device *d);
/* The program for kernel, compiled on first use. */
void *device_program(Device *d, const UOp *kernel, const char *name);
/* Launches program, once its buffers and variables are as many as its
 * signature's (else false, "DEVICE: the kernel takes N buffers and M
 * variables, not ..."): on a GPU target with the grid and block sizes of
 * its kernel's grid for these variables (launch_dims), set in *args. */
bool device_launch(Device *d, void *program, LaunchArgs *args);
/* The blocks and threads per block along x, y, z of a launch of a kernel
 * with signature sig and variable values vars (sorted as sig->vars) on
 * target t: with workgroups, the `global` RANGEs' bounds blocks and the
 * `local` ones' threads; without, the `global` bounds in threads, cut in
 * blocks of up to 256 along x. A dimension without a RANGE is 1, a bound
 * under 1 too (the kernel's guards stop its threads). False with the
 * error set when a size is past the target's limits. */
bool launch_dims(Ctx *ctx, const TargetDesc *t, const KernelSig *sig, const int64_t *vars, uint32_t grid[3],
                 uint32_t block[3]);
/* For a collection of d's context (uop_collect): the kernels its programs
 * were compiled from are roots; afterwards the table keyed by their ids
 * is made again (out of memory: the programs are dropped, compiled again
 * when asked for). */
void device_roots(const Device *d, RootSet *r);
void device_renumbered(Device *d);

/* Memory on a device, shared by counted references. */
typedef struct RtBuffer {
  Device *device;
  void *mem;
  size_t bytes;
  unsigned refs;
} RtBuffer;

/* bytes of memory from d's pool, else newly allocated; one reference. */
RtBuffer *rt_buffer_new(Device *d, size_t bytes);
RtBuffer *rt_buffer_ref(RtBuffer *b);
/* The last reference gives the memory to its device's pool. */
void rt_buffer_unref(RtBuffer *b);
/* The host's physical memory in bytes (0: unknown), for devices whose
 * memory is the host's. */
size_t device_host_memory_bytes(void);
/* Frees the memory d's pool holds (device_close does). */
void device_pool_drain(Device *d);

/* The CPU device (backends/cpu/device.c); the evaluator as a device
 * (eval_device.c). */
extern const DeviceOps cpu_device_ops, eval_device_ops;
/* NVIDIA GPUs through the CUDA driver (backends/cuda/device.c); AMD GPUs
 * through the HSA runtime (backends/amd/device.c). */
extern const DeviceOps cuda_device_ops, amd_device_ops;

#endif
