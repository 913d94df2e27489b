"""What several tiers record about one judgment, below all of them: the LLM seam, the offline methods and the
judging engine each import it, it imports none of them."""
