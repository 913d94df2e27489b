"""Load and validate a YAML scenario; every error names the file, the line and the field at fault."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bqas.settings import LANGUAGES, get_settings
from bqas.targets.config import TargetConfig
from bqas.untrusted import UntrustedValueError, check_value, compose_yaml, yaml_data

RAGAS_JUDGE_LANGUAGES = ("en", "zh")
RAGAS_METRICS = (
    "faithfulness",
    "answer_relevancy",
    "context_recall",
    "context_precision",
    "noise_sensitivity",
    "factual_correctness",
    "semantic_similarity",
)


class ScenarioError(ValueError):
    """A scenario file is invalid. ``str()`` is ``file:line: field: message`` lines."""


class LLMSection(BaseModel):
    """The LLM of a scenario (secrets stay in the environment: ``api_key_env`` names the variable)."""

    model_config = ConfigDict(extra="forbid")
    base_url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    structured_output: Literal["auto", "json_schema", "json_object", "prompt"] | None = None
    concurrency: int | None = Field(default=None, ge=1, le=1024)
    price_prompt_per_mtok: float | None = Field(default=None, ge=0)
    price_completion_per_mtok: float | None = Field(default=None, ge=0)
    temperature: float | None = Field(default=None, ge=0, le=2)
    # A local GGUF model in the embedded llama.cpp engine (instead of base_url; relative to the scenario's
    # folder): tokens per request, CPU threads, requests decoded together (see docs/llm.md).
    gguf: str | None = Field(default=None, min_length=1, max_length=4096)
    n_ctx: int | None = Field(default=None, ge=256, le=1_048_576)
    threads: int | None = Field(default=None, ge=1, le=1024)
    slots: int | None = Field(default=None, ge=1, le=64)

    @model_validator(mode="after")
    def _one_llm(self) -> LLMSection:
        if self.gguf is not None and self.base_url is not None:
            raise ValueError("give either base_url (a server) or gguf (a local model), not both")
        return self


class RaySection(BaseModel):
    """Run the scenario on a Ray cluster (``bqas run --ray`` overrides ``address``; see docs/ray.md)."""

    model_config = ConfigDict(extra="forbid")
    # auto: the cluster in RAY_ADDRESS or started on this host with `ray start`, else a local one;
    # local: always a fresh local cluster; anything else: a cluster address (host:port or ray://host:port).
    address: str = Field(default="auto", min_length=1, max_length=500)
    workers: int | None = Field(default=None, ge=1, le=4096)  # judge actors; default: the cluster's CPUs
    batch_size: int = Field(default=32, ge=1, le=10_000)  # work items per actor call
    # Seconds a judge actor may wait for Ray to place it (a CPU free on a live node); a replacement for
    # an actor whose node was lost that is not placed in time is given up and the run goes on without it.
    placement_timeout: float = Field(default=60.0, ge=1, le=86_400)
    # Seconds an actor may take for the batch it is judging before it counts as not answering (a frozen
    # node): its batches are sent to the other actors and it is replaced. None: 4 × the slowest batch of
    # the run so far, at least 30 s.
    batch_timeout: float | None = Field(default=None, ge=1, le=86_400)


class Thresholds(BaseModel):
    """CI gates of a run; unset gates are not checked."""

    model_config = ConfigDict(extra="forbid")
    min_pass_rate: float | None = Field(default=None, ge=0, le=1)
    min_mean_composite: float | None = Field(default=None, ge=0, le=100)
    max_failed: int | None = Field(default=None, ge=0)
    # Unscored results allowed: a count (0, 1, 2 …) or, below 1, a share of the judged results (0.1).
    # Unset means 0: a run with an unscored result misses this gate (one exit-code rule, see README).
    max_unscored: float | None = Field(default=None, ge=0)
    # Samples that could not be read or used (``invalid`` records: an unclosed CSV quote, a missing field):
    # a count. Unset means 0: a run with an invalid sample misses this gate, so lost rows never pass.
    max_invalid: int | None = Field(default=None, ge=0)
    # Answers the assistant under test failed to give (timeouts, errors, unmappable replies): a count.
    # Unset means 0 for a run that asked a target (docs/targets.md).
    max_target_errors: int | None = Field(default=None, ge=0)
    # Results whose judging failed for a reason outside the sample (a lost Ray node, a worker that kept
    # dying): a count. Unset means 0; `bqas run --resume` judges them again.
    max_judge_errors: int | None = Field(default=None, ge=0)
    # The assistant's own latency: the 95th percentile of its answering times, in milliseconds.
    max_target_p95_ms: float | None = Field(default=None, gt=0)
    # How soon a streamed answer starts (a voice assistant starts speaking): the 95th percentile of its
    # time to first token, in milliseconds.
    max_target_ttft_p95_ms: float | None = Field(default=None, gt=0)
    # Against a baseline (a pull request's base branch, `bqas ci-summary --baseline`): samples of the
    # baseline that this run no longer has. Unset means 0, so deleting the failing samples is a finding;
    # the ids in allow_removed_samples may go without counting.
    max_removed_samples: int | None = Field(default=None, ge=0)
    allow_removed_samples: list[str] = Field(default_factory=list)
    dimensions: dict[str, float] = Field(default_factory=dict)

    @field_validator("max_unscored")
    @classmethod
    def _count_or_share(cls, value: float | None) -> float | None:
        if value is not None and value >= 1 and not float(value).is_integer():
            raise ValueError("expected a count (0, 1, 2 …) or a share below 1 (e.g. 0.1)")
        return value


class Scenario(BaseModel):
    """A test scenario: which judges grade which samples, how, and what counts as passing."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200)
    description: str = ""
    judges: list[str] = Field(default_factory=list)
    metrics: list[str] = Field(default_factory=list)
    dataset: str | None = None
    samples: list[dict[str, Any]] | None = None
    mapping: dict[str, str] = Field(default_factory=dict)
    language: str | None = None
    judge_language: str | None = None
    backend: Literal["auto", "llm", "offline"] = "offline"
    llm: LLMSection = Field(default_factory=LLMSection)
    concurrency: int = Field(default=8, ge=1, le=1024)
    # Each sample judged this many times (flaky verdicts settle by majority; see docs/scenarios.md).
    repeats: int = Field(default=1, ge=1, le=100)
    thresholds: Thresholds = Field(default_factory=Thresholds)
    # Calibration profiles (bqas calibrate fit), one per judge, paths relative to the scenario file.
    profiles: list[str] = Field(default_factory=list)
    ray: RaySection | None = None
    # The assistant under test: asked for every sample that lacks its answer (bqas.targets, docs/targets.md).
    target: TargetConfig | None = None
    # Filled by the loader, not by the YAML:
    path: Path | None = Field(default=None, exclude=True)

    @field_validator("language")
    @classmethod
    def _language(cls, value: str | None) -> str | None:
        if value is not None and value.split("-")[0].lower() not in LANGUAGES:
            raise ValueError(f"expected one of {', '.join(LANGUAGES)}, got {value!r}")
        return value

    @field_validator("judge_language")
    @classmethod
    def _judge_language(cls, value: str | None) -> str | None:
        if value is not None and value not in RAGAS_JUDGE_LANGUAGES:
            raise ValueError(f"expected one of {', '.join(RAGAS_JUDGE_LANGUAGES)}, got {value!r}")
        return value

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, value: list[str]) -> list[str]:
        unknown = [m for m in value if m not in RAGAS_METRICS]
        if unknown:
            raise ValueError(f"unknown RAGAS metric(s) {unknown}; known: {', '.join(RAGAS_METRICS)}")
        return value

    @model_validator(mode="after")
    def _source(self) -> Scenario:
        if (self.dataset is None) == (self.samples is None):
            raise ValueError("give exactly one of 'dataset' (a JSONL/CSV path) or 'samples' (inline list)")
        if not self.judges and not self.metrics:
            raise ValueError("name at least one judge under 'judges' (or RAGAS metrics under 'metrics')")
        return self

    def profile_paths(self) -> list[Path]:
        """The profile paths, relative ones resolved against the scenario file's folder."""
        base = self.path.parent if self.path is not None else Path()
        return [Path(p) if Path(p).is_absolute() else base / p for p in self.profiles]

    def gguf_path(self) -> Path | None:
        """The local model file of ``llm.gguf``, a relative path resolved against the scenario's folder."""
        if self.llm.gguf is None:
            return None
        path = Path(self.llm.gguf).expanduser()
        if not path.is_absolute() and self.path is not None:
            path = self.path.parent / path
        return path

    def dataset_path(self) -> Path | None:
        """The dataset path, relative paths resolved against the scenario file's folder."""
        if self.dataset is None:
            return None
        path = Path(self.dataset)
        if not path.is_absolute() and self.path is not None:
            path = self.path.parent / path
        return path


