/* model.c — GPT-2's parameters, its training loss and its one-token step
 * with a key/value cache (model.h), as tensor operations of the public
 * API: the scheduler fuses them into kernels, autodiff differentiates
 * them. */
#define _POSIX_C_SOURCE 200809L /* strdup */

#include "model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { NAME_MAX_LEN = 48 };

uj_tensor *gpt2_keep(gpt2_scope *k, uj_tensor *t) {
  if (!t) return NULL;
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 64;
    uj_tensor **grown = realloc(k->t, cap * sizeof *grown);
    if (!grown) return uj_tensor_free(t), NULL;
    k->t = grown, k->cap = cap;
  }
  return k->t[k->n++] = t;
}

void gpt2_scope_free(gpt2_scope *k) {
  for (size_t i = 0; i < k->n; i++) uj_tensor_free(k->t[i]);
  free(k->t);
  *k = (gpt2_scope){0};
}

bool gpt2_config_check(const gpt2_config *c, char *err, size_t errlen) {
  if (c->layers < 1 || c->width < 1 || c->heads < 1 || c->context < 1 || c->vocab < 1)
    return snprintf(err, errlen, "layers, width, heads, context and vocab must be at least 1"), false;
  if (c->width % c->heads) return snprintf(err, errlen, "the width %d is not a multiple of the heads %d", c->width, c->heads), false;
  if (c->layers > 256 || c->width > 16384 || c->context > 65536 || c->vocab > 1 << 20)
    return snprintf(err, errlen, "a configuration beyond 256 layers, width 16384, context 65536 or vocab 2^20"), false;
  return true;
}

int64_t gpt2_config_numel(const gpt2_config *c) {
  int64_t d = c->width;
  int64_t block = 2 * d + (d * 3 * d + 3 * d) + (d * d + d) + 2 * d + (d * 4 * d + 4 * d) + (4 * d * d + d);
  return (int64_t)c->vocab * d + (int64_t)c->context * d + c->layers * block + 2 * d;
}

/* ---- the parameters ---- */

typedef struct Shape {
  int64_t dims[2];
  unsigned nd;
} Shape;

/* The name and shape of parameter i of the block's list, and its
 * initialization: std > 0 normal, else every element value. */
static void block_param(const gpt2_config *c, int l, int i, char *name, Shape *sh, double *std, double *value) {
  static const char *const names[GPT2_PER_BLOCK] = {
      "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias", "attn.c_proj.weight", "attn.c_proj.bias",
      "ln_2.weight", "ln_2.bias", "mlp.c_fc.weight",    "mlp.c_fc.bias",    "mlp.c_proj.weight",  "mlp.c_proj.bias"};
  int64_t d = c->width;
  static const int out_mult[GPT2_PER_BLOCK] = {1, 1, 3, 3, 1, 1, 1, 1, 4, 4, 1, 1};
  snprintf(name, NAME_MAX_LEN, "h.%d.%s", l, names[i]);
  bool weight = i == GPT2_ATTN_W || i == GPT2_PROJ_W || i == GPT2_FC_W || i == GPT2_FCPROJ_W;
  int64_t in = i == GPT2_FCPROJ_W ? 4 * d : d, out = out_mult[i] * d;
  *sh = weight ? (Shape){{in, out}, 2} : (Shape){{out}, 1};
  bool residual = i == GPT2_PROJ_W || i == GPT2_FCPROJ_W; /* GPT-2 scales what adds to the residual stream */
  *std = weight ? 0.02 / (residual ? sqrt(2.0 * c->layers) : 1) : 0;
  *value = i == GPT2_LN1_W || i == GPT2_LN2_W ? 1 : 0;
}

