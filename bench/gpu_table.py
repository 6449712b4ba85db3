#!/usr/bin/env python3
"""gpu_table.py - the GPU table in markdown from one run's outputs.

In: bench_gpu's output and gpu_peers.py's (files named on the command
line), the date. Out: README's GPU table on stdout: for each line the work,
uopjit's kernel time and rate, the host's wall time of a realize, PyTorch
eager and torch.compile, and the ratio of the better PyTorch time to
uopjit's kernel time (above 1: uopjit is faster), plus the first realize's
milliseconds (its compiles). The "launch" line compares wall times.
"""
import sys
import time


def read_tsv(path):
    rows, meta = {}, {}
    for line in open(path):
        f = line.rstrip("\n").split("\t")
        if f[0].startswith("#"):
            meta[f[0][1:].strip()] = f[1:]
        elif len(f) > 1:
            rows[f[0]] = f[1:]
    return rows, meta


def rate(work, unit, ms):
    per_s = work / (ms * 1e-3)
    return "%.2f TB/s" % (per_s / 1e12) if unit == "B" else "%.1f TFLOP/s" % (per_s / 1e12)


def main():
    uj, ujmeta = read_tsv(sys.argv[1])
    pt, ptmeta = read_tsv(sys.argv[2])
    card = ptmeta.get("torch", ["?", "?"])
    copy = float(ptmeta["copy"][0]) if "copy" in ptmeta else float("nan")
    print("GPU: %s, %s (PyTorch %s; copy %.2f TB/s), float32, TF32 off." % (card[1], time.strftime("%Y-%m-%d"), card[0], copy / 1e12))
    print()
    print("| line | uopjit kernel | rate | realize (wall) | torch eager | torch.compile | best torch / uopjit | first realize |")
    print("|---|---|---|---|---|---|---|---|")
    for name, f in uj.items():
        if f[0] == "error":
            print("| %s | error: %s | | | | | | |" % (name, f[1]))
            continue
        first, wall, kern, work, unit = float(f[0]), float(f[1]), float(f[2]), float(f[3]), f[4]
        eager, comp = (float(v) for v in pt.get(name, ["nan", "nan"]))
        best = min(v for v in (eager, comp) if v == v) if (eager == eager or comp == comp) else float("nan")
        mine = wall if name == "launch" else kern
        print("| %s | %.3f ms | %s | %.3f ms | %.3f ms | %.3f ms | %.2fx | %.0f ms |" % (
            name, kern, rate(work, unit, kern) if kern > 0 else "-", wall, eager, comp, best / mine, first))


if __name__ == "__main__":
    main()
