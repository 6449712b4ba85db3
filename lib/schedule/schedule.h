/* schedule.h — tensor graphs to a list of kernels (docs/schedule.md).
 *
 * In: the tensors to compute (roots), and a way to see which nodes are
 * already computed (`known`: a node to the view of the BUFFER that holds
 * it). Out: a Schedule — kernels in dependency order, each writing one
 * BUFFER from others; the BUFFER view that holds each root; a memory plan
 * that lets an intermediate BUFFER live in the memory of one that is dead
 * (where the kernels' order already puts its users before the new one);
 * and, per kernel, the kernels it waits for (its level: kernels of one
 * level are independent of each other).
 *
 * Where the graph is cut (a STAGE marks each cut, then each STAGE becomes
 * a kernel by rangeify): every root, and every REDUCE whose result is
 * broadcast (seen by an EXPAND through movement and ALU ops), which would
 * otherwise be recomputed for every element it is broadcast to. All else
 * fuses into the kernel that reads it. */
#ifndef UJ_SCHEDULE_H
#define UJ_SCHEDULE_H

#include "opt/opt.h"
#include "rewrite/rewrite.h"
#include "uop/nodemap.h"

typedef struct ScheduleItem {
  const UOp *kernel;   /* writes PARAM 0 (output), reads PARAMs 1.. */
  const UOp *output;   /* the BUFFER of PARAM 0 */
  const UOp **inputs;  /* the BUFFERs of PARAMs 1.. */
  size_t ninputs;
  size_t *deps;        /* items that run first: the latest earlier writers
                          of the inputs and of the output (a SCATTER's
                          zeros); memory is reused only where they order it */
  size_t ndeps;
  unsigned level;      /* 0 without deps, else 1 + the deps' highest */
  char name[48];       /* "E_64_16" elementwise, "R_..." with a REDUCE */
} ScheduleItem;

typedef struct Schedule {
  ScheduleItem *items;
  size_t nitems;
  const UOp **outputs; /* by root: the RESHAPE(BUFFER) view holding it */
  size_t noutputs;
  /* The memory plan: temps (outputs of items that are no root's) by item
   * index, -1 for roots; temps of one slab have disjoint lifetimes. */
  long *slab_of_item;
  size_t *slab_bytes;
  size_t nslabs;
} Schedule;

/* What the kernels are for: the device named in their BUFFERs, the
 * narrowest index it wants (64 on the CPU: free there, and the lanes of
 * an index are then visibly adjacent to LLVM; 32 on GPUs: registers),
 * and what the optimizer shapes kernels for (opt.h). */
typedef struct ScheduleTarget {
  const char *device;
  unsigned index_bits;
  OptTarget opt;
} ScheduleTarget;

/* Schedules made before, for one target: a graph scheduled again (the
 * same roots once `known` has replaced what is computed, the same `into`)
 * gets a copy of its schedule with the BUFFERs that schedule made
 * numbered again from *next_buffer_id, exactly what scheduling anew would
 * give. A schedule is a function of those nodes alone, so no entry ever
 * goes stale: new contents of an input BUFFER are read when the kernels
 * run, a new input is a new BUFFER node and so another graph. At most
 * SCHEDULE_CACHE_MAX entries; a full cache is emptied. */
typedef struct ScheduleCache ScheduleCache;
enum { SCHEDULE_CACHE_MAX = 256 };
ScheduleCache *schedule_cache_new(void);
void schedule_cache_free(ScheduleCache *c);
/* Entries held now, and lookups that found one so far. */
size_t schedule_cache_size(const ScheduleCache *c);
size_t schedule_cache_hits(const ScheduleCache *c);
/* For a collection of the context (uop_collect): every node an entry
 * holds is a root; afterwards the entries are placed again by the new
 * ids of their keys. */
void schedule_cache_roots(const ScheduleCache *c, RootSet *r);
void schedule_cache_renumbered(ScheduleCache *c);

/* into: NULL, or per root the BUFFER to write it into (NULL: a new one;
 * an assignment otherwise: the kernel runs in place where it reads the
 * BUFFER only at the element it writes, else through a new buffer and a
 * copy). next_buffer_id: the id of the next BUFFER made (advanced).
 * cache: NULL, or where schedules are looked up first and kept (made for
 * this target only). NULL with the error set on failure. */
Schedule *schedule_make(Ctx *ctx, const UOp *const *roots, size_t nroots, const UOp *const *into, ReplaceFn known,
                        void *user, int64_t *next_buffer_id, const ScheduleTarget *target, ScheduleCache *cache);
void schedule_free(Schedule *s);
/* The BUFFER a view made by the scheduler (RESHAPE of a BUFFER) reads. */
const UOp *schedule_view_buffer(const UOp *view);

/* An op that costs tens of instructions an element (a transcendental, a
 * division): fused where it is broadcast, it would run again for every
 * element it is broadcast to (softmax's quotient before a matmul: 64 times
 * an element for attention's d = 64). For the cuts and fuse.c. */
bool schedule_is_costly(const UOp *u);

/* split.c: the long float sums of the graph under sink cut in two stages
 * as target t wants them (TargetDesc.sum_chunks; docs/schedule.md "Long
 * sums"); sink itself when t splits none; NULL with the error set. */
