"""Text helpers of the offline methods, one module per job (no models, no heavy imports).

* :mod:`.normalize` - folding for lenient matching and the normalised view the safety rules read;
* :mod:`.tokens` - word tokens, crude stems, content stems and CJK bigrams (stop words in :mod:`.stopwords`);
* :mod:`.sentences` - sentence splitting for German, English and Chinese;
* :mod:`.inputs` - coercion of text- and list-valued judge inputs;
* :mod:`.language` - a cheap de/en/zh language guess.
"""