static void param_spec(const gpt2_config *c, size_t i, char *name, Shape *sh, double *std, double *value) {
  size_t blocks_end = GPT2_BLOCKS + (size_t)c->layers * GPT2_PER_BLOCK;
  *std = 0.02, *value = 0;
  if (i == GPT2_WTE) snprintf(name, NAME_MAX_LEN, "wte.weight"), *sh = (Shape){{c->vocab, c->width}, 2};
  else if (i == GPT2_WPE) snprintf(name, NAME_MAX_LEN, "wpe.weight"), *sh = (Shape){{c->context, c->width}, 2};
  else if (i < blocks_end)
    block_param(c, (int)((i - GPT2_BLOCKS) / GPT2_PER_BLOCK), (int)((i - GPT2_BLOCKS) % GPT2_PER_BLOCK), name, sh, std, value);
  else {
    bool weight = i == blocks_end;
    snprintf(name, NAME_MAX_LEN, "ln_f.%s", weight ? "weight" : "bias");
    *sh = (Shape){{c->width}, 1}, *std = 0, *value = weight ? 1 : 0;
  }
}

static uj_tensor *param_init(uj_session *s, const Shape *sh, double std, double value, uint64_t seed) {
  if (std == 0) return uj_tensor_full(s, UJ_FLOAT32, sh->dims, sh->nd, value);
  uj_tensor *r = uj_tensor_randn(s, sh->dims, sh->nd, seed);
  uj_tensor *t = uj_tensor_binary_scalar(UJ_BIN_MUL, r, std, false);
  uj_tensor_free(r);
  return t;
}

void gpt2_free(gpt2 *m) {
  if (!m) return;
  for (size_t i = 0; i < m->nparams; i++) {
    if (m->params) uj_tensor_free(m->params[i]);
    if (m->names) free(m->names[i]);
  }
  free(m->params), free(m->names), free(m);
}

gpt2 *gpt2_new(uj_session *s, const gpt2_config *c, uint64_t seed, char *err, size_t errlen) {
  if (!gpt2_config_check(c, err, errlen)) return NULL;
  gpt2 *m = calloc(1, sizeof *m);
  size_t n = GPT2_BLOCKS + (size_t)c->layers * GPT2_PER_BLOCK + 2;
  if (!m || !(m->params = calloc(n, sizeof *m->params)) || !(m->names = calloc(n, sizeof *m->names)))
    return gpt2_free(m), snprintf(err, errlen, "out of memory"), NULL;
  *m = (gpt2){.s = s, .cfg = *c, .nparams = n, .params = m->params, .names = m->names};
  for (size_t i = 0; i < n; i++) {
    char name[NAME_MAX_LEN];
    Shape sh;
    double std, value;
    param_spec(c, i, name, &sh, &std, &value);
    m->names[i] = strdup(name);
    m->params[i] = param_init(s, &sh, std, value, seed * 1000003u + i);
    if (!m->names[i] || !m->params[i] || uj_tensor_set_requires_grad(m->params[i], true) != UJ_OK) {
      snprintf(err, errlen, "parameter %s: %s", name, m->names[i] ? uj_session_error(s) : "out of memory");
      return gpt2_free(m), NULL;
    }
  }
  return m;
}

uj_tensor *gpt2_param(const gpt2 *m, const char *name) {
  for (size_t i = 0; i < m->nparams; i++)
    if (!strcmp(m->names[i], name)) return m->params[i];
  return NULL;
}

/* ---- the forward pass ---- */

static uj_tensor *matmul(gpt2_scope *k, uj_tensor *a, uj_tensor *b) { return gpt2_keep(k, uj_tensor_matmul(a, b)); }
static uj_tensor *add(gpt2_scope *k, uj_tensor *a, uj_tensor *b) { return gpt2_keep(k, uj_tensor_binary(UJ_BIN_ADD, a, b)); }
static uj_tensor *reshape(gpt2_scope *k, uj_tensor *a, const int64_t *shape, unsigned nd) {
  return gpt2_keep(k, uj_tensor_reshape(a, shape, nd));
}
/* x @ W + b, as nn.Linear (and Conv1D) add the bias. */
static uj_tensor *linear(gpt2_scope *k, uj_tensor *x, uj_tensor *w, uj_tensor *b) { return add(k, matmul(k, x, w), b); }
static uj_tensor *layernorm(gpt2_scope *k, uj_tensor *x, uj_tensor *w, uj_tensor *b) {
  return gpt2_keep(k, uj_tensor_layernorm(x, w, b, 1e-5));
}

