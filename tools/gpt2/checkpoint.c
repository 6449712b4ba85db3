/* checkpoint.c — saving and loading GPT-2 checkpoints (checkpoint.h). */
#include "checkpoint.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void meta_set(gpt2_meta *m, const char *key, const char *fmt, ...) {
  int i = 0;
  while (i < m->n && strcmp(m->key[i], key)) i++;
  if (i == m->n) {
    if (m->n == (int)(sizeof m->key / sizeof *m->key)) return;
    m->n++;
    snprintf(m->key[i], sizeof m->key[i], "%s", key);
  }
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(m->value[i], sizeof m->value[i], fmt, ap);
  va_end(ap);
}

const char *meta_get(const gpt2_meta *m, const char *key) {
  for (int i = 0; i < m->n; i++)
    if (!strcmp(m->key[i], key)) return m->value[i];
  return NULL;
}

static const char *const CONFIG_KEYS[5] = {"layers", "width", "heads", "context", "vocab"};
static int *config_field(gpt2_config *c, int i) {
  int *fields[5] = {&c->layers, &c->width, &c->heads, &c->context, &c->vocab};
  return fields[i];
}

bool checkpoint_save(const char *path, gpt2 *model, uj_optimizer *opt, const gpt2_meta *meta, char *err, size_t errlen) {
  gpt2_meta all = *meta;
  meta_set(&all, "format", "uopjit-gpt2");
  for (int i = 0; i < 5; i++) meta_set(&all, CONFIG_KEYS[i], "%d", *config_field(&model->cfg, i));
  if (opt) meta_set(&all, "step", "%lld", (long long)uj_optim_steps(opt));
  size_t cap = 3 * model->nparams, n = 0;
  const char **names = calloc(cap, sizeof *names);
  char **owned = calloc(cap, sizeof *owned);
  uj_tensor **ts = calloc(cap, sizeof *ts);
  const char *keys[32], *values[32];
  bool ok = names && owned && ts;
  for (size_t i = 0; ok && i < model->nparams; i++) {
    names[n] = model->names[i], ts[n++] = model->params[i];
    for (int which = 0; opt && which < 2; which++) {
      uj_tensor *state = uj_optim_state(opt, i, which);
      if (!state) continue;
      size_t len = strlen(model->names[i]) + 16;
      if (!(owned[n] = malloc(len))) {
        ok = false;
        break;
      }
      snprintf(owned[n], len, "optim.%c.%s", which ? 'v' : 'm', model->names[i]);
      names[n] = owned[n], ts[n++] = state;
    }
  }
  for (int i = 0; i < all.n; i++) keys[i] = all.key[i], values[i] = all.value[i];
  if (!ok) snprintf(err, errlen, "out of memory");
  else if (uj_safetensors_save(model->s, path, names, ts, n, keys, values, (size_t)all.n) != UJ_OK)
    ok = false, snprintf(err, errlen, "%s", uj_session_error(model->s));
  for (size_t i = 0; owned && i < cap; i++) free(owned[i]);
  free(names), free(owned), free(ts);
  return ok;
}

/* name without Hugging Face's "transformer." prefix. */
static const char *plain_name(const char *name) {
  static const char prefix[] = "transformer.";
  return strncmp(name, prefix, sizeof prefix - 1) ? name : name + sizeof prefix - 1;
}

/* The file's name of the tensor called want (prefix aside), or NULL. */
static const char *file_name(const uj_safetensors *f, const char *want) {
  for (size_t i = 0; i < uj_safetensors_count(f); i++)
    if (!strcmp(plain_name(uj_safetensors_name(f, i)), want)) return uj_safetensors_name(f, i);
  return NULL;
}

/* The shape of the tensor called name (prefix aside) into shape; its rank, or -1. */
static int shape_of(uj_safetensors *f, const char *name, int64_t *shape) {
  const char *raw = file_name(f, name);
  uj_tensor *t = raw ? uj_safetensors_get(f, raw) : NULL;
  int nd = t ? (int)uj_tensor_ndim(t) : -1;
  for (int a = 0; a < nd && a < 2; a++) shape[a] = uj_tensor_shape(t)[a];
  uj_tensor_free(t);
  return nd;
}

