/* job.c — one program through the library, for the one-shot mode and the
 * prompt.
 *
 * In: program text, its name for messages, and a Job (what to make). Out:
 * the simplified (or only checked) UOp text or its graph as Graphviz DOT,
 * or a stage from uj_emit (LLVM
 * IR, assembly, PTX, AMDGCN, an HSA code object) of the program's root,
 * which must then be a kernel. Each call has its own context, freed before
 * it returns. */
#include <stdlib.h>
#include <string.h>

#include "tool.h"

int job_emit_kind(const char *name) {
  if (!strcmp(name, "uops")) return EMIT_UOPS;
  if (!strcmp(name, "dot")) return EMIT_DOT;
  for (int k = 0; k < UJ_EMIT_COUNT; k++)
    if (!strcmp(name, uj_emit_name((uj_emit_kind)k))) return k;
  return -2;
}

const char *job_emit_names(char *buf, size_t size) {
  snprintf(buf, size, "uops");
  for (int k = 0; k < UJ_EMIT_COUNT; k++)
    snprintf(buf + strlen(buf), size - strlen(buf), ", %s", uj_emit_name((uj_emit_kind)k));
  snprintf(buf + strlen(buf), size - strlen(buf), ", dot");
  return buf;
}

/* The UOp text of root, or its graph as DOT, simplified when asked. */
static char *job_uops(uj_ctx *ctx, const uj_uop *root, const Job *job, const char *where) {
  char *text = NULL;
  if (job->simplify && !(root = uj_simplify(ctx, root))) report("%s: %s", where, uj_error(ctx));
  else if (!(text = job->emit == EMIT_DOT ? uj_dot(ctx, root) : uj_print(ctx, root))) report("out of memory");
  return text;
}

bool job_output(const char *text, const char *where, const Job *job, Output *out) {
  *out = (Output){.binary = job->emit == UJ_EMIT_HSACO};
  uj_ctx *ctx = uj_ctx_new();
  if (!ctx) {
    report("out of memory");
    return false;
  }
  const uj_uop *root = uj_parse(ctx, text, where);
  if (!root) { /* the parser's message starts with where:line:col */
    report("%s", uj_error(ctx));
  } else if (uj_check(ctx, root) != UJ_OK) {
    report("%s: %s", where, uj_error(ctx));
  } else if (job->emit == EMIT_UOPS || job->emit == EMIT_DOT) {
    if ((out->data = job_uops(ctx, root, job, where))) out->len = strlen(out->data);
  } else if (!(out->data = uj_emit(ctx, root, (uj_emit_kind)job->emit, job->arch, &out->len))) {
    report("%s: %s: %s", where, uj_emit_name((uj_emit_kind)job->emit), uj_error(ctx));
  }
  uj_ctx_free(ctx);
  return out->data != NULL;
}
