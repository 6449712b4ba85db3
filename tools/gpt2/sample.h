/* sample.h — text from a GPT-2 checkpoint (docs/gpt2.md, "Sampling").
 *
 * In: a checkpoint (train.c's, or Hugging Face's model.safetensors of
 * gpt2), the tokenizer's folder, a prompt and the sampling options. Out:
 * the prompt and the tokens drawn after it, on stdout as they come. Each
 * token is one gpt2_decode step (the key/value cache: the prefix is not
 * computed again); the next token is drawn from the softmax of the
 * logits / temperature over the top_k largest (temperature 0: the
 * largest), with a generator seeded by seed, so a seed gives one text. */
#ifndef GPT2_SAMPLE_H
#define GPT2_SAMPLE_H

#include <stdint.h>

#include "model.h"

typedef struct sample_opts {
  const char *checkpoint, *tok_dir, *prompt, *device;
  int tokens, top_k; /* top_k 0: every token */
  double temperature;
  uint64_t seed;
} sample_opts;

/* The index of the token drawn from logits[0..n) (scratch: n floats), u
 * uniform in [0, 1). */
int32_t sample_pick(const float *logits, int n, double temperature, int top_k, double u, float *scratch);
int sample_run(const sample_opts *o);

#endif
