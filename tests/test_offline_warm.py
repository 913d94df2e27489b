"""A worker process builds the rules' compiled parts while it loads, so its first requests do not wait for
them (the service's p99 latency); a fresh process without warm_rules has not built them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from bqas.judging import dispatch
from bqas.judging.procpool import OfflineProcessPool
from bqas.offline.warm import _TEXTS, rules_warm, warm_rules


def test_warm_rules_builds_them_in_a_fresh_process() -> None:
    code = (
        "from bqas.offline.warm import rules_warm, warm_rules\n"
        "before = rules_warm()\n"
        "warm_rules()\n"
        "import sys\n"
        "print(before, rules_warm(), 'bqas.offline.pii_ner' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "False"]  # warm, and the Chinese NER model not loaded


def test_warm_rules_finds_what_the_texts_hold() -> None:
    from bqas.offline.manipulation import scan
    from bqas.offline.pii import detect_pii

    warm_rules()
    for text, language in _TEXTS:
        kinds = {f.kind for f in detect_pii(text, language, ner=False)}
        assert kinds, f"no PII found in the {language} warm-up text: its rule families would stay cold"
    assert scan(_TEXTS[0][0]) and scan(_TEXTS[1][0])  # the German and English texts fire a rule each


@pytest.fixture
def pool() -> Iterator[OfflineProcessPool]:
    workers = OfflineProcessPool(1)
    yield workers
    workers.shutdown(wait=True)
    dispatch.shutdown_pools()


def test_a_worker_process_is_warm_before_it_takes_work(pool: OfflineProcessPool) -> None:
    assert pool._executor.submit(rules_warm).result(timeout=120) is True
