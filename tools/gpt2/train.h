/* train.h — the training loop of gpt2 (docs/gpt2.md, "Training").
 *
 * In: the options below. Out: a model trained on out the token files of
 * data_dir (train.bin, val.bin); one line a step on stdout (step, loss,
 * learning rate, tokens/s, ms/step, time left); in out_dir the checkpoint
 * (checkpoint.safetensors, written every ckpt_every steps and at the
 * end), log.tsv (step, training loss, validation loss where measured,
 * learning rate: the losses as exact decimal floats) and loss.svg, the
 * curve, written at the end.
 *
 * A step: for each of accum micro-batches the loss of batch × T tokens
 * divided by accum, its gradients added to the parameters' (realized
 * between micro-batches, so that memory holds one micro-batch's
 * activations); then one AdamW step with clipping by the global norm.
 * The learning rate rises linearly over warmup steps, then falls as a
 * cosine to min_lr at the last step; it is a device variable, so
 * changing it compiles nothing. Resuming from a checkpoint restores the
 * parameters, the moments, the step and the options, and the batches are
 * a function of (seed, step): the losses that follow equal, bit for bit,
 * those of the run that was not stopped. */
#ifndef GPT2_TRAIN_H
#define GPT2_TRAIN_H

#include "model.h"

typedef struct train_opts {
  gpt2_config cfg;
  const char *device;    /* uj_session_new's; NULL: UJ_DEVICE or the CPU */
  const char *data_dir;  /* train.bin and val.bin */
  const char *out_dir;   /* the checkpoint, log.tsv, loss.svg */
  const char *resume;    /* a checkpoint to go on from, or NULL */
  const char *init;      /* initial weights (a safetensors file) instead of GPT-2's initialization, or NULL */
  const char *save_init; /* where to write the initial weights before the first step, or NULL */
  uint64_t seed;         /* the initialization's and the batches' */
  int batch, T, accum;
  int64_t steps, warmup;
  double lr, min_lr, weight_decay, clip;
  int val_every, val_batches, ckpt_every; /* 0: never (the checkpoint: only at the end) */
  int64_t stop_after; /* > 0: stop after this step, as if interrupted, saving a checkpoint (resume goes on) */
} train_opts;

/* GPT-2-like defaults for everything but cfg, device, and the folders. */
void train_defaults(train_opts *o);
/* The learning rate of step (0-based) of o. */
double train_lr(const train_opts *o, int64_t step);
/* Runs the loop; 0, or 1 with the reason on stderr. */
int train_run(train_opts *o);

#endif
