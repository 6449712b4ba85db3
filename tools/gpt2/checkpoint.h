/* checkpoint.h — GPT-2 checkpoints as safetensors files (docs/gpt2.md).
 *
 * A checkpoint holds the parameters under Hugging Face's names
 * ("wte.weight", "h.0.attn.c_attn.weight", ...: the layout of `gpt2`'s
 * model.safetensors, Conv1D weights (in, out) as the model keeps them),
 * AdamW's moments under "optim.m.NAME" and "optim.v.NAME", and text
 * metadata: the configuration, the step, and the training options as
 * key=value pairs, so a resumed run goes on exactly where the first
 * stopped.
 *
 * Loading reads either that or a Hugging Face file: names with a
 * "transformer." prefix are taken without it, "lm_head.weight" (the tied
 * head) and the attention mask buffers ("*.attn.bias",
 * "*.attn.masked_bias", which are not parameters) are skipped; the
 * configuration is read off the shapes (heads: width / 64, as every
 * published GPT-2 has, unless the metadata says). */
#ifndef GPT2_CHECKPOINT_H
#define GPT2_CHECKPOINT_H

#include "model.h"

/* Metadata: up to 32 key=value pairs of text. */
typedef struct gpt2_meta {
  char key[32][32];
  char value[32][256];
  int n;
} gpt2_meta;
void meta_set(gpt2_meta *m, const char *key, const char *fmt, ...);
const char *meta_get(const gpt2_meta *m, const char *key);

/* Writes model's parameters, opt's moments (opt may be NULL) and meta
 * (the configuration is added to it) to path, atomically. */
bool checkpoint_save(const char *path, gpt2 *model, uj_optimizer *opt, const gpt2_meta *meta, char *err, size_t errlen);

/* The configuration and metadata of the file at path. */
bool checkpoint_peek(uj_session *s, const char *path, gpt2_config *cfg, gpt2_meta *meta, char *err, size_t errlen);
/* Loads the parameters (and, where opt is given, the moments and the
 * step count) into a model of the file's configuration. Every parameter
 * must be present with its shape. */
bool checkpoint_load(const char *path, gpt2 *model, uj_optimizer *opt, char *err, size_t errlen);

#endif
