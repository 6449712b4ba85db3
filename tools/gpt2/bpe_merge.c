/* bpe_merge.c — one word's bytes merged into tokens, as gpt-3-encoder
 * 1.1.4's bpe() merges them.
 *
 * In: a word (one piece of the text, as bytes) and the ranks of the
 * merges. Out: where its tokens start. The word starts as one symbol per
 * byte. While some pair of neighbours is a merge, the pair of the lowest
 * rank is chosen and every occurrence of it, left to right, becomes one
 * symbol; the word is done when no pair is a merge or one symbol is left.
 *
 * Two details of the package are kept, so that its ids are ours:
 *   - a pair is looked up by its symbols joined with ',' (JavaScript makes
 *     the key "a,b" of the array [a, b]), so a pair that is no merge but
 *     joins into a merge's key merges at that rank: ('",', '"') is taken
 *     for ('"', ',"'). GPT-2's files have 11 such look-alikes, each making
 *     the token its merge makes;
 *   - of pairs of equal rank (look-alikes), the last in the word is chosen
 *     (the package keeps the last pair it writes under a rank).
 *
 * Time: each merge step looks up every pair, so a word of n bytes costs up
 * to n lookups per step; nothing for the words of text (and bpe.c caches
 * them), 8 s for 100 KB of letters without a break (the package takes 40 s
 * for 20 KB). */
#include <stdlib.h>
#include <string.h>

#include "bpe_internal.h"

#define NO_PAIR SIZE_MAX

/* Room for a word of len bytes: len + 1 cuts, a key of len + 1 bytes. */
static int reserve(BpeScratch *s, size_t len) {
  if (len <= s->cap) return 0;
  if (len >= SIZE_MAX / sizeof *s->cuts) return -1;
  size_t *cuts = realloc(s->cuts, (len + 1) * sizeof *cuts);
  if (!cuts) return -1;
  s->cuts = cuts;
  char *key = realloc(s->key, len + 1);
  if (!key) return -1;
  s->key = key, s->cap = len;
  return 0;
}

/* The rank of the pair of symbols i and i + 1, or -1 when it is none. */
static int32_t pair_rank(const BpeMap *ranks, BpeScratch *s, const char *word, size_t i) {
  size_t a = s->cuts[i], b = s->cuts[i + 1], c = s->cuts[i + 2];
  memcpy(s->key, word + a, b - a);
  s->key[b - a] = ',';
  memcpy(s->key + (b - a) + 1, word + b, c - b);
  int32_t rank;
  return bpe_map_get(ranks, s->key, c - a + 1, &rank) ? rank : -1;
}

/* The pair to merge among count symbols: the lowest rank, the last of
 * equals; NO_PAIR when no pair is a merge. */
static size_t best_pair(const BpeMap *ranks, BpeScratch *s, const char *word, size_t count) {
  size_t best = NO_PAIR;
  int32_t best_rank = INT32_MAX;
  for (size_t i = 0; i + 1 < count; i++) {
    int32_t rank = pair_rank(ranks, s, word, i);
    if (rank >= 0 && rank <= best_rank) best = i, best_rank = rank;
  }
  return best;
}

static bool symbol_is(const char *word, const size_t *cuts, size_t i, const char *bytes,
                      size_t len) {
  return cuts[i + 1] - cuts[i] == len && memcmp(word + cuts[i], bytes, len) == 0;
}

/* Merges every occurrence of the pair at `at` (its two symbols' bytes),
 * left to right, in place; returns the new count of symbols. */
static size_t merge_pair(const char *word, size_t *cuts, size_t count, size_t at) {
  const char *first = word + cuts[at], *second = word + cuts[at + 1];
  size_t first_len = cuts[at + 1] - cuts[at], second_len = cuts[at + 2] - cuts[at + 1];
  size_t out = 0; /* out <= i: the cuts still to read are never overwritten */
  for (size_t i = 0; i < count;) {
    bool pair = i + 1 < count && symbol_is(word, cuts, i, first, first_len) &&
                symbol_is(word, cuts, i + 1, second, second_len);
    cuts[out++] = cuts[i];
    i += pair ? 2 : 1;
  }
  cuts[out] = cuts[count];
  return out;
}

const size_t *bpe_merge_word(const BpeMap *ranks, BpeScratch *scratch, const char *word, size_t len,
                             size_t *count) {
  if (reserve(scratch, len) < 0) return NULL;
  for (size_t i = 0; i <= len; i++) scratch->cuts[i] = i;
  size_t n = len, at;
  while (n > 1 && (at = best_pair(ranks, scratch, word, n)) != NO_PAIR)
    n = merge_pair(word, scratch->cuts, n, at);
  *count = n;
  return scratch->cuts;
}

void bpe_scratch_free(BpeScratch *scratch) {
  free(scratch->cuts), free(scratch->key);
  *scratch = (BpeScratch){0};
}
