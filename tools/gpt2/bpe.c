/* bpe.c — the tokenizer's API (bpe.h): load, encode, decode.
 *
 * In: the paths of encoder.json and vocab.bpe; texts; ids. Out: a bpe
 * (the vocabulary, the merge ranks, a cache of encoded words); ids;
 * bytes. Encoding runs the text through the pipeline
 *
 *   bytes --bpe_utf8_valid--> valid UTF-8 --bpe_split_next--> pieces
 *         --bpe_merge_word--> tokens --vocab.ids--> ids
 *
 * with each piece's ids kept in the cache, as the package keeps each
 * piece's merges. Decoding concatenates the ids' bytes. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "bpe_internal.h"

/* Words longer than this are merged every time (they are rare); the cache
 * is emptied when it holds CACHE_WORDS words. So it stays below 2^31 ids. */
#define CACHE_WORD_MAX 256
#define CACHE_WORDS    (1 << 20)

typedef struct Ids {
  int32_t *v;
  size_t n, cap;
} Ids;

struct bpe {
  BpeVocab vocab;
  BpeMap ranks; /* first ',' second -> the rank of the merge */
  int32_t eot;
  BpeMap cache;    /* a word -> the index in cached of its count of ids */
  Ids cached;      /* for each word in the cache: its count of ids, then its ids */
  BpeScratch work; /* bpe_merge_word's */
};

