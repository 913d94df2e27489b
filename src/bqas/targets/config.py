"""The ``target:`` block of a scenario: how to ask the assistant under test. Four kinds, one ``type`` each.

Secrets reach a target only through the environment: ``api_key_env`` names a variable, and ``${VAR}``
(or ``${VAR:-default}``) in a URL, header or body is read from the environment when the request is
built. The configuration as written (with the ``${…}`` unexpanded) is what a run stores.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

# The sample fields tried, in order, for the user's message when ``input`` is not given.
DEFAULT_INPUTS: tuple[str, ...] = ("user_input", "query", "question")

_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class TargetConfigError(ValueError):
    """A target cannot be used as configured (a variable it needs is unset, a bad JSONPath …)."""


def expand_env(text: str, where: str) -> str:
    """``text`` with ``${VAR}`` / ``${VAR:-default}`` replaced from the environment; an unset variable
    without a default raises naming ``where`` (never the value)."""

    def value(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name)
        if found is None:
            if default is None:
                raise TargetConfigError(f"{where}: environment variable {name} is not set")
            return default
        return found

    return _ENV.sub(value, text)


@functools.lru_cache(maxsize=256)
def compile_path(path: str, where: str = "outputs") -> Any:
    """The compiled JSONPath query of an ``outputs`` path (checked when a target loads, used again when a
    reply is mapped, :mod:`bqas.targets.mapping`); a syntax error raises naming ``where``."""
    import jsonpath_rfc9535

    try:
        return jsonpath_rfc9535.compile(path)
    except jsonpath_rfc9535.JSONPathError as exc:
        raise TargetConfigError(f"{where}: invalid JSONPath {path!r}: {exc}") from None


def env_names(value: Any, *, with_defaults: bool = False) -> set[str]:
    """The variables ``${…}`` refers to anywhere in ``value`` (strings, lists, mappings): those without a
    default (they must be set), or with ``with_defaults`` every one (the values to keep out of what is
    stored)."""
    if isinstance(value, str):
        return {m.group(1) for m in _ENV.finditer(value) if with_defaults or m.group(2) is None}
    if isinstance(value, dict):
        items: list[Any] = list(value.values())
    elif isinstance(value, list):
        items = value
    else:
        return set()
    return set().union(*(env_names(v, with_defaults=with_defaults) for v in items)) if items else set()


class _Common(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # The sample field holding the user's message (default: user_input, else query, else question).
    input: str | None = Field(default=None, min_length=1, max_length=200)
    concurrency: int = Field(default=16, ge=1, le=1024)
    timeout: float = Field(default=30.0, gt=0, le=3600)
    retries: int = Field(default=2, ge=0, le=20)
    # A 3xx is a target error ("none"), or followed when it stays on the same scheme, host and port.
    redirects: Literal["none", "same-origin"] = "none"


class _Outputs(BaseModel):
    """``outputs``: judge input field -> JSONPath into the reply (validated when the scenario loads)."""

    outputs: dict[str, str] = Field(default_factory=dict)

    @field_validator("outputs")
    @classmethod
    def _paths(cls, value: dict[str, str]) -> dict[str, str]:
        for name, path in value.items():
            if not name or not name.replace("_", "a").isalnum():
                raise ValueError(f"outputs: {name!r} is not a field name")
            compile_path(path, f"outputs.{name}")
        return value


class OpenAITarget(_Common, _Outputs):
    """An OpenAI-compatible chat endpoint is the assistant: the reply's message is ``response`` (or, with
    ``outputs``, the message is read as JSON and mapped like an HTTP reply)."""

    type: Literal["openai"]
    base_url: str = Field(min_length=1, max_length=2000)
    model: str = Field(min_length=1, max_length=500)
    api_key_env: str | None = Field(default=None, min_length=1, max_length=200)
    system: str | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1)
    headers: dict[str, str] = Field(default_factory=dict)
    # Ask for the reply as chat completion chunks (SSE): the time to first token is measured.
    stream: bool = False


class HTTPTarget(_Common, _Outputs):
    """Any JSON endpoint: a request built from templates, the reply mapped with JSONPath."""

    type: Literal["http"]
    url: str = Field(min_length=1, max_length=2000)
    method: Literal["POST", "PUT", "PATCH", "GET"] = "POST"
    headers: dict[str, str] = Field(default_factory=dict)
    # Strings may hold {field} (a sample field, {conversation_id}, {turn}) and ${VAR} (the environment).
    body: Any = None
    outputs: dict[str, str] = Field(default_factory=dict)
    # A streamed reply (Server-Sent Events or newline-delimited JSON): ``chunk`` is the JSONPath, into
    # each event, of a piece of ``response``; ``outputs`` fields take the last value an event holds.
    stream: Literal["sse", "ndjson"] | None = None
    chunk: str | None = Field(default=None, min_length=1, max_length=2000)
    # Whether sending a turn twice is harmless; unset: not when the request carries a session
    # ({conversation_id} in url, headers or body, or a conversation id mapped from the reply).
    idempotent: bool | None = None

    @model_validator(mode="after")
    def _mapping(self) -> HTTPTarget:
        if self.chunk is not None:
            compile_path(self.chunk, "chunk")
        if self.stream is not None and self.chunk is None:
            raise ValueError("stream: needs chunk, the JSONPath of a piece of the answer in each event")
        if self.stream is None and self.chunk is not None:
            raise ValueError("chunk: only with stream: sse or ndjson")
        if self.stream is None and not self.outputs:
            raise ValueError("outputs: map at least one field from the reply (e.g. response: $.answer)")
        return self

    @field_validator("method", mode="before")
    @classmethod
    def _method_any_case(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value  # HTTP methods: `post` is POST


class DifyTarget(_Common, _Outputs):
    """A Dify app (:mod:`bqas.targets.dify`). ``mode: chat`` (chat, agent and chatflow apps,
    ``/chat-messages``): answer -> response, retriever_resources[*].content -> available_facts;
    ``mode: workflow`` (``/workflows/run``): ``outputs`` maps from ``data.outputs``; ``mode: completion``
    (``/completion-messages``): answer -> response. Streamed (SSE) unless ``response_mode: blocking``."""

    type: Literal["dify"]
    mode: Literal["chat", "workflow", "completion"] = "chat"
    # Agent apps answer only streaming; chatflow apps have been seen to stream even when asked to block.
    response_mode: Literal["streaming", "blocking"] = "streaming"
    base_url: str = Field(min_length=1, max_length=2000)
    api_key_env: str = Field(min_length=1, max_length=200)
    user: str = Field(default="bqas", min_length=1, max_length=200)
    inputs: dict[str, Any] = Field(default_factory=dict)  # the app's input variables; strings take {field}
    # Whether sending a request twice is harmless (default: yes for workflow and completion apps and a
    # chat's first turn, no for a chat's later turns, which Dify would take twice into the conversation).
    idempotent: bool | None = None


class PythonTarget(_Common):
    """A Python function ``(sample: dict) -> dict`` (sync or async) in this process."""

    type: Literal["python"]
    function: str = Field(pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$", max_length=500)


TargetConfig = Annotated[OpenAITarget | HTTPTarget | DifyTarget | PythonTarget, Field(discriminator="type")]
Target = OpenAITarget | HTTPTarget | DifyTarget | PythonTarget


def answer_fields(target: Target) -> tuple[str, ...]:
    """What makes a sample answered already (then it is not sent): ``response``; for an HTTP target that
    maps no ``response``, every field its ``outputs`` map (e.g. ``generated_definition``)."""
    if isinstance(target, HTTPTarget) and target.stream is None and "response" not in target.outputs:
        return tuple(k for k in target.outputs if k not in TOKEN_FIELDS and k != "conversation_id")
    return ("response",)


def provided_fields(target: Target) -> tuple[str, ...]:
    """The judge inputs a target's answer fills in (a python target's are known only once it answers)."""
    mapped = tuple(getattr(target, "outputs", {}) or ())
    fields: tuple[str, ...] = {"dify": ("response", "available_facts"), "http": ()}.get(target.type, ("response",))
    if isinstance(target, HTTPTarget) and target.stream is not None:
        fields = ("response",)
    if isinstance(target, DifyTarget) and target.mode != "chat":
        fields = ("response",)
    return tuple(dict.fromkeys(f for f in (*fields, *mapped) if f not in TOKEN_FIELDS and f != "conversation_id"))


# Output names read as the assistant's token figures, not as judge inputs.
TOKEN_FIELDS: tuple[str, ...] = ("prompt_tokens", "completion_tokens", "total_tokens")


def check_environment(target: Target) -> None:
    """Refuse now, before any sample, a target whose variables are unset (naming the variable)."""
    names: list[tuple[str, str]] = []
    key_env = getattr(target, "api_key_env", None)
    if key_env:
        names.append(("target.api_key_env", key_env))
    for field in ("url", "base_url", "headers", "body", "inputs"):
        value = getattr(target, field, None)
        names.extend((f"target.{field}", name) for name in sorted(env_names(value)))
    for where, name in names:
        if os.environ.get(name) is None:
            raise TargetConfigError(f"{where}: environment variable {name} is not set")


def load_target_option(value: str) -> Target:
    """``bqas run --target``: a YAML file holding a ``target:`` block (or the block itself), or inline YAML
    such as ``'{type: openai, base_url: …, model: …}'``. Errors name the file and field."""
    import yaml
    from pydantic import TypeAdapter, ValidationError

    from bqas.untrusted import UntrustedValueError, compose_yaml, yaml_data

    path = Path(value)
    where = value if len(value) < 80 else value[:77] + "…"
    try:
        text = path.read_text(encoding="utf-8") if path.is_file() else value
    except OSError as exc:
        raise TargetConfigError(f"--target {where}: cannot read: {exc.strerror}") from None
    source = str(path) if path.is_file() else "--target"
    try:
        data = yaml_data(compose_yaml(text))
    except (yaml.YAMLError, UntrustedValueError) as exc:
        raise TargetConfigError(f"{source}: invalid YAML: {getattr(exc, 'problem', exc)}") from None
    if isinstance(data, dict) and isinstance(data.get("target"), dict):
        data = data["target"]
    if not isinstance(data, dict):
        raise TargetConfigError(f"{source}: expected a target mapping (type: openai | http | dify | python)")
    try:
        return TypeAdapter(TargetConfig).validate_python(data)
    except ValidationError as exc:
        lines = [f"{source}: {'.'.join(['target', *(str(p) for p in e['loc'])])}: {e['msg']}" for e in exc.errors()]
        raise TargetConfigError("\n".join(lines)) from None
