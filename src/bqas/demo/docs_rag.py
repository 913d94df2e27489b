"""The demo assistant's document door: answers from its own small document folder (``bqas/demo/docs``:
German school regulations and a Chinese device-manual excerpt, written for BQAS).

``POST /docs/v1/chat-messages`` has the shape of Dify's blocking chat-messages reply, so a ``type: dify``
target with ``base_url: http://127.0.0.1:<port>/docs/v1`` reads the answer as ``response`` and the
retrieved passages as ``available_facts``. Retrieval is lexical (content stems, character bigrams for
Chinese) over the passages ``bqas synth-rag`` reads from the same folder; the answer is the best
sentence of the best passage. A question most of whose content words no passage holds gets "the
documents do not say" and no sources, as a careful RAG app should.
"""

from __future__ import annotations

import functools
import re
import uuid
from importlib import resources
from pathlib import Path
from typing import Any

#: Share of the question's content stems a sentence (with its heading) must hold to be an answer.
MIN_COVERAGE = 0.5
NOT_FOUND = {
    "de": "Dazu finde ich in den Unterlagen nichts.",
    "en": "The documents do not say.",
    "zh": "文档中没有相关信息。",
}


def docs_folder() -> Path:
    """The demo assistant's document folder."""
    return Path(str(resources.files("bqas.demo") / "docs"))


@functools.cache
def _passages() -> tuple[Any, ...]:
    from bqas.ragsynth.chunks import chunk_sections
    from bqas.ragsynth.documents import read_documents

    return tuple(chunk_sections(read_documents([docs_folder()]).sections))


# Words that shape a question but name nothing to look for (openers, operators, Chinese question words).
_FILLER_WORDS = frozenset(
    [
        "sag",
        "mal",
        "kurze",
        "frage",
        "hey",
        "ehrlich",
        "nennen",
        "nenn",
        "beschreiben",
        "beschreib",
        "erläutern",
        "erlaut",
        "erläut",
        "fassen",
        "zusammen",
        "vorgaben",
        "vorgab",
        "regelung",
        "regelungen",
        "bestimmungen",
        "bestimmung",
        "quick",
        "question",
        "sorry",
    ]
)
_ZH_FILLER = re.compile(
    r"请问|我想问一下|麻烦问下|那个|什么|多少|怎么办|该咋办|咋办|怎么|哪个|哪家|哪一年|多久|多长时间|是否|吗|呢|啊|谁|做"
)


def _stems(text: str) -> set[str]:
    from bqas.offline.text.tokens import content_stems, stem

    fillers = {stem(w) for w in _FILLER_WORDS} | _FILLER_WORDS
    return {s for s in content_stems(_ZH_FILLER.sub("，", text)) if s not in fillers}


def answer_from_docs(question: str) -> tuple[str, list[dict[str, Any]]]:
    """(answer, sources) for ``question``; sources are the passages the answer came from."""
    from bqas.offline.text.language import detect_language

    asked = _stems(question)
    language = detect_language(question, default="de")
    best: tuple[float, float, str, Any] | None = None
    for passage in _passages():
        heading = _stems(passage.heading)
        for sentence in passage.sentences:
            found = _stems(sentence) | heading
            held = asked & found
            coverage = len(held) / len(asked) if asked else 0.0
            # More of the question held wins; among equals the sentence with less else in it, then the
            # earlier one (deterministic).
            focus = len(held) / len(found) if found else 0.0
            if best is None or (coverage, focus) > best[:2]:
                best = (coverage, focus, sentence, passage)
    if best is None or best[0] < MIN_COVERAGE:
        return NOT_FOUND.get(language, NOT_FOUND["de"]), []
    _, _, sentence, passage = best
    source = {"position": 1, "dataset_name": "demo-docs", "document_name": Path(passage.source).name,
              "segment_id": passage.chunk_id, "score": round(best[0], 3), "content": passage.text}  # fmt: skip
    return sentence, [source]


def add_docs_routes(app: Any) -> None:
    """Add ``POST /docs/v1/chat-messages`` to the demo assistant's aiohttp application."""
    from aiohttp import web

    async def chat_messages(request: web.Request) -> web.Response:
        try:
            body = await request.json()
        except ValueError:
            return web.json_response({"code": "invalid_param", "message": "body is not JSON"}, status=400)
        query = str(body.get("query") or "") if isinstance(body, dict) else ""
        answer, resources_ = answer_from_docs(query)
        conversation = (body.get("conversation_id") if isinstance(body, dict) else None) or uuid.uuid4().hex
        tokens = len(answer.split())
        return web.json_response({"event": "message", "message_id": uuid.uuid4().hex, "mode": "chat",
                                  "conversation_id": conversation, "answer": answer,
                                  "metadata": {"retriever_resources": resources_,
                                               "usage": {"prompt_tokens": 40, "completion_tokens": tokens,
                                                         "total_tokens": 40 + tokens}}})  # fmt: skip

    app.router.add_post("/docs/v1/chat-messages", chat_messages)
