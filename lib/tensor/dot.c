/* dot.c — uj_tensor_dot: pictures of what realizing a tensor does, as
 * Graphviz DOT (docs/tool.md, "Pictures").
 *
 * In: a tensor and a view. "graph": its lazy tensor graph as built (one
 * box a node: uop/dot.c). "schedule": the kernels realizing it would run,
 * boxes with their index, name, output and UOp count, and the buffers
 * between them, ellipses with their id, dtype, elements and bytes: blue
 * the buffers already computed (inputs), white the temporaries (with their
 * memory slab), bold the outputs; an edge from each buffer a kernel reads
 * and to the buffer it writes, and a dashed edge for an order the
 * buffers do not show (a kernel that must wait for an earlier one).
 * "kernel N": kernel N's UOps as shaped for the session's device. Out: the
 * text, malloc'd; NULL and a message on error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tensor/tensor_impl.h"
#include "uop/alu.h"
#include "uop/strbuf.h"
#include "uop/text.h"

static void size_text(double bytes, char *buf, size_t n) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) bytes /= 1024, u++;
  snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

/* Is buffer id written by an item of sch? Which one in *item. */
static bool written_by(const Schedule *sch, int64_t id, size_t *item) {
  for (size_t j = 0; j < sch->nitems; j++)
    if (sch->items[j].output->ints[0] == id) return *item = j, true;
  return false;
}

static bool is_output(const Schedule *sch, int64_t id) {
  for (size_t i = 0; i < sch->noutputs; i++)
    if (sch->outputs[i]->src[0]->ints[0] == id) return true;
  return false;
}

/* A buffer's node, once: "b<id>". seen holds the ids written so far. */
static void add_buffer(StrBuf *b, const Schedule *sch, const UOp *buf, int64_t **seen, size_t *nseen) {
  int64_t id = buf->ints[0];
  for (size_t i = 0; i < *nseen; i++)
    if ((*seen)[i] == id) return;
  int64_t *more = realloc(*seen, (*nseen + 1) * sizeof *more);
  if (!more) {
    b->failed = true;
    return;
  }
  (*seen = more)[(*nseen)++] = id;
  char dt[40], bytes[32];
  DType d = dt_base(buf->dtype);
  size_text((double)buf->ints[1] * (double)elem_bytes(d), bytes, sizeof bytes);
  size_t item = 0;
  bool written = written_by(sch, id, &item), temp = written && sch->slab_of_item[item] >= 0, out = is_output(sch, id);
  strbuf_add(b, "  b%lld [shape=ellipse, style=\"filled%s\", fillcolor=\"%s\", label=\"buffer %lld\\n%s[%lld], %s",
             (long long)id, out ? ",bold" : "", written ? "#ffffff" : "#dbe8fb", (long long)id, dtype_str(d, dt, sizeof dt),
             (long long)buf->ints[1], bytes);
  if (temp) strbuf_add(b, "\\ntemporary, slab %ld", sch->slab_of_item[item]);
  else if (out) strbuf_add(b, "\\noutput");
  else if (!written) strbuf_add(b, "\\ninput");
  strbuf_add(b, "\"];\n");
}

static char *schedule_dot(uj_tensor *t) {
  Schedule *sch = tensor_schedule_preview(t, NULL);
  if (!sch) return NULL;
  StrBuf b = {0};
  int64_t *seen = NULL;
  size_t nseen = 0;
  strbuf_add(&b, "digraph schedule {\n  rankdir=LR;\n  node [fontname=\"monospace\", fontsize=10];\n"
                 "  edge [color=\"#555555\"];\n");
  for (size_t j = 0; j < sch->nitems && !b.failed; j++) {
    const ScheduleItem *it = &sch->items[j];
    const UOp **nodes = NULL;
    size_t n = uop_toposort(t->s->ctx, it->kernel, &nodes); /* its UOp count; 0 when out of memory */
    free(nodes);
    char dt[40];
    strbuf_add(&b, "  k%zu [shape=box, style=\"rounded,filled\", fillcolor=\"#fbefc9\", label=\"kernel %zu: %s\\n"
                   "writes %s[%lld]", j, j, it->name, dtype_str(dt_base(it->output->dtype), dt, sizeof dt),
               (long long)it->output->ints[1]);
    if (n) strbuf_add(&b, "\\n%zu UOps", n);
    strbuf_add(&b, "\"];\n");
    add_buffer(&b, sch, it->output, &seen, &nseen);
    for (size_t k = 0; k < it->ninputs; k++) add_buffer(&b, sch, it->inputs[k], &seen, &nseen);
  }
  for (size_t j = 0; j < sch->nitems && !b.failed; j++) {
    const ScheduleItem *it = &sch->items[j];
    for (size_t k = 0; k < it->ninputs; k++) strbuf_add(&b, "  b%lld -> k%zu;\n", (long long)it->inputs[k]->ints[0], j);
    strbuf_add(&b, "  k%zu -> b%lld;\n", j, (long long)it->output->ints[0]);
    for (size_t k = 0; k < it->ndeps; k++) { /* an order no buffer edge shows */
      bool shown = false;
      for (size_t i = 0; i < it->ninputs; i++) shown |= sch->items[it->deps[k]].output->ints[0] == it->inputs[i]->ints[0];
      if (!shown) strbuf_add(&b, "  k%zu -> k%zu [style=dashed, label=\"after\"];\n", it->deps[k], j);
    }
  }
  strbuf_add(&b, "}\n");
  free(seen);
  schedule_free(sch);
  if (b.failed) {
    free(b.buf);
    return tensor_fail(t->s, "dot", "out of memory");
  }
  return b.buf;
}

/* Kernel n of t's schedule, its UOps as DOT. */
static char *kernel_dot(uj_tensor *t, long n) {
  Schedule *sch = tensor_schedule_preview(t, NULL);
  if (!sch) return NULL;
  char *text = NULL;
  if (n < 0 || (size_t)n >= sch->nitems)
    tensor_fail(t->s, "dot", "no kernel %ld: realizing the tensor runs %zu kernel%s (0 to %zu)", n, sch->nitems,
                sch->nitems == 1 ? "" : "s", sch->nitems ? sch->nitems - 1 : 0);
  else
    text = text_dot(t->s->ctx, sch->items[n].kernel, sch->items[n].name);
  schedule_free(sch);
  return text;
}

char *uj_tensor_dot(uj_tensor *t, const char *view) {
  if (!t) return NULL;
  if (view && !strcmp(view, "graph")) return text_dot(t->s->ctx, t->node, "tensor");
  if (view && !strcmp(view, "schedule")) return schedule_dot(t);
  char *end = NULL;
  long n = view && !strncmp(view, "kernel ", 7) ? strtol(view + 7, &end, 10) : -1;
  if (end && end != view + 7 && !*end) return kernel_dot(t, n);
  return tensor_fail(t->s, "dot", "'%s' is not one of graph, schedule, kernel N", view ? view : "(null)");
}
