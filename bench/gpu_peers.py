#!/usr/bin/env python3
"""gpu_peers.py - PyTorch's side of the GPU table (scripts/gpu-check.sh).

In: bench/gpu_lines.txt (the lines bench_gpu runs), the device's PyTorch.
Out: a tab-separated line a benchmark: name, eager milliseconds,
torch.compile milliseconds (medians of CUDA-event timings, float32, TF32
off), and "# copy" the device's copy bandwidth in bytes/s (a clone of 64M
floats: the ceiling of the memory-bound lines). The "launch" line is the
host's wall time of one op with its synchronize, as bench_gpu's is.
"""
import statistics
import sys
import time

import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
RUNS = 20


def read_lines(path):
    out = []
    for raw in open(path):
        f = raw.split()
        if f and not f[0].startswith("#"):
            out.append((f[0], f[1], [int(v) for v in f[2:]]))
    return out


def inputs(kind, n):
    r = lambda *s: torch.rand(*s, device="cuda")
    if kind in ("add1", "sum"):
        return [r(n[0])]
    if kind == "elementwise":
        return [r(n[0]), r(n[0]), r(n[0])]
    if kind in ("softmax", "layernorm"):
        return [r(n[0], n[1])]
    if kind == "gemv":
        return [r(1, n[0]), r(n[0], n[1])]
    if kind == "matmul":
        return [r(n[0], n[1]), r(n[1], n[2])]
    return [r(n[0], n[1], n[2], n[3]), r(n[4], n[1], n[5], n[5])]


def program(kind):
    return {
        "add1": lambda x: x + 1,
        "elementwise": lambda x, y, z: torch.relu(x * y + z),
        "sum": lambda x: x.sum(),
        "softmax": lambda x: torch.softmax(x, -1),
        "layernorm": lambda x: torch.nn.functional.layer_norm(x, x.shape[-1:], eps=1e-5),
        "gemv": lambda x, w: x @ w,
        "matmul": lambda a, b: a @ b,
        "conv2d": lambda x, w: torch.nn.functional.conv2d(x, w, padding=1),
    }[kind]


def event_ms(fn, args):
    for _ in range(3):
        fn(*args)
    times = []
    for _ in range(RUNS):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn(*args)
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def wall_ms(fn, args):
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    times = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        fn(*args)
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    x = torch.rand(1 << 26, device="cuda")
    copy = event_ms(lambda v: v.clone(), [x])
    print("# copy\t%.6g" % (8.0 * (1 << 26) / (copy * 1e-3)))
    print("# torch\t%s\t%s" % (torch.__version__, torch.cuda.get_device_name()))
    del x
    for name, kind, n in read_lines(sys.argv[1]):
        args, fn = inputs(kind, n), program(kind)
        timer = wall_ms if name == "launch" else event_ms
        eager = timer(fn, args)
        try:
            compiled = timer(torch.compile(fn), args)
        except Exception as e:  # a peer that fails is a cell, not a stop
            print("# torch.compile failed on %s: %s" % (name, e), file=sys.stderr)
            compiled = float("nan")
        print("%s\t%.4f\t%.4f" % (name, eager, compiled), flush=True)
        del args
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
