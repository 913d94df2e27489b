"""The specifics an offline ``failed`` verdict may rest on (bqas.offline.grounding.evidence_against): what
counts, and what is formatting rather than a claim."""

from __future__ import annotations

from bqas.offline.embeddings import HashingEmbedder
from bqas.offline.grounding import analyse_grounding, evidence_against
from bqas.offline.methods import OfflineContext


def _findings(answer: str, fact: str, language: str = "de") -> list[str]:
    ctx = OfflineContext(language=language, embedder_factory=HashingEmbedder)
    return [e.finding() for e in evidence_against(analyse_grounding(answer, [fact], ctx))]


def test_a_weekday_or_month_the_facts_do_not_name_is_evidence() -> None:
    fact = "Die Sprechstunde von Frau Weber ist dienstags von 13:15 bis 14:00 Uhr in Raum 204."
    assert _findings("Frau Weber hat donnerstags von 13:15 bis 14:00 Uhr Sprechstunde in Raum 204.", fact) == [
        "date 'donnerstags' not in the facts"
    ]
    assert _findings("Frau Weber hat dienstags von 13:15 bis 14:00 Uhr Sprechstunde in Raum 204.", fact) == []
    assert _findings("Der Antrag muss bis Mitte April gestellt werden.", "Anträge bis zum 15. März stellen.") == [
        "date 'April' not in the facts"
    ]


def test_a_weekday_inside_a_range_of_the_facts_is_supported() -> None:
    fact = "Die Bücherei hat montags bis donnerstags bis 15:30 Uhr geöffnet, freitags bis 13 Uhr."
    assert _findings("Mittwochs hat die Bücherei bis 15:30 Uhr geöffnet.", fact) == []


def test_list_numbers_scare_quotes_and_headings_are_formatting_not_claims() -> None:
    fact = "Causes include low semen quality, drugs and infections; a helpline is open day and night."
    answer = "Causes: 1. Low semen quality 2. Drugs 3. Infections. The helpline is available 24/7."
    assert _findings(answer, fact, "en") == []
    assert _findings('The "best" choice depends on the kind of infections.', fact, "en") == []
    assert _findings("**Order Pickup**: drugs and infections are causes.", fact, "en") == []
    # "May" starts sentences as a verb: not the month.
    assert _findings("May result in drugs and infections as causes.", fact, "en") == []
    # A real number the facts lack still counts.
    assert _findings("Causes include 12 kinds of infections.", fact, "en") == ["number '12' not in the facts"]


def _shown(answer: str, fact: str, language: str = "en") -> list[str]:
    ctx = OfflineContext(language=language, embedder_factory=HashingEmbedder)
    return [e.finding() for e in evidence_against(analyse_grounding(answer, [fact], ctx)) if e.shows_wrong]


def test_a_name_is_ground_for_failed_only_where_the_facts_name_another_in_its_place() -> None:
    fact = "The company was founded in 1998 by two students in Stanford."
    assert _shown("Two Harvard students founded the company in 1998.", fact) == [
        "entity 'Harvard' not in the facts, which say 'Stanford'"
    ]
    # Absent, not contradicted: nothing the claim shares with the facts' sentence (no name, number, date).
    assert _findings("Its products are sold in the United States.", fact, "en") == [
        "entity 'United States' not in the facts"
    ]
    assert _shown("Its products are sold in the United States.", fact) == []


def test_numbers_written_out_keep_their_unit_and_compounds_are_one_number() -> None:
    fact = "The device charges fully in two hours; the battery lasts about 23 hours."
    assert _findings("It charges fully in two minutes.", fact, "en") == ["number 'two minutes' not in the facts"]
    assert _findings("It charges fully in two hours and lasts twenty-three hours.", fact, "en") == []
    assert _findings("Ein dreiwöchiges Praktikum.", "Das Praktikum dauert zwei Wochen.") == [
        "number 'dreiwöchiges' not in the facts"
    ]
    assert _findings("Ein zweiwöchiges Praktikum.", "Das Praktikum dauert zwei Wochen.") == []
    assert (
        _findings("With the 20-watt charger it takes two hours.", "The 20 W adapter charges it in two hours.", "en")
        == []
    )


