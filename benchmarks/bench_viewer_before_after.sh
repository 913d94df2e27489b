#!/usr/bin/env bash
# The viewer's pages before and after a change, at N samples (default 100,000): one store is written by
# the BEFORE tree and copied, the copy is opened by the AFTER tree (its migrations run on it, timed), then
# benchmarks/bench_viewer.py (of the AFTER tree) measures both stores alternately, ROUNDS times.
# Run: nice benchmarks/bench_viewer_before_after.sh BEFORE_REV AFTER_REV [N] [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
before_rev=$1 after_rev=$2 n=${3:-100000} rounds=${4:-2}
tmp=$(mktemp -d)
trap 'git worktree remove --force "$tmp/before"; git worktree remove --force "$tmp/after"; rm -rf "$tmp"' EXIT
git worktree add -q --detach "$tmp/before" "$before_rev"
git worktree add -q --detach "$tmp/after" "$after_rev"
bench="$tmp/after/benchmarks/bench_viewer.py"
mkdir -p "$tmp/store-before"
PYTHONPATH="$tmp/before/src" .venv/bin/python "$bench" "$n" 1 "$tmp/store-before" --skip-compare | sed 's/^/write /'
cp -r "$tmp/store-before" "$tmp/store-after"
start=$(date +%s.%N)
PYTHONPATH="$tmp/after/src" .venv/bin/python -c \
  "from bqas.store.db import open_store; open_store('sqlite:///$tmp/store-after/bqas.sqlite')"
echo "migrations of the after tree on 2 x $n rows: $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s (with start-up)"
for round in $(seq "$rounds"); do
  PYTHONPATH="$tmp/before/src" .venv/bin/python "$bench" "$n" 3 "$tmp/store-before" --skip-compare | sed "s/^/before-$round /"
  PYTHONPATH="$tmp/after/src" .venv/bin/python "$bench" "$n" 3 "$tmp/store-after" --skip-compare | sed "s/^/after-$round /"
done
