#!/usr/bin/python3
"""train_peer.py — PyTorch's side of bench_train: the same training steps.

Usage: train_peer.py mlp THREADS STEPS BATCH IN HID OUT [flat]
       train_peer.py gpt THREADS STEPS BATCH T VOCAB D HEADS LAYERS

A step is zero_grad, forward, cross-entropy, backward and an AdamW step
(lr 1e-3, weight decay 0.01), float32, torch.set_num_threads(THREADS).

  mlp  IN-HID-HID-OUT, ReLU (as bench_train's MLP)
  gpt  a GPT as bench_train's: token and position embeddings, LAYERS
       pre-layernorm blocks of causal self-attention (HEADS heads, no
       bias in q, k, v; softmax of masked scores, as PyTorch 1.13 has no
       fused attention) and a GELU (tanh) MLP of 4 D, a final layernorm
       and a linear head; the next token's cross-entropy

Runs 3 warm-up steps, then STEPS timed steps, and prints "ms X": the mean
ms a step. With flat (mlp): no warm-up; STEPS steps each timed, and
prints "step10 X" and "last10 Y": the median ms of steps 10-19 and of the
last 10 steps.
"""
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F


def mlp(batch, n_in, hid, n_out):
    model = torch.nn.Sequential(
        torch.nn.Linear(n_in, hid), torch.nn.ReLU(),
        torch.nn.Linear(hid, hid), torch.nn.ReLU(),
        torch.nn.Linear(hid, n_out))
    x = torch.randn(batch, n_in)
    y = torch.tensor([(i * 7) % n_out for i in range(batch)])
    return list(model.parameters()), lambda: F.cross_entropy(model(x), y)


def gpt(batch, t, vocab, d, heads, layers):
    def w(*shape, std=0.02):
        return (torch.randn(*shape) * std).requires_grad_()

    def const(n, v):
        return torch.full((n,), float(v)).requires_grad_()

    wte, wpe, head = w(vocab, d), w(t, d), w(d, vocab)
    blocks = [dict(ln1_w=const(d, 1), ln1_b=const(d, 0), wq=w(d, d), wk=w(d, d), wv=w(d, d), wo=w(d, d), bo=const(d, 0),
                   ln2_w=const(d, 1), ln2_b=const(d, 0), w1=w(d, 4 * d), b1=const(4 * d, 0), w2=w(4 * d, d), b2=const(d, 0))
              for _ in range(layers)]
    lnf_w, lnf_b = const(d, 1), const(d, 0)
    params = [wte, wpe, head, lnf_w, lnf_b] + [p for b in blocks for p in b.values()]
    tokens = torch.tensor([(i * 7 + i // 3) % vocab for i in range(batch * (t + 1))]).reshape(batch, t + 1)
    ins, outs = tokens[:, :t], tokens[:, 1:].reshape(-1)
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    dh = d // heads

    def attention(a, b):
        q, k, v = ((a @ b[n]).reshape(batch, t, heads, dh).permute(0, 2, 1, 3) for n in ("wq", "wk", "wv"))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        att = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v
        return att.permute(0, 2, 1, 3).reshape(batch, t, d)

    def loss():
        h = wte[ins] + wpe
        for b in blocks:
            h = h + attention(F.layer_norm(h, (d,), b["ln1_w"], b["ln1_b"]), b) @ b["wo"] + b["bo"]
            a = F.layer_norm(h, (d,), b["ln2_w"], b["ln2_b"])
            h = h + F.gelu(a @ b["w1"] + b["b1"], approximate="tanh") @ b["w2"] + b["b2"]
        logits = F.layer_norm(h, (d,), lnf_w, lnf_b) @ head
        return F.cross_entropy(logits.reshape(-1, vocab), outs)

    return params, loss


def main():
    kind, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sizes = [int(a) for a in sys.argv[4:] if a != "flat"]
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    params, loss_of = mlp(*sizes) if kind == "mlp" else gpt(*sizes)
    opt = torch.optim.AdamW(params, lr=1e-3, weight_decay=0.01)

    def step():
        opt.zero_grad()
        loss = loss_of()
        loss.backward()
        opt.step()
        return loss.item()

    if "flat" in sys.argv[4:]:
        ms = []
        for _ in range(steps):
            t = time.perf_counter()
            step()
            ms.append((time.perf_counter() - t) * 1e3)
        print(f"step10 {statistics.median(ms[9:19]):.4f}", flush=True)
        print(f"last10 {statistics.median(ms[-10:]):.4f}", flush=True)
        return
    for _ in range(3):
        step()
    t = time.perf_counter()
    for _ in range(steps):
        step()
    print(f"ms {(time.perf_counter() - t) * 1e3 / steps:.4f}", flush=True)


main()
