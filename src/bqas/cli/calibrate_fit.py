"""``bqas calibrate fit``: certify per-tier auto-accept/auto-reject thresholds and write a calibration profile;
``bqas calibrate --profile P --gold G``: check a profile on new labels. See docs/calibration.md."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:
    from bqas.calibration.evaluate import Outcome
    from bqas.calibration.gold import GoldSet
    from bqas.judgment.spec import JudgeSpec
    from bqas.trust.fit import LabelledItem
    from bqas.trust.profile import CalibrationProfile


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


def load_gold_any(
    gold_path: Path, spec: JudgeSpec, maps: list[str] | None, language: str, limit: int | None
) -> GoldSet:
    """A gold file or ``store:TENANT`` (the tenant's reviews); raises typer.Exit(2) with the problem."""
    from bqas.calibration.gold import STORE_PREFIX, load_gold, load_gold_store, parse_maps

    try:
        pairs = parse_maps(maps)
        if str(gold_path).startswith(STORE_PREFIX):
            tenant = str(gold_path).removeprefix(STORE_PREFIX).strip()
            if not tenant:
                raise ValueError("--gold store:TENANT: name the tenant, e.g. store:acme")
            gold = load_gold_store(tenant, spec, maps=pairs, default_language=language, limit=limit)
        else:
            gold = load_gold(gold_path, spec, maps=pairs, default_language=language, limit=limit)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    for problem in gold.problems[:20]:
        typer.echo(f"warning: {gold_path}:{problem.line}: {problem.message} (line skipped)", err=True)
    if len(gold.problems) > 20:
        typer.echo(f"warning: {len(gold.problems) - 20} more bad lines (see the JSON output)", err=True)
    if not gold.samples:
        raise _fail(f"{gold_path}: no usable sample for judge {spec.name!r}")
    return gold


def labelled_items(spec: JudgeSpec, outcomes: list[Outcome], score: str) -> tuple[list[LabelledItem], int]:
    """Items with an accept/reject label and each tier's score; also the count without a label."""
    from bqas.calibration.report import human_reject
    from bqas.trust.fit import LabelledItem

    assert spec.scoring is not None
    items: list[LabelledItem] = []
    unlabelled = 0
    for o in outcomes:
        label = human_reject(o.gold.labels, spec.scoring.gates)
        if label is None:
            unlabelled += 1
            continue
        conf = o.record.get("confidence") or {}
        off = (conf.get("offline") or {}).get(score) if "offline" in conf else None
        llm = (conf.get("llm") or {}).get("p_reject") if "llm" in conf else None
        items.append(LabelledItem(o.gold.id, o.gold.language, label, off, llm))
    return items, unlabelled


def fit_cmd(
    gold: Annotated[Path, typer.Option("--gold", "-g", help="Gold JSON Lines, or store:TENANT (its reviews).")],
    judge: Annotated[str, typer.Option("--judge", "-j", help="Judge to calibrate, e.g. rag_hallucination.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Profile file to write (.yaml/.yml or .json).")],
    backend: Annotated[
        str, typer.Option("--backend", help="offline (one tier), llm (one tier) or auto (offline then LLM).")
    ] = "offline",
    fnr_max: Annotated[float, typer.Option("--fnr-max", help="Target: auto-accepted rejects / all rejects.")] = 0.02,
    fpr_max: Annotated[float, typer.Option("--fpr-max", help="Target: auto-rejected accepts / all accepts.")] = 0.05,
    precision_min: Annotated[
        float,
        typer.Option(
            "--precision-min",
            help="Target: share of each side's decisions (auto-accepts, auto-rejects) people agree with; 0 = none.",
        ),
    ] = 0.9,
    precision_accept: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--precision-min-accept", help="Precision target of the auto-accepts (default --precision-min)."),
    ] = None,
    precision_reject: Annotated[
        Optional[float],  # noqa: UP045
        typer.Option("--precision-min-reject", help="Precision target of the auto-rejects (default --precision-min)."),
    ] = None,
    delta: Annotated[float, typer.Option("--delta", help="Each bound holds with probability >= 1 - delta.")] = 0.1,
    joint: Annotated[bool, typer.Option("--joint", help="All targets together (delta split among them).")] = False,
    offline_share: Annotated[
        float, typer.Option("--offline-share", help="Share of the error budget for the offline tier (cascade).")
    ] = 0.5,
    score: Annotated[
        str, typer.Option("--score", help="Offline score: p_reject (fitted model) or risk (1 - composite/100).")
    ] = "p_reject",
    language: Annotated[
        Optional[str],  # noqa: UP045 - typer needs Optional on 3.11
        typer.Option("--language", "-l", help="Language of samples without one (default BQAS_LANGUAGE)."),
    ] = None,
    maps: Annotated[
        Optional[list[str]],  # noqa: UP045
        typer.Option("--map", help="Copy a gold column onto an input field or a label: SRC=DST (repeatable)."),
    ] = None,
    limit: Annotated[Optional[int], typer.Option("--limit", "-n", min=1, help="First N usable samples.")] = None,  # noqa: UP045
    concurrency: Annotated[int, typer.Option("--concurrency", "-c", min=1, help="Samples judged at once.")] = 8,
    samples: Annotated[
        int, typer.Option("--confidence-samples", min=0, help="LLM: k samples when the server has no logprobs.")
    ] = 0,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible endpoint.")] = None,  # noqa: UP045
    model: Annotated[Optional[str], typer.Option("--model", help="Judge model (env BQAS_JUDGE_MODEL).")] = None,  # noqa: UP045
    as_json: Annotated[bool, typer.Option("--json", help="Print the profile as JSON.")] = False,
) -> None:
    """Fit a calibration profile: per tier, the auto-accept and auto-reject thresholds whose error is
    provably within the targets (FNR <= --fnr-max, FPR <= --fpr-max, and of each side's decisions at least
    --precision-min agreed with by people; each with probability >= 1 - delta).

    Example: bqas calibrate fit --gold gold.jsonl --judge rag_hallucination --out profile.yaml
    (--gold store:acme refits from the tenant's reviews; --backend auto fits the offline-then-LLM cascade)

    Exit 0 when some coverage is certified, 1 when nothing is (the reasons are printed), 2 on bad input.
    """
    from bqas.calibration.evaluate import EngineRequest, JudgeConfig
    from bqas.judging.factory import LLMOverrides
    from bqas.judgment.spec import default_registry
    from bqas.offline.p_reject import offline_model_id
    from bqas.settings import check_language, get_settings
    from bqas.trust.fit import Targets, fit_profile
    from bqas.trust.profile import ProfileConfig, judge_hash, prompt_hashes

    settings = get_settings()
    if backend not in ("auto", "llm", "offline"):
        raise _fail(f"--backend: expected auto, llm or offline, got {backend!r}")
    if score not in ("p_reject", "risk"):
        raise _fail(f"--score: expected p_reject or risk, got {score!r}")
    for name, value in (("--fnr-max", fnr_max), ("--fpr-max", fpr_max), ("--delta", delta)):
        if not 0.0 < value < 1.0:
            raise _fail(f"{name}: must lie between 0 and 1 (exclusive), got {value}")
    if not 0.0 < offline_share < 1.0:
        raise _fail(f"--offline-share: must lie between 0 and 1 (exclusive), got {offline_share}")
    precisions: dict[str, float | None] = {}
    for name, value in (
        ("--precision-min-accept", precision_min if precision_accept is None else precision_accept),
        ("--precision-min-reject", precision_min if precision_reject is None else precision_reject),
    ):
        if not 0.0 <= value < 1.0:
            raise _fail(f"{name}: must lie in [0, 1) (0 switches the precision target off), got {value}")
        precisions[name] = value or None
    try:
        default_language = check_language(language or settings.language, field="--language")
        spec = default_registry().get(judge)
    except (ValueError, KeyError) as exc:
        raise _fail(str(exc).strip('"')) from None
    if spec.kind != "grader" or spec.scoring is None:
        raise _fail(f"judge {judge!r} is a {spec.kind}; a profile needs a grader with a verdict")
    gold_set = load_gold_any(gold, spec, maps, default_language, limit)
    targets = Targets(
        fnr_max=fnr_max,
        fpr_max=fpr_max,
        delta=delta,
        offline_share=offline_share,
        joint=joint,
        precision_accept_min=precisions["--precision-min-accept"],
        precision_reject_min=precisions["--precision-min-reject"],
    )
    # Fitting the LLM tier needs fresh replies with log-probabilities: the cache is not read.
    overrides = LLMOverrides(base_url=base_url, model=model, cache=False)
    request = EngineRequest(settings=settings, language=default_language, overrides=overrides)
    try:
        config = JudgeConfig(backend, backend)
        from bqas.calibration.evaluate import engine_for

        tiers = engine_for(config, request).tiers  # fail early (no LLM configured) before judging anything
        # Before the (possibly long) judging: what these labels can certify at all.
        before = _preflight(spec, gold_set, targets, tiers)
        for line in before["lines"]:
            typer.echo(line, err=as_json)
        outcomes, _, used_model = _run(config, request, judge, gold_set, concurrency, samples)
    except ValueError as exc:
        raise _fail(str(exc)) from None
    items, unlabelled = labelled_items(spec, outcomes, score)
    if not items:
        raise _fail(f"{gold}: no sample with an accept/reject label (verdict or a gate label)")
    off_model = offline_model_id(spec)
    profile_config = ProfileConfig(
        backend=backend,
        model=used_model,
        judge_hash=judge_hash(spec),
        prompt_hashes=prompt_hashes(spec) if backend != "offline" else {},
        offline_model=off_model if backend != "llm" else None,
    )
    profile = fit_profile(items, judge=judge, config=profile_config, targets=targets, source=str(gold), score=score)  # type: ignore[arg-type]
    profile.data["unlabelled"] = unlabelled
    profile.data["preflight"] = {k: v for k, v in before.items() if k != "lines"}
    out.parent.mkdir(parents=True, exist_ok=True)
    profile.dump(out)
    if as_json:
        typer.echo(json.dumps(profile.model_dump(mode="json"), ensure_ascii=False, indent=2))
    else:
        print_profile(profile)
        typer.echo(f"written: {out}")
    if profile.coverage["decided"] == 0:
        typer.echo("no coverage certified (see the reasons above)", err=True)
        raise typer.Exit(1)