def test_paraphrased_numbers_of_the_facts_are_supported() -> None:
    # The span between two years the facts name; "twice"; "decade"; an approximate number inside a range.
    kafka = "Kafka schrieb „Die Verwandlung“ im Herbst 1912; sie erschien 1915 im Kurt Wolff Verlag."
    assert _findings("Sie entstand 1912 und erschien drei Jahre später.", kafka) == []
    assert _findings("Sie entstand 1912 und erschien vier Jahre später.", kafka) == [
        "number 'vier Jahre' not in the facts"
    ]
    library = "Renewals are possible twice online; no eruption is expected in the next decade."
    assert _findings("You can renew online two times.", library, "en") == []
    assert _findings("No eruption is expected within ten years.", library, "en") == []
    hamlet = "Shakespeare's Hamlet was probably written between 1599 and 1601."
    assert _findings("Hamlet was written around 1600.", hamlet, "en") == []
    assert _findings("Hamlet was written around 1605.", hamlet, "en") == ["number '1605' not in the facts"]


def test_holidays_and_months_inside_german_compounds_are_dates() -> None:
    fact = "Der Sportunterricht findet bis zu den Herbstferien im Freien statt. Zeugnisse gibt es im Januar."
    assert _findings("Bis zu den Weihnachtsferien turnen wir draußen.", fact) == [
        "date 'Weihnachtsferien' not in the facts"
    ]
    assert _findings("Bis zu den Herbstferien turnen wir draußen.", fact) == []
    assert _findings("Zeugnisse gibt es am letzten Februarfreitag.", fact) == ["date 'Februar' not in the facts"]


def test_chinese_measure_words_name_what_is_counted_and_numeral_dates_are_dates() -> None:
    fact = "学生最多可借五本书，可在网上续借两次。成绩将于七月二十日公布。电量低于百分之二十时返回。"
    assert _findings("学生可以在网上续借五次。", fact, "zh") == ["number '五次' not in the facts"]
    assert _findings("学生最多借五本书，续借两次。", fact, "zh") == []
    assert _findings("成绩七月二日公布。", fact, "zh") == ["date '七月二日' not in the facts"]
    assert _findings("电量低于百分之五十时返回。", fact, "zh") == ["number '百分之五十' not in the facts"]


def test_a_german_compound_with_the_facts_head_and_another_modifier_is_a_swapped_name() -> None:
    fact = "Der Rhein ist rund 1.230 Kilometer lang und mündet in den Niederlanden in die Nordsee."
    assert _shown("Der 1.230 Kilometer lange Rhein mündet in den Niederlanden in die Ostsee.", fact, "de") == [
        "entity 'Ostsee' not in the facts, which say 'Nordsee'"
    ]
    assert _shown("Der 1.230 Kilometer lange Rhein mündet in den Niederlanden in die Nordsee.", fact, "de") == []


def test_swapped_names_in_german_and_chinese_and_english_times_of_day() -> None:
    kafka = "Die Erzählung „Die Verwandlung“ von Franz Kafka erschien 1915 im Kurt Wolff Verlag."
    assert _shown(
        "Die Erzählung „Die Verwandlung“ von Thomas Mann erschien 1915 im Kurt Wolff Verlag.", kafka, "de"
    ) == ["entity 'Thomas Mann' not in the facts, which say 'Franz Kafka'"]
    luxun = "鲁迅原名周树人，1881年出生于浙江绍兴。"
    assert _shown("鲁迅原名周树人，1881年出生于江苏南京。", luxun, "zh")[:1] == [
        "entity '江苏' not in the facts, which say '浙江'"
    ]
    assert _shown("鲁迅原名周树人，1881年出生于浙江绍兴。", luxun, "zh") == []
    library = "The school library is open from 8 am to 6 pm on weekdays."
    assert _findings("On weekdays it is open between 8 in the morning and 8 in the evening.", library, "en") == [
        "number '8 in the evening' not in the facts"
    ]
    assert _findings("On weekdays it is open between 8 in the morning and 6 in the evening.", library, "en") == []


def test_a_colour_season_ordinal_or_subject_where_the_facts_name_another_is_a_contradiction() -> None:
    router = "Hold the reset button for ten seconds until the light blinks orange."
    assert _shown("Hold the reset button for ten seconds until the lamp flashes green.", router) == [
        "entity 'green' not in the facts, which say 'orange'"
    ]
    museum = "On the first Sunday of each month entry is free for everyone."
    assert _shown("Everybody gets in free on the last Sunday of the month.", museum) == [
        "number 'last' not in the facts, which say 'first'"
    ]
    # Only lacking the value is no contradiction: the facts' sentence names no other.
    assert _shown("In summer, entry is free for everyone on Sundays.", museum) == []
    assert _shown("只有数学考试可以用字典。", "允许使用字典的只有英语考试。", "zh") == [
        "entity '数学' not in the facts, which say '英语'"
    ]
