"""The offline (extractive) generator: questions from the sentences of the passages, no LLM.

Each kind's file (``kinds/<kind>/kind.yaml``) gives per-language patterns or templates; this module turns
passages into candidate items per kind. The reference answer of an extractive item is its source
sentence (or sentences), so it says exactly what the documents say. Everything random is drawn from one
``random.Random(seed)``: a seed gives the same items every time.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import replace

from bqas.offline.operators import load_operators
from bqas.offline.text.stopwords import STOPWORDS
from bqas.offline.text.tokens import CJK_RE, content_stems, words
from bqas.ragsynth.chunks import Passage
from bqas.ragsynth.items import RagItem
from bqas.ragsynth.kinds import Kind
from bqas.synth.typos import add_typos

_ARTICLE_START = re.compile(r"^(Der|Die|Das|Den|Dem|Des|Ein|Eine|Einer|Jeder|Jede|Alle|The|A|An|Each|Every|All)\b")
_QUESTION_WORD = re.compile(r"^(Wie|Was|Wer|Wann|Welche|Welcher|Welches|Bei|What|How|Who|When|Which)\b")
_HEADING_NUMBER = re.compile(r"^\s*(?:第[一二三四五六七八九十\d]+[章节条]|\d+(?:\.\d+)*\.?|[IVX]+\.)\s*")
# A number that is a quantity or date, not part of a name ("UTF-8", "MP3", "H2O" are not numbers).
_QUANTITY = re.compile(r"(?<![A-Za-z\-_])\d")
_LONG_NUMBER = re.compile(r"\d{5,}")
_LATIN_WORD = re.compile(r"[A-Za-zÄÖÜäöüß][\w-]{3,}")
#: Sentences outside this length are poor sources (fragments, or whole paragraphs without stops).
MIN_SENTENCE, MAX_SENTENCE = 12, 260
MIN_SENTENCE_CJK = 8
#: Subjects of a multi-passage pair share at least this share of their content stems (CJK: bigrams).
MIN_SUBJECT_OVERLAP = 0.25


def topic_of(heading: str) -> str:
    """The last part of a heading path, without its numbering ("2.1 Prüfungsdauer" -> "Prüfungsdauer")."""
    last = heading.split(" › ")[-1].strip()
    return _HEADING_NUMBER.sub("", last).strip(" :：")


def subject_in_question(subject: str) -> str:
    """A sentence-initial subject as it reads inside a question (the article lowered)."""
    subject = subject.strip(" ,:;")
    m = _ARTICLE_START.match(subject)
    return subject[:1].lower() + subject[1:] if m else subject


def concepts_of(subject: str, answer: str, language: str) -> list[str]:
    """Key terms a good retrieval must bring back: the subject's content words and the answer."""
    answer = answer.strip(" .。,，;；")
    terms: list[str] = []
    if language == "zh":
        core = re.sub(r"^(?:本|该|此)", "", subject).strip("的 ")
        if 2 <= len(core) <= 16:
            terms.append(core)
    else:
        for word in _LATIN_WORD.findall(subject):
            if word.casefold() not in STOPWORDS and not word.isdigit():
                terms.append(word)
    if answer and len(answer) <= 40:
        terms.append(answer)
    return list(dict.fromkeys(terms))[:6]


def _content_words(text: str) -> list[str]:
    return [w for w in _LATIN_WORD.findall(text) if w.casefold() not in STOPWORDS]


def _usable(sentence: str) -> bool:
    # Chinese says in 8 characters what German needs 12+ letters for.
    least = MIN_SENTENCE_CJK if CJK_RE.search(sentence) else MIN_SENTENCE
    return least <= len(sentence) <= MAX_SENTENCE and not sentence.endswith(("?", "？"))


