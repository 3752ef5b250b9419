"""Rollout decoding of `npm run bench`'s model, in PyTorch, for a side-by-side by hand.

The same Llama shape as scripts/torch-train-step.py and the bench's model section (2 layers, hidden
128, 4 heads, MLP 344, vocab 2000, tied embeddings), random weights. Each batch (--batches, default
8 and 16 rows) prefills a 64-token prompt, then decodes --new tokens one step at a time through a
hand-written KV cache: keys and values preallocated for the whole sequence and written in place
each step (no concatenation), sampling from the softmax at temperature 1. Prints the median decode
step time and tokens per second over --repeats runs. Needs a PyTorch CPU wheel (never installed by
npm): `python3 -m venv v && v/bin/pip install --no-deps <torch wheel> && v/bin/python scripts/torch-decode.py`.
"""
import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F

LAYERS, HIDDEN, HEADS, MLP, VOCAB = 2, 128, 4, 344, 2000
HD = HIDDEN // HEADS
PROMPT = 64


def rms(x, w, eps=1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], dim=-1) * sin


class Model:
    def __init__(self, seed: int):
        g = torch.Generator().manual_seed(seed)
        n = lambda *s: torch.randn(*s, generator=g) * 0.02
        self.emb = n(VOCAB, HIDDEN)
        self.layers = [dict(n1=torch.ones(HIDDEN), n2=torch.ones(HIDDEN), qkv=n(HIDDEN, 3 * HIDDEN), o=n(HIDDEN, HIDDEN), gu=n(HIDDEN, 2 * MLP), down=n(MLP, HIDDEN)) for _ in range(LAYERS)]
        self.norm = torch.ones(HIDDEN)
        inv = 1.0 / (10000 ** (torch.arange(0, HD, 2).float() / HD))
        ang = torch.outer(torch.arange(4096).float(), inv)
        self.cos = torch.cat([ang.cos(), ang.cos()], -1)
        self.sin = torch.cat([ang.sin(), ang.sin()], -1)

    def step(self, ids, start, kcache, vcache):
        """ids [B, T] at positions start..start+T-1; writes keys/values into the caches [L, B, H, Tmax, hd] in place."""
        b, t = ids.shape
        cos, sin = self.cos[start:start + t], self.sin[start:start + t]
        x = self.emb[ids]
        for i, L in enumerate(self.layers):
            h = rms(x, L['n1'])
            q, k, v = (h @ L['qkv']).view(b, t, 3, HEADS, HD).permute(2, 0, 3, 1, 4)
            kcache[i, :, :, start:start + t] = rope(k, cos, sin)
            vcache[i, :, :, start:start + t] = v
            keys, vals = kcache[i, :, :, :start + t], vcache[i, :, :, :start + t]
            a = F.scaled_dot_product_attention(rope(q, cos, sin), keys, vals, is_causal=t > 1)
            x = x + a.transpose(1, 2).reshape(b, t, HIDDEN) @ L['o']
            g, u = (rms(x, L['n2']) @ L['gu']).split(MLP, -1)
            x = x + (F.silu(g) * u) @ L['down']
        return rms(x[:, -1], self.norm) @ self.emb.T  # [B, V] logits of the last position


@torch.inference_mode()
def decode(model: Model, batch: int, new: int, seed: int) -> float:
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(0, VOCAB, (batch, PROMPT), generator=g)
    kc = torch.empty(LAYERS, batch, HEADS, PROMPT + new, HD)
    vc = torch.empty_like(kc)
    logits = model.step(ids, 0, kc, vc)
    t0 = time.perf_counter()
    for s in range(new):
        nxt = torch.multinomial(F.softmax(logits, -1), 1, generator=g)  # [B, 1]
        logits = model.step(nxt, PROMPT + s, kc, vc)
    logits.sum().item()
    return (time.perf_counter() - t0) * 1000 / new


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument('--threads', type=int, default=os.cpu_count())
    p.add_argument('--batches', type=int, nargs='+', default=[8, 16])
    p.add_argument('--new', type=int, default=64)
    p.add_argument('--repeats', type=int, default=5)
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    model = Model(1)
    for b in a.batches:
        decode(model, b, 8, 0)  # warm-up
        ms = statistics.median(decode(model, b, a.new, r) for r in range(a.repeats))
        print(f'torch {torch.__version__}, {a.threads} threads: decode batch {b}, {a.new} new tokens after {PROMPT}: median {ms:.2f} ms/step, {b * 1000 / ms:.0f} tok/s')


if __name__ == '__main__':
    main()
