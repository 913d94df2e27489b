"""Where the benchmark datasets are, and how to name the part a run used (shared by the benchmark scripts).

The default is ``../shared/datasets`` next to the repository (not an absolute path). The part printed is
read from the folder itself: "DEV" only when its README says it holds DEV parts, otherwise the path, so a
run on another folder (a HOLDOUT part, a fixture) is never reported as DEV.
"""

from __future__ import annotations

from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def data_part(path: Path) -> str:
    """``"DEV part (<folder>)"`` if the folder's README declares DEV parts, else ``"<folder>"``."""
    folder = path if path.is_dir() else path.parent
    readme = folder / "README.md"
    try:
        dev = "DEV parts only" in readme.read_text(encoding="utf-8")
    except OSError:
        dev = False
    return f"DEV part ({folder})" if dev else str(folder)
