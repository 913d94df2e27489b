"""Viewer pages over two runs of 100,000 samples each (SQLite, the default store): wall time of each page
as a browser would fetch it (HTTP, logged in), repeated; min and median.

Run: nice .venv/bin/python benchmarks/service/bench_viewer.py [N] [REPEATS] [HOME] [--skip-compare]
(HOME: reuse the store a previous run of this script wrote there, or write it there;
--skip-compare: do not wait for the compare page's bootstrap intervals, which take minutes at 100,000.)
The records are those of tests/viewer_runs.py (German, Chinese and English voice-judge results with
tags, intents, expected verdicts, decisions, escalations and unscored samples).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("n", type=int, nargs="?", default=100_000)
    parser.add_argument("repeats", type=int, nargs="?", default=5)
    parser.add_argument("home", type=Path, nargs="?")
    parser.add_argument("--skip-compare", action="store_true")
    args = parser.parse_args()
    n, repeats = args.n, args.repeats
    reuse = args.home is not None and (args.home / "bqas.sqlite").exists()
    home = args.home or Path(tempfile.mkdtemp(prefix="bqas-bench-viewer-"))
    os.environ["BQAS_HOME"] = str(home)
    import httpx

    from bqas.review.local import LocalReview
    from bqas.review.settings import ReviewSettings
    from bqas.service.testing import ServiceServer
    from bqas.store.db import open_store
    from viewer_runs import make_run

    store = open_store()
    started = time.perf_counter()
    if not reuse:
        make_run(store, "r-a", n, seed=1)
        make_run(store, "r-b", n, seed=2, shift=-6.0)
    print(f"wrote 2 x {n} records in {time.perf_counter() - started:.1f} s; store {home}")
    local = LocalReview(store, ReviewSettings())
    pages = {
        "run page 1": "/review/runs/r-b",
        "run last page": f"/review/runs/r-b?page={n // 50}",
        "sort -composite": "/review/runs/r-b?sort=-composite",
        "filter zh+failed+tag": "/review/runs/r-b?language=zh&verdict=failed&tag=regression",
        "filter verdict failed": "/review/runs/r-b?verdict=failed",
        "filter decision escalate": "/review/runs/r-b?decision=escalate",
        "filter language zh": "/review/runs/r-b?language=zh",
        "filter intent music.play": "/review/runs/r-b?intent=music.play",
        "filter escalated yes": "/review/runs/r-b?escalated=yes",
        "filter unscored yes": "/review/runs/r-b?unscored=yes",
        "filter decision + intent, page 20": "/review/runs/r-b?decision=accept&intent=weather.forecast&page=20",
        "dimension range": "/review/runs/r-b?dim=faithfulness&min=2&max=3",
        "search text": "/review/runs/r-b?q=%E4%B8%8A%E6%B5%B7",
        "changed vs baseline": "/review/runs/r-b?baseline=r-a&changed=yes",
        "sample page": "/review/runs/r-b/results/150000",
        "compare (cached CI)": "/review/runs/compare?a=r-a&b=r-b&page=3",
    }
    if args.skip_compare:
        pages.pop("compare (cached CI)")
    with ServiceServer(local.app) as server, httpx.Client(base_url=server.base_url, timeout=600) as client:
        client.get(local.start_path)
        t0 = time.perf_counter()
        client.get("/review/runs/r-b")  # the run's facets, tags and histogram: computed once, then kept
        print(f"{'run page, first visit':44s} {time.perf_counter() - t0:8.2f} s")
        if not args.skip_compare:  # (the background bootstrap would share the server's CPU with the pages)
            t0 = time.perf_counter()
            first = client.get("/review/runs/compare?a=r-a&b=r-b")
            assert first.status_code == 200
            print(f"{'compare, first (page; intervals in background)':44s} {time.perf_counter() - t0:8.2f} s")
            while 'id="computing"' in client.get("/review/runs/compare?a=r-a&b=r-b").text:
                time.sleep(1)
            print(f"{'compare, intervals ready after':44s} {time.perf_counter() - t0:8.2f} s")
        for name, path in pages.items():
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                response = client.get(path)
                times.append(time.perf_counter() - t0)
                assert response.status_code == 200, (path, response.status_code)
            print(
                f"{name:44s} min {min(times):6.3f} s  median {statistics.median(times):6.3f} s  ({len(response.content) // 1024} KiB)"
            )


if __name__ == "__main__":
    main()