def _line_index(node: yaml.Node, prefix: tuple[str | int, ...] = ()) -> dict[tuple[str | int, ...], int]:
    """Map each key path of a YAML document to its 1-based line."""
    lines: dict[tuple[str | int, ...], int] = {prefix: node.start_mark.line + 1}
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = (*prefix, str(key.value))
            lines[path] = key.start_mark.line + 1
            for sub, line in _line_index(value, path).items():
                lines.setdefault(sub, line)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            lines.update(_line_index(item, (*prefix, i)))
    return lines


def _line_for(lines: dict[tuple[str | int, ...], int], loc: tuple[str | int, ...]) -> int:
    for end in range(len(loc), -1, -1):
        if loc[:end] in lines:
            return lines[loc[:end]]
    return 1


def read_yaml_mapping(path: Path, error: type[Exception], what: str) -> tuple[dict[str, Any], yaml.Node]:
    """The mapping a YAML file holds and its node (for line numbers); ``error`` (``path:line: …``) when the
    file cannot be read, is not YAML, breaks the limits on untrusted input, or is not a mapping."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise error(f"{path}: cannot read: {exc.strerror}") from None
    try:
        # One composition, limits checked (alias bombs, recursion), then the data built from it.
        node = compose_yaml(text)
        data = yaml_data(node)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        raise error(f"{path}{line}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    except UntrustedValueError as exc:
        raise error(f"{path}: {exc}") from None
    if not isinstance(data, dict) or node is None:
        raise error(f"{path}:1: {what} must be a YAML mapping")
    return data, node


def load_scenario(path: Path, *, allow_dataset_outside: bool = False) -> Scenario:
    """Load, validate and resolve a scenario file. Raises :class:`ScenarioError` with file:line: field.

    The dataset must lie (symlinks followed) inside the scenario's folder or the working directory unless
    ``allow_dataset_outside``: scenarios come from pull requests, and ``dataset: ../../secret`` would have
    a CI job read, judge and publish any file it can read."""
    data, node = read_yaml_mapping(path, ScenarioError, "a scenario")
    lines = _line_index(node)
    try:
        check_value(data)  # inline samples are inputs like any other (bqas.untrusted)
    except UntrustedValueError as exc:
        where = ".".join(str(p) for p in exc.loc) or "(scenario)"
        raise ScenarioError(f"{path}:{_line_for(lines, exc.loc)}: {where}: {exc.message}") from None
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        messages = []
        for err in exc.errors():
            loc = tuple(err["loc"])
            if len(loc) > 1 and loc[0] == "target" and loc[1] in ("openai", "http", "dify", "python"):
                loc = (loc[0], *loc[2:])  # the kind pydantic puts in the path is the YAML's `type`, not a key
            field = ".".join(str(p) for p in loc) or "(scenario)"
            messages.append(f"{path}:{_line_for(lines, loc)}: {field}: {err['msg']}")
        raise ScenarioError("\n".join(messages)) from None
    scenario.path = path
    # judge_language is resolved here (Chinese judge prompts design): explicit value > RAGAS_JUDGE_LANGUAGE setting (default en).
    settings = get_settings()
    if scenario.judge_language is None:
        resolved = settings.ragas_judge_language
        if resolved not in RAGAS_JUDGE_LANGUAGES:
            raise ScenarioError(f"RAGAS_JUDGE_LANGUAGE: expected one of en, zh, got {resolved!r}")
        scenario.judge_language = resolved
    from bqas.judgment.spec import default_registry

    registry = default_registry()
    for i, judge in enumerate(scenario.judges):
        if judge not in registry.names():
            raise ScenarioError(
                f"{path}:{_line_for(lines, ('judges', i))}: judges[{i}]: unknown judge {judge!r}; "
                f"known: {', '.join(registry.grader_names())}"
            )
        if registry.get(judge).kind == "generator":
            raise ScenarioError(
                f"{path}:{_line_for(lines, ('judges', i))}: judges[{i}]: {judge!r} generates, it does not grade"
            )
    for key in scenario.thresholds.dimensions:
        dim = key.split(".")[-1]
        judges = [key.split(".")[0]] if "." in key else [*scenario.judges, "ragas"]
        known = any(dim in registry.get(j).dimensions for j in judges if j in registry.names()) or (
            "ragas" in judges and dim in scenario.metrics
        )
        if not known:
            raise ScenarioError(
                f"{path}:{_line_for(lines, ('thresholds', 'dimensions', key))}: thresholds.dimensions.{key}: "
                f"no judge of this scenario has a dimension {dim!r}"
            )
    dataset = scenario.dataset_path()
    if dataset is not None and not dataset.is_file():
        raise ScenarioError(f"{path}:{_line_for(lines, ('dataset',))}: dataset: file not found: {dataset}")
    if dataset is not None and dataset.suffix.lower() not in (".jsonl", ".csv", ".json"):
        raise ScenarioError(f"{path}:{_line_for(lines, ('dataset',))}: dataset: expected a .jsonl or .csv file")
    if dataset is not None and not allow_dataset_outside:
        outside = dataset_outside(path, dataset)
        if outside:
            raise ScenarioError(f"{path}:{_line_for(lines, ('dataset',))}: dataset: {outside}")
    return scenario


def dataset_outside(scenario_file: Path, dataset: Path) -> str | None:
    """Why ``dataset`` may not be read for ``scenario_file`` (it resolves outside the scenario's folder and
    the working directory), else None."""
    real = dataset.resolve()
    roots = {scenario_file.resolve().parent, Path.cwd().resolve()}
    if any(real.is_relative_to(root) for root in roots):
        return None
    shown = str(dataset) if real == dataset else f"{dataset} (resolves to {real})"
    return (
        f"{shown} lies outside the scenario's folder ({scenario_file.resolve().parent}) and the working "
        f"directory ({Path.cwd().resolve()}); read it only with bqas run --allow-dataset-outside or "
        "BQAS_ALLOW_DATASET_OUTSIDE=true"
    )


def scenario_fingerprint(scenario: Scenario) -> str:
    """A hash of the scenario and its dataset file, to tell whether a resumed run still sees the same inputs."""
    # Where it runs (ray:) is not an input: a run started locally may resume on a cluster and back.
    digest = hashlib.sha256(scenario.model_dump_json(exclude={"ray"}).encode())
    dataset = scenario.dataset_path()
    if dataset is not None:
        with dataset.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()[:16]
