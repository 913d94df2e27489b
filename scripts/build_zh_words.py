"""Build ``src/bqas/data/pii/zh_common_words.txt``, the frequent Chinese words the person-name rules must not
cut or take for a name (工程师 is no "程师", 许多老师 no teacher 许多).

Source: the dictionary of ``jieba`` 0.42.1 (MIT), ``jieba/dict.txt``: ``word frequency part-of-speech``.
Kept: words of two or three Han characters, most frequent first, whose part of speech is not a person name
(``nr``, ``nrfg``, ``nrt``: 韦小宝, 李自成, also words the dictionary tags as names such as 明白) and that
are no surname of ``zh_surnames.txt`` (欧阳), up to ``--top`` words; written in frequency order.

Regenerate (jieba is not a BQAS dependency; its wheel-less sdist carries the 5 MB dictionary)::

    python -m pip download --no-deps --no-binary :all: jieba==0.42.1 -d /tmp/jieba
    tar xzf /tmp/jieba/jieba-0.42.1.tar.gz -C /tmp/jieba
    .venv/bin/python scripts/build_zh_words.py /tmp/jieba/jieba-0.42.1/jieba/dict.txt
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

DATA = Path(__file__).resolve().parents[1] / "src" / "bqas" / "data" / "pii"
OUT = DATA / "zh_common_words.txt"
NAME_TAGS = ("nr", "nrfg", "nrt")
HAN_WORD = re.compile("[\u4e00-\u9fff]{2,3}")
HEADER = """\
# Frequent Chinese words of two or three characters that are not person names, most frequent first: a
# Chinese name found by BQAS's offline PII detector (bqas.offline.pii) never cuts one of them (工程师 -> 程师)
# and never is one (许多老师). Source: the dictionary of jieba 0.42.1 (dict.txt; MIT License, Copyright (c)
# 2013 Sun Junyi), words tagged as person names (nr, nrfg, nrt) and listed surnames (zh_surnames.txt)
# left out; the first {top} by frequency.
# Built by scripts/build_zh_words.py; do not edit by hand.
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dictionary", type=Path, help="jieba's dict.txt")
    parser.add_argument("--top", type=int, default=20000, help="how many words to keep (default 20000)")
    args = parser.parse_args()
    surnames = {
        line.strip()
        for line in (DATA / "zh_surnames.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    }
    entries: list[tuple[int, str]] = []
    for line in args.dictionary.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) != 3 or parts[2] in NAME_TAGS or parts[0] in surnames or not HAN_WORD.fullmatch(parts[0]):
            continue
        entries.append((int(parts[1]), parts[0]))
    # Most frequent first; equal frequencies in the dictionary's own order of words.
    words = [w for _, w in sorted(entries, key=lambda e: -e[0])][: args.top]
    OUT.write_text(HEADER.format(top=len(words)) + "\n".join(words) + "\n", encoding="utf-8")
    print(f"wrote {len(words)} words to {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
