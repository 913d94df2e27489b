"""The redaction switch below the store (bqas.redaction) masks with the masker bqas.privacy installs; a process
that redacts before any masker is installed never writes the text unmasked."""

from __future__ import annotations

import json
import os
import subprocess
import sys

_PROBE = """
import json, logging
from bqas import redaction
from bqas.logs import get_logger

seen = []
class Keep(logging.Handler):
    def emit(self, record):
        seen.append(record.getMessage())

log = get_logger("bqas.probe")
log.addHandler(Keep())
log.setLevel(logging.INFO)
log.info("mail %s", "anna.schmidt@example.org")
try:
    redaction.redact_text("mail anna.schmidt@example.org")
    raised = None
except RuntimeError as exc:
    raised = str(exc)
import bqas.privacy  # installs the PII masker
log.info("mail %s", "anna.schmidt@example.org")
print(json.dumps({"logs": seen, "raised": raised, "masked": redaction.redact_text("mail anna.schmidt@example.org")}))
"""


def test_without_a_masker_nothing_is_written_unmasked_and_privacy_installs_one() -> None:
    env = {**os.environ, "BQAS_REDACT_PII": "true"}
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True)
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    before, after = seen["logs"]
    assert "anna.schmidt" not in before and "withheld" in before
    assert seen["raised"] and "no masker is installed" in seen["raised"]
    assert after == "mail [EMAIL]" and seen["masked"] == "mail [EMAIL]"
