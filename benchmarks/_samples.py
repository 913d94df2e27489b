"""Realistic, varied benchmark samples (no /work/shared needed): German, Chinese and English RAG samples
with several passages (3-5k characters of context), and short German voice turns.

Every sample is distinct: passages are assembled from sentence templates written for BQAS, filled with
random names, places, numbers, dates and units, so no two requests share their texts and the embedding
caches answer only what a real deployment would repeat. Answers restate some passage sentences (with
their numbers), paraphrase others and, in about a third of the samples, invent a number or a name.
Deterministic for a given seed.

Use: ``from _samples import rag_samples, voice_samples`` (benchmarks put their own folder on sys.path).
"""

from __future__ import annotations

import random
from typing import Any

# ------------------------------------------------------------------------------------------- German
_DE_TOPICS = [
    "Schulordnung", "Abiturprüfung", "Medizintechnik", "Stadtbibliothek", "Schwimmbad", "Mensa",
    "Klassenfahrt", "Informatikraum", "Sporthalle", "Elternbeirat", "Ganztagsbetreuung", "Fahrradwerkstatt",
]  # fmt: skip
_DE_PLACES = ["Augsburg", "Kassel", "Linz", "Graz", "Basel", "Bremen", "Erfurt", "Lübeck", "Ulm", "Trier"]
_DE_NAMES = ["Meier", "Brandt", "Yilmaz", "Kowalski", "Hartmann", "Nguyen", "Schubert", "Lorenz", "Vogel"]
_DE_SENTENCES = [
    "Die {topic} in {place} ist montags bis freitags von {h1} bis {h2} Uhr geöffnet.",
    "Seit dem {day}. {month_de} {year} gilt für die {topic} eine neue Regelung, die Frau {name} ausgearbeitet hat.",
    "Für die Anmeldung werden {n} Euro Gebühr erhoben, ermäßigt {m} Euro.",
    "Insgesamt nehmen in diesem Schuljahr {n} Schülerinnen und Schüler aus {k} Klassen teil.",
    "Die Prüfungszeit beträgt {k} Stunden, hinzu kommen {m} Minuten Einlesezeit.",
    "Das Gerät wiegt {n} kg und benötigt einen Raum von mindestens {k} Metern Länge.",
    "Die Leitung liegt bei Herrn {name}, der die {topic} seit {year} betreut.",
    "Anträge müssen spätestens {k} Wochen vor dem Termin schriftlich eingereicht werden.",
    "Wer den Termin versäumt, kann ihn innerhalb von {m} Tagen mit einer Begründung nachholen.",
    "Im Jahr {year} wurde die {topic} um {k} Plätze erweitert, die Kosten lagen bei {n} Euro.",
    "Die Aufsicht übernehmen jeweils zwei Lehrkräfte, bei mehr als {m} Teilnehmenden drei.",
    "Hilfsmittel wie ein Wörterbuch sind zugelassen, Mobiltelefone müssen ausgeschaltet abgegeben werden.",
    "Die Ergebnisse werden nach {k} Wochen im Sekretariat in {place} ausgehängt.",
    "Bei Krankheit ist am selben Tag ein ärztliches Attest vorzulegen.",
    "Der Stromverbrauch liegt im Betrieb bei {k} kW, im Standby bei {m} W.",
    "Die Temperatur im Raum sollte zwischen {t1} und {k2} Grad Celsius liegen.",
    "Laut Beschluss der Gesamtkonferenz vom {day}.{month}.{year} entfällt der Unterricht am Nachmittag.",
    "Die Erwartungen umfassen eine begründete Deutung, die Analyse der sprachlichen Mittel und ein eigenes Urteil.",
    "Für Rückfragen steht das Sekretariat unter der Durchwahl {n} zur Verfügung.",
    "Die Nutzung ist für Mitglieder kostenlos, Gäste zahlen {m} Euro pro Besuch.",
]
_DE_MONTHS = ["Januar", "Februar", "März", "April", "Mai", "Juni", "Juli", "August", "September", "Oktober"]
_DE_QUESTIONS = [
    "Wann ist die {topic} in {place} geöffnet und was kostet die Anmeldung?",
    "Wer leitet die {topic} und seit wann gilt die neue Regelung?",
    "Wie lange dauert die Prüfung und welche Hilfsmittel sind erlaubt?",
    "Was muss ich beachten, wenn ich den Termin verpasse?",
]
_DE_INVENTED = [
    "Außerdem gibt es einen Rabatt von {n} Prozent für Geschwister.",
    "Die Regelung wurde von Herrn {name} aus {place} im Jahr {year} eingeführt.",
    "Der Termin kann bis zu {k} Monate später nachgeholt werden.",
]