/* Columns [lo, lo + n) of the last axis of x (rank nd). */
static uj_tensor *columns(gpt2_scope *k, uj_tensor *x, int64_t lo, int64_t n) {
  if (!x) return NULL;
  unsigned nd = uj_tensor_ndim(x);
  int64_t lohi[2 * UJ_MAX_DIMS];
  for (unsigned a = 0; a < nd; a++) lohi[2 * a] = 0, lohi[2 * a + 1] = uj_tensor_shape(x)[a];
  lohi[2 * nd - 2] = lo, lohi[2 * nd - 1] = lo + n;
  return gpt2_keep(k, uj_tensor_shrink(x, lohi, nd));
}

/* The embedding rows of index (n int32 ids) in table (rows, d): (n, d). */
static uj_tensor *embed(gpt2_scope *k, uj_tensor *table, uj_tensor *index, int64_t n, int64_t d) {
  uj_tensor *ix = gpt2_keep(k, uj_tensor_expand(reshape(k, index, (int64_t[]){n, 1}, 2), (int64_t[]){n, d}, 2));
  return gpt2_keep(k, uj_tensor_gather(table, 0, ix));
}

/* The MLP half of block w on h: h + c_proj(gelu(c_fc(ln_2(h)))). */
static uj_tensor *mlp(gpt2_scope *k, uj_tensor *const *w, uj_tensor *h) {
  uj_tensor *a = layernorm(k, h, w[GPT2_LN2_W], w[GPT2_LN2_B]);
  uj_tensor *up = gpt2_keep(k, uj_tensor_unary(UJ_UN_GELU, linear(k, a, w[GPT2_FC_W], w[GPT2_FC_B])));
  return add(k, h, linear(k, up, w[GPT2_FCPROJ_W], w[GPT2_FCPROJ_B]));
}

/* Part i (0 q, 1 k, 2 v) of c_attn on a (rows, D): a @ W[:, iD:(i+1)D] +
 * b[iD:(i+1)D]. Three GEMMs on the weight's columns rather than one whose
 * output is cut in three: the weight's gradient is then three plain GEMMs
 * side by side, not one GEMM reading three padded, permuted gradients
 * element by element (docs/gpt2.md, "Speed"). */
static uj_tensor *qkv_part(gpt2_scope *k, int64_t D, uj_tensor *const *w, uj_tensor *a, int i) {
  return linear(k, a, columns(k, w[GPT2_ATTN_W], i * D, D), columns(k, w[GPT2_ATTN_B], i * D, D));
}

/* (B T, D) -> (B, H, T, D / H) */
static uj_tensor *split_heads(gpt2_scope *k, const gpt2_config *c, uj_tensor *x, int B, int T) {
  uj_tensor *r = reshape(k, x, (int64_t[]){B, T, c->heads, c->width / c->heads}, 4);
  return gpt2_keep(k, uj_tensor_permute(r, (int[]){0, 2, 1, 3}, 4));
}

/* A block on the residual stream h (B T, D): every matrix product is one
 * over B T rows (the optimizer shapes a GEMM over rows better than one
 * over (B, T) rows: docs/gpt2.md, "Speed"). */
static uj_tensor *block(gpt2_scope *k, const gpt2_config *c, uj_tensor *const *w, uj_tensor *h, int B, int T) {
  int64_t D = c->width;
  uj_tensor *a = layernorm(k, h, w[GPT2_LN1_W], w[GPT2_LN1_B]), *heads[3];
  for (int i = 0; i < 3; i++) heads[i] = split_heads(k, c, qkv_part(k, D, w, a, i), B, T);
  uj_tensor *att = gpt2_keep(k, uj_tensor_attention(heads[0], heads[1], heads[2], true));
  uj_tensor *merged = reshape(k, gpt2_keep(k, uj_tensor_permute(att, (int[]){0, 2, 1, 3}, 4)), (int64_t[]){(int64_t)B * T, D}, 2);
  h = add(k, h, linear(k, merged, w[GPT2_PROJ_W], w[GPT2_PROJ_B]));
  return mlp(k, w, h);
}

/* ln_f(h) @ wte^T: the logits of the tied head. */
static uj_tensor *head(gpt2_scope *k, gpt2 *m, uj_tensor *h) {
  uj_tensor *x = layernorm(k, h, m->params[m->nparams - 2], m->params[m->nparams - 1]);
  return matmul(k, x, gpt2_keep(k, uj_tensor_transpose(m->params[GPT2_WTE], 0, 1)));
}

