#!/usr/bin/env bash
# The headline measurements of docs/benchmarks.md, one after the other, on a
# machine nothing else is using. BEFORE: a worktree of the commit the round started from
# (git worktree add /tmp/before <commit>); OUT: a folder for one text file per benchmark and log.txt.
#   benchmarks/quiet_round.sh /tmp/before /tmp/quiet
set -u
BEFORE=${1:?usage: benchmarks/quiet_round.sh BEFORE_WORKTREE OUT_DIR}
OUT=${2:?usage: benchmarks/quiet_round.sh BEFORE_WORKTREE OUT_DIR}
DATA=${BQAS_DATASETS:-../shared/datasets}
mkdir -p "$OUT"
run() {
  local name=$1; shift
  echo "== $name: $* ($(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$OUT/log.txt"
  "$@" > "$OUT/$name.txt" 2>&1
  echo "   rc $? ($(date -u +%T), load $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$OUT/log.txt"
}
run cold_start .venv/bin/python benchmarks/runner/bench_cold_start.py --repeat 5 --before "$BEFORE/src"
run offline nice .venv/bin/python benchmarks/offline/bench_offline.py --repeat 3
run grounding_cost nice .venv/bin/python benchmarks/offline/bench_grounding_cost.py --data "$DATA" --n 80 --repeat 3
run auto .venv/bin/python benchmarks/runner/bench_auto.py --n 1000 --repeat 3 --pools auto threads
run runner .venv/bin/python benchmarks/runner/bench_runner.py --sizes 10000 --repeat 3 --modes bare off defaults --src "before=$BEFORE/src"
run service .venv/bin/python benchmarks/service/bench_service.py --duration 30 --concurrency 32 --think 0.5 --judge voice rag --servers default
run defaults_split .venv/bin/python benchmarks/runner/bench_defaults_split.py --n 5000 --repeat 2
run ragas .venv/bin/python benchmarks/peers/bench_ragas.py --samples 200 --latency 0.05 --concurrency 32
echo done | tee -a "$OUT/log.txt"