# ------------------------------------------------------------------------------------------ Chinese
_ZH_TOPICS = ["图书馆", "磁共振设备", "学生食堂", "游泳馆", "实验室", "体育馆", "校车服务", "计算机教室", "博物馆"]
_ZH_PLACES = ["杭州", "成都", "南京", "西安", "武汉", "苏州", "青岛", "厦门", "长沙"]
_ZH_NAMES = ["王老师", "李主任", "张工程师", "刘经理", "陈教授", "赵医生", "周老师"]
_ZH_SENTENCES = [
    "{place}{topic}每周一至周五{h1}点至{h2}点开放。",
    "自{year}年{month}月{day}日起，{topic}实行新的管理规定，由{name}负责制定。",
    "报名费为{n}元，学生可享受优惠价{m}元。",
    "本学年共有{n}名学生参加，来自{k}个班级。",
    "设备总重{n}公斤，安装房间长度不得少于{k}米。",
    "考试时间为{k}小时，另有{m}分钟阅读时间。",
    "{name}自{year}年起负责{topic}的日常运营。",
    "申请须在活动开始前{k}周以书面形式提交。",
    "如错过预约时间，可在{m}天内凭说明补约一次。",
    "{year}年{topic}扩建了{k}个座位，总投资{n}万元。",
    "运行功率为{k}千瓦，待机功率为{m}瓦。",
    "室内温度应保持在{t1}至{k2}摄氏度之间。",
    "允许携带字典，手机须关机后交给监考老师。",
    "结果将在{k}周后于{place}办公室公布。",
    "如因病缺席，须当天提交医院证明。",
    "会员免费使用，访客每次收费{m}元。",
    "如有疑问，请拨打分机号{n}咨询办公室。",
    "根据{year}年{month}月{day}日的会议决定，下午课程暂停。",
]
_ZH_QUESTIONS = [
    "{place}{topic}的开放时间和报名费是多少？",
    "{topic}由谁负责？新规定从什么时候开始？",
    "考试多长时间？可以带什么？",
]
_ZH_INVENTED = [
    "此外，兄弟姐妹可享受{n}%的折扣。",
    "该规定由{place}的{name}于{year}年提出。",
    "错过的预约可以在{k}个月内补约。",
]

# ------------------------------------------------------------------------------------------ English
_EN_TOPICS = ["city library", "MRI scanner", "school canteen", "swimming pool", "science lab", "bus service"]
_EN_PLACES = ["Leeds", "Cork", "Dundee", "Halifax", "Perth", "Bristol", "Galway"]
_EN_NAMES = ["Ms Patel", "Mr Okafor", "Dr Lindqvist", "Ms Romero", "Mr Whitfield"]
_EN_SENTENCES = [
    "The {topic} in {place} is open Monday to Friday from {h1} am to {h2} pm.",
    "Since {month_en} {day}, {year}, new rules drafted by {name} apply to the {topic}.",
    "Registration costs {n} dollars, or {m} dollars for students.",
    "This year {n} pupils from {k} classes take part.",
    "The device weighs {n} kg and needs a room at least {k} metres long.",
    "The exam lasts {k} hours plus {m} minutes of reading time.",
    "{name} has run the {topic} since {year}.",
    "Applications must be submitted in writing at least {k} weeks in advance.",
    "A missed appointment can be rebooked once within {m} days.",
    "In {year} the {topic} added {k} seats at a cost of {n} dollars.",
    "Power draw is {k} kW in operation and {m} W on standby.",
    "Dictionaries are allowed; phones must be switched off and handed in.",
    "Results are posted after {k} weeks at the office in {place}.",
    "Members use it for free; guests pay {m} dollars per visit.",
]
_EN_MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September"]
_EN_QUESTIONS = ["When is the {topic} in {place} open and what does registration cost?", "Who runs the {topic}?"]
_EN_INVENTED = ["Siblings also get a {n} percent discount.", "The rule was introduced by {name} of {place} in {year}."]

