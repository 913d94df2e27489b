"""Samples as conversations: ``turns:`` (each turn judged) and ``history:`` (earlier user turns, sent to
the target first and not judged). A turn's fields are the sample's shared fields overridden by its own;
its id is ``<sample id>#<turn index>`` (0-based, as the scoring service names session turns)."""

from __future__ import annotations

from typing import Any

from bqas.judgment.work import DatasetItem

# Sample fields that describe the conversation rather than one turn's judge inputs.
CONVERSATION_FIELDS: tuple[str, ...] = ("turns", "history")


def turn_items(item: DatasetItem) -> list[DatasetItem] | None:
    """The turns of a sample with ``turns:`` as items of their own (None for a one-turn sample; an item
    with ``error`` when ``turns`` is not a non-empty list of mappings)."""
    turns = item.data.get("turns")
    if turns is None:
        return None
    if not isinstance(turns, list) or not turns or not all(isinstance(t, dict) for t in turns):
        return [
            DatasetItem(item.line, item.sample_id, error=f"line {item.line}: field turns: expected a list of mappings")
        ]
    shared = {k: v for k, v in item.data.items() if k not in ("turns", "id")}
    return [
        DatasetItem(item.line, f"{item.sample_id}#{i}", {**shared, **turn}, parent=item, turn=i)
        for i, turn in enumerate(turns)
    ]


def prior_turns(data: dict[str, Any]) -> list[dict[str, Any]]:
    """``history:`` as user turns: a text, ``{user_input: …}`` or ``{role: user, content: …}`` each;
    assistant entries are left out (the target answers for itself)."""
    history = data.get("history")
    if not isinstance(history, list):
        return []
    out: list[dict[str, Any]] = []
    for entry in history:
        if isinstance(entry, str):
            out.append({"user_input": entry})
        elif isinstance(entry, dict):
            role = entry.get("role")
            if role is not None and role != "user":
                continue
            text = entry.get("content") if role == "user" else None
            out.append(
                {"user_input": text} if isinstance(text, str) else {k: v for k, v in entry.items() if k != "role"}
            )
    return out
