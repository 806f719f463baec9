"""The Tiny Recursive Model (algorithms/trm/model), puzzle and text modes, run as mlhost's eval
runs it: every one of halt_max_steps ACT steps, no row halting early.

Inputs are token ids [batch, seq_len] (integers; puzzles in the dataset's vocabulary, text as
bytes 0..255) and, for a model with puzzle embeddings, each row's puzzle identifier [batch].
forward() returns the last step's logits [batch, seq_len, vocab] and its halt and continue
logits [batch] (float32). The constructor takes model.json's "model" fields (mlhost's names).
"""
import math

import torch
from torch import nn
from torch.nn import functional as F


def swiglu_intermediate(hidden, expansion):
    """SwiGLU's inner width: round(expansion * hidden * 2/3), up to a multiple of 256."""
    return (round(expansion * hidden * 2 / 3) + 255) // 256 * 256


def rms_norm(x, eps):
    """x / rms(x) over the last dimension, computed in float32 (no weight)."""
    x32 = x.float()
    return (x32 * torch.rsqrt(x32.square().mean(-1, keepdim=True) + eps)).to(x.dtype)


def rotate_half(x):
    half = x.size(-1) // 2
    return torch.cat((-x[..., half:], x[..., :half]), -1)


class CastedLinear(nn.Module):
    def __init__(self, in_features, out_features, bias):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features)) if bias else None

    def forward(self, x):
        return F.linear(x, self.weight.to(x.dtype), None if self.bias is None else self.bias.to(x.dtype))


class CastedEmbedding(nn.Module):
    def __init__(self, num_embeddings, dim):
        super().__init__()
        self.embedding_weight = nn.Parameter(torch.zeros(num_embeddings, dim))

    def forward(self, ids):
        return F.embedding(ids.long(), self.embedding_weight)


class PuzzleEmbedding(nn.Module):
    """One learned row per puzzle identifier (a buffer: mlhost trains it with sign-SGD)."""

    def __init__(self, num_embeddings, dim):
        super().__init__()
        self.register_buffer("weights", torch.zeros(num_embeddings, dim))

    def forward(self, ids):
        return self.weights[ids.long().view(-1)]


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, max_positions, base):
        super().__init__()
        inv_freq = 1.0 / base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim)
        freqs = torch.outer(torch.arange(max_positions, dtype=torch.float32), inv_freq)
        emb = torch.cat((freqs, freqs), -1)
        self.register_buffer("cos_cached", emb.cos())
        self.register_buffer("sin_cached", emb.sin())


class SwiGLU(nn.Module):
    def __init__(self, hidden, expansion):
        super().__init__()
        inter = swiglu_intermediate(hidden, expansion)
        self.gate_up_proj = CastedLinear(hidden, 2 * inter, False)
        self.down_proj = CastedLinear(inter, hidden, False)

    def forward(self, x):
        gate, up = self.gate_up_proj(x).chunk(2, -1)
        return self.down_proj(F.silu(gate) * up)


class Attention(nn.Module):
    def __init__(self, hidden, num_heads, causal):
        super().__init__()
        self.heads, self.head_dim, self.causal = num_heads, hidden // num_heads, causal
        self.qkv_proj = CastedLinear(hidden, 3 * hidden, False)
        self.o_proj = CastedLinear(hidden, hidden, False)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        parts = self.qkv_proj(x).view(b, s, 3 * self.heads, self.head_dim)
        q, k, v = parts.split(self.heads, dim=2)  # [B, S, heads, d] each
        cos, sin = cos.unsqueeze(-2), sin.unsqueeze(-2)
        q = (q.float() * cos + rotate_half(q.float()) * sin).to(x.dtype)
        k = (k.float() * cos + rotate_half(k.float()) * sin).to(x.dtype)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                             is_causal=self.causal)
        return self.o_proj(out.transpose(1, 2).reshape(b, s, self.heads * self.head_dim))


