"""A PyTorch reference for `neural_step_time.py`: the loop of the public NeuralUCB/NeuralTS code.

Written for the benchmark (not part of rbx): dense disjoint contexts (each arm's d'K-vector is
built), one backward pass per arm for the gradients, a Python loop over rounds, and J
full-batch gradient steps on all of the history each round. The network and objectives are
those of rbx (f of (2) with one hidden layer and no biases; ℓ_λ of (10) divided by the
history size; the Gaussian ℓ), so both sides do the same arithmetic apart from the
disjoint structure. GA trains one network per arm, one after another.

`neural_step_time.py` runs this file as a separate process (no JAX threads beside it):
`python neural_torch_reference.py --agent neural_ucb --history 2000` prints seconds per round
(the faster of 1 thread and all cores); `--device cuda` runs it on a GPU (`auto`: CUDA where
PyTorch sees one), every tensor made there (`torch.set_default_device`).
"""
from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
import torch
from benchmarks.reference.covertype_like import covertype_like


class Reference:
  """One seed of one agent: `select(ctx) -> arm` then `update(ctx[arm], r)`, as the public loop.

  Args:
    agent: "rbmle_ga", "rbmle_pc", "neural_ucb" or "neural_ts".
    dim: d'K, the dense context length; width: m; train_steps: J; eta, lam, nu: as in rbx.
    exact: keep Z⁻¹ as a dense (p, p) matrix (Sherman–Morrison) instead of its diagonal.
  """

  def __init__(self, agent, dim, width=100, train_steps=100, eta=1e-3, lam=1e-3, nu=0.1,
               exact=False, seed=0):
    g = torch.Generator(device=torch.get_default_device()).manual_seed(seed)
    half = width // 2
    W = torch.randn(half, dim, generator=g) * math.sqrt(2.0 / width)
    w = torch.randn(half, generator=g) / math.sqrt(width)
    self.theta0 = [torch.cat([W, W]), torch.cat([w, -w])]
    self.theta = [p.clone().requires_grad_() for p in self.theta0]
    self.agent, self.m, self.J, self.eta, self.lam, self.nu = agent, width, train_steps, eta, lam, nu
    self.exact = exact
    p = sum(t.numel() for t in self.theta0)
    self.z = torch.eye(p).div_(lam) if exact else torch.full((p,), lam)   # one (p, p) buffer
    self.arm_theta = {}                                  # GA: θ̃_a, warm-started per arm
    self.X, self.r = [], []
    self.t = 1

  def f(self, theta, x):
    return math.sqrt(self.m) * torch.relu(x @ theta[0].T) @ theta[1]

  def _grads(self, ctx):
    """f on every arm and one backward pass per arm (as the reference does)."""
    mu = self.f(self.theta, ctx)
    grads = []
    for fx in mu:
      for q in self.theta:
        q.grad = None
      fx.backward(retain_graph=True)
      grads.append(torch.cat([q.grad.flatten() for q in self.theta]))
    return mu.detach(), torch.stack(grads)

  def _z_solve(self, g):
    return g @ self.z if self.exact else g / self.z

  def _z_add(self, g):
    if self.exact:
      u = self.z @ g
      self.z.addr_(u, u, alpha=-1.0 / (self.m + g @ u))
    else:
      self.z += g * g / self.m

  def _train(self, theta, bias=None):
    """J full-batch steps of gradient descent on −(ℓ_λ + bias)/n over all of the history."""
    X, r = (torch.stack(self.X), torch.tensor(self.r)) if self.X else (None, None)
    n = max(len(self.r), 1)
    opt = torch.optim.SGD(theta, lr=self.eta)
    for _ in range(self.J):
      opt.zero_grad()
      obj = -0.5 * ((self.f(theta, X) - r) ** 2).sum() if self.X else 0.0
      obj = obj - 0.5 * self.m * self.lam * sum(((q - q0) ** 2).sum()
                                                for q, q0 in zip(theta, self.theta0))
      if bias is not None:
        obj = obj + bias(theta)
      (-obj / n).backward()
      opt.step()
    return theta

  def select(self, ctx: torch.Tensor) -> int:
    alpha = self.nu * math.sqrt(self.t)
    if self.agent == "rbmle_ga":
      index = []
      for a in range(ctx.shape[0]):
        theta = self.arm_theta.setdefault(a, [q.clone().requires_grad_() for q in self.theta0])
        theta = self._train(theta, lambda th: alpha * self.f(th, ctx[a]))
        with torch.no_grad():
          X, r = (torch.stack(self.X), torch.tensor(self.r)) if self.X else (ctx[:0], torch.zeros(0))
          ell = -0.5 * ((self.f(theta, X) - r) ** 2).sum() - 0.5 * self.m * self.lam * sum(
              ((q - q0) ** 2).sum() for q, q0 in zip(theta, self.theta0))
          index.append(float(ell + alpha * self.f(theta, ctx[a])))
      return int(np.argmax(index))
    mu, g = self._grads(ctx)
    zg = self._z_solve(g)
    if self.agent == "rbmle_pc":
      with torch.no_grad():
        flat = torch.cat([q.detach().flatten() for q in self.theta])
        index = []
        for a in range(ctx.shape[0]):
          bar = flat + alpha / self.m * zg[a]
          W1, w = bar[:-self.m].view_as(self.theta[0]), bar[-self.m:]
          index.append(float(self.f([W1, w], ctx[a])))
      arm = int(np.argmax(index))
    else:
      sigma = torch.sqrt((g * zg).sum(1) / self.m)
      if self.agent == "neural_ts":
        sigma = math.sqrt(self.lam) * sigma * torch.randn(sigma.shape)
      arm = int(torch.argmax(mu + self.nu * sigma))
    if self.agent != "rbmle_pc":
      self._z_add(g[arm])
    return arm

  def update(self, x: torch.Tensor, r: float):
    self.X.append(x)
    self.r.append(float(r))
    self.t += 1
    if self.agent == "rbmle_ga":
      return
    self._train(self.theta)
    if self.agent == "rbmle_pc":
      _, g = self._grads(x[None])
      self._z_add(g[0])


