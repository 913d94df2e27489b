"""CPU cost of reading a judge reply's token log-probabilities (bqas.llm.logprobs.parse_logprobs).

The engine asks for them on every LLM judgment (trust or escalate), so parsing runs once per reply on
the event loop. Replies: the voice judge's JSON with reasoning of 1, 6 and 12 sentences in German and
Chinese, tokenised the way the scripted server does (words, spaces, punctuation), 5 alternatives per
token. Prints min and median ms per reply over repeated rounds.

    nice .venv/bin/python benchmarks/llm/bench_logprobs.py
"""

from __future__ import annotations

import json
import statistics
import time

from bqas.llm.logprobs import parse_logprobs
from bqas.testing.scripted_llm import Reply, logprobs_payload

SENTENCES = {
    "de": "Die Antwort nennt Uhrzeit und Ort der Konferenz und passt damit gut zur Anfrage der Lehrkraft. ",
    "zh": "回答给出了会议的时间和地点，与老师的请求非常相符。",
}


def reply(language: str, sentences: int) -> str:
    data = {"intent_accuracy": 85, "faithfulness": 4, "relevance": 5, "coherence": 4, "safety": "pass"}
    return json.dumps({**data, "reasoning": SENTENCES[language] * sentences}, ensure_ascii=False)


def main(rounds: int = 9, per_round: int = 50) -> None:
    for language in SENTENCES:
        for sentences in (1, 6, 12):
            text = reply(language, sentences)
            raw = logprobs_payload(Reply(content=text).scripted_tokens(), 5)
            assert parse_logprobs(raw, text) is not None
            times = []
            for _ in range(rounds):
                started = time.perf_counter()
                for _ in range(per_round):
                    parse_logprobs(raw, text)
                times.append((time.perf_counter() - started) / per_round * 1000)
            tokens = len(raw["content"])
            print(
                f"{language} {sentences:2d} sentences, {tokens:4d} tokens: "
                f"min {min(times):.3f} ms, median {statistics.median(times):.3f} ms per reply"
            )


if __name__ == "__main__":
    main()