bool checkpoint_peek(uj_session *s, const char *path, gpt2_config *cfg, gpt2_meta *meta, char *err, size_t errlen) {
  uj_safetensors *f = uj_safetensors_open(s, path);
  if (!f) return snprintf(err, errlen, "%s", uj_session_error(s)), false;
  *meta = (gpt2_meta){0};
  for (size_t i = 0; i < uj_safetensors_meta_count(f); i++) {
    const char *key = uj_safetensors_meta_key(f, i);
    meta_set(meta, key, "%s", uj_safetensors_meta(f, key));
  }
  *cfg = (gpt2_config){0};
  int64_t wte[2] = {0}, wpe[2] = {0};
  bool ok = shape_of(f, "wte.weight", wte) == 2 && shape_of(f, "wpe.weight", wpe) == 2;
  if (!ok) snprintf(err, errlen, "%s: no wte.weight and wpe.weight of two axes: not a GPT-2 checkpoint", path);
  if (ok) {
    cfg->vocab = (int)wte[0], cfg->width = (int)wte[1], cfg->context = (int)wpe[0];
    char name[64];
    do snprintf(name, sizeof name, "h.%d.ln_1.weight", cfg->layers);
    while (file_name(f, name) && ++cfg->layers < 1024);
    const char *heads = meta_get(meta, "heads");
    cfg->heads = heads ? atoi(heads) : cfg->width % 64 == 0 ? cfg->width / 64 : 1;
    ok = gpt2_config_check(cfg, err, errlen);
  }
  uj_safetensors_close(f);
  return ok;
}

/* Writes the file's tensor called name into dst (its shape required; a
 * half-precision file is widened). */
static bool load_into(uj_safetensors *f, const char *path, const char *name, uj_tensor *dst, char *err, size_t errlen) {
  uj_session *s = uj_tensor_session(dst);
  const char *raw = file_name(f, name);
  if (!raw) return snprintf(err, errlen, "%s: no tensor %s", path, name), false;
  uj_tensor *t = uj_safetensors_get(f, raw);
  bool ok = t && uj_tensor_ndim(t) == uj_tensor_ndim(dst);
  for (unsigned a = 0; ok && a < uj_tensor_ndim(t); a++) ok = uj_tensor_shape(t)[a] == uj_tensor_shape(dst)[a];
  if (!t) snprintf(err, errlen, "%s", uj_session_error(s));
  else if (!ok) snprintf(err, errlen, "%s: %s has another shape than the model's", path, name);
  else if (uj_tensor_assign(dst, t) != UJ_OK) ok = false, snprintf(err, errlen, "%s: %s: %s", path, name, uj_session_error(s));
  uj_tensor_free(t);
  return ok;
}

bool checkpoint_load(const char *path, gpt2 *model, uj_optimizer *opt, char *err, size_t errlen) {
  uj_safetensors *f = uj_safetensors_open(model->s, path);
  if (!f) return snprintf(err, errlen, "%s", uj_session_error(model->s)), false;
  bool ok = true;
  for (size_t i = 0; ok && i < model->nparams; i++) {
    ok = load_into(f, path, model->names[i], model->params[i], err, errlen);
    for (int which = 0; ok && opt && which < 2; which++) {
      uj_tensor *state = uj_optim_state(opt, i, which);
      char name[96];
      snprintf(name, sizeof name, "optim.%c.%s", which ? 'v' : 'm', model->names[i]);
      if (state) ok = load_into(f, path, name, state, err, errlen);
    }
  }
  const char *step = uj_safetensors_meta(f, "step");
  if (ok && opt) {
    if (!step) ok = false, snprintf(err, errlen, "%s: no step in the metadata: not a training checkpoint", path);
    else uj_optim_set_steps(opt, atoll(step));
  }
  uj_safetensors_close(f);
  return ok;
}
