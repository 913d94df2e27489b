"""The LLM response cache is scoped by tenant in the service: tenant B gets no cache hit for text that
tenant A submitted (that hit would tell B what A sent); the same tenant does; CLI runs keep sharing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from bqas.llm.cache import CACHE_SCOPE, cache_key
from bqas.service.app import create_app
from bqas.service.config import ServiceSettings
from bqas.service.testing import ServiceServer
from bqas.settings import Settings
from bqas.store.db import open_store
from bqas.store.service import create_api_key
from bqas.testing.scripted_llm import Reply, ScriptedLLM
from test_service_llm import BODY, GOOD


@pytest.fixture
def cached_svc(tmp_path: Path) -> Iterator[SimpleNamespace]:
    with ScriptedLLM(default=Reply(content=json.dumps(GOOD))) as llm:
        store = open_store(f"sqlite:///{tmp_path / 'svc.sqlite'}")
        settings = Settings(
            home=tmp_path / "home", llm_base_url=llm.base_url, judge_model="scripted", llm_max_retries=0
        )
        app = create_app(settings=settings, service=ServiceSettings(rate_limit=0), store=store, run_worker=False)
        keys = {t: {"Authorization": f"Bearer {create_api_key(store, t)}"} for t in ("a", "b")}
        with ServiceServer(app) as server:
            yield SimpleNamespace(url=server.base_url, keys=keys, llm=llm)


def test_cache_hits_only_within_a_tenant(cached_svc: SimpleNamespace) -> None:
    def hit(tenant: str) -> bool:
        r = httpx.post(f"{cached_svc.url}/api/score", json=BODY, headers=cached_svc.keys[tenant])
        assert r.status_code == 200, r.text
        return bool(r.json()[0]["cache_hit"])

    assert hit("a") is False
    calls = len(cached_svc.llm.requests)
    assert hit("b") is False  # before the fix: True, a membership oracle on tenant a's traffic
    assert len(cached_svc.llm.requests) > calls
    assert hit("a") is True and hit("b") is True


def test_unscoped_keys_are_shared_and_unchanged() -> None:
    messages = [{"role": "user", "content": "x"}]
    shared = cache_key("m", messages, {})
    token = CACHE_SCOPE.set("tenant:a")
    try:
        scoped = cache_key("m", messages, {})
    finally:
        CACHE_SCOPE.reset(token)
    assert scoped != shared and cache_key("m", messages, {}) == shared
