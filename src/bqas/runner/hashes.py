"""Content hashes a run records, so that ``bqas compare`` can tell whether two runs judged the same data
with the same judges: one of the dataset (file bytes or inline samples, and the field mapping), one of the
judge configuration (judges with their policy-derived rules and prompt hashes, backend, model, temperature)."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bqas.judging.engine import JudgeEngine
    from bqas.runner.scenario import Scenario


def _digest(blob: Any) -> str:
    return hashlib.sha256(json.dumps(blob, sort_keys=True, ensure_ascii=False, default=str).encode()).hexdigest()[:16]


def dataset_hash(scenario: Scenario) -> str:
    """Hash of what is judged: the dataset file's bytes (or the inline samples) and the field mapping."""
    digest = hashlib.sha256(json.dumps(scenario.mapping, sort_keys=True).encode())
    path = scenario.dataset_path()
    if path is not None:
        with path.open("rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                digest.update(chunk)
    else:
        digest.update(json.dumps(scenario.samples, sort_keys=True, ensure_ascii=False).encode())
    return digest.hexdigest()[:16]


def judge_config(scenario: Scenario, engine: JudgeEngine, backend: str) -> dict[str, Any]:
    """What decides the judgments: per judge its rule hash (dimensions, scoring policy, offline bindings,
    schema) and LLM prompt hashes; the backend, model and temperature; the RAGAS metrics; and the hash of it all."""
    from bqas.trust.profile import judge_hash, prompt_hashes

    judges = {}
    for name in scenario.judges:
        spec = engine.registry.get(name)
        judges[name] = {"rules": judge_hash(spec), "prompts": prompt_hashes(spec) if spec.templates else {}}
    llm = engine.llm.config if engine.llm is not None else None
    config: dict[str, Any] = {
        "judges": judges,
        "metrics": list(scenario.metrics),
        "backend": backend,
        "model": llm.model if llm is not None else None,
        "temperature": llm.temperature if llm is not None else None,
        "judge_language": scenario.judge_language,
    }
    return {**config, "hash": _digest(config)}


def hash_differences(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    """Why two runs' configs are not comparable, one line each; empty when both hashes agree."""
    lines: list[str] = []
    for field, what in (("dataset_hash", "data"), ("judge_config_hash", "judge configuration")):
        ha, hb = a.get(field), b.get(field)
        if ha is None or hb is None:
            lines.append(f"cannot tell whether both runs judged the same {what}: a run records no {field}")
        elif ha != hb:
            lines.append(f"the runs did not judge the same {what} ({field} {ha} vs {hb})")
    ja, jb = a.get("judge_config") or {}, b.get("judge_config") or {}
    for name in sorted(set(ja.get("judges", {})) & set(jb.get("judges", {}))):
        pa, pb = ja["judges"][name].get("prompts", {}), jb["judges"][name].get("prompts", {})
        changed = sorted(lang for lang in set(pa) | set(pb) if pa.get(lang) != pb.get(lang))
        if changed:
            lines.append(f"judge {name}: prompts differ ({', '.join(changed)})")
        if ja["judges"][name].get("rules") != jb["judges"][name].get("rules"):
            lines.append(f"judge {name}: scoring rules or policy differ")
    for key in ("backend", "model", "temperature"):
        if ja and jb and ja.get(key) != jb.get(key):
            lines.append(f"{key} differs: {ja.get(key)} vs {jb.get(key)}")
    return lines
