"""What BQAS accepts as untrusted text and structure, decided once for every edge.

Every edge that takes text from outside calls this module: the dataset readers (JSONL, CSV, inline
samples), ``bqas score`` input, the HTTP request models, and the LLM's replies. The rules:

- **Inputs** (datasets, ``bqas score``, API requests) are *rejected* when they hold text that is not
  valid Unicode (a lone surrogate such as ``"\\ud800"`` cannot be stored, embedded or written as UTF-8),
  a non-finite number (``NaN``, ``Infinity``: not JSON), an integer beyond 64 bits, or values nested deeper than
  :data:`MAX_DEPTH`. The sample becomes an ``invalid`` record naming line and field; the API answers 422
  naming the field. Nothing is silently altered in what a user asked to be judged.
- **LLM replies** are *repaired*: lone surrogates become U+FFFD and the result carries a warning; a
  reply nested deeper than :data:`MAX_DEPTH` or larger than the configured cap is not parsed and the
  judgment is ``unscored`` with the reason.

Checks are iterative (no recursion), so a 50,000-deep value cannot raise ``RecursionError`` here.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

# Judge inputs and replies are flat: a sample nests a list of contexts, a reply a few objects.
MAX_DEPTH = 32
# Files are read with this error handler: a byte that is not UTF-8 becomes a lone surrogate, which
# check_value then reports with its line and field instead of a UnicodeDecodeError traceback.
FILE_ERRORS = "surrogateescape"
REPLACEMENT = "\ufffd"
_INT_MIN, _UINT_MAX = -(2**63), 2**64 - 1
_INT_LIMIT = float(2**63)  # floats this large may be integers orjson could not hold (see loads)
_SURROGATE = re.compile("[\ud800-\udfff]")


class UntrustedValueError(ValueError):
    """A value that BQAS does not accept; ``field`` is the path at fault (``contexts[2]``), or ``""``,
    and ``loc`` the same path as a tuple of keys and indices."""

    def __init__(self, field: str, message: str, loc: tuple[str | int, ...] = ()):
        super().__init__(f"field {field}: {message}" if field else message)
        self.field = field
        self.message = message
        self.loc = loc


def surrogate_problem(text: str) -> str | None:
    """``invalid Unicode …`` when ``text`` holds a lone surrogate, else None."""
    hit = _SURROGATE.search(text)
    if hit is None:
        return None
    code = ord(hit.group())
    if 0xDC80 <= code <= 0xDCFF:  # how a file read with errors="surrogateescape" keeps a bad byte
        return f"invalid UTF-8: byte 0x{code - 0xDC00:02X} at character {hit.start()}"
    return f"invalid Unicode: lone surrogate U+{ord(hit.group()):04X} at character {hit.start()}"


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


_TRAILING_INDICES = re.compile(r"(\[\d+\])+$")


def _named(path: str) -> str:
    """``response[0][0]…[0]`` → ``response``: a depth error names the field, not 32 list indices."""
    return _TRAILING_INDICES.sub("", path)


def deep_field(text: str, max_depth: int = MAX_DEPTH) -> str:
    """The field of a JSON text whose value nests deeper than ``max_depth`` (``""``: the top level).

    Used only after Python's parser gave up with RecursionError, to name the field at fault: a linear,
    string-aware scan that keeps the open containers with their current key or index."""
    stack: list[list[Any]] = []  # [opener, key or index]
    i, n, last = 0, len(text), ""
    while i < n:
        ch = text[i]
        if ch == '"':
            j = i + 1
            while j < n and text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            last, i = text[i + 1 : j], j + 1
            continue
        if ch == ":" and stack and stack[-1][0] == "{":
            stack[-1][1] = last
        elif ch == "," and stack and stack[-1][0] == "[":
            stack[-1][1] += 1
        elif ch in "{[":
            if len(stack) >= max_depth:
                break
            stack.append([ch, None if ch == "{" else 0])
        elif ch in "}]" and stack:
            stack.pop()
        i += 1
    path = ""
    for _opener, key in stack:
        if key is not None:
            path = _join(path, key)
    return _named(path)


def _field(loc: tuple[str | int, ...]) -> str:
    path = ""
    for key in loc:
        path = _join(path, key)
    return path


def check_value(value: Any, *, max_depth: int = MAX_DEPTH) -> None:
    """Raise :class:`UntrustedValueError` naming the first field with invalid Unicode (in a key or a
    value), a non-finite number, or nesting deeper than ``max_depth``."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), value)]
    while stack:
        loc, item = stack.pop()
        if isinstance(item, str):
            problem = surrogate_problem(item)
            if problem:
                raise UntrustedValueError(_field(loc), problem, loc)
        elif isinstance(item, int) and not isinstance(item, bool) and not _INT_MIN <= item <= _UINT_MAX:
            # JSON allows any integer; the store (orjson) and most consumers do not.
            raise UntrustedValueError(_field(loc), "integer out of the 64-bit range", loc)
        elif isinstance(item, float):
            if not math.isfinite(item):
                name = "NaN" if math.isnan(item) else "Infinity" if item > 0 else "-Infinity"
                raise UntrustedValueError(_field(loc), f"{name} is not a number (JSON has no NaN or Infinity)", loc)
        elif isinstance(item, dict | list | tuple):
            if len(loc) >= max_depth:
                raise UntrustedValueError(_named(_field(loc)), f"nested deeper than {max_depth} levels", loc)
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            children: list[tuple[tuple[str | int, ...], Any]] = []
            for key, child in pairs:
                if isinstance(key, str) and (problem := surrogate_problem(key)):
                    raise UntrustedValueError(_field(loc), f"a key has {problem}", loc)
                children.append(((*loc, key if isinstance(key, int) else str(key)), child))
            stack.extend(reversed(children))  # depth-first, in document order


