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
    from bqas.offline.grounding_train import build_examples, featurize, train

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
