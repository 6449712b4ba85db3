/* bpe_map.c — a hash map from byte strings to int32 values.
 *
 * In: keys (any bytes, copied in) and values. Out: the value of a key.
 * Open addressing with linear probing over a power-of-two table kept at
 * most half full; FNV-1a hashes. Keys are never removed one by one, only
 * all at once (bpe_map_clear), so probing needs no tombstones. */
#include <stdlib.h>
#include <string.h>

#include "bpe_internal.h"

static uint64_t hash_bytes(const char *key, size_t len) {
  uint64_t h = 14695981039346656037u;
  for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)key[i]) * 1099511628211u;
  return h;
}

/* The slot holding key, or the empty slot where it would go; cap > 0. */
static BpeMapSlot *find_slot(const BpeMap *m, const char *key, size_t len, uint64_t hash) {
  size_t mask = m->cap - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    BpeMapSlot *s = &m->slots[i];
    if (!s->used) return s;
    if (s->hash == hash && s->key_len == len && memcmp(m->keys + s->key_start, key, len) == 0)
      return s;
  }
}

/* Doubles the table (or makes the first one) and places every slot anew. */
static int grow_slots(BpeMap *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  BpeMapSlot *old = m->slots, *slots = calloc(cap, sizeof *slots);
  if (!slots) return -1;
  size_t old_cap = m->cap;
  m->slots = slots, m->cap = cap;
  for (size_t i = 0; i < old_cap; i++) {
    if (!old[i].used) continue;
    const char *key = m->keys + old[i].key_start;
    *find_slot(m, key, old[i].key_len, old[i].hash) = old[i];
  }
  free(old);
  return 0;
}

/* Room for len more key bytes (and keys not NULL, even for empty keys). */
static int reserve_keys(BpeMap *m, size_t len) {
  if (m->keys && len <= m->keys_cap - m->keys_len) return 0;
  size_t cap = m->keys_cap ? m->keys_cap : 4096;
  while (cap - m->keys_len < len) {
    if (cap > SIZE_MAX / 2) return -1;
    cap *= 2;
  }
  char *keys = realloc(m->keys, cap);
  if (!keys) return -1;
  m->keys = keys, m->keys_cap = cap;
  return 0;
}

int bpe_map_put(BpeMap *m, const char *key, size_t len, int32_t value) {
  if ((m->count + 1) * 2 > m->cap && grow_slots(m) < 0) return -1;
  uint64_t hash = hash_bytes(key, len);
  BpeMapSlot *s = find_slot(m, key, len, hash);
  if (s->used) {
    s->value = value;
    return 0;
  }
  if (reserve_keys(m, len) < 0) return -1;
  memcpy(m->keys + m->keys_len, key, len);
  *s = (BpeMapSlot){
      .hash = hash, .key_start = m->keys_len, .key_len = len, .value = value, .used = true};
  m->keys_len += len, m->count++;
  return 0;
}

bool bpe_map_get(const BpeMap *m, const char *key, size_t len, int32_t *value) {
  if (m->count == 0) return false;
  const BpeMapSlot *s = find_slot(m, key, len, hash_bytes(key, len));
  if (s->used) *value = s->value;
  return s->used;
}

void bpe_map_clear(BpeMap *m) {
  if (m->slots) memset(m->slots, 0, m->cap * sizeof *m->slots);
  m->count = 0, m->keys_len = 0;
}

void bpe_map_free(BpeMap *m) {
  free(m->slots), free(m->keys);
  *m = (BpeMap){0};
}
