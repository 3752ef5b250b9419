"""The LoRA GRPO update (and the rollout's batched decode) of `npm run bench:qwen3-shape`, in PyTorch.

A hand-written PyTorch CPU twin of the bench's step, for side-by-side timings: a random-init model of
Qwen3-0.6B's shape (hidden 1024, 16 query / 8 key-value heads of 128, q/k RMSNorm, MLP 3072, vocab
151,936, tied embeddings, RoPE theta 1e6) cut to `--layers N` layers, frozen, with LoRA adapters
(Hu et al. 2021, PEFT's layout and init: A Kaiming-uniform, B zeros) of rank 16, alpha 32, dropout
0.05 on q/k/v/o/gate/up/down; each decoder layer recomputed in the backward pass
(torch.utils.checkpoint); log-probs from the tied head `--chunk` rows at a time, each chunk
recomputed in the backward pass (no [tokens, 151936] logits kept), at the trained positions only
(as TRL's GRPO does with logits_to_keep; `--all-positions` runs the head on every position instead,
as the bench did before it gathered the trained rows). One sequence per forward/backward (the
bench's microBatch 1), the GRPO clipped surrogate (eps 0.2 / 0.2, one epoch: pi_old is the
forward's own values), token-mean over the batch's trained tokens, global-norm clip 1.0, one AdamW
step at lr 1e-6. Prints the update's wall seconds and the process's peak RSS.

The sequences are the bench's own (`npx tsx scripts/bench-qwen3-shape.ts --save-sequences F`):
JSON {"sequences": [{"ids": [...], "trainMask": [...], "adv": x}], "maxNewTokens": n}. With
`--rollout` it also times a batched generation like the rollout's: the prompts (each sequence up to
its first trained token), left-padded, one prefill and `maxNewTokens` decode steps with a KV cache,
sampling at temperature 1.

PyTorch is never an npm dependency; install the CPU wheel by hand in a virtual environment:
  python3 -m venv --system-site-packages /tmp/venv-torch
  /tmp/venv-torch/bin/pip install --no-deps <torch-*-cpu wheel>
  /tmp/venv-torch/bin/python scripts/torch-qwen3-lora-step.py --sequences seqs.json --layers 4
docs/speed.md ("The Qwen3-0.6B shape") runs the two alternating.
"""
import argparse
import json
import math
import os
import resource
import sys
import time

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, MLP, VOCAB = 1024, 16, 8, 128, 3072, 151936
EPS, THETA = 1e-6, 1e6


def rms(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + EPS) * w


class LoraLinear(torch.nn.Module):
    """y = x W^T + (alpha / r) dropout(x) A^T B^T with W frozen (PEFT's lora.Linear)."""

    def __init__(self, d_in, d_out, rank, alpha, dropout):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(d_out, d_in) * 0.02, requires_grad=False)
        self.rank = rank
        if rank > 0:
            self.a = torch.nn.Parameter(torch.empty(rank, d_in).uniform_(-1 / math.sqrt(d_in), 1 / math.sqrt(d_in)))
            self.b = torch.nn.Parameter(torch.zeros(d_out, rank))
            self.scale = alpha / rank
            self.drop = torch.nn.Dropout(dropout)

    def forward(self, x, adapters=True):
        y = F.linear(x, self.weight)
        if self.rank == 0 or not adapters:
            return y
        return y + F.linear(F.linear(self.drop(x), self.a), self.b) * self.scale


def rope_tables(pos):
    inv = 1.0 / (THETA ** (torch.arange(0, HEAD_DIM, 2).float() / HEAD_DIM))
    ang = pos.float()[..., None] * inv  # [B, T, hd/2]
    return torch.cat([ang.cos(), ang.cos()], -1)[:, None], torch.cat([ang.sin(), ang.sin()], -1)[:, None]  # [B, 1, T, hd]


def rope(x, cos, sin):
    h = x.shape[-1] // 2
    return x * cos + torch.cat([-x[..., h:], x[..., :h]], dim=-1) * sin


