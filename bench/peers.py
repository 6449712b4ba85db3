#!/usr/bin/python3
"""peers.py — NumPy and PyTorch, timed for build/bench_peers.

Run by bench_peers (with /usr/bin/python3, where Debian's python3-numpy and
python3-torch live) and driven over stdin/stdout: one command a line in,
one reply a line out, so bench_peers can interleave these runs with its
own.

  hello               -> "hello numpy=VERSION torch=VERSION" (or =absent)
  setup KIND DIR      -> loads DIR/in0.npy, DIR/in1.npy, ... (float32),
                         runs KIND once on each peer (its warm-up) and
                         writes that result to DIR/out_PEER.npy; replies
                         "peers P ..." with the peers that ran
  run PEER THREADS    -> runs the current KIND once on PEER with THREADS
                         threads: "ms MILLISECONDS" or "err MESSAGE"
  quit

KIND is one of the keys of TORCH below; NumPy runs only the kinds of NUMPY
(the others are not natural in NumPy, or are OpenBLAS again). Failures go
to stderr and leave the peer out, so bench_peers marks it absent.
"""
import ctypes
import math
import os
import sys
import time

try:
    import numpy as np
except ImportError as e:
    np = None
    print(f"peers.py: numpy absent: {e}", file=sys.stderr)
try:
    import torch
    import torch.nn.functional as F
except ImportError as e:
    torch = None
    print(f"peers.py: torch absent: {e}", file=sys.stderr)


def torch_attention(q, k, v):
    # torch 1.13 has no scaled_dot_product_attention: the explicit form.
    scale = 1.0 / math.sqrt(q.shape[-1])
    return torch.softmax(q @ k.transpose(-2, -1) * scale, dim=-1) @ v


TORCH = {
    "matmul": lambda a, b: torch.matmul(a, b),
    "elementwise": lambda x, y, z: torch.relu(x * y + z),
    "sum": lambda x: x.sum(),
    "conv2d": lambda x, w: F.conv2d(x, w, padding=1),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "layernorm": lambda x: F.layer_norm(x, (x.shape[-1],), eps=1e-5),
    "attention": torch_attention,
}


def numpy_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def numpy_layernorm(x):
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / np.sqrt(var + np.float32(1e-5))


NUMPY = {
    "elementwise": lambda x, y, z: np.maximum(x * y + z, np.float32(0)),
    "sum": lambda x: x.sum(),
    "softmax": numpy_softmax,
    "layernorm": numpy_layernorm,
}


def open_blas_threads():
    """openblas_set_num_threads of the BLAS NumPy and torch use (Debian's
    libblas.so.3 is OpenBLAS through alternatives), or None."""
    for name in ("libblas.so.3", "libopenblas.so.0"):
        try:
            return ctypes.CDLL(name).openblas_set_num_threads
        except (OSError, AttributeError):
            continue
    return None


class Peers:
    def __init__(self):
        self.blas_threads = open_blas_threads()
        self.fns = {}      # peer -> callable of the current kind
        self.inputs = {}   # peer -> its inputs (numpy arrays or tensors)

    def set_threads(self, n):
        if torch is not None:
            torch.set_num_threads(n)
        if self.blas_threads is not None:
            self.blas_threads(n)

    def hello(self):
        nv = np.__version__ if np is not None else "absent"
        tv = torch.__version__ if torch is not None else "absent"
        return f"hello numpy={nv} torch={tv}"

    def setup(self, kind, folder):
        self.fns, self.inputs = {}, {}
        arrays = []
        while os.path.exists(os.path.join(folder, f"in{len(arrays)}.npy")):
            arrays.append(np.load(os.path.join(folder, f"in{len(arrays)}.npy")))
        if torch is not None and kind in TORCH:
            self.fns["torch"] = TORCH[kind]
            self.inputs["torch"] = [torch.from_numpy(a) for a in arrays]
        if np is not None and kind in NUMPY:
            self.fns["numpy"] = NUMPY[kind]
            self.inputs["numpy"] = arrays
        ran = []
        for peer in list(self.fns):
            try:
                out = self.fns[peer](*self.inputs[peer])
                out = out.numpy() if peer == "torch" else np.asarray(out)
                np.save(os.path.join(folder, f"out_{peer}.npy"), out.astype(np.float32))
                ran.append(peer)
            except Exception as e:  # a peer that fails is absent for this kind
                print(f"peers.py: {peer} {kind}: {e}", file=sys.stderr)
                del self.fns[peer]
        return "peers " + " ".join(ran)

    def run(self, peer, threads):
        if peer not in self.fns:
            return f"err {peer} has no benchmark set up"
        self.set_threads(threads)
        t0 = time.perf_counter()
        out = self.fns[peer](*self.inputs[peer])
        ms = (time.perf_counter() - t0) * 1e3
        del out
        return f"ms {ms:.6f}"


def reply(peers, words):
    if words[0] == "hello":
        return peers.hello()
    if words[0] == "setup" and len(words) == 3 and np is not None:
        return peers.setup(words[1], words[2])
    if words[0] == "setup":
        return "peers"
    if words[0] == "run" and len(words) == 3:
        return peers.run(words[1], int(words[2]))
    return f"err unknown command {' '.join(words)}"


def main():
    peers = Peers()
    for line in sys.stdin:
        words = line.split()
        if not words or words[0] == "quit":
            break
        try:
            out = reply(peers, words)
        except Exception as e:
            out = f"err {type(e).__name__}: {e}".replace("\n", " ")
        print(out, flush=True)


if __name__ == "__main__":
    main()