int bpe_fail(char *err, size_t errlen, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* ---- ids ---- */

static int ids_push(Ids *ids, const int32_t *v, size_t n) {
  if (n > ids->cap - ids->n) {
    size_t cap = ids->cap ? ids->cap : 256;
    while (cap - ids->n < n) {
      if (cap > SIZE_MAX / 2 / sizeof *ids->v) return -1;
      cap *= 2;
    }
    int32_t *grown = realloc(ids->v, cap * sizeof *grown);
    if (!grown) return -1;
    ids->v = grown, ids->cap = cap;
  }
  if (n) memcpy(ids->v + ids->n, v, n * sizeof *v);
  ids->n += n;
  return 0;
}

/* ---- load ---- */

static int find_eot(bpe *b, const char *encoder_json_path, char *err, size_t errlen) {
  static const char eot[] = "<|endoftext|>";
  if (bpe_map_get(&b->vocab.ids, eot, strlen(eot), &b->eot)) return 0;
  return bpe_fail(err, errlen, "%s: no token \"%s\"", encoder_json_path, eot);
}

bpe *bpe_load(const char *encoder_json_path, const char *vocab_bpe_path, char *err, size_t errlen) {
  bpe *b = calloc(1, sizeof *b);
  if (!b) return bpe_fail(err, errlen, "out of memory"), NULL;
  if (bpe_read_encoder(encoder_json_path, &b->vocab, err, errlen) < 0 ||
      bpe_read_merges(vocab_bpe_path, &b->vocab, &b->ranks, err, errlen) < 0 ||
      find_eot(b, encoder_json_path, err, errlen) < 0) {
    bpe_free(b);
    return NULL;
  }
  return b;
}

void bpe_free(bpe *b) {
  if (!b) return;
  bpe_vocab_free(&b->vocab);
  bpe_map_free(&b->ranks), bpe_map_free(&b->cache);
  free(b->cached.v);
  bpe_scratch_free(&b->work);
  free(b);
}

size_t bpe_vocab_size(const bpe *b) { return b->vocab.count; }

int32_t bpe_eot(const bpe *b) { return b->eot; }

/* ---- encode ---- */

/* The ids of word[0..len) appended to out, from its merges. */
static int merge_word(bpe *b, const char *word, size_t len, Ids *out, char *err, size_t errlen) {
  size_t count;
  const size_t *cuts = bpe_merge_word(&b->ranks, &b->work, word, len, &count);
  if (!cuts) return bpe_fail(err, errlen, "encode: out of memory");
  for (size_t i = 0; i < count; i++) {
    const char *token = word + cuts[i];
    size_t token_len = cuts[i + 1] - cuts[i];
    int32_t id;
    if (!bpe_map_get(&b->vocab.ids, token, token_len, &id))
      return bpe_fail(err, errlen,
                      "encode: merging \"%.*s\" made \"%.*s\", no token of encoder.json", (int)len,
                      word, (int)token_len, token);
    if (ids_push(out, &id, 1) < 0) return bpe_fail(err, errlen, "encode: out of memory");
  }
  return 0;
}

/* Keeps the ids of word in the cache. A word the cache has no room for is
 * not kept, which changes nothing but the time. */
static void cache_put(bpe *b, const char *word, size_t len, const int32_t *ids, size_t n) {
  if (len > CACHE_WORD_MAX) return;
  if (b->cache.count >= CACHE_WORDS) bpe_map_clear(&b->cache), b->cached.n = 0;
  int32_t at = (int32_t)b->cached.n, count = (int32_t)n;
  if (ids_push(&b->cached, &count, 1) < 0 || ids_push(&b->cached, ids, n) < 0 ||
      bpe_map_put(&b->cache, word, len, at) < 0)
    b->cached.n = (size_t)at;
}

static int encode_word(bpe *b, const char *word, size_t len, Ids *out, char *err, size_t errlen) {
  int32_t at;
  if (bpe_map_get(&b->cache, word, len, &at)) {
    if (ids_push(out, b->cached.v + at + 1, (size_t)b->cached.v[at]) < 0)
      return bpe_fail(err, errlen, "encode: out of memory");
    return 0;
  }
  size_t start = out->n;
  if (merge_word(b, word, len, out, err, errlen) < 0) return -1;
  cache_put(b, word, len, out->v + start, out->n - start);
  return 0;
}

int bpe_encode(bpe *b, const char *text, size_t len, int32_t **ids, size_t *n, char *err,
               size_t errlen) {
  *ids = NULL, *n = 0;
  char *owned;
  size_t owned_len;
  if (bpe_utf8_valid(text, len, &owned, &owned_len) < 0)
    return bpe_fail(err, errlen, "encode: out of memory");
  const char *s = owned ? owned : text;
  size_t s_len = owned ? owned_len : len;
  Ids out = {.v = malloc(sizeof *out.v), .cap = 1}; /* not NULL, even for no ids */
  int rc = out.v ? 0 : bpe_fail(err, errlen, "encode: out of memory");
  for (size_t pos = 0, end; rc == 0 && pos < s_len; pos = end) {
    end = bpe_split_next(s, s_len, pos);
    rc = encode_word(b, s + pos, end - pos, &out, err, errlen);
  }
  free(owned);
  if (rc < 0) return free(out.v), -1;
  *ids = out.v, *n = out.n;
  return 0;
}

/* ---- decode ---- */

char *bpe_decode(const bpe *b, const int32_t *ids, size_t n, size_t *len, char *err,
                 size_t errlen) {
  const BpeVocab *v = &b->vocab;
  size_t total = 0;
  *len = 0;
  for (size_t i = 0; i < n; i++) {
    if (ids[i] < 0 || (size_t)ids[i] >= v->count) {
      bpe_fail(err, errlen, "decode: id %" PRId32 " at position %zu is out of range (0 to %zu)",
               ids[i], i, v->count - 1);
      return NULL;
    }
    total += v->tokens[ids[i]].len;
  }
  char *out = malloc(total + 1);
  if (!out) return bpe_fail(err, errlen, "decode: out of memory"), NULL;
  for (size_t i = 0, at = 0; i < n; i++) {
    BpeToken t = v->tokens[ids[i]];
    memcpy(out + at, v->bytes + t.start, t.len);
    at += t.len;
  }
  out[total] = '\0';
  *len = total;
  return out;
}