def time_rounds(name, X, y, arms, width, train_steps, history, steps, threads, whole=False,
                device="cpu"):
  """Seconds per round (the median of `steps` timed rounds, after one warm-up round, as rbx's
  side is timed) once the history holds `history` rounds (random arms), with `threads`
  intra-op threads on `device`; `whole`: the mean over the warm-up round and the `steps` after
  it (a whole run from `history` = 0). Each round ends in `int(argmax)`, which waits for the
  device, so a round's time is its device time too."""
  torch.set_default_device(device)
  torch.set_num_threads(threads)
  torch.set_flush_denormal(True)           # as XLA does; denormals slow some rounds 40×
  torch.manual_seed(0)
  d = X.shape[1]
  ref = Reference(name.removesuffix("_exact"), d * arms, width, train_steps,
                  exact=name.endswith("_exact"))
  Xn = torch.tensor(X / np.linalg.norm(X, axis=1, keepdims=True))

  def ctx(i):                               # the dense disjoint contexts, (K, d'K)
    c = torch.zeros(arms, arms, d)
    c[torch.arange(arms), torch.arange(arms)] = Xn[i]
    return c.reshape(arms, arms * d)

  rng = np.random.default_rng(0)
  for i in range(history):
    a = int(rng.integers(arms))
    ref.X.append(ctx(i)[a])
    ref.r.append(float(a == y[i]))
  ref.t = history + 1

  def play(i):
    c = ctx(i)
    arm = ref.select(c)
    ref.update(c[arm], float(arm == y[i]))

  seconds = []
  for i in range(history, history + 1 + steps):
    start = time.perf_counter()
    play(i)
    seconds.append(time.perf_counter() - start)
  return float(np.mean(seconds)) if whole else float(np.median(seconds[1:]))


def main():
  p = argparse.ArgumentParser(description="seconds per round of the PyTorch reference loop")
  p.add_argument("--agent", required=True,
                 choices=["rbmle_ga", "rbmle_pc", "neural_ucb", "neural_ucb_exact", "neural_ts",
                          "neural_ts_exact"])
  p.add_argument("--history", type=int, required=True)
  p.add_argument("--steps", type=int, default=3)
  p.add_argument("--width", type=int, default=100)
  p.add_argument("--train-steps", type=int, default=100)
  p.add_argument("--dim", type=int, default=54)
  p.add_argument("--arms", type=int, default=7)
  p.add_argument("--data", type=int, default=5000)
  p.add_argument("--whole-run", action="store_true",
                 help="the mean seconds per round of rounds history+1..history+steps+1 "
                      "(with --history 0: a whole run of steps + 1 rounds)")
  p.add_argument("--device", default="cpu", help="cpu, cuda or auto (cuda where available)")
  a = p.parse_args()
  device = ("cuda" if torch.cuda.is_available() else "cpu") if a.device == "auto" else a.device
  X, y = covertype_like(a.data, a.dim, a.arms)
  # the faster of one thread and all cores: on a shared machine, OpenMP's threads can stall
  # each small operation for a scheduler time slice
  threads = [1] if device != "cpu" else sorted({1, os.cpu_count()})
  print(min(time_rounds(a.agent, X, y, a.arms, a.width, a.train_steps, a.history, a.steps, n,
                        a.whole_run, device) for n in threads))


if __name__ == "__main__":
  main()
