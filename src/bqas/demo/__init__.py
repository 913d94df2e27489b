"""A tiny local assistant to point BQAS at (``bqas demo-assistant``), for examples and tests."""
