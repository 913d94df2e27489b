"""The ``bqas`` command line. Sub-commands import their heavy modules lazily to keep ``--help`` fast."""
