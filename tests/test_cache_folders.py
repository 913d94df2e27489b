"""Nothing BQAS reads back from a cache folder can run code, and a cache folder others can write is not
used: the report template is compiled in memory (a crafted Jinja bytecode file in the model cache runs
nothing), every cache folder BQAS creates is 0700 (also under umask 000), and a group/world-writable or
foreign-owned one is neither read nor written, with a warning naming it (model arrays, intent
classifier, LLM replies)."""

from __future__ import annotations

import json
import logging
import os
import pickle
import stat
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner

from bqas.cli.main import app
from bqas.offline.array_cache import load_state, save_state
from bqas.testing.scripted_llm import Reply, ScriptedLLM

GOOD = {"intent_accuracy": 100, "faithfulness": 5, "relevance": 5, "coherence": 5, "safety": "pass", "reasoning": "ok"}
SAMPLE = {
    "user_input": "Erinnere mich morgen an die Konferenz",
    "detected_intent": "reminder",
    "response": "Ich erinnere dich morgen um 8 Uhr an die Konferenz.",
    "expected_intent": "reminder",
}


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The probe's setting: a process whose umask takes nothing away (folders would be 0777)."""
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


class _Payload:
    """Runs code when unpickled: what a crafted cache file carries."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (exec, (f"open({str(self.marker)!r}, 'w').write('ran')",))


def _crafted_template_cache(folder: Path, marker: Path) -> Path:
    """A Jinja bytecode file for the report template whose checksum pickle runs code when loaded."""
    import jinja2

    from bqas.report.render import _TEMPLATE, _environment

    env = _environment()
    _, filename, _ = env.loader.get_source(env, _TEMPLATE)  # type: ignore[union-attr]
    key = jinja2.BytecodeCache().get_cache_key(_TEMPLATE, filename)
    magic = jinja2.bccache.bc_magic
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"__jinja2_{key}.cache"
    path.write_bytes(magic + pickle.dumps(_Payload(marker), 2))
    return path


def test_crafted_template_cache_file_runs_nothing_on_bqas_run(
    tmp_path: Path, bqas_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "models"
    monkeypatch.setenv("BQAS_MODEL_CACHE", str(cache))
    marker = tmp_path / "pwned"
    crafted = _crafted_template_cache(cache / "templates", marker)
    os.chmod(cache / "templates", 0o777)
    os.chmod(crafted, 0o666)
    from bqas.report import render

    getattr(render.load_template, "cache_clear", lambda: None)()  # a fresh process, as far as the template goes
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({**SAMPLE, "id": "s1"}) + "\n", encoding="utf-8")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: c\njudges: [voice]\nbackend: offline\ndataset: data.jsonl\n", encoding="utf-8")
    result = CliRunner().invoke(app, ["run", str(scenario), "--no-progress", "--out", str(tmp_path / "o")])
    assert result.exit_code in (0, 1), result.output
    assert (tmp_path / "o" / "report.html").is_file()
    assert not marker.exists(), "a file in the cache folder ran code"


def test_report_template_is_compiled_in_memory_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BQAS_MODEL_CACHE", str(tmp_path / "models"))
    from bqas.report import render

    render.load_template.cache_clear()
    assert render.load_template() is render.load_template()  # compiled once per process
    assert not (tmp_path / "models").exists()  # and nothing written for the next one


def test_model_cache_folders_are_created_private(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, open_umask: None
) -> None:
    root = tmp_path / "user" / "cache" / "models"
    monkeypatch.setenv("BQAS_MODEL_CACHE", str(root))
    assert save_state("m", "k", {"a": np.arange(4)})
    for folder in (tmp_path / "user", tmp_path / "user" / "cache", root, *root.iterdir()):
        assert _mode(folder) == 0o700, (folder, oct(_mode(folder)))
    assert load_state("m", "k") is not None


@pytest.mark.parametrize("unsafe", ["group", "world", "other owner"])
def test_model_cache_others_can_write_is_neither_read_nor_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, unsafe: str
) -> None:
    root = tmp_path / "models"
    monkeypatch.setenv("BQAS_MODEL_CACHE", str(root))
    assert save_state("m", "k", {"a": np.arange(4)})
    if unsafe == "other owner":
        from bqas import private_folder

        monkeypatch.setattr(private_folder, "_uid", lambda: os.getuid() + 1)
    else:
        os.chmod(root, 0o770 if unsafe == "group" else 0o777)
    with caplog.at_level(logging.WARNING):
        assert load_state("m", "k") is None
        assert not save_state("m", "k2", {"a": np.arange(4)})
    assert sorted(p.name for p in root.iterdir()) == ["m-k"]
    words = {"group": "its group (mode 0770)", "world": "every user (mode 0777)", "other owner": "another user"}
    warnings = [r.getMessage() for r in caplog.records if "not using the model cache" in r.getMessage()]
    assert len(warnings) == 1, caplog.text  # once per folder, not per model
    assert str(root) in warnings[0] and words[unsafe] in warnings[0] and "BQAS_MODEL_CACHE" in warnings[0]


def test_intent_classifier_cache_is_private_and_refused_when_shared(
    tmp_path: Path, open_umask: None, caplog: pytest.LogCaptureFixture
) -> None:
    from bqas.intents import classifier

    cache = tmp_path / "home" / "cache"
    x = np.ones((2, 3))
    classifier._save(cache, "k", x, None, None)
    assert _mode(cache / "intents") == 0o700 and _mode(cache) == 0o700
    assert classifier._load(cache, "k") is not None
    os.chmod(cache / "intents", 0o777)
    with caplog.at_level(logging.WARNING):
        assert classifier._load(cache, "k") is None
    assert "not using the intent classifier cache" in caplog.text


def _score(server: ScriptedLLM) -> Any:
    args = ["score", "-", "-j", "voice", "--backend", "llm", "--base-url", server.base_url, "--model", "m"]
    return CliRunner().invoke(app, args, input=json.dumps(SAMPLE))


def test_llm_cache_folder_is_private_and_refused_when_others_can_write(
    bqas_home: Path, open_umask: None, caplog: pytest.LogCaptureFixture
) -> None:
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD))) as server:
        first = _score(server)
        assert first.exit_code == 0, first.output
        assert _mode(bqas_home / "cache") == 0o700
        again = _score(server)
        assert len(server.requests) == 1  # the second answer came from the cache
        os.chmod(bqas_home / "cache", 0o777)
        with caplog.at_level(logging.WARNING):
            shared = _score(server)
        assert len(server.requests) == 2  # not read from a folder others could have filled
    assert again.exit_code == shared.exit_code == 0, shared.output
    assert json.loads(shared.output.strip().splitlines()[-1])["status"] == "scored"
    assert f"not using the LLM cache: {bqas_home / 'cache'} can be written by" in caplog.text


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX modes")
def test_make_private_refuses_a_file_and_keeps_an_existing_private_folder(tmp_path: Path) -> None:
    from bqas.private_folder import make_private

    folder = tmp_path / "ok"
    folder.mkdir(mode=0o700)
    os.chmod(folder, 0o750)
    assert make_private(folder) == folder and _mode(folder) == 0o750  # group may read, not write
    (tmp_path / "f").write_text("x", encoding="utf-8")
    with pytest.raises(NotADirectoryError):
        make_private(tmp_path / "f")


def test_nothing_read_from_disk_is_unpickled_or_marshalled() -> None:
    """Pickle stays between a process and its own workers (procpool's spec bytes); nothing BQAS reads
    from a file (caches, model files, profiles) goes through pickle, marshal or Jinja's bytecode cache."""
    import re

    import bqas

    risky = re.compile(
        r"pickle\.loads?\(|marshal\.loads?\(|allow_pickle\s*=\s*True|BytecodeCache|bytecode_cache|yaml\.(?:unsafe_)?load\(|shelve\.|dill\.|joblib\.load"
    )
    allowed = {("judging/procpool.py", "pickle.loads(")}
    root = Path(bqas.__file__).parent
    found = []
    for path in sorted(root.rglob("*.py")):
        for match in risky.finditer(path.read_text(encoding="utf-8")):
            where = (path.relative_to(root).as_posix(), match.group(0))
            if where not in allowed:
                found.append(where)
    assert found == []
