"""``bqas redteam``: attacks on the assistant under test, graded for leaks without an LLM where it can.

Plugins (what is attacked) and strategies (how an attack is dressed) are data files under
``plugins/`` and ``strategies/``; :mod:`bqas.redteam.generate` makes the attacks, :mod:`.canaries`
decides leaks of planted secrets, :mod:`.graders` grades each reply, :mod:`.execute` sends the attacks
and stores them as a run, :mod:`.summary` holds the rates and gates, :mod:`.report` the report files.
"""