_BANKS: dict[str, dict[str, Any]] = {
    "de": {
        "topics": _DE_TOPICS, "places": _DE_PLACES, "names": _DE_NAMES, "sentences": _DE_SENTENCES,
        "questions": _DE_QUESTIONS, "invented": _DE_INVENTED, "sep": " ",
    },
    "zh": {
        "topics": _ZH_TOPICS, "places": _ZH_PLACES, "names": _ZH_NAMES, "sentences": _ZH_SENTENCES,
        "questions": _ZH_QUESTIONS, "invented": _ZH_INVENTED, "sep": "",
    },
    "en": {
        "topics": _EN_TOPICS, "places": _EN_PLACES, "names": _EN_NAMES, "sentences": _EN_SENTENCES,
        "questions": _EN_QUESTIONS, "invented": _EN_INVENTED, "sep": " ",
    },
}  # fmt: skip


def _slots(rng: random.Random, bank: dict[str, Any], topic: str, place: str) -> dict[str, Any]:
    return {
        "topic": topic,
        "place": place,
        "name": rng.choice(bank["names"]),
        "h1": rng.randint(6, 10),
        "h2": rng.randint(15, 21),
        "n": rng.randint(120, 98_000),
        "m": rng.randint(2, 95),
        "k": rng.randint(2, 40),
        "k2": rng.randint(22, 30),
        "t1": rng.randint(15, 21),
        "year": rng.randint(1998, 2026),
        "month": rng.randint(1, 12),
        "day": rng.randint(1, 28),
        "month_de": rng.choice(_DE_MONTHS),
        "month_en": rng.choice(_EN_MONTHS),
    }


def _passage(rng: random.Random, lang: str, topic: str, place: str, chars: int) -> tuple[str, list[str]]:
    """One passage of about ``chars`` characters (a title line, then sentences) and its sentences."""
    bank = _BANKS[lang]
    sents: list[str] = []
    while sum(len(s) + 1 for s in sents) < chars:
        sents.append(rng.choice(bank["sentences"]).format(**_slots(rng, bank, topic, place)))
    title = f"{topic} {place}" if lang != "zh" else f"{place}{topic}"
    return title + "\n" + bank["sep"].join(sents), sents


