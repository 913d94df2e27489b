#!/usr/bin/env bash
# The main job: run the German voice-assistant demo scenario on the offline default judge and write
# results.jsonl, junit.xml and report.html under runs/demo/. Installs what it needs into .venv/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
.venv/bin/bqas run scenarios/voice_de.yaml --backend offline --out runs/demo "$@"
