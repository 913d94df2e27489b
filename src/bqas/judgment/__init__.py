"""What a judgment is, below every layer that makes, stores or shows one: the judge spec (:mod:`.spec`), its
scoring rule applied to values (:mod:`.policy`), the result types (:mod:`.result`), the units a run works on
(:mod:`.work`), the record keys layers hand each other (:mod:`.record`) and the time a judgment took
(:mod:`.timing`). It imports no other layer of BQAS but the helpers."""