def rag_sample(rng: random.Random, lang: str, index: int, context_chars: int = 4000) -> dict[str, Any]:
    """One RAG sample: ``query``, ``response``, ``available_facts`` (3-5 passages, ~``context_chars``)."""
    bank = _BANKS[lang]
    topic, place = rng.choice(bank["topics"]), rng.choice(bank["places"])
    n_passages = rng.randint(3, 5)
    passages, sentences = [], []
    for _ in range(n_passages):
        text, sents = _passage(rng, lang, topic, place, context_chars // n_passages)
        passages.append(text)
        sentences.extend(sents)
    answer = rng.sample(sentences, k=min(len(sentences), rng.randint(2, 4)))
    invented = rng.random() < 0.33
    if invented:
        answer.insert(
            rng.randint(0, len(answer)), rng.choice(bank["invented"]).format(**_slots(rng, bank, topic, place))
        )
    query = rng.choice(bank["questions"]).format(topic=topic, place=place)
    return {
        "id": f"rag-{lang}-{index:05d}",
        "judge": "rag_hallucination",
        "language": lang,
        "query": query,
        "response": bank["sep"].join(answer),
        "available_facts": passages,
        "tags": ["invented"] if invented else ["grounded"],
    }


def rag_samples(n: int, seed: int = 15, languages: tuple[str, ...] = ("de", "zh", "en")) -> list[dict[str, Any]]:
    """``n`` distinct RAG samples, languages in turn."""
    rng = random.Random(seed)
    return [rag_sample(rng, languages[i % len(languages)], i) for i in range(n)]


# ------------------------------------------------------------------------------------------- voice
_VOICE = [
    ("Stell einen Timer auf {m} Minuten für die {cls}", "timer", "Timer auf {m} Minuten für die {cls} gestellt."),
    ("Erinnere mich {day_word} um {h1}:{mm} Uhr an die {event}", "reminder", "Ich erinnere dich {day_word} um {h1}:{mm} Uhr an die {event}."),
    ("Notiz zur {cls}: {pupil} hat {what} vergessen", "student_observation", "Notiz für die {cls} gespeichert: {pupil} hat {what} vergessen."),
    ("Wie viele Stunden habe ich am {weekday} in der {cls}", "schedule_query", "Am {weekday} hast du {k} Stunden in der {cls}, die erste um {h1}:{mm} Uhr."),
    ("Trag für die {cls} eine Vertretung in {subject} in der {k}. Stunde ein", "substitution", "Vertretung für die {cls} in {subject} in der {k}. Stunde eingetragen."),
    ("Schreib den Eltern der {cls}, dass {event_short} am {weekday} stattfindet", "parent_letter", "Entwurf an die Eltern der {cls}: {event_short_cap} findet am {weekday} statt."),
    ("Erstell ein Arbeitsblatt zu {topic} für die {cls} mit {n} Aufgaben", "worksheet_generate", "Arbeitsblatt zu {topic} für die {cls} mit {n} Aufgaben erstellt."),
    ("Hat {pupil} aus der {cls} die Hausaufgaben in {subject} abgegeben", "homework_check", "Ja, {pupil} aus der {cls} hat die Hausaufgaben in {subject} am {weekday} abgegeben."),
]  # fmt: skip
_WEEKDAYS = ["Montag", "Dienstag", "Mittwoch", "Donnerstag", "Freitag"]
_PUPILS = ["Lena", "Jonas", "Mia", "Elif", "Noah", "Emre", "Sophie", "Paul", "Aylin", "Ben", "Hannah", "Luca"]
_EVENTS = ["Konferenz", "Zeugniskonferenz", "Elternsprechstunde", "Fachschaftssitzung", "Pausenaufsicht"]
_OUTINGS = ["der Ausflug", "der Wandertag", "das Sportfest", "die Theaterprobe", "der Museumsbesuch"]
_SUBJECTS = ["Mathe", "Deutsch", "Englisch", "Bio", "Physik", "Geschichte", "Kunst", "Sport"]
_TOPICS = ["Bruchrechnung", "Photosynthese", "Satzglieder", "Vokabeln Unit 3", "Weimarer Republik", "Optik"]
_FORGOTTEN = ["die Hausaufgaben", "das Sportzeug", "den Taschenrechner", "das Heft", "die Unterschrift"]


def _voice_turn(rng: random.Random) -> tuple[str, str, str]:
    ask, intent, answer = rng.choice(_VOICE)
    outing = rng.choice(_OUTINGS)
    slots = {
        "m": rng.randint(1, 90),
        "h1": rng.randint(6, 18),
        "mm": rng.choice(["00", "15", "30", "45"]),
        "k": rng.randint(1, 8),
        "n": rng.randint(3, 20),
        "day_word": rng.choice(["morgen", "übermorgen", "heute"]),
        "cls": f"{rng.randint(5, 13)}{rng.choice('abcd')}",
        "pupil": rng.choice(_PUPILS),
        "weekday": rng.choice(_WEEKDAYS),
        "event": rng.choice(_EVENTS),
        "event_short": outing,
        "event_short_cap": outing[0].upper() + outing[1:],
        "subject": rng.choice(_SUBJECTS),
        "topic": rng.choice(_TOPICS),
        "what": rng.choice(_FORGOTTEN),
    }
    return ask.format(**slots), intent, answer.format(**slots)


def voice_samples(n: int, seed: int = 15) -> list[dict[str, Any]]:
    """``n`` distinct short German voice turns (user_input, detected/expected intent, response).

    Distinct by construction: a turn already drawn is drawn again, and a request for more turns than the
    templates can make distinct fails instead of repeating (a repeat would be answered from the caches)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    misses = 0  # draws in a row that repeated an earlier turn: many mean the templates are exhausted
    while len(out) < n:
        ask, intent, answer = _voice_turn(rng)
        if ask in seen:
            misses += 1
            if misses > 20_000:
                raise ValueError(f"voice_samples: only {len(out)} distinct turns can be made, {n} asked")
            continue
        misses = 0
        seen.add(ask)
        out.append(
            {
                "id": f"voice-{len(out):05d}",
                "judge": "voice",
                "language": "de",
                "user_input": ask,
                "detected_intent": intent,
                "expected_intent": intent,
                "response": answer,
            }
        )
    return out


def mtrag_samples(path: str, n: int) -> list[dict[str, Any]]:
    """Up to ``n`` MTRAG samples with contexts from ``path`` (rag_faithfulness_en.jsonl), if present."""
    import json
    from pathlib import Path

    p = Path(path)
    if not p.is_file():
        return []
    rows = [json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [
        {
            "id": r["id"],
            "judge": "rag_hallucination",
            "language": "en",
            "query": r["question"],
            "response": r["answer"],
            "available_facts": r["contexts"],
        }
        for r in rows
        if r.get("contexts")
    ][:n]