uj_tensor *gpt2_logits(gpt2 *m, gpt2_scope *k, uj_tensor *tokens, int B, int T) {
  const gpt2_config *c = &m->cfg;
  int64_t BT = (int64_t)B * T, D = c->width;
  if (T < 1 || T > c->context || B < 1) {
    fprintf(stderr, "gpt2: a batch of %d x %d tokens does not fit the context %d\n", B, T, c->context);
    return NULL;
  }
  uj_tensor *pos = T == c->context ? m->params[GPT2_WPE] : gpt2_keep(k, uj_tensor_shrink(m->params[GPT2_WPE], (int64_t[]){0, T, 0, D}, 2));
  uj_tensor *h = add(k, reshape(k, embed(k, m->params[GPT2_WTE], tokens, BT, D), (int64_t[]){B, T, D}, 3), pos);
  h = reshape(k, h, (int64_t[]){BT, D}, 2);
  for (int l = 0; l < c->layers; l++) h = block(k, c, m->params + GPT2_BLOCKS + (size_t)l * GPT2_PER_BLOCK, h, B, T);
  return head(k, m, h);
}

uj_tensor *gpt2_loss(gpt2 *m, gpt2_scope *k, uj_tensor *tokens, uj_tensor *targets, int B, int T) {
  uj_tensor *logits = gpt2_logits(m, k, tokens, B, T);
  return gpt2_keep(k, uj_tensor_cross_entropy(logits, reshape(k, targets, (int64_t[]){(int64_t)B * T}, 1), -1));
}

/* ---- one token with a key/value cache ---- */

void gpt2_cache_free(gpt2 *m, gpt2_cache *c) {
  for (int l = 0; l < m->cfg.layers; l++) {
    if (c->k) uj_tensor_free(c->k[l]);
    if (c->v) uj_tensor_free(c->v[l]);
  }
  free(c->k), free(c->v);
  *c = (gpt2_cache){0};
}

bool gpt2_cache_init(gpt2 *m, gpt2_cache *c) {
  const gpt2_config *g = &m->cfg;
  *c = (gpt2_cache){.k = calloc((size_t)g->layers, sizeof *c->k), .v = calloc((size_t)g->layers, sizeof *c->v)};
  bool ok = c->k && c->v;
  int64_t shape[3] = {g->heads, g->context, g->width / g->heads};
  for (int l = 0; ok && l < g->layers; l++) {
    c->k[l] = uj_tensor_zeros(m->s, UJ_FLOAT32, shape, 3), c->v[l] = uj_tensor_zeros(m->s, UJ_FLOAT32, shape, 3);
    ok = c->k[l] && c->v[l] && uj_tensor_realize(c->k + l, 1) == UJ_OK && uj_tensor_realize(c->v + l, 1) == UJ_OK;
  }
  if (!ok) gpt2_cache_free(m, c);
  return ok;
}

/* The attention of block l for the token at pos, whose q, k, v (1, D)
 * are given: the cache with this token's key and value written at row
 * pos into *knew, *vnew; the heads' outputs merged (1, D). */
