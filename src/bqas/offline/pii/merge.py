"""How the findings of the detector families become one list: overlaps settled by kind priority, and
on Han text the Chinese NER pass and the fit of names to the words around them."""

from __future__ import annotations

from bqas.offline.pii.lexicon import _lexicon
from bqas.offline.pii_types import KINDS, PiiFinding

# When two findings overlap, the one whose kind comes first wins (an e-mail address contains a name, a
# street such as "Karl-Marx-Straße 5" contains a first name).
_PRIORITY = {kind: rank for rank, kind in enumerate(KINDS)}


def _resolve_overlaps(findings: list[PiiFinding]) -> list[PiiFinding]:
    """Keep a non-overlapping subset: by kind priority, then longer spans, then higher confidence."""
    ranked = sorted(findings, key=lambda f: (_PRIORITY.get(f.kind, 99), -(f.end - f.start), -f.confidence, f.start))
    kept: list[PiiFinding] = []
    for cand in ranked:
        if all(cand.end <= k.start or cand.start >= k.end for k in kept):
            kept.append(cand)
    return sorted(kept, key=lambda f: f.start)


def _without_cut_words(text: str, found: list[PiiFinding]) -> list[PiiFinding]:
    """Chinese name findings fitted to the frequent words around them (bqas.offline.zh_words): a name
    that is such a word or begins inside one is dropped; one whose end a cue rule guessed and that runs
    into such a word ends before it."""
    from bqas.offline.zh_words import fit_name_span

    out: list[PiiFinding] = []
    for f in found:
        if f.kind != "person" or not (f.method.startswith("name:zh") or f.method == "lac:PER"):
            out.append(f)
            continue
        span = fit_name_span(text, f.start, f.end, guessed_end=f.method.startswith("name:zh"))
        if span is None:
            continue
        if span != (f.start, f.end):
            f = PiiFinding(f.kind, text[span[0] : span[1]], span[0], span[1], f.method, f.confidence)
        out.append(f)
    return out


def _with_chinese_ner(text: str, found: list[PiiFinding], wanted: set[str]) -> list[PiiFinding]:
    """Second pass on Han text: names and addresses from the NER model (bqas.offline.pii_ner); regex
    name hits inside a place or organisation name the model found are dropped."""
    from bqas.offline.pii_ner import ner_findings  # lazy: loads the model on the first Chinese text

    extra, vetoes = ner_findings(text, _lexicon().zh_surnames)

    ner_addresses = [(f.start, f.end) for f in extra if f.kind == "address"]

    def vetoed(f: PiiFinding) -> bool:
        if f.method == "regex:street_zh":
            # The model's address has the better boundaries: the regex takes any Han run before the
            # street ("李明住在上海市…路5号"), which would swallow the name in front of it.
            return any(a[0] < f.end and f.start < a[1] for a in ner_addresses)
        return f.method.startswith("name:zh") and any(v[0] <= f.start and f.end <= v[1] for v in vetoes)

    return [f for f in found if not vetoed(f)] + [f for f in extra if f.kind in wanted]
