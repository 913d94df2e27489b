"""The four kinds of target: how each one is asked one turn of a conversation and how its reply becomes
the judge's inputs. Each returns a :class:`TargetReply` (``error`` set when there is no usable answer)."""

from __future__ import annotations

import asyncio
import functools
import importlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from bqas.targets.config import (
    DifyTarget,
    HTTPTarget,
    OpenAITarget,
    PythonTarget,
    Target,
    TargetConfigError,
    answer_fields,
    env_names,
    expand_env,
)
from bqas.targets.mapping import UnmappableReply, UnsafeURL, fill, fill_url, map_outputs, uses_session
from bqas.targets.python_call import call_function, unstorable_text
from bqas.targets.reply import TargetFailure, TargetReply, excerpt
from bqas.targets.secrets import Scrubber
from bqas.targets.transport import HTTPAnswer, Transport
from bqas.targets.turn_parts import (
    SampleProblem,
    as_judge_fields,
    bearer_header,
    count_tokens,
    reply_json,
    user_message,
)

# The longest conversation id a target may give (it is sent back in later requests and stored).
MAX_CONVERSATION_ID = 1000


@dataclass
class Conversation:
    """One conversation with the target: BQAS's id for it, the id the target gave it, the messages so far."""

    id: str = field(default_factory=lambda: f"bqas-{uuid.uuid4().hex[:16]}")
    remote_id: str | None = None
    messages: list[dict[str, str]] = field(default_factory=list)  # user and assistant turns, in order


# Replies larger than this are parsed and mapped in a worker thread: a few MB of JSON would hold the event
# loop (and every judgment and request waiting on it) for tens of milliseconds.
OFF_LOOP_BYTES = 256 * 1024


async def _parsed(raw: bytes, then: Callable[[Any], Any] | None = None) -> Any:
    """The reply's JSON (and ``then`` of it), in a worker thread for a large reply."""

    def work() -> Any:
        body = reply_json(raw)
        return then(body) if then is not None else body

    return await asyncio.to_thread(work) if len(raw) > OFF_LOOP_BYTES else work()


class TargetClient:
    """Asks one kind of target. ``ask`` never raises for what the target does: a failure is the reply's
    ``error``; :class:`SampleProblem` is raised for a sample that cannot be sent."""

    def __init__(self, target: Target, max_reply_bytes: int):
        self.target = target
        self.transport = Transport(
            timeout=target.timeout,
            retries=target.retries,
            concurrency=target.concurrency,
            max_reply_bytes=max_reply_bytes,
            redirects=target.redirects,
        )
        self.transport.scrub = lambda raw: self.scrubber.bytes(raw)

    async def ask(self, data: dict[str, Any], conversation: Conversation, turn: int) -> TargetReply:
        reply = TargetReply(turn=turn, kind=self.target.type)
        try:
            await self._ask(data, conversation, reply)
        except TargetFailure as exc:
            reply.error, reply.status, reply.attempts = exc.reason, exc.status, exc.attempts
            reply.latency_ms = exc.latency_ms
            reply.keep_raw(exc.raw)  # scrubbed whole by the transport
        except UnmappableReply as exc:
            reply.error = str(exc)
        except KeyError as exc:  # a {field} the sample lacks
            raise SampleProblem(str(exc.args[0]) if exc.args else str(exc)) from None
        except (SampleProblem, TargetConfigError):
            raise
        except Exception as exc:  # whatever else the reply or the sample's values set off: this sample's error
            reply.error = f"{type(exc).__name__}: {excerpt(self.scrubber.text(str(exc)))}"
            reply.fields = {}
        return scrub(reply, self.scrubber)

    @functools.cached_property
    def scrubber(self) -> Scrubber:
        """The values of the variables this target reads (``api_key_env``, ``${VAR}``, ``${VAR:-default}``):
        whatever echoes them (an error naming the URL, an assistant repeating a header) is stored without
        them. Read once, on first use."""
        names = env_names(self.target.model_dump(), with_defaults=True)
        key_env = getattr(self.target, "api_key_env", None)
        if key_env:
            names.add(key_env)
        return Scrubber.from_environment(names)

    async def _ask(self, data: dict[str, Any], conversation: Conversation, reply: TargetReply) -> None:
        raise NotImplementedError

    def _answered(self, reply: TargetReply, answer: HTTPAnswer) -> None:
        """Record the answer (its body scrubbed whole by the transport, before anything was cut from it)."""
        reply.status, reply.latency_ms, reply.attempts = answer.status, answer.latency_ms, answer.attempts
        reply.keep_raw(answer.body)

    async def aclose(self) -> None:
        await self.transport.aclose()


