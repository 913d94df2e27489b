"""``bqas synth-rag``: RAG test sets with ground truth from a team's own documents.

Only typer and the standard library are imported here; the work happens in ``bqas.cli.synth_rag_commands``,
imported inside the command so that ``bqas --help`` stays fast.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer


def synth_rag_cmd(
    docs: Annotated[
        list[Path],
        typer.Option(
            "--docs",
            "-d",
            metavar="DIR_OR_FILE",
            help="Folder or file of documents (.md, .rst, .txt, .html, .pdf); repeatable.",
        ),
    ],
    out: Annotated[Path, typer.Option("--out", "-o", help="JSONL test set to write.")],
    count: Annotated[int, typer.Option("--count", "-n", help="How many items to keep.")] = 50,
    language: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option("--language", "-l", help="Language of the questions and documents: de, en or zh."),
    ] = None,
    kinds: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option(
            "--kinds",
            help="Comma-separated question kinds: fact, number, multi_passage, unanswerable, paraphrase, "
            "operator (default: all, mixed).",
        ),
    ] = None,
    seed: Annotated[
        Optional[int],  # noqa: UP045
        typer.Option("--seed", help="Random seed (the offline generator is deterministic with it)."),
    ] = None,
    persona: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--persona", help="Who asks: teacher, student or technician (changes wording, not content)."),
    ] = None,
    typos: Annotated[
        bool, typer.Option("--typos", help="Typing errors in the paraphrased questions (German, English).")
    ] = False,
    max_overlap: Annotated[
        float,
        typer.Option("--max-overlap", help="Drop a question sharing this share of its passage sentence verbatim."),
    ] = 0.75,
    threshold: Annotated[
        float, typer.Option("--threshold", help="Embedding cosine at or above which a question is a near-duplicate.")
    ] = 0.95,
    max_file_mb: Annotated[
        float, typer.Option("--max-file-mb", help="Larger files are skipped with a message.")
    ] = 50.0,
    backend: Annotated[
        str,
        typer.Option("--backend", help="llm, offline or auto (auto: the LLM when one is configured, else offline)."),
    ] = "auto",
    max_rounds: Annotated[int, typer.Option("--max-rounds", help="LLM requests at most.")] = 20,
    temperature: Annotated[float, typer.Option("--temperature", help="LLM sampling temperature.")] = 0.7,
    base_url: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--base-url", help="OpenAI-compatible endpoint (env BQAS_LLM_BASE_URL)."),
    ] = None,
    model: Annotated[
        Optional[str],  # noqa: UP045
        typer.Option("--model", help="Model name (env BQAS_JUDGE_MODEL)."),
    ] = None,
    no_cache: Annotated[bool, typer.Option("--no-cache", help="Do not read or write the LLM cache.")] = False,
    progress: Annotated[bool, typer.Option("--progress/--no-progress", help="Show the progress bar.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the summary as JSON.")] = False,
) -> None:
    """Generate a RAG test set with ground truth from documents (offline, extractive, filtered).

    The offline generator is extractive and deterministic with --seed; --backend llm writes the same
    items through the LLM (prompts in de/en/zh, every quoted sentence checked against its passage).
    Every item carries query, reference, reference_contexts (with reference_context_sources: chunk id,
    source, page, heading), available_facts, expected_concepts, language and kind; unanswerable items
    carry expected. Quality filters (language, near-copies, grounding, unanswerable-really, near-duplicates)
    are on; --json counts kept items per kind and dropped ones per reason.

    Example: bqas synth-rag --docs docs/ --count 100 --language de --seed 7 --out testset.jsonl

    Exit 0 when COUNT items were kept, 1 when fewer (the file holds what was kept), 2 on a usage error.
    """
    from bqas.cli.synth_rag_commands import LLMChoice, parse_kinds, run_synth_rag
    from bqas.ragsynth.generate import SynthRagRequest

    try:
        chosen = parse_kinds(kinds)
    except ValueError as exc:
        typer.echo(f"error: --kinds: {exc}", err=True)
        raise typer.Exit(2) from None
    request = SynthRagRequest(
        docs=list(docs),
        count=count,
        language=language or "",
        kinds=chosen,
        seed=seed,
        typos=typos,
        persona=persona,
        max_overlap=max_overlap,
        dedup_threshold=threshold,
        max_bytes=int(max_file_mb * 1024 * 1024),
    )
    llm = LLMChoice(backend, base_url, model, no_cache, temperature, max_rounds)
    from bqas.cli.steps import steps

    # The bar counts kept questions on a terminal; in a pipe or a CI log the step says its name instead.
    with steps(progress)(f"generating {count} RAG questions from {len(docs)} document source(s)", bar=True):
        run_synth_rag(request, out=out, progress=progress, as_json=as_json, llm=llm)


def rag_diagnosis_cmd(
    results: Annotated[Path, typer.Argument(metavar="RESULTS", help="results.jsonl of a run (bqas run --out DIR).")],
    testset: Annotated[Path, typer.Option("--testset", "-t", help="The synth-rag set the run used.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the figures as JSON.")] = False,
) -> None:
    """Context recall per question kind of a run over a synth-rag set (retrieval vs answer failures).

    For each answered item: the share of its reference_contexts among the passages the assistant
    retrieved (available_facts from its reply), beside the judged verdicts, per kind.

    Example: bqas rag-diagnosis runs/docs/results.jsonl --testset scenarios/data/docs_rag_synth_de.jsonl

    Exit 0 on success, 2 on a usage or input error.
    """
    import json

    from bqas.ragsynth.diagnosis import diagnose_files, format_table

    for path, option in ((results, "RESULTS"), (testset, "--testset")):
        if not path.is_file():
            typer.echo(f"error: {option}: no such file: {path}", err=True)
            raise typer.Exit(2)
    try:
        rows = diagnose_files(results, testset)
    except (ValueError, OSError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if not rows:
        typer.echo(f"error: no result of {results} belongs to an item of {testset} (sample_id = id)", err=True)
        raise typer.Exit(2)
    if as_json:
        typer.echo(json.dumps([r.as_dict() for r in rows], ensure_ascii=False))
    else:
        typer.echo(format_table(rows))


def register(app: typer.Typer) -> None:
    """Add ``synth-rag`` and ``rag-diagnosis`` to the ``bqas`` app."""
    app.command("synth-rag")(synth_rag_cmd)
    app.command("rag-diagnosis")(rag_diagnosis_cmd)
