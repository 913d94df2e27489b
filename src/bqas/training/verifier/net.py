"""The verifier network in PyTorch (training only): the bottom layers of multilingual-e5-small, an
XLM-RoBERTa-style post-LayerNorm encoder, with a head that reads the claim and its evidence together and
gives one logit (positive = the evidence does not support the claim).

Built from :class:`~bqas.training.verifier.e5_file.E5File` arrays, optionally with a pruned vocabulary
(``keep``: the original ids of the rows to keep, in the new id order) and fewer layers than e5 has.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
from torch import nn

from bqas.training.verifier.e5_file import E5File


class Layer(nn.Module):
    def __init__(self, hidden: int, heads: int, ffn: int, eps: float) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.ao = nn.Linear(hidden, hidden)
        self.aln = nn.LayerNorm(hidden, eps=eps)
        self.fi = nn.Linear(hidden, ffn)
        self.fo = nn.Linear(ffn, hidden)
        self.oln = nn.LayerNorm(hidden, eps=eps)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        b, t, h = x.shape
        d = h // self.heads

        def split(y: torch.Tensor) -> torch.Tensor:
            return y.view(b, t, self.heads, d).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / math.sqrt(d) + bias, dim=-1)
        ctx = (att @ v).transpose(1, 2).reshape(b, t, h)
        x = self.aln(x + self.drop(self.ao(ctx)))
        out: torch.Tensor = self.oln(x + self.drop(self.fo(nn.functional.gelu(self.fi(x)))))
        return out


class Verifier(nn.Module):
    """Encoder + head: ``forward(ids, mask) -> logit`` (ids and mask are int64 (batch, length))."""

    def __init__(self, vocab: int, hidden: int, heads: int, ffn: int, layers: int, positions: int, eps: float) -> None:
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.pos = nn.Embedding(positions, hidden)
        self.tok_type = nn.Parameter(torch.zeros(hidden))
        self.eln = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList(Layer(hidden, heads, ffn, eps) for _ in range(layers))
        self.drop = nn.Dropout(0.1)
        self.dense = nn.Linear(2 * hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        positions = torch.arange(ids.shape[1], device=ids.device).unsqueeze(0)
        x = self.drop(self.eln(self.word(ids) + self.pos(positions) + self.tok_type))
        m = mask.to(x.dtype)
        bias = ((1.0 - m) * -1e4)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, bias)
        mean = (x * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp(min=1.0)
        pooled = torch.cat([x[:, 0], mean], dim=-1)
        logit: torch.Tensor = self.out(self.drop(torch.tanh(self.dense(pooled)))).squeeze(-1)
        return logit

    def config(self) -> dict[str, Any]:
        first = self.layers[0]
        assert isinstance(first, Layer)
        return {
            "vocab": self.word.num_embeddings,
            "hidden": self.word.embedding_dim,
            "heads": first.heads,
            "ffn": first.fi.out_features,
            "layers": len(self.layers),
            "positions": self.pos.num_embeddings,
            "eps": first.aln.eps,
        }


def from_e5(e5: E5File, layers: int, keep: np.ndarray | None = None, positions: int = 512) -> Verifier:
    """A verifier whose encoder starts from e5's word/position embeddings and its first ``layers`` layers
    (the head starts random). ``keep``: the word-embedding rows to keep (``e5.tensors['emb.word']`` must
    hold exactly these rows when it was read with ``word_rows=keep``)."""
    word = e5.tensors["emb.word"]
    positions = min(positions, e5.positions)
    if keep is not None and word.shape[0] != len(keep):
        word = word[keep]
    net = Verifier(word.shape[0], e5.hidden, e5.heads, e5.ffn, layers, positions, e5.eps)
    t = e5.tensors
    with torch.no_grad():
        net.word.weight.copy_(torch.from_numpy(word))
        net.pos.weight.copy_(torch.from_numpy(t["emb.pos"][:positions]))
        net.tok_type.copy_(torch.from_numpy(t["emb.type"][: e5.hidden]))
        net.eln.weight.copy_(torch.from_numpy(t["emb.ln.w"]))
        net.eln.bias.copy_(torch.from_numpy(t["emb.ln.b"]))
        for i, layer in enumerate(net.layers):
            assert isinstance(layer, Layer)
            for name in ("q", "k", "v", "ao", "fi", "fo"):
                lin = getattr(layer, name)
                lin.weight.copy_(torch.from_numpy(t[f"l{i}.{name}.w"]))
                lin.bias.copy_(torch.from_numpy(t[f"l{i}.{name}.b"]))
            for name in ("aln", "oln"):
                ln = getattr(layer, name)
                ln.weight.copy_(torch.from_numpy(t[f"l{i}.{name}.w"]))
                ln.bias.copy_(torch.from_numpy(t[f"l{i}.{name}.b"]))
    return net
