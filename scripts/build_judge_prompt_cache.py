#!/usr/bin/env python3
"""Build the RAGAS judge-prompt cache configs/judge_prompts/<lang>/<metric>__<attr>.json (seed 004 §4.1).

Usage: scripts/build_judge_prompt_cache.py --language zh --judge-model MODEL [--base-url URL] [--out DIR]
Same as ``bqas prompts build-cache``. Exit codes: 0 written, 1 a prompt failed (old cache untouched), 2 usage.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments and build the cache; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--language", default="zh", help="target judge language (zh)")
    parser.add_argument("--judge-model", default=None, help="translating model (default: BQAS_JUDGE_MODEL)")
    parser.add_argument("--base-url", default=None, help="OpenAI-compatible endpoint (default: BQAS_LLM_BASE_URL)")
    parser.add_argument("--out", type=Path, default=None, help="cache root (default: configs/judge_prompts)")
    parser.add_argument("--retries", type=int, default=3, help="attempts per prompt (default 3)")
    args = parser.parse_args(argv)
    from bqas.cli.prompts import run_build

    return run_build(args.language, args.judge_model, args.base_url, args.out, max(1, args.retries))


if __name__ == "__main__":
    sys.exit(main())