def extractive_items(kind: Kind, passages: Sequence[Passage], language: str) -> list[RagItem]:
    """Items of a pattern kind (``fact``, ``number``): the first pattern that matches a sentence."""
    patterns = (kind.patterns or {}).get(language, ())
    out: list[RagItem] = []
    for passage in passages:
        topic = topic_of(passage.heading)
        for sentence in passage.sentences:
            if not _usable(sentence):
                continue
            for pattern in patterns:
                m = pattern.match.match(sentence.strip())
                if m is None:
                    continue
                groups = {k: (v or "") for k, v in m.groupdict().items()}
                answer = groups["answer"]
                if kind.requires_digit != bool(_QUANTITY.search(answer)):
                    continue
                if "{heading}" in pattern.question and not topic:
                    continue
                subject = subject_in_question(groups.get("subject", ""))
                if len(_content_words(subject)) < pattern.min_subject_words:
                    continue
                if _LONG_NUMBER.search(subject):
                    continue  # "the last 781265 samples": such a number in the subject makes a poor question
                query = pattern.question.format(
                    subject=subject, verb=groups.get("verb", ""), noun=groups.get("noun", ""), heading=topic
                )
                query = query[:1].upper() + query[1:]
                out.append(
                    RagItem(
                        kind=kind.name,
                        language=language,
                        query=query,
                        reference=sentence,
                        passages=[passage],
                        facts=[sentence],
                        concepts=concepts_of(groups.get("subject", ""), answer, language),
                        answer=answer.strip(" .。"),
                        key=sentence,
                        topic=subject,
                        standalone="{heading}" not in pattern.question and pattern.pairs,
                    )
                )
                break
    return out


def paraphrase_items(
    kind: Kind, sources: Sequence[RagItem], language: str, rng: random.Random, *, typos: bool
) -> list[RagItem]:
    """Colloquial variants of fact and number items: everyday words, an opener, typos under ``typos``."""
    replace = (kind.replace or {}).get(language, {})
    openers = (kind.openers or {}).get(language, ())
    out: list[RagItem] = []
    for src in sources:
        query = src.query
        for old, new in replace.items():
            query = re.sub(old, new, query)
        if openers:
            body = query[:1].lower() + query[1:] if _QUESTION_WORD.match(query) else query
            query = rng.choice(openers).format(q=body)
        tags: list[str] = []
        if typos and language != "zh":
            protected = [src.answer, *src.concepts]
            query, applied = add_typos(query, rng, count=1 if rng.random() < 0.7 else 2, protected=protected)
            tags = ["typos", *(f"typo:{k}" for k in dict.fromkeys(applied))]
        out.append(
            RagItem(
                kind=kind.name,
                language=language,
                query=query,
                reference=src.reference,
                passages=list(src.passages),
                facts=list(src.facts),
                concepts=list(src.concepts),
                answer=src.answer,
                key=src.key,
                tags=tags,
                topic=src.topic,
            )
        )
    return out


def _subject_stems(item: RagItem) -> set[str]:
    return set(content_stems(item.topic))


def multi_passage_items(
    kind: Kind, numbers: Sequence[RagItem], language: str, rng: random.Random, *, limit: int = 4000
) -> list[RagItem]:
    """Pairs of number items from two different passages on related subjects (content words shared, Jaccard
    at least :data:`MIN_SUBJECT_OVERLAP`): "how do A and B differ?" (same unit) or "what holds for A and for
    B?" needs both passages."""
    both = kind.both or {}
    numbers = [n for n in numbers if n.standalone]  # "A and B" must name A and B without their sections
    out: list[RagItem] = []
    for i, a in enumerate(numbers):
        for b in numbers[i + 1 :]:
            if a.passages[0].chunk_id == b.passages[0].chunk_id or a.topic == b.topic:
                continue
            sa, sb = _subject_stems(a), _subject_stems(b)
            if not sa or len(sa & sb) / len(sa | sb) < MIN_SUBJECT_OVERLAP:
                continue
            same_unit = _unit(a.answer) == _unit(b.answer)
            choices = (kind.questions or {}).get(language, ()) if same_unit else both.get(language, ())
            if not choices:
                continue
            query = rng.choice(choices).format(a=a.topic, b=b.topic)
            out.append(
                RagItem(
                    kind=kind.name,
                    language=language,
                    query=query[:1].upper() + query[1:],
                    reference=_join(language, [a.reference, b.reference]),
                    passages=[a.passages[0], b.passages[0]],
                    facts=[a.reference, b.reference],
                    concepts=list(dict.fromkeys([*a.concepts, *b.concepts]))[:8],
                    answer=f"{a.answer}; {b.answer}",
                    key=f"{a.key}\n{b.key}",
                    topic=f"{a.topic} / {b.topic}",
                )
            )
            if len(out) >= limit:
                break
    return out


