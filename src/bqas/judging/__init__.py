"""The judge engine: judge files, rendering, parsing, the scoring policy and the evaluation loop."""
