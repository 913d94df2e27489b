"""deploy/docker-compose.yml is a valid Compose file (checked against the compose-spec JSON schema, since
``docker compose config`` is not available here) and describes the deployment of docs/deploy.md."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = ROOT / "deploy" / "docker-compose.yml"
SCHEMA = Path(__file__).parent / "fixtures" / "compose-spec" / "compose-spec.json"


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))  # resolves the << merges
    return loaded


def _errors(document: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(json.loads(SCHEMA.read_text(encoding="utf-8")))
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def test_compose_file_matches_the_compose_spec_schema() -> None:
    assert _errors(_compose()) == []


@pytest.mark.parametrize(
    "breakage",
    [
        lambda d: d["services"]["api-1"].update(replicas_typo=2),  # unknown key
        lambda d: d["services"]["postgres"].update(volumes="pgdata"),  # a string where a list belongs
        lambda d: d["services"]["worker-1"].update(depends_on=[{"postgres": True}]),  # wrong shape
    ],
)
def test_the_schema_check_rejects_broken_files(breakage: Any) -> None:
    broken = copy.deepcopy(_compose())
    breakage(broken)
    assert _errors(broken) != []


def test_compose_has_the_roles_of_the_deployment_plan() -> None:
    services = _compose()["services"]
    commands = {name: svc.get("command", []) for name, svc in services.items()}
    api = [n for n, c in commands.items() if c[:2] == ["bqas", "serve"]]
    workers = [n for n, c in commands.items() if c[:2] == ["bqas", "worker"]]
    assert len(api) == 2 and len(workers) == 2
    assert all("--no-worker" in commands[n] for n in api)  # jobs run on the worker role only
    assert [c[:3] for c in commands.values() if c[:1] == ["ray"]] == [
        ["ray", "start", "--head"],
        ["ray", "start", "--address=ray-head:6379"],
    ]
    assert services["postgres"]["image"].startswith("postgres:")
    url = "postgresql+psycopg://bqas:${BQAS_DB_PASSWORD:?set BQAS_DB_PASSWORD}@postgres:5432/bqas"
    for name in (*api, *workers, "ray-head", "ray-worker", "batch"):
        assert services[name]["environment"]["BQAS_DATABASE_URL"] == url, name  # one shared store
        assert set(services[name]["depends_on"]) <= set(services), name
    for name in api:
        assert "/readyz" in " ".join(services[name]["healthcheck"]["test"])  # healthy: database and models


def test_compose_bqas_commands_parse_with_the_cli() -> None:
    """Every `bqas …` command line of the file is accepted by the real CLI (options and values)."""
    from bqas.cli.main import app

    subcommands: dict[str, Any] = typer.main.get_command(app).commands  # type: ignore[attr-defined]
    parsed = []
    for name, svc in _compose()["services"].items():
        command = svc.get("command", [])
        if command[:1] != ["bqas"] or command[1:2] == ["--help"]:
            continue
        # make_context parses without running; it raises a usage error on an unknown option or bad value.
        subcommands[command[1]].make_context(command[1], list(command[2:]))
        parsed.append(name)
    assert parsed == ["api-1", "api-2", "worker-1", "worker-2"]
