"""Targets: the assistant under test as configuration (HTTP, Dify, a Python callable), asked per sample."""