def _preflight(spec: JudgeSpec, gold: GoldSet, targets: Any, engine_tiers: tuple[bool, bool]) -> dict[str, Any]:
    """What the gold labels can certify for these targets (see bqas.trust.preflight), before judging."""
    from bqas.calibration.report import human_reject
    from bqas.trust.preflight import preflight

    assert spec.scoring is not None
    labels = [human_reject(s.labels, spec.scoring.gates) for s in gold.samples]
    n_reject = sum(1 for x in labels if x is True)
    n_accept = sum(1 for x in labels if x is False)
    use_offline, use_llm = engine_tiers
    tiers: tuple[tuple[str, float], ...] = (
        (("offline", targets.offline_share), ("llm", 1.0 - targets.offline_share))
        if use_offline and use_llm
        else (("offline" if use_offline else "llm", 1.0),)
    )
    return preflight(
        n_reject,
        n_accept,
        fnr_max=targets.fnr_max,
        fpr_max=targets.fpr_max,
        delta=targets.delta,
        joint=targets.joint,
        precision_accept_min=targets.precision_accept_min,
        precision_reject_min=targets.precision_reject_min,
        tiers=tiers,
    )


def _run(config: Any, request: Any, judge: str, gold: GoldSet, concurrency: int, samples: int) -> Any:
    import asyncio

    from bqas.calibration.evaluate import engine_for, judge_all

    engine = engine_for(config, request)
    engine.options.confidence_samples = samples
    model = engine.llm.config.model if engine.llm is not None else None
    outcomes, refused = asyncio.run(judge_all(engine, judge, gold.samples, concurrency))
    for line, message in refused:
        typer.echo(f"warning: {gold.path}:{line}: {message} (line skipped)", err=True)
    return outcomes, refused, model


