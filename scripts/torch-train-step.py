"""The train step of `npm run bench`'s model section, in PyTorch, for a side-by-side by hand.

The same Llama shape (2 layers, hidden 128, 4 heads, MLP 344, vocab 2000, tied embeddings), the same
batch (8 x 64 random ids), the same loss (minus the mean next-token log-prob) and optimizer (Adam,
lr 1e-3), on the CPU with as many threads as `--threads` (default: the machine's cores). Prints the
median step time over `--steps` steps after `--warmup`. Needs a PyTorch CPU wheel (never installed by
npm): `python3 -m venv v && v/bin/pip install --no-deps <torch wheel> && v/bin/python scripts/torch-train-step.py`.
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

LAYERS, HIDDEN, HEADS, MLP, VOCAB = 2, 128, 4, 344, 2000
BATCH, SEQ = 8, 64


class RMSNorm(torch.nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.w


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    rotated = torch.cat([-x[..., h:], x[..., :h]], dim=-1)
    return x * cos + rotated * sin


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.n1, self.n2 = RMSNorm(HIDDEN), RMSNorm(HIDDEN)
        self.q, self.k, self.v, self.o = (torch.nn.Linear(HIDDEN, HIDDEN, bias=False) for _ in range(4))
        self.gate, self.up = torch.nn.Linear(HIDDEN, MLP, bias=False), torch.nn.Linear(HIDDEN, MLP, bias=False)
        self.down = torch.nn.Linear(MLP, HIDDEN, bias=False)

    def forward(self, x, cos, sin):
        b, t, _ = x.shape
        h = self.n1(x)
        split = lambda y: y.view(b, t, HEADS, HIDDEN // HEADS).transpose(1, 2)
        q, k, v = split(self.q(h)), split(self.k(h)), split(self.v(h))
        a = F.scaled_dot_product_attention(rope(q, cos, sin), rope(k, cos, sin), v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, HIDDEN))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class Llama(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, HIDDEN)
        self.blocks = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.norm = RMSNorm(HIDDEN)
        d = HIDDEN // HEADS
        inv = 1.0 / (10000 ** (torch.arange(0, d, 2).float() / d))
        ang = torch.outer(torch.arange(SEQ).float(), inv)
        self.register_buffer('cos', torch.cat([ang.cos(), ang.cos()], -1))
        self.register_buffer('sin', torch.cat([ang.sin(), ang.sin()], -1))

    def forward(self, ids):
        x = self.emb(ids)
        for blk in self.blocks:
            x = blk(x, self.cos, self.sin)
        return self.norm(x) @ self.emb.weight.T  # tied embeddings


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument('--threads', type=int, default=os.cpu_count())
    p.add_argument('--steps', type=int, default=40)
    p.add_argument('--warmup', type=int, default=20)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(1)
    model = Llama()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    ids = torch.randint(0, VOCAB, (BATCH, SEQ))
    times, cpu = [], []
    for i in range(a.warmup + a.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        logp = F.log_softmax(model(ids)[:, :-1], dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        loss = -logp.mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        loss.item()
        if i >= a.warmup:
            times.append((time.perf_counter() - t0) * 1000)
            cpu.append((time.process_time() - c0) * 1000)
    print(f'torch {torch.__version__}, {a.threads} threads: train step (fwd+bwd+Adam) median {statistics.median(times):.1f} ms, process CPU {statistics.median(cpu):.1f} ms, {BATCH * SEQ * 1000 / statistics.median(times):.0f} tok/s')


if __name__ == '__main__':
    main()