class Layer(torch.nn.Module):
    def __init__(self, rank, alpha, dropout):
        super().__init__()
        lin = lambda i, o: LoraLinear(i, o, rank, alpha, dropout)
        self.n1, self.n2 = torch.nn.Parameter(torch.ones(HIDDEN), requires_grad=False), torch.nn.Parameter(torch.ones(HIDDEN), requires_grad=False)
        self.qn, self.kn = torch.nn.Parameter(torch.ones(HEAD_DIM), requires_grad=False), torch.nn.Parameter(torch.ones(HEAD_DIM), requires_grad=False)
        self.q, self.k, self.v = lin(HIDDEN, HEADS * HEAD_DIM), lin(HIDDEN, KV_HEADS * HEAD_DIM), lin(HIDDEN, KV_HEADS * HEAD_DIM)
        self.o = lin(HEADS * HEAD_DIM, HIDDEN)
        self.gate, self.up, self.down = lin(HIDDEN, MLP), lin(HIDDEN, MLP), lin(MLP, HIDDEN)

    def forward(self, x, cos, sin, mask, past=None):
        b, t, _ = x.shape
        h = rms(x, self.n1)
        q = rms(self.q(h).view(b, t, HEADS, HEAD_DIM), self.qn).transpose(1, 2)
        k = rms(self.k(h).view(b, t, KV_HEADS, HEAD_DIM), self.kn).transpose(1, 2)
        v = self.v(h).view(b, t, KV_HEADS, HEAD_DIM).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        if mask is None:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, HEADS * HEAD_DIM))
        h = rms(x, self.n2)
        return x + self.down(F.silu(self.gate(h)) * self.up(h)), (k, v)


class Model(torch.nn.Module):
    def __init__(self, layers, rank, alpha, dropout):
        super().__init__()
        self.emb = torch.nn.Parameter(torch.randn(VOCAB, HIDDEN) * 0.02, requires_grad=False)
        self.layers = torch.nn.ModuleList(Layer(rank, alpha, dropout) for _ in range(layers))
        self.norm = torch.nn.Parameter(torch.ones(HIDDEN), requires_grad=False)

    def hidden(self, ids):
        """Training forward of one unpadded sequence [1, T] -> final-normed hidden [T, D], layers recomputed in the backward."""
        x = F.embedding(ids, self.emb)
        cos, sin = rope_tables(torch.arange(ids.shape[1])[None])
        for layer in self.layers:
            x = checkpoint(lambda x, layer=layer: layer(x, cos, sin, None)[0], x, use_reentrant=False)
        return rms(x, self.norm)[0]


def selected_logprobs(h, emb, targets):
    logits = h @ emb.T  # [c, V]
    return logits.gather(1, targets[:, None])[:, 0] - torch.logsumexp(logits, 1)  # [c]


def head_logprobs(h, emb, targets, chunk):
    """log p(target) of each row of h [N, D], `chunk` rows at a time, each chunk's logits recomputed in the backward."""
    return torch.cat([checkpoint(selected_logprobs, h[s:s + chunk], emb, targets[s:s + chunk], use_reentrant=False) for s in range(0, h.shape[0], chunk)])


def grpo_update(model, opt, seqs, a):
    trained = sum(sum(1 for m in s['trainMask'] if m) for s in seqs)
    opt.zero_grad(set_to_none=True)
    total = 0.0
    for s in sorted(seqs, key=lambda s: -len(s['ids'])):  # microBatch 1, longest first
        ids = torch.tensor(s['ids'])[None]  # [1, T]
        keep = torch.tensor(s['trainMask'][1:]) > 0  # [T-1]: position j scores ids[j + 1]
        h = model.hidden(ids)[:-1]  # [T-1, D]
        targets = ids[0, 1:]
        if not a.all_positions:
            h, targets = h[keep], targets[keep]  # the trained rows only
        lp = head_logprobs(h, model.emb, targets, a.chunk)
        if a.all_positions:
            lp = lp[keep]
        ratio = torch.exp(lp - lp.detach())  # pi_old = this forward's values (one epoch)
        adv = torch.full_like(lp, s['adv'])
        per_token = -torch.minimum(ratio * adv, ratio.clamp(1 - 0.2, 1 + 0.2) * adv)
        loss = per_token.sum() / trained  # token-mean over the whole batch
        loss.backward()
        total += loss.item()
    norm = torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.requires_grad], 1.0)
    opt.step()
    return total, norm.item()


