"""The viewer's free-text search on a run of N results (SQLite, the default store), with the trigram
index (bqas.viewer.search) and without it (the scan of every record it replaced), side by side in one
process, alternating, repeated: min and median of the page as a browser fetches it (HTTP, logged in).
The first search of the run (a scan, which starts filling the run's index in the background) and the time
until the index is filled are printed first.

Run: nice .venv/bin/python benchmarks/service/bench_viewer_search.py [N] [REPEATS] [--home DIR]
(--home: reuse the store an earlier run of this script wrote there; its search index is emptied first, so
the first search still builds it.)
The records are those of tests/viewer_runs.py (German, Chinese and English voice-judge results).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

QUERIES = {
    "sample id": "s004213",
    "answer text": "Antwort 4213",
    "hostile text": "{{ 7*7 }}",
    "no match": "kein Treffer hier",
    "common word (many matches)": "Konferenz",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=50_000)
    parser.add_argument("repeats", type=int, nargs="?", default=5)
    parser.add_argument("--home", type=Path)
    args = parser.parse_args()
    reuse = args.home is not None and (args.home / "bqas.sqlite").exists()
    home = args.home or Path(tempfile.mkdtemp(prefix="bqas-bench-search-"))
    os.environ["BQAS_HOME"] = str(home)
    import httpx

    from bqas.review.local import LocalReview
    from bqas.review.settings import ReviewSettings
    from bqas.service.testing import ServiceServer
    from bqas.store.db import open_store
    from bqas.viewer import search
    from viewer_runs import make_run

    store = open_store()
    started = time.perf_counter()
    if reuse:
        from sqlalchemy import text

        with store.session.begin() as s:  # the index as a store that was never searched has it
            s.execute(text("DELETE FROM results_fts_state"))
            s.execute(text("DROP TABLE results_fts"))
            s.execute(
                text(
                    "CREATE VIRTUAL TABLE results_fts USING fts5(body, content='results_fts_body', content_rowid='id', "
                    "tokenize='trigram', detail='none', columnsize=0)"
                )
            )
    else:
        make_run(store, "r-a", args.n, seed=1)
    print(f"{'reused' if reuse else 'wrote'} {args.n} records in {time.perf_counter() - started:.1f} s; store {home}")
    with_index = search.candidates

    def scan(*_: object, **__: object) -> None:
        return None

    local = LocalReview(store, ReviewSettings())
    with ServiceServer(local.app) as server, httpx.Client(base_url=server.base_url, timeout=600) as client:
        client.get(local.start_path)
        client.get("/review/runs/r-a")  # facets and histogram: computed once, kept
        t0 = time.perf_counter()
        assert client.get("/review/runs/r-a?q=" + quote("Antwort 1")).status_code == 200
        print(f"first search of the run (a scan; starts filling the index): {time.perf_counter() - t0:.2f} s")
        search.wait_for_index("r-a")
        print(f"index of the run filled in the background after: {time.perf_counter() - t0:.2f} s")
        print(
            f"{'query':30s} {'scan min':>9s} {'median':>8s} {'index min':>10s} {'median':>8s} {'ratio (medians)':>16s}"
        )
        for name, q in QUERIES.items():
            path = "/review/runs/r-a?q=" + quote(q)
            times: dict[str, list[float]] = {"scan": [], "index": []}
            bodies: dict[str, str] = {}
            for _ in range(args.repeats):
                for mode, fn in (("scan", scan), ("index", with_index)):
                    search.candidates = fn  # type: ignore[assignment]
                    t0 = time.perf_counter()
                    response = client.get(path)
                    times[mode].append(time.perf_counter() - t0)
                    assert response.status_code == 200
                    bodies[mode] = response.text
            search.candidates = with_index  # type: ignore[assignment]
            # The same page either way (the results table and the count).
            assert bodies["scan"].count('class="row') == bodies["index"].count('class="row'), name
            s, i = times["scan"], times["index"]
            print(
                f"{name:30s} {min(s):8.3f}s {statistics.median(s):7.3f}s {min(i):9.3f}s {statistics.median(i):7.3f}s "
                f"{statistics.median(s) / statistics.median(i):15.1f}x"
            )


if __name__ == "__main__":
    main()
