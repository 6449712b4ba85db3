/* beam.h — UJ_BEAM=n: each kernel's OptConfig chosen by timing candidate
 * configs on the device (a beam search of width n), the winner kept in a
 * file so that the next process finds it without timing (docs/search.md).
 *
 * In: a raw kernel (as rangeify makes it) and its OptTarget, through the
 * OptSearch hook opt_kernel calls (opt.h). Out: the config; every config
 * computes what the kernel did, bit for bit, so the search changes speed
 * only. It never fails: whatever it cannot do (measure a kernel, read or
 * write the cache) leaves the heuristics' zero config, with a line under
 * UJ_DEBUG. */
#ifndef UJ_BEAM_H
#define UJ_BEAM_H

#include "opt/opt.h"
#include "runtime/device.h"

/* The cache file's format: the first word of each line, and its version
 * (a line of another version is skipped). */
#define BEAM_CACHE_TAG "uopjit-beam"
enum { BEAM_CACHE_VERSION = 4, BEAM_MAX_WIDTH = 16 };

/* What a search has done so far (tests read it). */
typedef struct BeamStats {
  size_t kernels;  /* kernels asked about */
  size_t hits;     /* found in the cache: nothing compiled or timed */
  size_t searched; /* searched: candidates compiled and timed */
  size_t compiled; /* candidates compiled */
  size_t timed;    /* candidates timed */
  size_t stored;   /* lines appended to the cache file */
} BeamStats;

/* The search for d's kernels when UJ_BEAM is a number n >= 1 in the
 * environment (n > BEAM_MAX_WIDTH counts as BEAM_MAX_WIDTH), with the
 * cache file's entries for this machine read; NULL when UJ_BEAM is unset,
 * 0 or not a number (then no file is touched), or out of memory. */
OptSearch *beam_new(Device *d);
void beam_free(OptSearch *s);
BeamStats beam_stats(const OptSearch *s);
/* The cache file: $UJ_CACHE_DIR/beam.txt, else $XDG_CACHE_HOME/uopjit/
 * beam.txt, else $HOME/.cache/uopjit/beam.txt; "" when none of them is set. */
const char *beam_cache_path(const OptSearch *s);

/* The buffers a kernel's PARAM slots 0 .. n - 1 point to: the bytes it
 * may reach through each (the highest index its INDEXes can take, by the
 * nodes' bounds, plus one element; 0 for a slot it does not use) and
 * their element dtype. */
enum { BEAM_MAX_SLOTS = 64 };
typedef struct BeamParams {
  size_t n;
  size_t bytes[BEAM_MAX_SLOTS];
  DType dtype[BEAM_MAX_SLOTS];
} BeamParams;
/* false when a PARAM is not a buffer read or written through an INDEX,
 * an index is unbounded, or the kernel has variables or too many slots. */
bool beam_params(Ctx *ctx, const UOp *kernel, BeamParams *out);

#endif
