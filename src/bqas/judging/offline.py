"""The offline judge (tiers 0 and 1): fills each dimension that a judge's ``offline:`` section binds to a
method, and reports every other graded dimension as not measured, with the reason."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Mapping
from typing import TYPE_CHECKING, Any

from bqas.judgment.result import DimensionProvenance, TierConfidence
from bqas.judgment.spec import JudgeSpec
from bqas.offline.methods import MethodResult, OfflineContext, get_method, load_builtin_methods

if TYPE_CHECKING:
    from bqas.offline.embeddings import Embedder


class OfflineJudge:
    """Runs a judge's offline bindings; no network, no LLM."""

    def __init__(self, embedder_factory: Callable[[], Embedder] | None = None):
        self._embedder_factory = embedder_factory
        self._resources: dict[str, Any] = {}
        self._load_lock = threading.Lock()
        self.loaded = False
        #: Seconds the last :meth:`load` took (0.0 when nothing was loaded).
        self.load_seconds = 0.0

    @property
    def embedder_factory(self) -> Callable[[], Embedder] | None:
        """The embedder factory this judge was built with (None: the default embedder)."""
        return self._embedder_factory

    def load(self) -> float:
        """Import the methods and load the embedding model (once); returns the seconds it took.

        Called before the first judgment's clock starts, so that model loading is not reported as
        judgment latency; calling it at start-up (``bqas serve``) makes the first request fast too."""
        with self._load_lock:
            if self.loaded:
                return 0.0
            started = time.perf_counter()
            load_builtin_methods()
            ctx = OfflineContext(language="de", embedder_factory=self._embedder_factory, resources=self._resources)
            warm = getattr(ctx.embedder(), "load", None)
            if callable(warm):
                warm()
            self.load_seconds = time.perf_counter() - started
            self.loaded = True
            return self.load_seconds

    def evaluate(
        self,
        spec: JudgeSpec,
        values: Mapping[str, Any],
        language: str,
        evidence: dict[str, MethodResult] | None = None,
        *,
        only: Collection[str] | None = None,
        skip: Collection[str] = (),
    ) -> tuple[dict[str, DimensionProvenance], list[str]]:
        """Measure what can be measured offline. Returns the dimensions and the notes for ``reasoning``.

        ``evidence`` (optional) receives each method's full result (with its details), keyed by dimension:
        the offline ``p_reject`` model reads its features from there. ``only`` runs just the bindings of
        those methods (the safety gate beside the LLM) and reports nothing else; ``skip`` leaves those
        methods' dimensions unmeasured (the gate switched off).
        """
        ctx = OfflineContext(language=language, embedder_factory=self._embedder_factory, resources=self._resources)
        dims: dict[str, DimensionProvenance] = {}
        notes: list[str] = []
        for name, dim in spec.dimensions.items():
            if dim.kind == "text":
                continue
            binding = spec.offline.get(name)
            if only is not None and (binding is None or binding.method not in only):
                continue
            if binding is not None and binding.method in skip:
                dims[name] = DimensionProvenance(
                    backend="offline", method=binding.method, measured=False, note="safety gate switched off"
                )
                continue
            if binding is None:
                if dim.kind in ("score", "gate"):
                    dims[name] = DimensionProvenance(
                        backend="offline", measured=False, note="not measured by the offline judge"
                    )
                continue
            args = {arg: values.get(source) for arg, source in binding.inputs.items()}
            try:
                result: MethodResult = get_method(binding.method)(args, ctx)
                if evidence is not None:
                    evidence[name] = result
            except Exception as exc:  # a broken method must not take the judgment down
                dims[name] = DimensionProvenance(
                    backend="offline", method=binding.method, measured=False, note=f"method error: {exc!r}"
                )
                notes.append(f"{name}: offline method {binding.method} failed ({exc!r})")
                continue
            dims[name] = DimensionProvenance(
                value=result.value,
                backend="offline",
                method=result.method,
                measured=result.measured,
                note=result.note,
                fact=result.fact if result.measured else None,
            )
            detail = f"{name}={result.value!r} ({result.method}" + (f"; {result.note}" if result.note else "") + ")"
            notes.append(detail if result.measured else f"{name}: not measured ({result.note or result.method})")
        unmeasured = [n for n, d in dims.items() if not d.measured and spec.dimensions[n].kind in ("score", "gate")]
        if unmeasured:
            notes.append("not measured offline: " + ", ".join(unmeasured))
        return dims, notes


#: What the offline tier gives the engine: the dimensions, the notes and the tier's confidence.
TierOutput = tuple[dict[str, DimensionProvenance], list[str], TierConfidence | None]


def offline_tier(
    judge: OfflineJudge,
    spec: JudgeSpec,
    values: Mapping[str, Any],
    language: str,
    *,
    skip: Collection[str] = (),
    only: Collection[str] | None = None,
) -> TierOutput:
    """The offline tier of one judgment: dimensions, notes and (unless ``only`` limits it to some methods,
    the safety gate beside the LLM) the tier's confidence, its p_reject (microseconds).

    One function for the worker threads and the worker processes, so both compute exactly the same."""
    if only is not None:
        dims, notes = judge.evaluate(spec, values, language, only=only)
        return dims, notes, None
    from bqas.offline.p_reject import offline_confidence

    evidence: dict[str, MethodResult] = {}
    dims, notes = judge.evaluate(spec, values, language, evidence, skip=skip)
    return dims, notes, offline_confidence(spec, values, dims, evidence)


def timed_offline_tier(
    judge: OfflineJudge,
    spec: JudgeSpec,
    values: Mapping[str, Any],
    language: str,
    *,
    skip: Collection[str] = (),
) -> tuple[TierOutput, float]:
    """:func:`offline_tier` and the seconds it worked, measured where it runs (a worker thread or process):
    the judgment's own work, without the time it waited for that worker."""
    started = time.perf_counter()
    out = offline_tier(judge, spec, values, language, skip=skip)
    return out, time.perf_counter() - started
