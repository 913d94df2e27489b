"""The toolkit for tests (docs/testing.md): the pytest plugin, a scripted OpenAI-compatible chat server and its
RAGAS answers, a local llama.cpp engine, a throwaway PostgreSQL. No runtime module imports it."""
