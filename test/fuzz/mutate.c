/* mutate.c — the custom mutator of every fuzz target (UJ_FUZZ builds
 * only): inputs that grow in depth and length, not only short strings.
 *
 * libFuzzer's own mutations (bit flips, inserted bytes, dictionary words,
 * cross-overs with the corpus) change a few bytes at a time: an input
 * rarely grows much past the corpus's longest, and a bracket nested
 * thousands deep never comes of them. So one call in MUTATE_ONE_IN does
 * one of these instead:
 *
 *   repeat  a slice copied k more times after itself:
 *             x.neg()        ->  x.neg().neg().neg()...
 *             1+1            ->  1+1+1+1+...
 *   nest    a bracketed slice, with the name before its '(' or not, cut
 *           into head, middle and tail (head up to the first bracket
 *           inside, or a random cut), head k more times before and tail k
 *           more times after:
 *             exp(x)         ->  exp(exp(exp(x)))
 *             (NEG:int32 (CONST:int32 1))
 *                            ->  (NEG:int32 (NEG:int32 ... (CONST:int32 1)))
 *             [[1]]          ->  [[[[[[1]]]]]]
 *
 * k is drawn on a log scale, 1 to 2^14, and cut to what max_size leaves;
 * when no room is left or the input has no bracket, LLVMFuzzerMutate does
 * the mutation as usual. All randomness comes from libFuzzer's seed, so a
 * run is reproducible with -seed. */
#include <stdbool.h>
#include <string.h>

#include "fuzz.h"

enum {
  MUTATE_ONE_IN = 6,      /* one call in 6 repeats or nests */
  MUTATE_MAX_SLICE = 64,  /* the longest slice repeated */
  MUTATE_MAX_HEAD = 48,   /* the longest head of a nest */
  MUTATE_MAX_LOG2_K = 14, /* k up to 2^14 */
};

typedef struct Rng {
  uint64_t state;
} Rng;

/* splitmix64 */
static uint64_t rng_next(Rng *r) {
  uint64_t z = (r->state += 0x9e3779b97f4a7c15u);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
  return z ^ (z >> 31);
}

/* 0 .. n-1 (0 when n is 0). */
static size_t rng_below(Rng *r, size_t n) { return n ? (size_t)(rng_next(r) % n) : 0; }

/* How many more copies of a piece of len bytes: 1 .. 2^14 on a log scale,
 * at most what room bytes hold (0 when none fits). */
static size_t draw_count(Rng *r, size_t len, size_t room) {
  size_t fit = len ? room / len : 0;
  size_t k = 1 + rng_below(r, (size_t)1 << rng_below(r, MUTATE_MAX_LOG2_K + 1));
  return k < fit ? k : fit;
}

/* Inserts k copies of piece (len bytes, inside data or not) at `at`. */
static void insert_copies(uint8_t *data, size_t size, size_t at, const uint8_t *piece, size_t len,
                          size_t k, uint8_t *scratch) {
  memcpy(scratch, piece, len); /* piece may lie in the part that moves */
  memmove(data + at + len * k, data + at, size - at);
  for (size_t i = 0; i < k; i++) memcpy(data + at + len * i, scratch, len);
}

static size_t mutate_repeat(Rng *r, uint8_t *data, size_t size, size_t max_size) {
  uint8_t scratch[MUTATE_MAX_SLICE];
  if (size == 0) return 0;
  size_t a = rng_below(r, size);
  size_t left = size - a < MUTATE_MAX_SLICE ? size - a : MUTATE_MAX_SLICE;
  size_t len = 1 + rng_below(r, left);
  size_t k = draw_count(r, len, max_size - size);
  if (k == 0) return 0;
  insert_copies(data, size, a + len, data + a, len, k, scratch);
  return size + len * k;
}

static bool is_open(uint8_t c) { return c == '(' || c == '[' || c == '{'; }
static bool is_close(uint8_t c) { return c == ')' || c == ']' || c == '}'; }
static bool is_name(uint8_t c) {
  return c == '_' || c == '.' || c == ':' || (c >= '0' && c <= '9') ||
         ((c | 32) >= 'a' && (c | 32) <= 'z');
}

/* The bracket that closes the one at `open`, or 0 when none does. */
static size_t match_close(const uint8_t *data, size_t size, size_t open) {
  size_t depth = 0;
  for (size_t i = open; i < size; i++) {
    if (is_open(data[i])) depth++;
    else if (is_close(data[i]) && --depth == 0) return i;
  }
  return 0;
}

/* The first opening bracket at or after a random place (wrapping), or size. */
static size_t find_open(Rng *r, const uint8_t *data, size_t size) {
  size_t start = rng_below(r, size);
  for (size_t n = 0; n < size; n++) {
    size_t i = (start + n) % size;
    if (is_open(data[i])) return i;
  }
  return size;
}

static size_t mutate_nest(Rng *r, uint8_t *data, size_t size, size_t max_size) {
  uint8_t scratch[MUTATE_MAX_HEAD];
  size_t open = find_open(r, data, size), close = open < size ? match_close(data, size, open) : 0;
  if (close == 0) return 0;
  size_t a = open; /* with the name before the bracket, half the time: exp( */
  if (rng_below(r, 2))
    while (a > 0 && open - a < MUTATE_MAX_HEAD / 2 && is_name(data[a - 1])) a--;
  size_t c = open + 1; /* the head ends at the first bracket inside, or anywhere */
  while (c < close && !is_open(data[c])) c++;
  if (rng_below(r, 4) == 0) c = open + 1 + rng_below(r, close - open);
  size_t head = c - a < MUTATE_MAX_HEAD ? c - a : MUTATE_MAX_HEAD, tail = 1;
  size_t k = draw_count(r, head + tail, max_size - size);
  if (k == 0) return 0;
  insert_copies(data, size, close + 1, data + close, tail, k, scratch); /* tails first: */
  insert_copies(data, size + tail * k, a, data + a, head, k, scratch);  /* heads move them */
  return size + (head + tail) * k;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned int seed) {
  Rng r = {seed};
  size_t n = 0;
  if (size < max_size && rng_below(&r, MUTATE_ONE_IN) == 0)
    n = rng_below(&r, 2) ? mutate_repeat(&r, data, size, max_size)
                         : mutate_nest(&r, data, size, max_size);
  return n ? n : LLVMFuzzerMutate(data, size, max_size);
}