class OpenAIClient(TargetClient):
    target: OpenAITarget

    async def _ask(self, data: dict[str, Any], conversation: Conversation, reply: TargetReply) -> None:
        t = self.target
        text = user_message(t, data)
        messages = ([{"role": "system", "content": t.system}] if t.system else []) + conversation.messages
        messages.append({"role": "user", "content": text})
        payload: dict[str, Any] = {"model": t.model, "messages": messages}
        if t.temperature is not None:
            payload["temperature"] = t.temperature
        if t.max_tokens is not None:
            payload["max_tokens"] = t.max_tokens
        headers = {k: expand_env(v, f"target.headers.{k}") for k, v in t.headers.items()}
        headers.update(bearer_header(t.api_key_env, "target.api_key_env"))
        url = expand_env(t.base_url, "target.base_url").rstrip("/") + "/chat/completions"
        if t.stream:
            content, usage = await self._streamed(url, headers, payload, reply)
        else:
            content, usage = await self._whole(url, headers, payload, reply)
        count_tokens(reply, usage)
        reply.message = content
        if t.outputs:
            mapped = map_outputs(reply_json(content.encode()), t.outputs)
            reply.fields = as_judge_fields(mapped, tuple(k for k in t.outputs if k == "response"), t.outputs)
        else:
            reply.fields = {"response": content}

    async def _whole(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], reply: TargetReply
    ) -> tuple[str, Any]:
        answer = await self.transport.send("POST", url, headers, payload)
        self._answered(reply, answer)
        body = await _parsed(answer.body)
        try:
            content = body["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise UnmappableReply(
                f"not a chat completion (no choices[0].message.content): {excerpt(answer.body)}"
            ) from None
        if not isinstance(content, str):
            raise UnmappableReply("choices[0].message.content is not text")
        return content, body.get("usage") if isinstance(body, dict) else None

    async def _streamed(
        self, url: str, headers: dict[str, str], payload: dict[str, Any], reply: TargetReply
    ) -> tuple[str, Any]:
        from bqas.targets.chunks import openai_message
        from bqas.targets.streaming import send_streaming

        payload = {**payload, "stream": True, "stream_options": {"include_usage": True}}
        answer = await send_streaming(self.transport, "POST", url, headers, payload, fmt="sse")
        reply.status, reply.latency_ms, reply.attempts = answer.status, answer.latency_ms, answer.attempts
        reply.keep_raw(answer.body)
        if not answer.streamed:  # a server that does not stream answers with one completion
            body = await _parsed(answer.body)
            try:
                content = body["choices"][0]["message"]["content"]
            except (KeyError, IndexError, TypeError):
                raise UnmappableReply(f"not a chat completion: {excerpt(answer.body)}") from None
            if not isinstance(content, str):
                raise UnmappableReply("choices[0].message.content is not text")
            return content, body.get("usage") if isinstance(body, dict) else None
        return openai_message(answer, reply)


class HTTPClient(TargetClient):
    target: HTTPTarget

    async def _ask(self, data: dict[str, Any], conversation: Conversation, reply: TargetReply) -> None:
        t = self.target
        values = {**data, "conversation_id": conversation.remote_id or conversation.id, "turn": reply.turn}
        try:
            url = fill_url(t.url, values, "target.url")
        except UnsafeURL as exc:
            raise TargetFailure(str(exc)) from None
        headers = {k: str(fill(v, values, f"target.headers.{k}")) for k, v in t.headers.items()}
        body = None if t.method == "GET" or t.body is None else fill(t.body, values, "target.body")
        safe = t.idempotent if t.idempotent is not None else not uses_session(t)
        if t.stream is not None and t.chunk is not None:
            from bqas.targets.chunks import http_fields
            from bqas.targets.streaming import send_streaming

            streamed = await send_streaming(
                self.transport, t.method, str(url), headers, body, fmt=t.stream, replay_safe=safe
            )
            reply.status, reply.latency_ms, reply.attempts = streamed.status, streamed.latency_ms, streamed.attempts
            reply.keep_raw(streamed.body)
            outputs = {"response": t.chunk, **t.outputs}
            if streamed.streamed:
                mapped = http_fields(streamed, t.chunk, t.outputs, reply)
            else:  # one JSON body: mapped as a whole, the chunk path giving the answer
                mapped = await _parsed(streamed.body, lambda body: map_outputs(body, outputs))
            if isinstance(mapped.get("response"), list):
                mapped["response"] = "".join(str(v) for v in mapped["response"])
            count_tokens(reply, mapped)
            reply.fields = as_judge_fields(mapped, ("response",), outputs)
            self._keep_conversation(reply, conversation, values["conversation_id"])
            return
        answer = await self.transport.send(t.method, str(url), headers, body, replay_safe=safe)
        self._answered(reply, answer)
        mapped = await _parsed(answer.body, lambda body: map_outputs(body, t.outputs))
        count_tokens(reply, mapped)
        reply.fields = as_judge_fields(mapped, answer_fields(t), t.outputs)
        self._keep_conversation(reply, conversation, values["conversation_id"])

    @staticmethod
    def _keep_conversation(reply: TargetReply, conversation: Conversation, sent_id: str) -> None:
        """The target's own conversation id (``outputs.conversation_id``) carries the next turns."""
        remote = reply.fields.pop("conversation_id", None)
        if remote is not None and (not isinstance(remote, str | int) or len(str(remote)) > MAX_CONVERSATION_ID):
            raise UnmappableReply(
                f"outputs.conversation_id: expected an id of at most {MAX_CONVERSATION_ID} characters"
            )
        if remote is not None:
            conversation.remote_id = reply.conversation_id = str(remote)
        else:
            reply.conversation_id = sent_id


