/* nodemap.c — numbering of the nodes a walk meets (nodemap.h).
 *
 * In: nodes, in the order a walk meets them. Out: their numbers 0, 1, ...
 * Afterwards: lookups cost O(1) on average; the map holds at most four
 * times as many slots as numbers, whatever the context's size. Ids are
 * hashed in runs of 8 (a run of consecutive ids, as a chain's nodes are
 * made, lands in consecutive slots: one cache line), the runs scattered by
 * a multiplicative hash. */
#include <stdlib.h>

#include "uop/nodemap.h"

static size_t slot_of(uint32_t id, size_t mask) {
  uint64_t run = ((uint64_t)(id >> 3) * 0x9e3779b97f4a7c15ull) >> 29;
  return (size_t)((run & ~(uint64_t)7) | (id & 7)) & mask;
}

void nodemap_free(NodeMap *m) {
  free(m->slot), free(m->dense);
  m->slot = NULL, m->dense = NULL;
  m->count = m->cap = 0, m->span = 0;
}

uint32_t nodemap_find_slot(const NodeMap *m, const UOp *u) {
  if (!m->cap) return NODEMAP_NONE;
  size_t mask = m->cap - 1;
  for (size_t j = slot_of(u->id, mask); m->slot[j].key; j = (j + 1) & mask)
    if (m->slot[j].key == u->id + 1) return m->slot[j].num;
  return NODEMAP_NONE;
}

static bool grow(NodeMap *m, size_t cap) {
  NodeSlot *slot = calloc(cap, sizeof *slot);
  if (!slot) return false;
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slot[i].key) continue;
    size_t j = slot_of(m->slot[i].key - 1, cap - 1);
    while (slot[j].key) j = (j + 1) & (cap - 1);
    slot[j] = m->slot[i];
  }
  free(m->slot);
  m->slot = slot, m->cap = cap;
  if (m->ctx) m->ctx->work += cap;
  return true;
}

bool nodemap_reserve(NodeMap *m, size_t n) {
  if (2 * n < m->cap) return true;
  size_t cap = m->cap ? m->cap : 16;
  while (cap <= 2 * n) cap *= 2;
  if (grow(m, cap)) return true;
  if (m->ctx) ctx_set_error(m->ctx, "out of memory walking a graph");
  return false;
}

uint32_t nodemap_add(NodeMap *m, const UOp *u) {
  if (!nodemap_reserve(m, m->count + 1)) return NODEMAP_NONE;
  size_t mask = m->cap - 1, j = slot_of(u->id, mask);
  for (; m->slot[j].key; j = (j + 1) & mask)
    if (m->slot[j].key == u->id + 1) return m->slot[j].num;
  m->slot[j] = (NodeSlot){u->id + 1, (uint32_t)m->count};
  if (u->id - m->lo < m->span) m->dense[u->id - m->lo] = (uint32_t)m->count;
  if (!m->count || u->id > m->hi) m->hi = u->id;
  return (uint32_t)m->count++;
}

void nodemap_densify(NodeMap *m) {
  if (m->dense || !m->count) return;
  uint64_t span = 4 * (uint64_t)m->count + 64;
  if (span > (uint64_t)m->hi + 1) span = (uint64_t)m->hi + 1;
  uint32_t *dense = malloc(span * sizeof *dense);
  if (!dense) return;
  uint32_t lo = m->hi + 1 - (uint32_t)span;
  for (size_t d = 0; d < span; d++) dense[d] = NODEMAP_NONE;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slot[i].key && m->slot[i].key - 1 - lo < span) dense[m->slot[i].key - 1 - lo] = m->slot[i].num;
  m->dense = dense, m->lo = lo, m->span = (uint32_t)span;
  if (m->ctx) m->ctx->work += span;
}

bool nodemap_number(NodeMap *m, const UOp *const *nodes, size_t n) {
  if (!nodemap_reserve(m, m->count + n)) return false;
  for (size_t k = 0; k < n; k++)
    if (nodemap_add(m, nodes[k]) == NODEMAP_NONE) return false;
  nodemap_densify(m);
  return true;
}

bool topo_make(Ctx *ctx, const UOp *root, Topo *t) {
  t->num = nodemap_make(ctx);
  t->n = uop_toposort(ctx, root, &t->nodes);
  if (t->n && nodemap_number(&t->num, t->nodes, t->n)) return true;
  topo_free(t);
  return false;
}

void topo_free(Topo *t) {
  free(t->nodes);
  nodemap_free(&t->num);
  t->nodes = NULL, t->n = 0;
}
