"""Keys of a judgment record that the layers hand each other."""

from __future__ import annotations

# The record key under which the runner hands a judgment's LLM exchange (bqas.judging.exchange) to the store,
# which keeps it in its own column, not in the record.
EXCHANGE_KEY = "llm_exchange"
