"""Two turns of a session with the same response_id both reach the review memory and the queue."""

from __future__ import annotations

from pathlib import Path

import httpx
from sqlalchemy import select

from bqas.review.tables import Judgment, ReviewItem
from test_service_api import VOICE_TURN, _auth, _start, _wait

LEAK_A = "Ich erinnere dich morgen. Ruf Frau Sabine Schneider an: 0171 2345678."
LEAK_B = "Ich erinnere dich morgen. Schreib an jonas.weber@example.org."


def test_turns_with_one_response_id_are_two_judgments_and_two_items(tmp_path: Path) -> None:
    for svc in _start(tmp_path):
        turns = [{**VOICE_TURN, "answer": a, "response_id": "same-id"} for a in (LEAK_A, LEAK_B)]
        body = {"judges": ["voice"], "language": "de", "turns": turns}
        r = httpx.post(f"{svc.url}/api/score/session_async", json=body, headers=_auth(svc.key_a))
        job = _wait(svc.url, svc.key_a, r.json()["job_id"])
        assert job["status"] == "done" and [t["results"][0]["escalation"] for t in job["turns"]] == [
            "human_review",
            "human_review",
        ]
        with svc.store.session() as s:
            judged = s.scalars(select(Judgment.source).where(Judgment.response_id == "same-id")).all()
            items = s.scalars(select(ReviewItem).where(ReviewItem.response_id == "same-id")).all()
        assert len(judged) == 2 and len(set(judged)) == 2
        assert len(items) == 2
        answers = {str((i.inputs or {}).get("response")) for i in items}
        assert answers == {LEAK_A, LEAK_B}
