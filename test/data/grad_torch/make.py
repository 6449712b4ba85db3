"""make.py — the PyTorch reference values of test/test_grad_torch.c.

Regenerate (needs torch 1.13 and numpy; nothing else reads this script):

    /usr/bin/python3 test/data/grad_torch/make.py

It writes, next to itself, the inputs and the expected outputs of each case
as .npy files (C order, little endian), from fixed numpy seeds, so the same
files come out on every run; commit them: the test reads only the .npy
files, and CI needs no PyTorch. Every file is named CASE_WHAT.npy; the
cases (float64 unless said):

  mlp      loss = mean over rows of -log_softmax(relu(x @ w1 + b1) @ w2)[row, label]
           -> mlp_loss, mlp_grad_{x,w1,b1,w2}
  conv     y = conv2d(x, w, bias, stride (2, 1), padding (1, 1), dilation (1, 2));
           z = avgpool2d(maxpool2d(y, 2x2), 2x2, stride 1, padding 1,
           count_include_pad=False); loss = sum(z * r)
           -> conv_loss, conv_grad_{x,w,bias}
  gconv    y = conv2d(x, w, bias, stride (1, 2), padding (2, 1), dilation (2, 1),
           groups 2); loss = sum(tanh(y) * r) -> gconv_loss, gconv_grad_{x,w,bias}
  attn     h = (x - mean) / sqrt(var + 1e-5) * g + b over the last axis (biased
           var); q, k, v = h @ wq, h @ wk, h @ wv;
           att = softmax(q @ k^T / sqrt(8), -1) @ v; loss = sum(tanh(att) * r)
           -> attn_loss, attn_grad_{x,g,b,wq,wk,wv}
  ties     float32 inputs hitting every tie and kink: relu at 0, maximum and
           minimum ties, amax / amin ties (all elements and along an axis),
           abs at 0 -> ties_d_* (the gradients)
  adamw    float32 MLP 5-16-3 (h = relu(x @ w1 + b1); logits = h @ w2 + b2),
           cross entropy (mean), AdamW(lr 1e-2, betas (0.9, 0.999), eps 1e-8,
           weight_decay 0.01), clip_grad_norm_(1.0) before each step, 10 steps:
           the initial weights (opt_*), the data (opt_x, opt_labels), the loss of
           each step (adamw_losses, computed before that step's update), the
           final weights (adamw_final_*) and the gradient norm each step
           clipped by (adamw_norms)
  sgd      the same MLP, SGD(lr 0.05, momentum 0.9, weight_decay 1e-3), no
           clipping -> sgd_losses, sgd_final_*
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
torch.set_num_threads(1)  # one order of every sum, run after run


def save(name, a):
    if isinstance(a, torch.Tensor):
        a = a.detach().numpy()
    a = np.array(a, order="C")  # 0-d stays 0-d (a loss)
    assert a.dtype in (np.float64, np.float32, np.int32), (name, a.dtype)
    np.save(os.path.join(HERE, name + ".npy"), a)


def t64(a):
    return torch.tensor(a, dtype=torch.float64, requires_grad=True)


def case_mlp():
    rng = np.random.default_rng(101)
    x = rng.standard_normal((4, 6))
    w1 = rng.standard_normal((6, 8)) * 0.5
    b1 = rng.standard_normal(8) * 0.1
    w2 = rng.standard_normal((8, 3)) * 0.5
    labels = np.array([2, 0, 1, 2], dtype=np.int32)
    for n, a in dict(x=x, w1=w1, b1=b1, w2=w2, labels=labels).items():
        save("mlp_" + n, a)
    X, W1, B1, W2 = map(t64, (x, w1, b1, w2))
    h = torch.relu(X @ W1 + B1)
    assert (h > 0).any() and (h == 0).any()  # both sides of relu taken
    lp = torch.log_softmax(h @ W2, dim=-1)
    loss = -lp[torch.arange(4), torch.from_numpy(labels).long()].mean()
    loss.backward()
    save("mlp_loss", loss)
    for n, t in dict(x=X, w1=W1, b1=B1, w2=W2).items():
        save("mlp_grad_" + n, t.grad)


def case_conv():
    rng = np.random.default_rng(202)
    x = rng.standard_normal((2, 3, 7, 7))
    w = rng.standard_normal((4, 3, 3, 3)) * 0.3
    bias = rng.standard_normal(4) * 0.1
    X, W, B = map(t64, (x, w, bias))
    y = F.conv2d(X, W, B, stride=(2, 1), padding=(1, 1), dilation=(1, 2))
    assert y.shape == (2, 4, 4, 5), y.shape
    m = F.max_pool2d(y, kernel_size=(2, 2))
    z = F.avg_pool2d(m, kernel_size=(2, 2), stride=1, padding=1, count_include_pad=False)
    assert z.shape == (2, 4, 3, 3), z.shape
    r = rng.uniform(-1, 1, z.shape)
    loss = (z * torch.from_numpy(r)).sum()
    loss.backward()
    for n, a in dict(x=x, w=w, bias=bias, r=r, loss=loss, grad_x=X.grad, grad_w=W.grad, grad_bias=B.grad).items():
        save("conv_" + n, a)


def case_gconv():
    rng = np.random.default_rng(303)
    x = rng.standard_normal((2, 4, 6, 6))
    w = rng.standard_normal((6, 2, 3, 2)) * 0.3
    bias = rng.standard_normal(6) * 0.1
    X, W, B = map(t64, (x, w, bias))
    y = F.conv2d(X, W, B, stride=(1, 2), padding=(2, 1), dilation=(2, 1), groups=2)
    assert y.shape == (2, 6, 6, 4), y.shape
    r = rng.uniform(-1, 1, y.shape)
    loss = (torch.tanh(y) * torch.from_numpy(r)).sum()
    loss.backward()
    for n, a in dict(x=x, w=w, bias=bias, r=r, loss=loss, grad_x=X.grad, grad_w=W.grad, grad_bias=B.grad).items():
        save("gconv_" + n, a)


def case_attn():
    rng = np.random.default_rng(404)
    x = rng.standard_normal((2, 5, 8)) * 1.5 + 0.3
    g = 1 + rng.standard_normal(8) * 0.2
    b = rng.standard_normal(8) * 0.2
    wq, wk, wv = (rng.standard_normal((8, 8)) * 0.4 for _ in range(3))
    r = rng.uniform(-1, 1, (2, 5, 8))
    ins = dict(x=x, g=g, b=b, wq=wq, wk=wk, wv=wv)
    T = {n: t64(a) for n, a in ins.items()}
    X = T["x"]
    mean = X.mean(dim=-1, keepdim=True)
    c = X - mean
    var = (c * c).mean(dim=-1, keepdim=True)
    h = c / torch.sqrt(var + 1e-5) * T["g"] + T["b"]
    q, k, v = h @ T["wq"], h @ T["wk"], h @ T["wv"]
    att = torch.softmax(q @ k.transpose(-1, -2) / np.sqrt(8), dim=-1) @ v
    loss = (torch.tanh(att) * torch.from_numpy(r)).sum()
    loss.backward()
    for n, a in ins.items():
        save("attn_" + n, a)
    save("attn_r", r)
    save("attn_loss", loss)
    for n, t in T.items():
        save("attn_grad_" + n, t.grad)


def case_ties():
    # x and y tie at 0 (both zero), at 2 and at 0.5; x has 0 (relu, abs
    # kinks) and its max 2 twice; m has ties of its row max / min.
    x = np.array([-1, 0, 2, 2, 0.5, -3], dtype=np.float32)
    y = np.array([0, 0, 2, 1, 0.5, 4], dtype=np.float32)
    m = np.array([[1, 5, 5, -2], [3, 3, 3, 3], [-1, 0, -1, 0]], dtype=np.float32)
    save("ties_x", x)
    save("ties_y", y)
    save("ties_m", m)

    def grads(f, *arrays):
        ts = [torch.tensor(a, requires_grad=True) for a in arrays]
        f(*ts).backward()
        return [t.grad for t in ts]

    (d,) = grads(lambda x: torch.relu(x).sum(), x)
    save("ties_d_relu", d)
    (d,) = grads(lambda x: torch.abs(x).sum(), x)
    save("ties_d_abs", d)
    dx, dy = grads(lambda x, y: torch.maximum(x, y).sum(), x, y)
    save("ties_d_maximum_x", dx)
    save("ties_d_maximum_y", dy)
    dx, dy = grads(lambda x, y: torch.minimum(x, y).sum(), x, y)
    save("ties_d_minimum_x", dx)
    save("ties_d_minimum_y", dy)
    (d,) = grads(lambda x: torch.amax(x), x)
    save("ties_d_amax", d)
    (d,) = grads(lambda y: torch.amin(y), y)  # y's min 0 twice
    save("ties_d_amin_y", d)
    (d,) = grads(lambda m: torch.amax(m, dim=1).sum(), m)
    save("ties_d_amax_axis1", d)
    (d,) = grads(lambda m: torch.amin(m, dim=0).sum(), m)
    save("ties_d_amin_axis0", d)
    # weighed: 2 * amax over rows times (1, 2, 3)
    (d,) = grads(lambda m: (torch.amax(m, dim=1) * torch.tensor([1.0, 2.0, 3.0])).sum(), m)
    save("ties_d_amax_axis1_weighed", d)


def mlp32(x, p):
    h = torch.relu(x @ p[0] + p[1])
    return h @ p[2] + p[3]


def case_optim():
    rng = np.random.default_rng(505)
    init = [
        (rng.standard_normal((5, 16)) * 0.4).astype(np.float32),
        (rng.standard_normal(16) * 0.1).astype(np.float32),
        (rng.standard_normal((16, 3)) * 0.4).astype(np.float32),
        (rng.standard_normal(3) * 0.1).astype(np.float32),
    ]
    x = rng.standard_normal((8, 5)).astype(np.float32)
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1], dtype=np.int32)
    names = ["w1", "b1", "w2", "b2"]
    for n, a in zip(names, init):
        save("opt_" + n, a)
    save("opt_x", x)
    save("opt_labels", labels)
    X, L = torch.from_numpy(x), torch.from_numpy(labels).long()

    def run(make_opt, clip):
        p = [torch.tensor(a, requires_grad=True) for a in init]
        opt = make_opt(p)
        losses, norms = [], []
        for _ in range(10):
            opt.zero_grad()
            loss = F.cross_entropy(mlp32(X, p), L)
            loss.backward()
            if clip:
                norms.append(float(torch.nn.utils.clip_grad_norm_(p, 1.0)))
            opt.step()
            losses.append(loss.item())
        return np.array(losses, dtype=np.float32), np.array(norms, dtype=np.float32), p

    losses, norms, p = run(
        lambda p: torch.optim.AdamW(p, lr=1e-2, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01), True)
    assert (norms > 1).any() and (norms < 1).any(), norms  # clipping both taken and not
    save("adamw_losses", losses)
    save("adamw_norms", norms)
    for n, t in zip(names, p):
        save("adamw_final_" + n, t)
    losses, _, p = run(lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9, weight_decay=1e-3), False)
    save("sgd_losses", losses)
    for n, t in zip(names, p):
        save("sgd_final_" + n, t)


if __name__ == "__main__":
    for f in (case_mlp, case_conv, case_gconv, case_attn, case_ties, case_optim):
        f()
    total = sum(os.path.getsize(os.path.join(HERE, f)) for f in os.listdir(HERE) if f.endswith(".npy"))
    print("wrote %d files, %d bytes" % (len([f for f in os.listdir(HERE) if f.endswith(".npy")]), total))
