/* dot.c — a UOp graph as Graphviz DOT (text.h: text_dot).
 *
 * In: a root. Out: `digraph NAME { ... }` with one node a UOp, labelled by
 * its head in the text form ("ADD:float32", "RANGE:int32 loop 0") and its
 * shape when it has one, filled by what it is: memory (PARAM, BUFFER,
 * INDEX, LOAD, STORE, GATHER, SCATTER), loops (RANGE, END), reductions,
 * movement ops, constants and variables; an edge from each source to its
 * user, labelled with the source's place when the user has several. Sinks
 * at the bottom (rankdir TB: sources above users). */
#include <stdlib.h>
#include <string.h>

#include "uop/nodemap.h"
#include "uop/strbuf.h"
#include "uop/text.h"

/* The fill of a node: a light colour a kind. */
static const char *fill_of(const UOp *u) {
  switch (u->op) {
  case UJ_OP_PARAM: case UJ_OP_BUFFER: case UJ_OP_INDEX: case UJ_OP_LOAD: case UJ_OP_STORE:
  case UJ_OP_GATHER: case UJ_OP_SCATTER: case UJ_OP_STORE_ADD: case UJ_OP_ALLOC: case UJ_OP_STAGE:
    return "#dbe8fb"; /* memory: blue */
  case UJ_OP_RANGE: case UJ_OP_END: case UJ_OP_BARRIER:
    return "#fbefc9"; /* loops: yellow */
  case UJ_OP_REDUCE:
    return "#f8d4d0"; /* reductions: red */
  case UJ_OP_RESHAPE: case UJ_OP_EXPAND: case UJ_OP_PERMUTE: case UJ_OP_FLIP: case UJ_OP_PAD: case UJ_OP_SHRINK:
    return "#d8f0d8"; /* movement: green */
  case UJ_OP_CONST: case UJ_OP_DEFINE_VAR:
    return "#eeeeee"; /* constants and variables: grey */
  default:
    return "#ffffff";
  }
}

/* text between DOT's double quotes: '"' and '\' escaped. */
static void add_quoted(StrBuf *b, const char *s) {
  while (*s) {
    size_t run = strcspn(s, "\"\\");
    if (run) strbuf_add(b, "%.*s", (int)run, s), s += run;
    if (*s) strbuf_add(b, "\\%c", *s), s++;
  }
}

char *text_dot(Ctx *ctx, const UOp *root, const char *name) {
  Topo t;
  if (!topo_make(ctx, root, &t)) return NULL;
  StrBuf b = {0};
  strbuf_add(&b, "digraph \"");
  add_quoted(&b, name ? name : "uops");
  strbuf_add(&b, "\" {\n  rankdir=TB;\n  node [shape=box, style=\"rounded,filled\", fontname=\"monospace\", fontsize=10];\n"
                 "  edge [fontsize=8, color=\"#555555\"];\n");
  char head[256];
  for (size_t k = 0; k < t.n && !b.failed; k++) {
    const UOp *u = t.nodes[k];
    text_node_head(u, head, sizeof head);
    strbuf_add(&b, "  n%zu [fillcolor=\"%s\", label=\"", k, fill_of(u));
    add_quoted(&b, head);
    if (u->ndim > 0) {
      strbuf_add(&b, "\\n(");
      for (unsigned d = 0; d < u->ndim; d++) strbuf_add(&b, "%s%lld", d ? ", " : "", (long long)u->shape[d]);
      strbuf_add(&b, u->ndim == 1 ? ",)" : ")");
    }
    strbuf_add(&b, "\"];\n");
  }
  for (size_t k = 0; k < t.n && !b.failed; k++) {
    const UOp *u = t.nodes[k];
    for (uint32_t i = 0; i < u->nsrc; i++) {
      strbuf_add(&b, "  n%u -> n%zu", topo_at(&t, u->src[i]), k);
      if (u->nsrc > 1) strbuf_add(&b, " [label=\"%u\"]", i);
      strbuf_add(&b, ";\n");
    }
  }
  strbuf_add(&b, "}\n");
  topo_free(&t);
  if (b.failed) {
    free(b.buf);
    ctx_set_error(ctx, "out of memory writing a graph as DOT");
    return NULL;
  }
  return b.buf;
}

char *uj_dot(uj_ctx *ctx, const uj_uop *root) {
  if (!ctx) return NULL;
  if (!uop_in_ctx(ctx, root)) {
    ctx_set_error(ctx, "dot: %s", root ? "the node is not from this context" : "no graph");
    return NULL;
  }
  return text_dot(ctx, root, "uops");
}
