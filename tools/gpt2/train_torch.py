#!/usr/bin/python3
"""train_torch.py — the same GPT-2 training run as `gpt2 train`, in PyTorch
(Debian's python3-torch), for docs/gpt2.md's comparison.

Usage: train_torch.py INIT.safetensors DATA_DIR [options]
  options as gpt2 train's: --batch B --seq T --accum K --steps N --warmup N
  --lr X --min-lr X --weight-decay X --clip X --seed N --threads N
  --val-every N --val-batches N --stop-after N --float64 1 (the same run in float64: how far
  float32 rounding alone moves the losses, docs/gpt2.md)

INIT is the initial weights that `gpt2 train --save-init FILE` wrote (its
configuration is read off the shapes and its metadata); DATA_DIR holds the
token files train.bin and val.bin. The batches are gpt2's own (the same
counter-based hash of seed, step, micro-batch and row), the learning rate
the same warm-up and cosine, AdamW (betas 0.9, 0.95, eps 1e-8, the weight
decay on every parameter, as gpt2's), clipping by the global norm,
float32. Prints "step N loss X" (and "val N X") as gpt2's log.tsv has
them, and "ms X", the mean milliseconds a step after the first.
"""
import json
import math
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

MASK64 = (1 << 64) - 1


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & MASK64
    return x ^ (x >> 31)


def batch_offset(seed, step, micro, row, n, t):
    h = splitmix64(splitmix64(splitmix64(seed) ^ step) ^ ((micro << 32) & MASK64) ^ row)
    return h % (n - t)


def read_tokens(path):
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:8] != b"UJGPT2T1":
        sys.exit(f"{path}: not a token file")
    (n,) = struct.unpack("<Q", raw[8:16])
    return np.frombuffer(raw[16:16 + 2 * n], dtype="<u2").astype(np.int64)


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, h in header.items():
        if h["dtype"] != "F32":
            sys.exit(f"{path}: {name} is {h['dtype']}, not F32")
        lo, hi = h["data_offsets"]
        tensors[name] = torch.from_numpy(np.frombuffer(data[lo:hi], dtype="<f4").reshape(h["shape"]).copy())
    return tensors, meta


class Options:
    def __init__(self, argv):
        self.batch, self.seq, self.accum, self.steps, self.warmup = 4, 0, 1, 100, 10
        self.lr, self.min_lr, self.weight_decay, self.clip, self.seed = 6e-4, 6e-5, 0.1, 1.0, 1
        self.threads, self.val_every, self.val_batches, self.float64, self.stop_after = 1, 50, 8, 0, 0
        it = iter(argv)
        for flag in it:
            name = flag.lstrip("-").replace("-", "_")
            if not hasattr(self, name):
                sys.exit(f"train_torch.py: unknown option {flag}")
            setattr(self, name, type(getattr(self, name))(next(it)))

    def lr_at(self, step):
        if step < self.warmup:
            return self.lr * (step + 1) / self.warmup
        if self.steps <= self.warmup + 1:
            return self.lr
        progress = min(1.0, (step - self.warmup) / (self.steps - self.warmup - 1))
        return self.min_lr + 0.5 * (self.lr - self.min_lr) * (1 + math.cos(math.pi * progress))


def gpt2_loss(p, layers, heads, tokens, targets):
    b, t = tokens.shape
    d = p["wte.weight"].shape[1]
    h = p["wte.weight"][tokens] + p["wpe.weight"][:t]
    mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
    for l in range(layers):
        w = lambda n: p[f"h.{l}.{n}"]
        a = F.layer_norm(h, (d,), w("ln_1.weight"), w("ln_1.bias"), 1e-5)
        qkv = a @ w("attn.c_attn.weight") + w("attn.c_attn.bias")
        q, k, v = (x.reshape(b, t, heads, d // heads).permute(0, 2, 1, 3) for x in qkv.split(d, dim=-1))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // heads))
        att = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1) @ v
        h = h + (att.permute(0, 2, 1, 3).reshape(b, t, d) @ w("attn.c_proj.weight") + w("attn.c_proj.bias"))
        a = F.layer_norm(h, (d,), w("ln_2.weight"), w("ln_2.bias"), 1e-5)
        up = F.gelu(a @ w("mlp.c_fc.weight") + w("mlp.c_fc.bias"), approximate="tanh")
        h = h + (up @ w("mlp.c_proj.weight") + w("mlp.c_proj.bias"))
    x = F.layer_norm(h, (d,), p["ln_f.weight"], p["ln_f.bias"], 1e-5)
    logits = x @ p["wte.weight"].T
    return F.cross_entropy(logits.reshape(b * t, -1), targets.reshape(-1))


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    params, meta = read_safetensors(sys.argv[1])
    o = Options(sys.argv[3:])
    torch.set_num_threads(o.threads)
    train = read_tokens(f"{sys.argv[2]}/train.bin")
    val = read_tokens(f"{sys.argv[2]}/val.bin")
    layers = sum(1 for n in params if n.endswith(".ln_1.weight"))
    d = params["wte.weight"].shape[1]
    heads = int(meta.get("heads", d // 64))
    t = o.seq or params["wpe.weight"].shape[0]
    if o.float64:
        params = {n: v.double() for n, v in params.items()}
    for v in params.values():
        v.requires_grad_()
    names = list(params)
    opt = torch.optim.AdamW([params[n] for n in names], lr=o.lr, betas=(0.9, 0.95), eps=1e-8, weight_decay=o.weight_decay)

    def window(tokens, at):
        return tokens[at:at + t], tokens[at + 1:at + t + 1]

    def batch(tokens, offsets):
        ins, outs = zip(*(window(tokens, a) for a in offsets))
        return torch.from_numpy(np.stack(ins)), torch.from_numpy(np.stack(outs))

    elapsed = 0.0
    for step in range(o.stop_after if 0 < o.stop_after < o.steps else o.steps):
        start = time.perf_counter()
        for g in opt.param_groups:
            g["lr"] = o.lr_at(step)
        opt.zero_grad()
        total = 0.0
        for m in range(o.accum):
            ins, outs = batch(train, [batch_offset(o.seed, step, m, r, len(train), t) for r in range(o.batch)])
            loss = gpt2_loss(params, layers, heads, ins, outs)
            (loss / o.accum if o.accum > 1 else loss).backward()
            total += loss.item()
        if o.clip > 0:
            torch.nn.utils.clip_grad_norm_([params[n] for n in names], o.clip)
        opt.step()
        if step > 0:
            elapsed += time.perf_counter() - start
        print(f"step {step + 1} loss {total / o.accum:.9g}", flush=True)
        if o.val_every and ((step + 1) % o.val_every == 0 or step + 1 == o.steps):
            with torch.no_grad():
                span, count = len(val) - t - 1, o.val_batches * o.batch
                losses = []
                for i in range(o.val_batches):
                    offsets = [span * (i * o.batch + r) // (count - 1) if count > 1 else 0 for r in range(o.batch)]
                    losses.append(gpt2_loss(params, layers, heads, *batch(val, offsets)).item())
                print(f"val {step + 1} {sum(losses) / len(losses):.9g}", flush=True)
    ran = o.stop_after if 0 < o.stop_after < o.steps else o.steps
    if ran > 1:
        print(f"ms {elapsed * 1e3 / (ran - 1):.4f}", flush=True)


main()