def loads(text: str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` for untrusted JSON, then :func:`check_value`.

    Raises ``json.JSONDecodeError`` for bad JSON and :class:`UntrustedValueError` for a value BQAS
    refuses (deep nesting included: Python's parser gives up with RecursionError, turned into that).

    orjson parses first (several times faster on every dataset line); it refuses lone surrogates, NaN,
    Infinity and overflowing numbers itself, so what it accepts needs only the depth check. Anything it
    refuses, and any number it may have turned from a 64-bit-overflowing integer into a float, goes the
    way of Python's parser, whose errors and messages are the ones BQAS reports."""
    plain, value = loads_plain(text, max_depth)
    return value if plain else _loads_checked(text, max_depth)


def loads_plain(text: str, max_depth: int = MAX_DEPTH) -> tuple[bool, Any]:
    """``(True, value)`` when orjson parses ``text`` into a value that Python's parser would give alike
    and BQAS accepts as it is (no lone surrogates, NaN or Infinity: orjson refuses them; no nesting deeper
    than ``max_depth``; no integer of 2**63 or more turned into a float); ``(False, None)`` otherwise, for
    the caller's own (slower, error-reporting) path."""
    import orjson

    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return False, None
    return (True, value) if _plain(value, max_depth) else (False, None)


#: A lone surrogate character, or a JSON escape that may decode to one (``\ud800`` … ``\udfff``).
_MAY_HOLD_SURROGATE = re.compile(r"[\ud800-\udfff]|\\u[dD][89abcdefABCDEF]")


def may_hold_surrogates(text: str) -> bool:
    """Whether JSON parsed from ``text`` (or any part of it) can hold lone surrogates: False means
    :func:`repair_value` would change nothing in it (a conservative check on the raw text)."""
    return _MAY_HOLD_SURROGATE.search(text) is not None


def _plain(value: Any, max_depth: int) -> bool:
    """Whether an orjson-parsed ``value`` is surely acceptable: no nesting deeper than ``max_depth`` and no
    float of 2**63 or more (orjson parses such an integer as a float; json keeps the int, which is refused)."""
    stack: list[tuple[int, Any]] = [(0, value)]
    while stack:
        depth, item = stack.pop()
        if isinstance(item, float):
            if not -_INT_LIMIT < item < _INT_LIMIT:
                return False
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                return False
            children = item.values() if isinstance(item, dict) else item
            stack.extend((depth + 1, child) for child in children if isinstance(child, dict | list | float))
    return True


def _loads_checked(text: str, max_depth: int) -> Any:
    try:
        value = json.loads(text)
    except RecursionError:
        raise UntrustedValueError(deep_field(text, max_depth), f"nested deeper than {max_depth} levels") from None
    check_value(value, max_depth=max_depth)
    return value


def depth_exceeds(value: Any, max_depth: int = MAX_DEPTH) -> bool:
    """True when ``value`` nests lists/objects deeper than ``max_depth`` (iterative)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list | tuple):
            if depth >= max_depth:
                return True
            stack.extend((child, depth + 1) for child in (item.values() if isinstance(item, dict) else item))
    return False


def repair_text(text: str) -> tuple[str, bool]:
    """LLM replies: lone surrogates replaced with U+FFFD; True when something was replaced."""
    if _SURROGATE.search(text) is None:
        return text, False
    return _SURROGATE.sub(REPLACEMENT, text), True


def repair_value(value: Any) -> tuple[Any, bool]:
    """:func:`repair_text` applied to every string (keys too) of a parsed reply. The depth is checked
    first (iteratively), so the recursion below is bounded by :data:`MAX_DEPTH`."""
    changed = False

    def fix(item: Any) -> Any:
        nonlocal changed
        if isinstance(item, str):
            out, hit = repair_text(item)
            changed = changed or hit
            return out
        if isinstance(item, dict):
            return {fix(k): fix(v) for k, v in item.items()}
        if isinstance(item, list):
            return [fix(v) for v in item]
        return item

    if depth_exceeds(value):
        raise UntrustedValueError("", f"nested deeper than {MAX_DEPTH} levels")
    return fix(value), changed


def json_safe(value: Any, depth: int = 6) -> Any:
    """A copy of ``value`` that any JSON encoder can write: non-finite numbers as text, invalid Unicode
    replaced, nesting below ``depth`` shown as ``"…"``. For echoing untrusted input in error answers."""
    if isinstance(value, str):
        return repair_text(value)[0][:500]
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, int) and not isinstance(value, bool) and not _INT_MIN <= value <= _UINT_MAX:
        return str(value)[:100]
    if isinstance(value, bool | int | float) or value is None:
        return value
    if depth <= 0:
        return "…"
    if isinstance(value, dict):
        return {repair_text(str(k))[0][:200]: json_safe(v, depth - 1) for k, v in list(value.items())[:50]}
    if isinstance(value, list | tuple):
        return [json_safe(v, depth - 1) for v in list(value)[:50]]
    return repair_text(str(value))[0][:500]


# -- YAML ------------------------------------------------------------------------------------------------

# Aliases may expand a document to at most this many nodes ("billion laughs" expands to 10^9).
MAX_YAML_NODES = 200_000


def compose_yaml(text: str, *, max_nodes: int = MAX_YAML_NODES, max_depth: int = MAX_DEPTH) -> Any:
    """The YAML node graph of ``text`` (None for an empty document), refused with
    :class:`UntrustedValueError` when aliases expand it beyond ``max_nodes`` nodes, an alias refers to
    itself, or it nests deeper than ``max_depth``. ``yaml.YAMLError`` for invalid YAML."""
    import yaml

    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
    except RecursionError:
        raise UntrustedValueError("", f"YAML nested deeper than {max_depth} levels") from None
    if root is None:
        return None
    # Expanded size per node, computed once per node: linear in the document, not in its expansion.
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[Any, int, bool]] = [(root, 0, False)]
    while stack:
        node, depth, children_done = stack.pop()
        key = id(node)
        kids = _yaml_children(node)
        if children_done:
            open_nodes.discard(key)
            sizes[key] = 1 + sum(sizes[id(k)] for k in kids)
            if sizes[key] > max_nodes:
                line = node.start_mark.line + 1
                raise UntrustedValueError(
                    "", f"YAML aliases expand to more than {max_nodes} nodes (line {line}); refused", ()
                )
            continue
        if key in sizes:
            continue
        if depth >= max_depth:
            raise UntrustedValueError(
                "", f"YAML nested deeper than {max_depth} levels (line {node.start_mark.line + 1})"
            )
        open_nodes.add(key)
        stack.append((node, depth, True))
        for kid in kids:
            if id(kid) in open_nodes:
                raise UntrustedValueError("", f"YAML alias refers to itself (line {kid.start_mark.line + 1}); refused")
            if id(kid) not in sizes:
                stack.append((kid, depth + 1, False))
    return root


def _yaml_children(node: Any) -> list[Any]:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def yaml_data(node: Any) -> Any:
    """The Python value of a node from :func:`compose_yaml` (safe constructors only)."""
    import yaml

    if node is None:
        return None
    return yaml.SafeLoader("").construct_document(node)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with the limits of :func:`compose_yaml`."""
    return yaml_data(compose_yaml(text))
