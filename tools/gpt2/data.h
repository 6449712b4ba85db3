/* data.h — the training text as tokens, and the batches drawn from it
 * (docs/gpt2.md, "The data").
 *
 * A token file is 8 bytes "UJGPT2T1", a little-endian uint64 count, then
 * count little-endian uint16 ids (GPT-2's vocabulary fits 16 bits).
 * gpt2_prepare reads a folder of fortune files (entries between lines
 * "%"), encodes each entry with the tokenizer, ends it with
 * <|endoftext|>, and writes train.bin and val.bin: every tenth entry goes
 * to validation, so both parts draw from every file.
 *
 * A batch is B windows of T + 1 tokens (inputs, then the next tokens as
 * targets). Training windows start where a counter-based hash of (seed,
 * step, micro-batch, row) says, so any step's batch is known without
 * drawing the ones before (a resumed run sees the batches the first run
 * would have); validation windows are evenly spaced and fixed. */
#ifndef GPT2_DATA_H
#define GPT2_DATA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct gpt2_tokens {
  uint16_t *ids;
  size_t n;
} gpt2_tokens;

bool tokens_write(const char *path, const uint16_t *ids, size_t n, char *err, size_t errlen);
bool tokens_read(const char *path, gpt2_tokens *t, char *err, size_t errlen);
void tokens_free(gpt2_tokens *t);

/* Fortune files in text_dir (every regular file without a dot in its
 * name, in name order) into out_dir/train.bin and out_dir/val.bin, with
 * the tokenizer files in tok_dir (encoder.json, vocab.bpe). Prints what
 * it made on stdout. */
bool gpt2_prepare(const char *text_dir, const char *tok_dir, const char *out_dir, char *err, size_t errlen);

/* The start of training window (step, micro, row) among n tokens. */
uint64_t batch_offset(uint64_t seed, int64_t step, int micro, int row, size_t n, int T);
/* Training batch (step, micro): in and out B × T int32 each. False when
 * the file is shorter than T + 1 tokens. */
bool batch_train(const gpt2_tokens *t, uint64_t seed, int64_t step, int micro, int B, int T, int32_t *in, int32_t *out);
/* Validation batch index of count: windows spread evenly over the file. */
bool batch_val(const gpt2_tokens *t, int index, int count, int B, int T, int32_t *in, int32_t *out);

#endif