def print_profile(profile: CalibrationProfile) -> None:
    """The fit, tier by tier: thresholds, class-rate bounds, the precision of the decisions, coverage, and
    what more data would certify."""
    t = profile.targets
    d = profile.data
    precision = ", ".join(
        f"{side} precision >= {t[key]:g}"
        for side, key in (("auto-accept", "precision_accept_min"), ("auto-reject", "precision_reject_min"))
        if t.get(key) is not None
    )
    typer.echo(
        f"profile {profile.id}: judge {profile.judge}, n={d['n']} ({d['n_reject']} rejected, {d['n_accept']} accepted), "
        f"targets FNR <= {t['fnr_max']:g}, FPR <= {t['fpr_max']:g}"
        + (f", {precision}" if precision else "")
        + f", delta {t['delta']:g}"
    )
    for tier in profile.tiers:
        typer.echo(
            f"  {tier.tier} ({tier.score}; FNR <= {tier.fnr_max:g}, FPR <= {tier.fpr_max:g}, delta {tier.delta:g}):"
        )
        for side in ("accept", "reject"):
            f = tier.fit[side]
            label = "auto-accept if p <=" if side == "accept" else "auto-reject if p >="
            prec = f.get("precision")
            if f["threshold"] is None:
                typer.echo(f"    {side}: nothing certified: {f['reason']}")
            else:
                typer.echo(
                    f"    {label} {f['threshold']:.6g}: {f['target'].upper()} bound {f['bound']:.4f} "
                    f"({f['errors']} errors of {f['n_class']}), coverage {f['coverage']:.1%}"
                )
                if prec:
                    typer.echo(
                        f"      precision: {prec['agree']} of {prec['decided']} "
                        f"{'auto-accepts' if side == 'accept' else 'auto-rejects'} agree with people, "
                        f"bound {prec['bound']:.3f} >= {prec['precision_min']:g}"
                        + (f" ({prec['reason']})" if prec.get("reason") else "")
                    )
            for m in f["more_data"]:
                if m["needed"] is not None and m["more"]:
                    typer.echo(
                        f"      coverage {m['coverage']:.0%} (error rate {m['error_rate']:.2%} there) would need "
                        f"{m['needed']} labelled {'rejects' if side == 'accept' else 'accepts'} ({m['more']} more)"
                    )
            if prec and prec.get("more"):
                typer.echo(
                    f"      precision >= {prec['precision_min']:g} at the class threshold "
                    f"({prec['class_agree']} of {prec['class_decided']} agree there) would need about "
                    f"{prec['needed']} labelled items ({prec['more']} more)"
                )
    cov = profile.coverage
    per_tier = ", ".join(f"{k} {cov[k]:.1%}" for k in cov if k not in ("decided", "by_language"))
    typer.echo(f"  decided automatically: {cov['decided']:.1%} ({per_tier}); the rest goes to people")