class Block(nn.Module):
    """Post-norm: x = rms(x + attention(x)) (or, with mlp_t, a SwiGLU across the sequence), then
    x = rms(x + SwiGLU(x))."""

    def __init__(self, m, total_seq_len):
        super().__init__()
        self.eps = m["rms_norm_eps"]
        if m["mlp_t"]:
            self.mlp_t = SwiGLU(total_seq_len, m["expansion"])
        else:
            self.self_attn = Attention(m["hidden"], m["num_heads"], m["causal"])
        self.mlp = SwiGLU(m["hidden"], m["expansion"])

    def forward(self, x, cos, sin):
        if hasattr(self, "mlp_t"):
            t = x.transpose(1, 2)
            h = rms_norm(t + self.mlp_t(t), self.eps).transpose(1, 2)
        else:
            h = rms_norm(x + self.self_attn(x, cos, sin), self.eps)
        return rms_norm(h + self.mlp(h), self.eps)


class ReasoningModule(nn.Module):
    def __init__(self, m, total_seq_len):
        super().__init__()
        self.layers = nn.ModuleList(Block(m, total_seq_len) for _ in range(m["l_layers"]))

    def forward(self, h, injection, cos, sin):
        out = h + injection
        for layer in self.layers:
            out = layer(out, cos, sin)
        return out


class TrmInner(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m
        hidden = m["hidden"]
        ndim = m["puzzle_emb_ndim"]  # model.json's model holds every field (to_json(ModelConfig))
        # The prefix: puzzle_emb_len positions, or ceil(ndim / hidden) when 0; none without one.
        self.prefix = 0 if ndim == 0 else (m["puzzle_emb_len"] or -(-ndim // hidden))
        self.total_seq_len = m["seq_len"] + self.prefix
        self.embed_tokens = CastedEmbedding(m["vocab_size"], hidden)
        self.lm_head = CastedLinear(hidden, m["vocab_size"], False)
        self.q_head = CastedLinear(hidden, 2, True)
        if ndim > 0:
            self.puzzle_emb = PuzzleEmbedding(m["num_puzzle_identifiers"], ndim)
        if not m["mlp_t"]:
            self.rotary_emb = RotaryEmbedding(hidden // m["num_heads"], self.total_seq_len, m["rope_theta"])
        self.L_level = ReasoningModule(m, self.total_seq_len)
        self.register_buffer("H_init", torch.zeros(hidden))
        self.register_buffer("L_init", torch.zeros(hidden))

    def input_embeddings(self, inputs, puzzle_identifiers):
        hidden = self.m["hidden"]
        embedding = self.embed_tokens(inputs)
        if self.prefix:
            prefix = self.puzzle_emb(puzzle_identifiers)
            prefix = F.pad(prefix, (0, self.prefix * hidden - prefix.size(-1)))
            embedding = torch.cat((prefix.view(-1, self.prefix, hidden).to(embedding.dtype), embedding), -2)
        return math.sqrt(hidden) * embedding

    def net(self, h, injection):
        rotary = getattr(self, "rotary_emb", None)
        cos, sin = (rotary.cos_cached, rotary.sin_cached) if rotary is not None else (None, None)
        return self.L_level(h, injection, cos, sin)

    def forward(self, z_h, z_l, inputs, puzzle_identifiers):
        x = self.input_embeddings(inputs, puzzle_identifiers)
        for _ in range(self.m["h_cycles"]):
            for _ in range(self.m["l_cycles"]):
                z_l = self.net(z_l, z_h + x)
            z_h = self.net(z_h, z_l)
        logits = self.lm_head(z_h)[:, self.prefix:]
        q = self.q_head(z_h[:, 0]).float()
        return z_h, z_l, logits, q[..., 0], q[..., 1]


class Trm(nn.Module):
    """TRM with its ACT loop as evaluated: halt_max_steps steps from H_init/L_init."""

    def __init__(self, **model):
        super().__init__()
        self.inner = TrmInner(model)

    def forward(self, inputs, puzzle_identifiers=None):
        if puzzle_identifiers is None:
            puzzle_identifiers = torch.zeros(inputs.size(0), dtype=torch.long, device=inputs.device)
        inner = self.inner
        shape = (inputs.size(0), inner.total_seq_len, inner.m["hidden"])
        z_h, z_l = inner.H_init.expand(shape), inner.L_init.expand(shape)
        for _ in range(inner.m["halt_max_steps"]):
            z_h, z_l, logits, q_halt, q_continue = inner(z_h, z_l, inputs, puzzle_identifiers)
        return logits, q_halt, q_continue
