"""make.py — the PyTorch reference runs of test/test_train_torch.c.

Regenerate (needs torch 1.13 and numpy; nothing else reads this script):

    /usr/bin/python3 test/data/train_torch/make.py

It writes, next to itself, the initial weights, the data and the loss of
every step of two training runs as .npy files (float32 and int32, C order,
little endian), from fixed numpy seeds, so the same files come out on
every run; commit them: the test reads only the .npy files, and CI needs
no PyTorch. Both runs are float32 throughout, AdamW(lr, betas (0.9,
0.999), eps 1e-8, weight_decay 0.01) over every parameter (one group),
clip_grad_norm_(1.0) before each step, STEPS steps; step i (from 0) reads
batch i % BATCHES of the data. The loss of a step is computed before that
step's update.

  mlp   64-32-32-10, relu, batch 16, cross entropy, lr 3e-3; the labels a
        random teacher's argmax with a tenth of them replaced at random
        -> mlp_{w1,b1,w2,b2,w3,b3} (weights (in, out): x @ w + b),
           mlp_x (BATCHES, 16, 64), mlp_labels (BATCHES, 16), mlp_losses (STEPS,)
  gpt   a 2-layer GPT: vocab 64, d 32, 2 heads, T 16, batch 4, MLP 128,
        pre-layernorm blocks (eps 1e-5), no dropout, lr 3e-3:
          h = wte[tokens] + wpe
          per layer l: a = layernorm(h, ln1_w, ln1_b)
                       q, k, v = a @ wq, a @ wk, a @ wv  (no bias; see below)
                       heads: causal softmax(q k^T / sqrt(16)) v
                       h = h + merged @ wo + bo
                       a = layernorm(h, ln2_w, ln2_b)
                       h = h + gelu_tanh(a @ w1 + b1) @ w2 + b2
          logits = layernorm(h, lnf_w, lnf_b) @ head; cross entropy of the
          next token. The q, k, v projections have no bias: the key's bias
          has gradient 0 in exact arithmetic (a softmax ignores what is
          added to a whole row), so AdamW would turn its rounding noise
          into steps of size lr, different in every implementation.
          The tokens: a fixed random Markov chain (each token followed by
          one of 4 likely successors).
        -> gpt_wte (64, 32), gpt_wpe (16, 32), gpt_L{0,1}_{ln1_w, ln1_b, wq,
           wk, wv, wo, bo, ln2_w, ln2_b, w1, b1, w2, b2}, gpt_lnf_{w,b},
           gpt_head (32, 64), gpt_tokens (BATCHES, 4, 17), gpt_losses (STEPS,)

  gelu  F.gelu(x, approximate="tanh") and F.gelu(x) (erf) of 97 points x
        in [-6, 6] -> gelu_x, gelu_tanh, gelu_erf: the test checks that
        UJ_UN_GELU is the first

Run with --drift to print, instead, how far each run in float64 ends from
the float32 one: the loss's own sensitivity to float32 rounding, which no
implementation can beat by much.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)  # one order of every sum, run after run

STEPS, BATCHES = 200, 8
BETAS, EPS, WD, CLIP = (0.9, 0.999), 1e-8, 0.01, 1.0


def save(name, a):
    a = np.array(a, order="C")
    assert a.dtype in (np.float32, np.int32), (name, a.dtype)
    np.save(os.path.join(HERE, name + ".npy"), a)


def train(params, loss_of, lr, dtype):
    """STEPS steps of AdamW with clipping; the losses (float64 array)."""
    p = [torch.tensor(a, dtype=dtype, requires_grad=True) for a in params]
    opt = torch.optim.AdamW(p, lr=lr, betas=BETAS, eps=EPS, weight_decay=WD)
    losses = []
    for step in range(STEPS):
        opt.zero_grad()
        loss = loss_of(p, step % BATCHES)
        assert loss.dtype == dtype
        loss.backward()
        torch.nn.utils.clip_grad_norm_(p, CLIP)
        opt.step()
        losses.append(loss.item())
    return np.array(losses)


# ---- mlp ----

MLP_DIMS, MLP_BATCH = (64, 32, 32, 10), 16


def mlp_case():
    rng = np.random.default_rng(606)
    params = []
    for n_in, n_out in zip(MLP_DIMS, MLP_DIMS[1:]):  # nn.Linear's init
        bound = 1 / math.sqrt(n_in)
        params.append(rng.uniform(-bound, bound, (n_in, n_out)).astype(np.float32))
        params.append(rng.uniform(-bound, bound, n_out).astype(np.float32))
    x = rng.standard_normal((BATCHES, MLP_BATCH, MLP_DIMS[0])).astype(np.float32)
    teacher = rng.standard_normal((MLP_DIMS[0], MLP_DIMS[-1]))
    labels = np.argmax(x @ teacher, axis=-1)
    noisy = rng.random(labels.shape) < 0.1
    labels[noisy] = rng.integers(0, MLP_DIMS[-1], noisy.sum())
    return params, x, labels.astype(np.int32)


def mlp_loss_fn(x, labels, dtype):
    X = [torch.tensor(b, dtype=dtype) for b in x]
    L = [torch.from_numpy(b).long() for b in labels]

    def loss_of(p, i):
        h = X[i]
        for layer in range(3):
            h = h @ p[2 * layer] + p[2 * layer + 1]
            if layer < 2:
                h = torch.relu(h)
        return F.cross_entropy(h, L[i])

    return loss_of


# ---- gpt ----

V, D, H, T, B, LAYERS, HID = 64, 32, 2, 16, 4, 2, 128
BLOCK = ["ln1_w", "ln1_b", "wq", "wk", "wv", "wo", "bo", "ln2_w", "ln2_b", "w1", "b1", "w2", "b2"]
GPT_NAMES = ["wte", "wpe"] + ["L%d_%s" % (l, n) for l in range(LAYERS) for n in BLOCK] + ["lnf_w", "lnf_b", "head"]


def gpt_case():
    rng = np.random.default_rng(707)

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def zeros(n):
        return np.zeros(n, dtype=np.float32)

    def ones(n):
        return np.ones(n, dtype=np.float32)

    proj_std = 0.02 / math.sqrt(2 * LAYERS)  # GPT-2's residual projections
    params = [normal((V, D), 0.02), normal((T, D), 0.02)]
    for _ in range(LAYERS):
        params += [ones(D), zeros(D), normal((D, D), 0.02), normal((D, D), 0.02), normal((D, D), 0.02),
                   normal((D, D), proj_std), zeros(D), ones(D), zeros(D), normal((D, HID), 0.02), zeros(HID),
                   normal((HID, D), proj_std), zeros(D)]
    params += [ones(D), zeros(D), normal((D, V), 0.02)]
    assert len(params) == len(GPT_NAMES)
    # a Markov chain: each token goes to one of its 4 successors (weights
    # 0.4 0.3 0.2 0.1), sometimes (a tenth) to any token
    succ = rng.integers(0, V, (V, 4))
    tokens = np.zeros((BATCHES, B, T + 1), dtype=np.int32)
    for b in range(BATCHES):
        for r in range(B):
            tok = rng.integers(0, V)
            for t in range(T + 1):
                tokens[b, r, t] = tok
                tok = rng.integers(0, V) if rng.random() < 0.1 else succ[tok, rng.choice(4, p=[0.4, 0.3, 0.2, 0.1])]
    return params, tokens


def gpt_loss_fn(tokens, dtype):
    ins = [torch.from_numpy(b[:, :T]).long() for b in tokens]
    outs = [torch.from_numpy(b[:, 1:]).long().reshape(-1) for b in tokens]
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # key after query

    def attention(a, wq, wk, wv):
        def heads(w):  # (B, T, D) -> (B, H, T, D/H)
            return (a @ w).reshape(B, T, H, D // H).permute(0, 2, 1, 3)

        q, k, v = heads(wq), heads(wk), heads(wv)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(D // H))
        att = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v
        return att.permute(0, 2, 1, 3).reshape(B, T, D)

    def loss_of(p, i):
        P = dict(zip(GPT_NAMES, p))
        h = P["wte"][ins[i]] + P["wpe"]
        for l in range(LAYERS):
            W = {n: P["L%d_%s" % (l, n)] for n in BLOCK}
            a = F.layer_norm(h, (D,), W["ln1_w"], W["ln1_b"], eps=1e-5)
            h = h + attention(a, W["wq"], W["wk"], W["wv"]) @ W["wo"] + W["bo"]
            a = F.layer_norm(h, (D,), W["ln2_w"], W["ln2_b"], eps=1e-5)
            h = h + F.gelu(a @ W["w1"] + W["b1"], approximate="tanh") @ W["w2"] + W["b2"]
        logits = F.layer_norm(h, (D,), P["lnf_w"], P["lnf_b"], eps=1e-5) @ P["head"]
        return F.cross_entropy(logits.reshape(B * T, V), outs[i])

    return loss_of


MLP_LR, GPT_LR = 3e-3, 3e-3


def runs(dtype):
    params, x, labels = mlp_case()
    mlp = train(params, mlp_loss_fn(x, labels, dtype), MLP_LR, dtype)
    gparams, tokens = gpt_case()
    gpt = train(gparams, gpt_loss_fn(tokens, dtype), GPT_LR, dtype)
    return (params, x, labels, mlp), (gparams, tokens, gpt)


def gelu_case():
    x = torch.linspace(-6, 6, 97, dtype=torch.float32)
    save("gelu_x", x.numpy())
    save("gelu_tanh", F.gelu(x, approximate="tanh").numpy())
    save("gelu_erf", F.gelu(x).numpy())


def main():
    (params, x, labels, mlp), (gparams, tokens, gpt) = runs(torch.float32)
    if "--drift" in sys.argv:
        (_, _, _, mlp64), (_, _, gpt64) = runs(torch.float64)
        for name, a, b in (("mlp", mlp, mlp64), ("gpt", gpt, gpt64)):
            rel = np.abs(a - b) / np.abs(b)
            print("%s: float32 vs float64: step 1 %.3g, step %d %.3g, worst %.3g at step %d; loss %.4f -> %.4f"
                  % (name, rel[0], STEPS, rel[-1], rel.max(), rel.argmax() + 1, b[0], b[-1]))
        return
    for n, a in zip(["w1", "b1", "w2", "b2", "w3", "b3"], params):
        save("mlp_" + n, a)
    save("mlp_x", x)
    save("mlp_labels", labels)
    save("mlp_losses", mlp.astype(np.float32))
    for n, a in zip(GPT_NAMES, gparams):
        save("gpt_" + n, a)
    save("gpt_tokens", tokens)
    save("gpt_losses", gpt.astype(np.float32))
    gelu_case()
    print("mlp: loss %.4f -> %.4f; gpt: loss %.4f -> %.4f" % (mlp[0], mlp[-1], gpt[0], gpt[-1]))
    files = [f for f in os.listdir(HERE) if f.endswith(".npy")]
    print("wrote %d files, %d bytes" % (len(files), sum(os.path.getsize(os.path.join(HERE, f)) for f in files)))


if __name__ == "__main__":
    main()
