/* linear_print.c — a kernel's list (linear.h) as text, one item a line,
 * indented by loop depth (`uopjit --emit=list`, uj_emit UJ_EMIT_LIST):
 *
 *   %3 = LOOP global 0 < %2 grid
 *     %4 = PHI ADD:float32 in %3 from identity
 *     %8 = ACC ADD:float32 %4 %7
 *   ENDLOOP %3 (%4 <- %8)
 *
 * A VALUE is its op and dtype on its items; a leaf (CONST, PARAM,
 * DEFINE_VAR, ALLOC) is the node's own text. Out: a malloc'd string;
 * NULL (error set) when out of memory. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codegen/linear.h"
#include "uop/strbuf.h"
#include "uop/text.h"

static void item_ref(StrBuf *o, uint32_t k) {
  if (k == LIN_NONE) strbuf_add(o, " -");
  else strbuf_add(o, " %%%u", k);
}

static void value(StrBuf *o, const UOp *u, const uint32_t *src, uint32_t n) {
  char d[48], text[256];
  if (u->nsrc == 0) { /* a leaf: its own text */
    text_print_node(u, 0, text, sizeof text);
    strbuf_add(o, "%s", text);
    return;
  }
  strbuf_add(o, "%s:%s", op_table[u->op].name, dtype_str(u->dtype, d, sizeof d));
  if (u->op == UJ_OP_GEP) strbuf_add(o, " %lld", (long long)u->ints[0]);
  for (uint32_t i = 0; i < n && i < u->nsrc; i++) item_ref(o, src[i]); /* not INDEX's e (linear.h) */
}

char *linear_print(Ctx *ctx, const Linear *l) {
  StrBuf o = {0};
  unsigned depth = 0;
  char d[48];
  for (uint32_t k = 0; k < l->n && !o.failed; k++) {
    const LinItem *it = &l->items[k];
    const uint32_t *src = lin_src(l, k);
    const UOp *u = it->u;
    if (it->kind == LIN_ENDLOOP && depth) depth--;
    strbuf_add(&o, "%*s", (int)(2 * depth), "");
    switch ((LinKind)it->kind) {
    case LIN_VALUE:
      strbuf_add(&o, "%%%u = ", k);
      value(&o, u, src, it->nsrc);
      break;
    case LIN_LOOP:
      strbuf_add(&o, "%%%u = LOOP %s %lld <", k, u->name, (long long)u->ints[0]);
      item_ref(&o, src[0]);
      if (it->nsrc > 1) strbuf_add(&o, " from"), item_ref(&o, src[1]);
      if (it->flags & LIN_GRID) strbuf_add(&o, " grid");
      depth++;
      break;
    case LIN_PHI:
      strbuf_add(&o, "%%%u = PHI %s:%s in %%%u from", k, u->name, dtype_str(u->dtype, d, sizeof d), src[0]);
      if (src[1] == LIN_NONE) strbuf_add(&o, " identity");
      else item_ref(&o, src[1]);
      break;
    case LIN_ACC:
      strbuf_add(&o, "%%%u = ACC %s:%s", k, u->name, dtype_str(u->dtype, d, sizeof d));
      item_ref(&o, src[0]), item_ref(&o, src[1]);
      if (it->nsrc == 4) strbuf_add(&o, " fma"), item_ref(&o, src[2]), item_ref(&o, src[3]);
      break;
    case LIN_ENDLOOP:
      strbuf_add(&o, "ENDLOOP %%%u", src[0]);
      for (uint32_t i = 1; i + 1 < it->nsrc; i += 2) strbuf_add(&o, " (%%%u <- %%%u)", src[i], src[i + 1]);
      break;
    case LIN_STORE:
      strbuf_add(&o, "%s", op_table[u->op].name); /* STORE, STORE_ADD */
      item_ref(&o, src[0]), item_ref(&o, src[1]);
      break;
    case LIN_BARRIER: strbuf_add(&o, "BARRIER%s", it->flags & LIN_WORKGROUP ? " workgroup" : ""); break;
    }
    strbuf_add(&o, "\n");
  }
  if (!o.failed && !o.buf) strbuf_add(&o, "%s", "");
  if (o.failed) {
    free(o.buf);
    ctx_set_error(ctx, "linear_print: out of memory");
    return NULL;
  }
  return o.buf;
}