const UOp *schedule_split_sums(Ctx *ctx, const UOp *sink, const TargetDesc *t);

/* ---- kernel size ---- */

/* The most a kernel holds, in schedule_weight (about the instructions its
 * loop body becomes): where a fused value would hold more, its sources are
 * cut. LLVM's passes cost more than linearly in the size of a basic block
 * (its loop vectorizer, its instruction schedulers: docs/schedule.md,
 * "Cost"), so a chain of n ops compiles as n / budget kernels of bounded
 * size, in time linear in n. */
enum { SCHEDULE_KERNEL_BUDGET = 2048 };
/* The most a node that several kernels compute (fused into each: an
 * elementwise value read by two kernels) may weigh before it is cut and
 * written once: a chain of n kernels that each read the last one's value
 * would otherwise compute the whole chain again in each (n^2). */
enum { SCHEDULE_SHARED_BUDGET = 256 };
/* ... or when it reads more than this many arrays of its own size. */
enum { SCHEDULE_SHARED_LOADS = 4 };
/* What a tensor-level node adds to its kernel: 32 for EXP2, LOG2 and SIN
 * (lowered to polynomials: docs/transcendental.md), 0 for BUFFER, CONST
 * and DEFINE_VAR, else 1. */
unsigned schedule_weight(const UOp *u);

/* ---- the cuts, for schedule.c and fuse.c ---- */

/* The scheduler's marks on the tensor graph: whether a node is cut (gets
 * a kernel of its own: a STAGE) and the BUFFER a root is written into. By
 * node, through a NodeMap (nodemap.h): as long as the graph, not the
 * context; nodes made later (fuse.c) are added as they come. */
typedef struct Cuts {
  NodeMap num;
  unsigned char *cut; /* by number */
  const UOp **into;   /* by number */
  size_t cap;
} Cuts;

/* u's number (its marks 0 / NULL when new); NODEMAP_NONE when out of memory. */
uint32_t cuts_add(Cuts *c, const UOp *u);
bool cuts_is_cut(const Cuts *c, const UOp *u);
const UOp *cuts_into(const Cuts *c, const UOp *u);
/* Sets u's cut mark; false when out of memory. */
bool cuts_set(Cuts *c, const UOp *u, bool cut);
void cuts_free(Cuts *c);

/* Walks that weigh kernels, their tables kept from one call to the next. */
typedef struct KernelWalk {
  NodeMap num;
  uint32_t *stamp, walk;  /* by number: the last walk (or scope) that met the node */
  size_t cap;
  const UOp **stack, **scopes;
  size_t cap_stack, cap_scopes;
} KernelWalk;

/* The weight (schedule_weight) of top's kernel: the nodes reached from
 * top without passing a cut node other than top, a cut node read as a
 * load; the nodes under each REDUCE counted again for it (rangeify gives a
 * REDUCE's input RANGEs of its own, so its nodes are its own). The walk
 * stops past limit: it costs about limit at most. SIZE_MAX (error set)
 * when out of memory. */
size_t schedule_kernel_weight(KernelWalk *w, const Cuts *cuts, const UOp *top, size_t limit);
void kernel_walk_free(KernelWalk *w);

/* ---- fuse.c, for schedule_make ---- */

/* Clears the cuts a root's kernel takes in (online and row fusion,
 * docs/schedule.md) when that kernel recomputes nothing; such a root may be
 * replaced in *sink by one that reads a staged, transposed copy of an input
 * (its users rebuilt, their marks following). Each try looks at the nodes
 * within FUSE_DEPTH cuts of its root (at most FUSE_MAX_CONE of them): the
 * work is linear in the graph. false (error set) when out of memory. */
bool schedule_fuse_online(Ctx *ctx, const UOp **sink, Cuts *cuts, const ScheduleTarget *t);

/* ---- cache.c, for schedule_make ---- */
/* A graph as the cache knows it: sink and into with their BUFFERs
 * replaced by placeholders (BUFFER ids -1, -2, ... in the order met;
 * actual[k] is placeholder[k]'s buffer). */
typedef struct CacheKey {
  const UOp *sink;
  const UOp **into; /* NULL when into was */
  const UOp **actual, **placeholder;
  size_t n, cap;
} CacheKey;
/* false (error set) when out of memory; the key is freed then. */
bool schedule_cache_key(Ctx *ctx, const UOp *sink, const UOp *const *into, CacheKey *key);
void schedule_cache_key_free(CacheKey *key);
/* A copy of the schedule kept for key's graph, naming key's buffers
 * (NULL when none, or out of memory), its new BUFFERs numbered from
 * *next_buffer_id (advanced). */
Schedule *schedule_cache_find(ScheduleCache *c, Ctx *ctx, const CacheKey *key, int64_t *next_buffer_id);
/* Keeps a copy of s, the schedule of key's graph, which made the BUFFERs
 * first_id .. end_id - 1 (nothing when out of memory). */
void schedule_cache_put(ScheduleCache *c, Ctx *ctx, const CacheKey *key, const Schedule *s, int64_t first_id, int64_t end_id);

#endif