class DifyClient(TargetClient):
    target: DifyTarget

    async def _ask(self, data: dict[str, Any], conversation: Conversation, reply: TargetReply) -> None:
        from bqas.targets.dify import ask_dify, judge_fields

        t = self.target
        body = await ask_dify(self, t, data, conversation, reply)
        reply.fields = judge_fields(t, body, reply)
        remote = body.get("conversation_id")
        if t.mode == "chat" and isinstance(remote, str) and remote:
            conversation.remote_id = reply.conversation_id = remote


class PythonClient(TargetClient):
    """``function(sample) -> dict`` in this process: a sync one runs in a daemon thread of its own that a
    timeout abandons (bqas.targets.python_call), an async one on the loop. Not retried: a function that
    raises or exits is reported at once."""

    target: PythonTarget

    def __init__(self, target: Target, max_reply_bytes: int):
        super().__init__(target, max_reply_bytes)
        self._function: Callable[..., Any] | None = None

    def function(self) -> Callable[..., Any]:
        if self._function is None:
            self._function = load_function(self.target.function)
        return self._function

    async def _ask(self, data: dict[str, Any], conversation: Conversation, reply: TargetReply) -> None:
        function = self.function()
        sample = {**data, "conversation_id": conversation.id, "turn": reply.turn}
        started = time.perf_counter()
        reply.attempts = 1
        result = await call_function(function, sample, self.target.function, self.target.timeout)
        reply.latency_ms = round((time.perf_counter() - started) * 1000, 3)
        try:
            raw = orjson.dumps(result, option=orjson.OPT_NON_STR_KEYS)
        except TypeError:  # not JSON, or a lone surrogate: repr escapes what UTF-8 cannot hold
            raw = repr(result).encode("utf-8", errors="backslashreplace")
        reply.keep_raw(raw)
        bad_text = unstorable_text(result)
        if bad_text is not None:
            raise UnmappableReply(
                f"{self.target.function} returned text that is not valid Unicode (a lone surrogate in {bad_text})"
            )
        if not isinstance(result, dict) or not result:
            raise UnmappableReply(f"{self.target.function} returned {type(result).__name__}, not a non-empty dict")
        count_tokens(reply, result)
        reply.fields = as_judge_fields(dict(result), (), {})
        reply.fields.pop("conversation_id", None)


def scrub(reply: TargetReply, scrubber: Scrubber | dict[str, str]) -> TargetReply:
    """``reply`` with every secret value (in any form :mod:`bqas.targets.secrets` knows) in its error, raw
    reply, fields and conversation id replaced by ``[secret NAME]``."""
    clean = scrubber if isinstance(scrubber, Scrubber) else Scrubber(scrubber)
    if not clean:
        return reply
    if reply.error is not None:
        reply.error = clean.text(reply.error)
    reply.raw = clean.text(reply.raw)
    reply.fields = {k: clean.value(v) for k, v in reply.fields.items()}
    if reply.conversation_id is not None:
        reply.conversation_id = clean.text(reply.conversation_id)
    if reply.message is not None:
        reply.message = clean.text(reply.message)
    return reply


def load_function(spec: str) -> Callable[..., Any]:
    """``package.module:attribute`` -> the callable (imported on first use); errors name the spec."""
    module_name, _, attr = spec.partition(":")
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetConfigError(f"target.function: cannot import {module_name!r}: {exc}") from None
    for part in attr.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            raise TargetConfigError(f"target.function: {module_name!r} has no {attr!r}")
    if not callable(obj):
        raise TargetConfigError(f"target.function: {spec!r} is not callable")
    return obj  # type: ignore[no-any-return]


def client_for(target: Target, max_reply_bytes: int) -> TargetClient:
    """The client of a target's kind."""
    kinds: dict[str, type[TargetClient]] = {
        "openai": OpenAIClient,
        "http": HTTPClient,
        "dify": DifyClient,
        "python": PythonClient,
    }
    return kinds[target.type](target, max_reply_bytes)
