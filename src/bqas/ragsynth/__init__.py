"""RAG test sets from a team's own documents (``bqas synth-rag``): read, chunk, generate, filter."""
