"""The offline tier's semantic verifier: a small cross-encoder that reads a claim and its evidence together
and gives the probability that the evidence does not support the claim.

Modules: :mod:`.tokenizer` (the pruned SentencePiece vocabulary the shipped model reads), :mod:`.evidence`
(the evidence sentences picked for a claim), :mod:`.runtime` (ONNX inference, loaded lazily),
:mod:`.cascade` (where the grounding model is unsure, the verifier decides), :mod:`.suite` (the
contradiction suite that measures it). Training lives in :mod:`bqas.training.verifier` (torch, a
development dependency only).
"""
