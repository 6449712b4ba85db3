#!/usr/bin/env python3
"""scale.py -- how scheduling and compilation grow with a graph's size.

Runs the uopjit tool on generated tensor-language programs, one family of
graphs at a time, each at sizes n, 2n, 4n, ... and prints a Markdown table:
wall time of the whole run (parse, schedule, compile, run), peak memory
(the child's maxrss), the compile time UJ_DEBUG=1 reports summed over the
kernels compiled (LLVM's passes and codegen with our lowering and
rendering), the kernels compiled, the time per unit of n, and the growth
from the size before: 2.0 is linear, 4.0 quadratic (docs/schedule.md,
"Cost"). Programs are statements, not deep expressions, so the tool's
parser is not what is measured.

Usage: bench/scale.py UOPJIT [N ...]   (default sizes 1000 2000 4000 8000 16000)
A run that takes longer than UJ_SCALE_TIMEOUT seconds (default 300) is
stopped and shown as such; a family's larger sizes are then skipped.
"""
import os
import re
import subprocess
import sys
import tempfile
import threading
import time


def cat(n):  # the issue's: cat of n one-element tensors
    return "x = cat(" + ", ".join(["ones(1)"] * n) + ", axis=0)\n:time x\n"


def cat_rand(n):  # cat of n tensors held in buffers
    lines = ["a%d = rand(1, seed=%d)" % (i, i) for i in range(n)]
    return "\n".join(lines) + "\nx = cat(" + ", ".join("a%d" % i for i in range(n)) + ", axis=0)\n:time x\n"


def exp2_chain(n):  # n EXP2 in a row (the chain of EXP2)
    return "x = rand(16)\n" + "x = x.exp2()\n" * n + ":time x\n"


def statements(n):  # n statements x = x + 1 (floats: nothing folds)
    return "x = rand(16)\n" + "x = x + 1\n" * n + ":time x\n"


def distinct_ops(n):  # n ops, each with its own constant: no two kernels alike
    return "x = rand(16)\n" + "".join("x = x * %r + 1\n" % (1 + i * 1e-6) for i in range(n)) + ":time x\n"


def sum_terms(n):  # a sum of n tensors
    lines = ["a%d = rand(16, seed=%d)" % (i, i) for i in range(n)]
    return "\n".join(lines) + "\nx = " + " + ".join("a%d" % i for i in range(n)) + "\n:time x\n"


def chained_kernels(n):  # n kernels in one schedule: each max is broadcast, so cut
    return "x = rand(16)\n" + "x = x - x.max()\n" * n + ":time x\n"


def session_steps(n):  # n realize steps in one session (one kernel, compiled once)
    return "x = rand(16)\n" + "x = (x * 1.5 + 1).realize()\n" * n + ":time x\n"


FAMILIES = [
    ("cat of n ones(1)", cat),
    ("cat of n rand(1)", cat_rand),
    ("chain of n exp2", exp2_chain),
    ("n statements x = x + 1", statements),
    ("n ops x * c_i + 1", distinct_ops),
    ("sum of n tensors", sum_terms),
    ("n chained kernels x - max(x)", chained_kernels),
    ("n realize steps", session_steps),
]


def run(tool, text):
    """Wall seconds, peak MB, compile ms, kernels compiled; or an error line."""
    with tempfile.NamedTemporaryFile("w", suffix=".ujs", delete=False) as f:
        f.write(text)
        path = f.name
    limit = float(os.environ.get("UJ_SCALE_TIMEOUT", "300"))
    try:
        env = dict(os.environ, UJ_DEBUG="1", UJ_THREADS="1")
        start = time.monotonic()
        p = subprocess.Popen([tool, path], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, text=True)
        chunks = []
        reader = threading.Thread(target=lambda: chunks.append(p.stderr.read()))
        reader.start()
        pid = 0
        while pid == 0:  # wait4 here, not Popen.wait: the child's own rusage
            pid, status, usage = os.wait4(p.pid, os.WNOHANG)
            if pid == 0 and time.monotonic() - start > limit:
                p.kill()
                os.wait4(p.pid, 0)
                reader.join()
                return None, "over %.0f s" % limit
            if pid == 0:
                time.sleep(0.005)
        wall = time.monotonic() - start
        reader.join()
        err = "".join(chunks)
        p.returncode = os.waitstatus_to_exitcode(status)
    finally:
        os.unlink(path)
    if p.returncode != 0:
        last = [line for line in err.splitlines() if not line.startswith("UJ_DEBUG")]
        return None, (last[-1] if last else "exit %d" % p.returncode)
    compiles = [float(m) for m in re.findall(r"compiled in ([0-9.]+) ms", err)]
    return (wall, usage.ru_maxrss / 1024.0, sum(compiles), len(compiles)), None


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: bench/scale.py UOPJIT [N ...]")
    tool = sys.argv[1]
    sizes = [int(a) for a in sys.argv[2:]] or [1000, 2000, 4000, 8000, 16000]
    print("| family | n | time | peak memory | compile | kernels compiled | time / n | growth |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, make in FAMILIES:
        before = None
        for n in sizes:
            result, error = run(tool, make(n))
            if error:
                print("| %s | %d | %s | | | | | |" % (name, n, error.replace("|", "/")))
                if error.startswith("over"):
                    break
                before = None
                continue
            wall, mb, compile_ms, kernels = result
            growth = "%.1fx" % (wall / before) if before else ""
            print("| %s | %d | %.2f s | %.0f MB | %.0f ms | %d | %.0f us | %s |"
                  % (name, n, wall, mb, compile_ms, kernels, wall / n * 1e6, growth))
            sys.stdout.flush()
            before = wall


if __name__ == "__main__":
    main()
