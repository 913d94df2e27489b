"""Test helpers shipped with BQAS: a scripted OpenAI-compatible chat server for offline testing."""