def check_profile_run(
    profile_path: Path,
    gold: Path,
    judge: str,
    backend: str,
    language: str | None,
    maps: list[str] | None,
    limit: int | None,
    concurrency: int,
    overrides: Any,
    as_json: bool,
    allow_undecided: bool = False,
) -> None:
    """``bqas calibrate --profile P --gold G``: realised FNR/FPR and coverage of P on G, and whether each held
    on its interval. Exit 1 when a bound is not held, 3 when none fails but some lack evidence (0 with
    ``allow_undecided``)."""
    from bqas.calibration.evaluate import EngineRequest, JudgeConfig
    from bqas.calibration.report import human_reject
    from bqas.judgment.spec import default_registry
    from bqas.settings import check_language, get_settings
    from bqas.trust.fit import HELD, NOT_HELD, profile_outcome, realised
    from bqas.trust.profile import ProfileError, check_profile, load_profile
    from bqas.trust.summary import precision_line

    settings = get_settings()
    try:
        profile = load_profile(profile_path)
        default_language = check_language(language or settings.language, field="--language")
        spec = default_registry().get(judge)
    except (ValueError, KeyError) as exc:
        raise _fail(str(exc).strip('"')) from None
    assert spec.scoring is not None
    gold_set = load_gold_any(gold, spec, maps, default_language, limit)
    request = EngineRequest(settings=settings, language=default_language, overrides=overrides)
    from bqas.calibration.evaluate import engine_for, judge_all

    try:
        engine = engine_for(JudgeConfig(backend, backend), request)
        model = engine.llm.config.model if engine.llm is not None else None
        check_profile(profile, spec, backend=backend, model=model, where=str(profile_path))
    except (ValueError, ProfileError) as exc:
        raise _fail(str(exc)) from None
    engine.options.profiles = {spec.name: profile}
    import asyncio

    outcomes, _ = asyncio.run(judge_all(engine, judge, gold_set.samples, concurrency))
    decisions, labels = [], []
    for o in outcomes:
        label = human_reject(o.gold.labels, spec.scoring.gates)
        if label is None:
            continue
        decisions.append((str(o.record.get("decision")), str(o.record.get("decided_by"))))
        labels.append(label)
    report = realised(decisions, labels, profile)
    report["profile"] = profile.id
    verdict = profile_outcome(report)
    report["outcome"] = verdict
    report["held"] = verdict == HELD
    if as_json:
        typer.echo(json.dumps(report, ensure_ascii=False, indent=2))
    else:
        typer.echo(f"profile {profile.id} on {gold}: n={report['n']} ({report['n_reject']} rejected)")
        for name, tier in report["tiers"].items():
            typer.echo(
                f"  {name}: coverage {tier['coverage']:.1%}, FNR {_rate_text(tier, 'fnr')}, FPR {_rate_text(tier, 'fpr')}"
            )
            for side in ("accept", "reject"):
                typer.echo(f"    {precision_line(side, tier[f'{side}_precision'])}")
    if verdict == NOT_HELD:
        typer.echo("a bound did not hold on these labels", err=True)
        raise typer.Exit(1)
    if verdict != HELD:
        typer.echo(
            "not enough evidence: no bound failed, but the labels are too few to show that each one held"
            + ("" if allow_undecided else "; exit 3 (--allow-not-enough-evidence: exit 0)"),
            err=True,
        )
        if not allow_undecided:
            raise typer.Exit(3)


def _rate_text(tier: Mapping[str, Any], name: str) -> str:
    """``0.00 % (90 % CI 0.0-63.2 %; target 0.05, not enough evidence)``."""
    interval = tier[f"{name}_interval"]
    span = "" if interval is None else f"90 % CI {interval[0]:.1%}-{interval[1]:.1%}; "
    return f"{_pct(tier[name])} ({span}target {tier[f'{name}_max']:g}, {tier[f'{name}_status']})"


def _pct(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.2%}"
