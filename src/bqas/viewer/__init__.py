"""The results viewer: every sample of a stored run, paged and filtered in SQL (``bqas view``)."""