def _unit(answer: str) -> str:
    toks = words(answer)
    unit = next((t for t in reversed(toks) if not t.isdigit()), "")
    return re.sub(r"[\d.,]+", "", unit)


def _join(language: str, sentences: Sequence[str]) -> str:
    """Sentences as one text; a sentence without its stop (a table row) gets one."""
    stop, sep = ("。", "") if language == "zh" else (".", " ")
    return sep.join(
        s if s.endswith((".", "!", "?", "。", "！", "？")) else s + stop for s in (x.strip() for x in sentences)
    )


def unanswerable_items(kind: Kind, passages: Sequence[Passage], language: str) -> list[RagItem]:
    """Plausible questions about the documents' topics (their headings) that the documents do not answer;
    the ``answerable`` filter drops those a passage might answer after all."""
    templates = (kind.templates or {}).get(language, ())
    reference = (kind.reference or {}).get(language, "")
    topics = list(dict.fromkeys(t for t in (topic_of(p.heading) for p in passages) if 2 <= len(t) <= 60))
    out: list[RagItem] = []
    for topic in topics:
        for template in templates:
            out.append(
                RagItem(
                    kind=kind.name,
                    language=language,
                    query=template.question.format(topic=topic),
                    reference=reference,
                    passages=[],
                    facts=[],
                    concepts=[],
                    key=f"{topic}\n{template.question}",
                    cues=template.cues,
                    topic=topic,
                )
            )
    return out


def operator_items(kind: Kind, passages: Sequence[Passage], language: str, rng: random.Random) -> list[RagItem]:
    """Abitur operator tasks over passages of Abitur material (German): one operator per passage, with the
    operator's AFB and actions from the operator table of the ``rag_operator`` judge."""
    templates = (kind.templates or {}).get(language, ())
    if not templates:
        return []
    table = load_operators()
    material_sources = {p.source for p in passages if any(word in p.text.casefold() for word in kind.material)}
    # The text under a document's title alone (its preface) is no regulation to ask about.
    nested = {p.source for p in passages if " › " in p.heading}
    out: list[RagItem] = []
    for passage in passages:
        topic = topic_of(passage.heading)
        sentences = [s for s in passage.sentences if _usable(s)][:3]
        preface = passage.source in nested and " › " not in passage.heading
        if passage.source not in material_sources or not topic or not sentences or preface:
            continue
        template = rng.choice(templates)
        op = table.get(template.operator)
        if op is None:
            continue
        reference = " ".join(sentences)
        out.append(
            RagItem(
                kind=kind.name,
                language=language,
                query=template.question.format(topic=topic),
                reference=reference,
                passages=[passage],
                facts=sentences,
                concepts=concepts_of(topic, "", language),
                key=f"{passage.chunk_id}\n{template.operator}",
                topic=topic,
                extra={
                    "operator": op.name,
                    "expected_afb": op.afb,
                    "expected_actions": list(op.actions),
                },
            )
        )
    return out


def with_persona(
    items: Sequence[RagItem],
    openers: Sequence[str],
    persona: str,
    rng: random.Random,
    colloquial: Sequence[str] = (),
) -> list[RagItem]:
    """The items asked by ``persona``: an opener of theirs before each question (operator tasks stay as
    they are: an exam task has no asker). What is asked, and every ground-truth field, stays the same;
    ``colloquial`` are the paraphrase openers' fixed parts, replaced rather than stacked."""
    out: list[RagItem] = []
    for item in items:
        if item.kind == "operator" or not openers:
            out.append(item)
            continue
        query = item.query
        body = query[:1].lower() + query[1:] if _QUESTION_WORD.match(query) else query
        for opener in colloquial:  # a paraphrase's own opener gives way to the persona's
            if opener and body.startswith(opener):
                body = body.removeprefix(opener)
                body = body[:1].lower() + body[1:] if _QUESTION_WORD.match(body) else body
                break
        out.append(replace(item, query=rng.choice(openers).format(q=body), tags=[*item.tags, f"persona:{persona}"]))
    return out