static uj_tensor *attend_cached(gpt2_scope *k, gpt2 *m, gpt2_cache *c, int l, uj_tensor *const qkv[3], uj_tensor *pos, uj_tensor **knew,
                                uj_tensor **vnew) {
  const gpt2_config *g = &m->cfg;
  int64_t H = g->heads, C = g->context, Dh = g->width / g->heads;
  uj_tensor *rows = gpt2_keep(k, uj_tensor_arange(m->s, UJ_INT32, 0, (double)C, 1));
  uj_tensor *at_pos = gpt2_keep(k, uj_tensor_binary(UJ_BIN_EQ, reshape(k, rows, (int64_t[]){1, C, 1}, 3), pos));
  uj_tensor *heads[3];
  for (int i = 0; i < 3; i++) heads[i] = reshape(k, qkv[i], (int64_t[]){H, 1, Dh}, 3); /* (1, D) -> (H, 1, Dh) */
  *knew = uj_tensor_where(at_pos, heads[1], c->k[l]);
  *vnew = uj_tensor_where(at_pos, heads[2], c->v[l]);
  /* softmax(q K^T / sqrt(Dh)) over the rows up to pos, times V */
  uj_tensor *kt = gpt2_keep(k, uj_tensor_transpose(*knew, 1, 2));
  uj_tensor *scores = gpt2_keep(k, uj_tensor_binary_scalar(UJ_BIN_MUL, matmul(k, heads[0], kt), 1 / sqrt((double)Dh), false));
  uj_tensor *seen = gpt2_keep(k, uj_tensor_binary(UJ_BIN_LE, reshape(k, rows, (int64_t[]){1, 1, C}, 3), pos));
  uj_tensor *minus_inf = gpt2_keep(k, uj_tensor_full(m->s, UJ_FLOAT32, NULL, 0, -INFINITY));
  uj_tensor *p = gpt2_keep(k, uj_tensor_softmax(gpt2_keep(k, uj_tensor_where(seen, scores, minus_inf)), -1));
  uj_tensor *o = matmul(k, p, *vnew); /* (H, 1, Dh) */
  return reshape(k, gpt2_keep(k, uj_tensor_permute(o, (int[]){1, 0, 2}, 3)), (int64_t[]){1, g->width}, 2);
}

bool gpt2_decode(gpt2 *m, gpt2_cache *c, int32_t token, float *logits) {
  const gpt2_config *g = &m->cfg;
  if (c->len >= g->context || token < 0 || token >= g->vocab) {
    fprintf(stderr, "gpt2: token %d at position %d: outside the vocabulary %d or the context %d\n", token, c->len, g->vocab, g->context);
    return false;
  }
  gpt2_scope k = {0};
  size_t nout = 1 + 2 * (size_t)g->layers;
  uj_tensor **out = calloc(nout, sizeof *out); /* the logits, then each block's new keys and values */
  int64_t D = g->width;
  uj_tensor *tok = gpt2_keep(&k, uj_tensor_from_data(m->s, UJ_INT32, (int64_t[]){1}, 1, &token));
  uj_tensor *pos = gpt2_keep(&k, uj_tensor_from_data(m->s, UJ_INT32, NULL, 0, &c->len));
  uj_tensor *h = add(&k, embed(&k, m->params[GPT2_WTE], tok, 1, D), embed(&k, m->params[GPT2_WPE], gpt2_keep(&k, uj_tensor_reshape(pos, (int64_t[]){1}, 1)), 1, D));
  for (int l = 0; out && l < g->layers; l++) {
    uj_tensor *const *w = m->params + GPT2_BLOCKS + (size_t)l * GPT2_PER_BLOCK;
    uj_tensor *a = layernorm(&k, h, w[GPT2_LN1_W], w[GPT2_LN1_B]);
    uj_tensor *parts[3] = {qkv_part(&k, D, w, a, 0), qkv_part(&k, D, w, a, 1), qkv_part(&k, D, w, a, 2)};
    uj_tensor *att = attend_cached(&k, m, c, l, parts, pos, &out[1 + 2 * l], &out[2 + 2 * l]);
    h = mlp(&k, w, add(&k, h, linear(&k, att, w[GPT2_PROJ_W], w[GPT2_PROJ_B])));
  }
  bool ok = out && (out[0] = head(&k, m, h)) && uj_tensor_realize(out, nout) == UJ_OK &&
            uj_tensor_to_host(out[0], logits, (size_t)g->vocab * sizeof *logits) == UJ_OK;
  for (int l = 0; ok && l < g->layers; l++) { /* the new caches replace the old */
    uj_tensor_free(c->k[l]), uj_tensor_free(c->v[l]);
    c->k[l] = out[1 + 2 * l], c->v[l] = out[2 + 2 * l];
    out[1 + 2 * l] = out[2 + 2 * l] = NULL;
  }
  if (ok) c->len++;
  else fprintf(stderr, "gpt2: decoding: %s\n", out ? uj_session_error(m->s) : "out of memory");
  for (size_t i = 1; out && i < nout; i++) uj_tensor_free(out[i]);
  free(out);
  gpt2_scope_free(&k);
  return ok;
}