@torch.no_grad()
def rollout(model, seqs, new_tokens, gen):
    """Left-padded prompts, one prefill, new_tokens decode steps with a KV cache, sampling at temperature 1."""
    prompts = [s['ids'][:s['trainMask'].index(1)] for s in seqs]
    b, t = len(prompts), max(len(p) for p in prompts)
    ids = torch.zeros(b, t, dtype=torch.long)
    keys = torch.zeros(b, t, dtype=torch.bool)
    for r, p in enumerate(prompts):
        ids[r, t - len(p):] = torch.tensor(p)
        keys[r, t - len(p):] = True
    pos = (keys.long().cumsum(1) - 1).clamp(min=0)
    past = [None] * len(model.layers)
    out = []
    step_ids, step_pos, n = ids, pos, t
    for step in range(new_tokens + 1):
        q = step_ids.shape[1]
        causal = torch.ones(q, n, dtype=torch.bool).tril(n - q)  # [q, n]
        own = torch.zeros(q, n, dtype=torch.bool).diagonal_scatter(torch.ones(q, dtype=torch.bool), n - q)  # [q, n]: a padded query sees itself (no empty row)
        mask = ((causal[None] & keys[:, None, :]) | own[None])[:, None]  # [B, 1, q, n]
        cos, sin = rope_tables(step_pos)
        x = F.embedding(step_ids, model.emb)
        for i, layer in enumerate(model.layers):
            x, past[i] = layer(x, cos, sin, mask, past[i])
        logits = rms(x[:, -1], model.norm) @ model.emb.T  # [B, V]
        if step == new_tokens:
            break
        nxt = torch.multinomial(torch.softmax(logits, -1), 1, generator=gen)  # [B, 1]
        out.append(nxt)
        step_ids, step_pos = nxt, step_pos[:, -1:] + 1
        keys = torch.cat([keys, torch.ones(b, 1, dtype=torch.bool)], 1)
        n += 1
    return torch.cat(out, 1)


def peak_rss_gib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 2 ** 30


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--sequences', required=True, help='JSON written by bench-qwen3-shape.ts --save-sequences')
    p.add_argument('--layers', type=int, default=28)
    p.add_argument('--rank', type=int, default=16)
    p.add_argument('--chunk', type=int, default=512)
    p.add_argument('--threads', type=int, default=os.cpu_count())
    p.add_argument('--all-positions', action='store_true', help='the head on every position (the default: trained positions only)')
    p.add_argument('--rollout', action='store_true', help='also time the batched prefill + decode of the prompts')
    p.add_argument('--no-update', action='store_true', help='skip the LoRA update (with --rollout)')
    p.add_argument('--json', action='store_true', help='print one JSON line of results last')
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    data = json.load(open(a.sequences))
    seqs = data['sequences']
    t0 = time.perf_counter()
    model = Model(a.layers, a.rank, 32, 0.05)
    print(f'torch {torch.__version__}, {a.threads} threads; Qwen3-0.6B shape ({a.layers} layers), init {time.perf_counter() - t0:.1f} s', flush=True)
    res = {'layers': a.layers, 'threads': a.threads}
    if a.rollout:
        model.eval()
        t0, c0 = time.perf_counter(), time.process_time()
        toks = rollout(model, seqs, data['maxNewTokens'], torch.Generator().manual_seed(1))
        res['rollout_s'] = time.perf_counter() - t0
        res['rollout_cpu_s'] = time.process_time() - c0
        res['rollout_peak_rss_gib'] = peak_rss_gib()
        print(f"torch rollout: {res['rollout_s']:.1f} s (process CPU {res['rollout_cpu_s']:.1f} s, {toks.shape[0]} x {toks.shape[1]} tokens), peak RSS {res['rollout_peak_rss_gib']:.2f} GiB", flush=True)
    if not a.no_update:
        model.train()
        trainable = [q for q in model.parameters() if q.requires_grad]
        opt = torch.optim.AdamW(trainable, lr=1e-6, weight_decay=0.0)
        tokens = sum(len(s['ids']) for s in seqs)
        trained = sum(sum(1 for m in s['trainMask'] if m) for s in seqs)
        t0, c0 = time.perf_counter(), time.process_time()
        loss, norm = grpo_update(model, opt, seqs, a)
        res['lora_s'] = time.perf_counter() - t0
        res['lora_cpu_s'] = time.process_time() - c0
        res['lora_peak_rss_gib'] = peak_rss_gib()
        where = 'all positions' if a.all_positions else 'trained positions'
        print(f"torch GRPO update, LoRA r{a.rank} ({sum(q.numel() for q in trainable) / 1e6:.1f}M trained, head at {where}): {res['lora_s']:.1f} s (process CPU {res['lora_cpu_s']:.1f} s), "
              f"peak RSS {res['lora_peak_rss_gib']:.2f} GiB, {len(seqs)} sequences, {tokens} tokens ({trained} trained), loss {loss:.4f}, grad norm {norm:.3f}", flush=True)
    if a.json:
        print(json.dumps(res))


if __name__ == '__main__':
    sys.exit(main())
