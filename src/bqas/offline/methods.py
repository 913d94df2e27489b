"""The registry of offline (tier 0/1) measuring methods.

A judge's ``judge.yaml`` maps its output dimensions to methods by name under ``offline:``; the offline
judge looks the names up here. A method gets the judge's input values (already mapped to the names the
judge file gives under ``inputs:``) and a context, and returns a :class:`MethodResult`. A method that
cannot measure a sample (missing input, nothing to compare) returns ``value=None`` with a ``note`` that
says why: the dimension is then reported as not measured, never filled with a constant.

Values are in the units of the judge's output schema: 0-100 scores as numbers, 1-5 scores as numbers in
[1, 5] (offline methods may give fractions), gates as ``"pass"`` / ``"fail"``, lists as lists of strings.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bqas.offline.embeddings import Embedder


@dataclass(frozen=True)
class MethodResult:
    """What one offline method measured for one dimension of one sample."""

    value: Any | None
    method: str
    note: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def measured(self) -> bool:
        return self.value is not None

    @property
    def fact(self) -> str | None:
        """The checkable fact behind the value (see :data:`FACT_KEY`), or None for a measured guess."""
        fact = self.details.get(FACT_KEY)
        return fact if isinstance(fact, str) and fact else None


#: ``details[FACT_KEY]``: a sentence naming what was measured exactly, which a person can check in the texts
#: (the detected intent equals the expected one; a PII rule matched; a number of the answer is not in the
#: facts). The value of such a dimension is a fact, not an estimate: beside an LLM it stands (the LLM's value
#: is kept and a disagreement escalated), and an offline ``failed`` verdict needs one that speaks against
#: the answer (:mod:`bqas.judging.precedence`).
FACT_KEY = "fact"


@dataclass
class OfflineContext:
    """Per-evaluation context: the sample's language and lazily built shared resources."""

    language: str
    embedder_factory: Callable[[], Embedder] | None = None
    resources: dict[str, Any] = field(default_factory=dict)

    def embedder(self) -> Embedder:
        """The embedding backend (built once, on first use)."""
        if "embedder" not in self.resources:
            if self.embedder_factory is None:
                from bqas.offline.embeddings import default_embedder

                self.resources["embedder"] = default_embedder()
            else:
                self.resources["embedder"] = self.embedder_factory()
        emb: Embedder = self.resources["embedder"]
        return emb


OfflineMethod = Callable[[Mapping[str, Any], OfflineContext], MethodResult]

_REGISTRY: dict[str, OfflineMethod] = {}

# Where each built-in method is registered (its module's import registers it). Looking a method up imports
# its module only: the LLM path's safety gate needs ``bqas.offline.safety`` (0.06 s), not the grounding
# modules and NumPy (0.17-0.25 s more, on the event loop at a run's first judgment). Kept lazy so that
# `bqas --help` stays fast; tests/test_offline_methods_map.py holds it equal to what the modules register.
BUILTIN_METHOD_MODULES: dict[str, str] = {
    "pii_gate": "bqas.offline.safety",
    "safety_gate": "bqas.offline.safety",
    "pii_list": "bqas.offline.safety",
    "pii_anonymization": "bqas.offline.safety",
    "intent_taxonomy": "bqas.offline.taxonomy",
    "embedding_relevance": "bqas.offline.relevance",
    "claim_grounding": "bqas.offline.grounding.gates",
    "claim_invention_gate": "bqas.offline.grounding.gates",
    "unsupported_claims": "bqas.offline.grounding.gates",
    "learned_grounding": "bqas.offline.grounding_model",
    "learned_faithfulness": "bqas.offline.grounding_model",
    "learned_invention_gate": "bqas.offline.grounding_model",
    "learned_unsupported_claims": "bqas.offline.grounding_model",
    "operator_afb_label": "bqas.offline.operators",
    "operator_afb": "bqas.offline.operators",
    "action_coverage": "bqas.offline.operators",
    "namespace_gate": "bqas.offline.namespace",
    "tenant_leak_gate": "bqas.offline.namespace",
    "tenant_leaks": "bqas.offline.namespace",
    "concept_coverage": "bqas.offline.coverage",
    "input_specifics": "bqas.offline.specifics",
}
# Every module that registers built-in methods, in a fixed order.
_BUILTIN_MODULES = tuple(dict.fromkeys(BUILTIN_METHOD_MODULES.values()))


def offline_method(name: str) -> Callable[[OfflineMethod], OfflineMethod]:
    """Decorator: register ``fn`` as the offline method ``name``."""

    def register(fn: OfflineMethod) -> OfflineMethod:
        if name in _REGISTRY and _REGISTRY[name] is not fn:
            raise ValueError(f"offline method {name!r} registered twice")
        _REGISTRY[name] = fn
        return fn

    return register


def get_method(name: str) -> OfflineMethod:
    """Look up a method by name, importing on first use the module that registers it (all of the built-in
    method modules for a name not in :data:`BUILTIN_METHOD_MODULES`)."""
    if name not in _REGISTRY:
        module = BUILTIN_METHOD_MODULES.get(name)
        if module is not None:
            _import_builtin(module)
        if name not in _REGISTRY:
            load_builtin_methods()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"unknown offline method {name!r}; known: {', '.join(sorted(_REGISTRY))}") from None


def load_builtin_methods() -> None:
    """Import the modules that register the built-in methods (missing ones are skipped)."""
    for module in _BUILTIN_MODULES:
        _import_builtin(module)


def _import_builtin(module: str) -> None:
    """Import one built-in method module (skipped when the module itself is missing)."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise


def known_methods() -> list[str]:
    load_builtin_methods()
    return sorted(_REGISTRY)
