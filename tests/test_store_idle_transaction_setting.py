"""``BQAS_DB_IDLE_IN_TRANSACTION_SECONDS``: validated, and sent to PostgreSQL with the statement timeout in
the connection's ``options`` (unless the URL brings its own). The server side is in
``test_store_idle_transaction_pg.py``."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from bqas.settings import Settings
from bqas.store.bounds import DatabaseLimits
from bqas.store.db import database_limits

URL = "postgresql+psycopg://bqas@db.internal/bqas"


@pytest.mark.parametrize("value", ["-1", "0.5", "inf", "nan", "soon", "3000000"])
def test_a_bad_bound_is_refused_naming_the_setting(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("BQAS_DB_IDLE_IN_TRANSACTION_SECONDS", value)
    with pytest.raises(ValidationError) as refused:
        Settings()
    assert refused.value.errors()[0]["loc"] == ("db_idle_in_transaction_seconds",)


@pytest.mark.parametrize(
    ("value", "sent"),
    [
        (None, "-c statement_timeout=10000 -c idle_in_transaction_session_timeout=60000"),  # the default
        ("2.5", "-c statement_timeout=10000 -c idle_in_transaction_session_timeout=2500"),
        ("0", "-c statement_timeout=10000"),  # none set by BQAS: the server's own setting applies
    ],
)
def test_the_bound_goes_to_the_server_with_the_statement_timeout(
    monkeypatch: pytest.MonkeyPatch, value: str | None, sent: str
) -> None:
    if value is None:
        monkeypatch.delenv("BQAS_DB_IDLE_IN_TRANSACTION_SECONDS", raising=False)
    else:
        monkeypatch.setenv("BQAS_DB_IDLE_IN_TRANSACTION_SECONDS", value)
    monkeypatch.delenv("BQAS_DB_STATEMENT_TIMEOUT", raising=False)
    assert database_limits(Settings()).connect_args(URL)["options"] == sent


def test_options_in_the_url_win() -> None:
    given = URL + "?options=-c%20statement_timeout%3D5000"
    assert "options" not in DatabaseLimits(idle_in_transaction_timeout=30).connect_args(given)
