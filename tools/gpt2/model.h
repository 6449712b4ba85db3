/* model.h — GPT-2 on uopjit's public tensor API (docs/gpt2.md).
 *
 * In: a configuration (layers, width, heads, context, vocabulary) and a
 * session. Out: the parameters (named as Hugging Face's `gpt2` names
 * them, laid out as its Conv1D keeps them: a linear map's weight is (in,
 * out), so y = x @ W + b), the training loss of a batch of tokens as a
 * lazy tensor, and the logits of one token given a key/value cache of the
 * tokens before it. No kernel is written by hand: every value is tensor
 * operations that uopjit schedules, fuses and compiles. */
#ifndef GPT2_MODEL_H
#define GPT2_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uopjit/tensor.h"

typedef struct gpt2_config {
  int layers, width, heads, context, vocab;
} gpt2_config;

/* The parameters of a block (their index from the block's first) and of
 * the model around the blocks. */
enum {
  GPT2_LN1_W, GPT2_LN1_B, GPT2_ATTN_W, GPT2_ATTN_B, GPT2_PROJ_W, GPT2_PROJ_B,
  GPT2_LN2_W, GPT2_LN2_B, GPT2_FC_W, GPT2_FC_B, GPT2_FCPROJ_W, GPT2_FCPROJ_B,
  GPT2_PER_BLOCK
};
enum { GPT2_WTE, GPT2_WPE, GPT2_BLOCKS }; /* then the blocks, then ln_f's weight and bias */

typedef struct gpt2 {
  uj_session *s;
  gpt2_config cfg;
  size_t nparams;
  uj_tensor **params; /* parameters (requires_grad), in the order above */
  char **names;       /* "wte.weight", "h.0.ln_1.weight", ... */
} gpt2;

/* The tensors a forward pass builds, freed together. */
typedef struct gpt2_scope {
  uj_tensor **t;
  size_t n, cap;
} gpt2_scope;
uj_tensor *gpt2_keep(gpt2_scope *k, uj_tensor *t); /* t (NULL when it was, or when out of memory) */
void gpt2_scope_free(gpt2_scope *k);

/* Checks a configuration; false and a message in err when it cannot be
 * built (a width not divisible by the heads, sizes below 1). */
bool gpt2_config_check(const gpt2_config *c, char *err, size_t errlen);
/* The number of parameters' elements (the embedding counted once). */
int64_t gpt2_config_numel(const gpt2_config *c);

/* A model with GPT-2's initialization (normal 0.02; the projections into
 * the residual stream 0.02 / sqrt(2 layers); biases 0; layernorms 1 and
 * 0), drawn from seed. NULL and a message in err on failure. */
gpt2 *gpt2_new(uj_session *s, const gpt2_config *c, uint64_t seed, char *err, size_t errlen);
void gpt2_free(gpt2 *m);
/* The parameter named name, or NULL. */
uj_tensor *gpt2_param(const gpt2 *m, const char *name);

/* The logits of tokens (batch × T, int32, T at most the context): a lazy
 * (batch T, vocab) tensor; everything it builds goes into k. NULL on
 * error (the session says). */
uj_tensor *gpt2_logits(gpt2 *m, gpt2_scope *k, uj_tensor *tokens, int batch, int T);
/* The mean next-token cross-entropy of tokens (batch × T, int32, T at
 * most the context) against targets (the same shape): a lazy scalar.
 * Everything it builds goes into k. NULL on error (the session says). */
uj_tensor *gpt2_loss(gpt2 *m, gpt2_scope *k, uj_tensor *tokens, uj_tensor *targets, int batch, int T);

/* The keys and values of every block for the positions seen so far: per
 * block a (heads, context, width / heads) tensor of each, rows past len
 * not yet written. */
typedef struct gpt2_cache {
  uj_tensor **k, **v;
  int len;
} gpt2_cache;
bool gpt2_cache_init(gpt2 *m, gpt2_cache *c);
void gpt2_cache_free(gpt2 *m, gpt2_cache *c);
/* Feeds token at position c->len (below the context): its logits (vocab
 * floats) into logits, the cache one longer. Each call runs one schedule
 * of the same graph (so compiles only at the first): the token's keys and
 * values written into new caches beside the logits; the prefix is not
 * computed again. */
bool gpt2_decode(gpt2 *m, gpt2_cache *c, int32_t token, float *logits);

#endif
