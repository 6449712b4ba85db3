#!/usr/bin/python3
"""train_peer.py — PyTorch's side of bench_train: the same MLP step.

Usage: train_peer.py THREADS BATCH IN HID OUT STEPS
Runs 3 warm-up steps, then STEPS timed steps (zero_grad, forward,
cross-entropy, backward, AdamW step), and prints "ms X": the mean ms a
step. float32, torch.set_num_threads(THREADS).
"""
import sys
import time

import torch
import torch.nn.functional as F

threads, batch, n_in, hid, n_out, steps = (int(a) for a in sys.argv[1:7])
torch.set_num_threads(threads)
torch.manual_seed(0)
model = torch.nn.Sequential(
    torch.nn.Linear(n_in, hid), torch.nn.ReLU(),
    torch.nn.Linear(hid, hid), torch.nn.ReLU(),
    torch.nn.Linear(hid, n_out))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.01)
x = torch.randn(batch, n_in)
y = torch.tensor([(i * 7) % n_out for i in range(batch)])


def step():
    opt.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss.item()


for _ in range(3):
    step()
t = time.perf_counter()
for _ in range(steps):
    step()
print(f"ms {(time.perf_counter() - t) * 1e3 / steps:.4f}", flush=True)
