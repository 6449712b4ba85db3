/* run.h — running a schedule on a device.
 *
 * In: a Schedule (lib/schedule) and a table of the memory that holds each
 * BUFFER id already computed. Out: every item run in order; the table then
 * also holds the roots' BUFFERs (new memory), while intermediate BUFFERs
 * live only during the run, in the slabs of the schedule's memory plan. */
#ifndef UJ_RUNTIME_RUN_H
#define UJ_RUNTIME_RUN_H

#include "runtime/device.h"
#include "schedule/schedule.h"

typedef struct BufferTable {
  RtBuffer **by_id; /* BUFFER id -> memory (a reference), or NULL */
  size_t *at;       /* BUFFER id -> its place in ids + 1, or 0 */
  size_t cap;
  int64_t *ids;     /* the ids that hold memory, in no order: a walk over */
  size_t nids;      /* them costs what the table holds, not every id made */
} BufferTable;

/* Holds a new reference to b (NULL clears the entry). */
bool buffer_table_set(BufferTable *t, int64_t id, RtBuffer *b);
RtBuffer *buffer_table_get(const BufferTable *t, int64_t id);
void buffer_table_free(BufferTable *t);

bool runtime_run(Device *d, const Schedule *s, BufferTable *t);

#endif
