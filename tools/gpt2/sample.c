/* sample.c — drawing tokens from a checkpoint with a key/value cache
 * (sample.h). */
#include "sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpe.h"
#include "checkpoint.h"
#include "util.h"

static int cmp_desc(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x < y) - (x > y);
}

int32_t sample_pick(const float *logits, int n, double temperature, int top_k, double u, float *scratch) {
  int32_t best = 0;
  for (int i = 1; i < n; i++)
    if (logits[i] > logits[best]) best = i;
  if (temperature <= 0) return best;
  /* the k-th largest logit: the smallest kept */
  float cut = -INFINITY;
  if (top_k > 0 && top_k < n) {
    memcpy(scratch, logits, (size_t)n * sizeof *scratch);
    qsort(scratch, (size_t)n, sizeof *scratch, cmp_desc);
    cut = scratch[top_k - 1];
  }
  double total = 0, top = logits[best];
  for (int i = 0; i < n; i++) total += logits[i] >= cut ? exp((logits[i] - top) / temperature) : 0;
  double target = u * total, run = 0;
  for (int i = 0; i < n; i++) {
    if (logits[i] < cut) continue;
    run += exp((logits[i] - top) / temperature);
    if (run > target) return i;
  }
  return best;
}

/* Writes the bytes of id to stdout. */
static bool put_token(const bpe *tok, int32_t id, char *err, size_t errlen) {
  size_t len = 0;
  char *bytes = bpe_decode(tok, &id, 1, &len, err, errlen);
  if (!bytes) return false;
  fwrite(bytes, 1, len, stdout);
  fflush(stdout);
  free(bytes);
  return true;
}

typedef struct Sampler {
  uj_session *s;
  gpt2 *model;
  gpt2_cache cache;
  bpe *tok;
  float *logits, *scratch;
  int32_t *prompt;
  size_t nprompt;
  char err[512];
} Sampler;

static bool sampler_open(Sampler *r, const sample_opts *o) {
  const char *why = NULL;
  char enc[4096], vocab[4096];
  gpt2_config cfg;
  gpt2_meta meta;
  if (!(r->s = uj_session_new(o->device ? o->device : getenv("UJ_DEVICE") ? getenv("UJ_DEVICE") : "CPU", &why)))
    return snprintf(r->err, sizeof r->err, "%s", why), false;
  if (!checkpoint_peek(r->s, o->checkpoint, &cfg, &meta, r->err, sizeof r->err)) return false;
  if (!(r->model = gpt2_new(r->s, &cfg, 0, r->err, sizeof r->err))) return false;
  if (!checkpoint_load(o->checkpoint, r->model, NULL, r->err, sizeof r->err)) return false;
  snprintf(enc, sizeof enc, "%s/encoder.json", o->tok_dir), snprintf(vocab, sizeof vocab, "%s/vocab.bpe", o->tok_dir);
  if (!(r->tok = bpe_load(enc, vocab, r->err, sizeof r->err))) return false;
  if ((int)bpe_vocab_size(r->tok) > cfg.vocab)
    return snprintf(r->err, sizeof r->err, "the tokenizer has %zu ids, the model %d", bpe_vocab_size(r->tok), cfg.vocab), false;
  if (bpe_encode(r->tok, o->prompt, strlen(o->prompt), &r->prompt, &r->nprompt, r->err, sizeof r->err) != 0) return false;
  if (r->nprompt == 0) { /* no prompt: the start of a document */
    int32_t eot = bpe_eot(r->tok);
    int32_t *one = realloc(r->prompt, sizeof *one);
    if (!one) return snprintf(r->err, sizeof r->err, "out of memory"), false;
    r->prompt = one, r->prompt[0] = eot, r->nprompt = 1;
  }
  if (r->nprompt >= (size_t)cfg.context)
    return snprintf(r->err, sizeof r->err, "the prompt has %zu tokens, the context %d", r->nprompt, cfg.context), false;
  r->logits = malloc((size_t)cfg.vocab * sizeof *r->logits), r->scratch = malloc((size_t)cfg.vocab * sizeof *r->scratch);
  if (!r->logits || !r->scratch) return snprintf(r->err, sizeof r->err, "out of memory"), false;
  if (!gpt2_cache_init(r->model, &r->cache)) return snprintf(r->err, sizeof r->err, "%s", uj_session_error(r->s)), false;
  return true;
}

static void sampler_close(Sampler *r) {
  if (r->model) gpt2_cache_free(r->model, &r->cache);
  free(r->logits), free(r->scratch), free(r->prompt);
  bpe_free(r->tok);
  gpt2_free(r->model);
  uj_session_free(r->s);
}

static bool generate(Sampler *r, const sample_opts *o) {
  uint64_t rng = o->seed;
  const gpt2_config *c = &r->model->cfg;
  double t0 = gpt2_now_s(), t1 = t0;
  int drawn = 0;
  if (r->prompt[0] != bpe_eot(r->tok) || r->nprompt > 1) fputs(o->prompt, stdout);
  for (size_t i = 0; i < r->nprompt; i++)
    if (!gpt2_decode(r->model, &r->cache, r->prompt[i], r->logits)) return snprintf(r->err, sizeof r->err, "decoding the prompt failed"), false;
  for (int n = 0; n < o->tokens; n++) {
    if (n == 1) t1 = gpt2_now_s(); /* the first token's step compiled the graph */
    double u = (double)(gpt2_splitmix64(rng) >> 11) * 0x1p-53;
    rng += GPT2_SPLITMIX_STEP;
    int32_t next = sample_pick(r->logits, c->vocab, o->temperature, o->top_k, u, r->scratch);
    if (next == bpe_eot(r->tok) || next >= (int32_t)bpe_vocab_size(r->tok)) break;
    if (!put_token(r->tok, next, r->err, sizeof r->err)) return false;
    if (r->cache.len >= c->context) break;
    if (!gpt2_decode(r->model, &r->cache, next, r->logits)) return snprintf(r->err, sizeof r->err, "decoding failed"), false;
    drawn++;
  }
  fputc('\n', stdout);
  double t2 = gpt2_now_s();
  fprintf(stderr, "gpt2 sample: %zu prompt tokens and %d drawn in %.2f s (%.1f ms a token after the first)\n", r->nprompt, drawn, t2 - t0,
          drawn > 1 ? (t2 - t1) * 1e3 / (drawn - 1) : NAN);
  return true;
}

int sample_run(const sample_opts *o) {
  Sampler r = {0};
  bool ok = sampler_open(&r, o) && generate(&r, o);
  if (!ok) fprintf(stderr, "gpt2: %s\n", r.err);
  sampler_close(&r);
  return ok ? 0 : 1;
}
