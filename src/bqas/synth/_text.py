"""Small text helpers shared by the offline generator and the dialect markers."""

from __future__ import annotations

# Imperative verbs a command can open with (then "Bitte …" and "… bitte" fit).
_IMPERATIVES = frozenset(
    [
        "erinnere",
        "erinner",
        "erstelle",
        "erstell",
        "mach",
        "mache",
        "schreib",
        "schreibe",
        "gib",
        "zeig",
        "such",
        "notiere",
        "plane",
        "stell",
        "setz",
        "schick",
        "sag",
        "lösch",
        "ändere",
        "füge",
        "füg",
        "ordne",
        "kontrolliere",
        "prüfe",
        "trag",
        "formuliere",
        "entwirf",
        "generiere",
        "halte",
        "merk",
        "denk",
        "informiere",
        "differenziere",
        "passe",
        "schlag",
        "finde",
        "fass",
        "liste",
        "korrigier",
        "zentriere",
        "vermerk",
    ]
)

# Sentence-initial words that are lowered after a wrapper ("Hey, erinnere mich …"): the imperatives plus
# other verbs and function words. Nouns and names ("Erinnerung: …", "Mia K. …") keep their capital.
_STARTERS = _IMPERATIVES | frozenset(
    [
        "bestell",
        "bitte",
        "das",
        "der",
        "die",
        "dir",
        "ein",
        "eine",
        "erzähl",
        "i",
        "ich",
        "jeden",
        "kannst",
        "konnst",
        "könntest",
        "mich",
        "mir",
        "ned",
        "nicht",
        "spiel",
        "um",
        "was",
        "wer",
        "wie",
        "wird",
        "wöchentliche",
        "äh",
    ]
)


def lower_sentence_start(text: str) -> str:
    """Lower the first letter when the first word is a verb or function word (see ``_STARTERS``)."""
    first = text.split(" ", 1)[0].rstrip(",:;.!?")
    if first.lower() in _STARTERS and first[:1].isupper():
        return text[:1].lower() + text[1:]
    return text


def starts_with_imperative(text: str) -> bool:
    """Whether the command opens with an imperative verb (then "Bitte …" and "… bitte" fit)."""
    return text.split(" ", 1)[0].rstrip(",:;.!?").lower() in _IMPERATIVES
