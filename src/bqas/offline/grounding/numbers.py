"""Numbers in a claim and in the facts: digits with units and multipliers, German/English number words,
Chinese numerals; whether a claim's number equals (or rounds) a number of the facts."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from bqas.offline._textutil import CJK_RE

# ---------------------------------------------------------------------------------------------- units

_U: list[tuple[str, str, float]] = []


def _units(dim: str, factor: float, *names: str) -> None:
    for n in names:
        _U.append((n, dim, factor))


_units("mass", 1e-3, "mg", "Milligramm", "毫克")
_units("mass", 1.0, "g", "Gramm", "grams", "gram", "克")
_units("mass", 1e3, "kg", "Kilogramm", "kilograms", "kilogram", "kilos", "公斤", "千克")
_units("mass", 1e6, "t", "Tonnen", "Tonne", "tonnes", "tonne", "tons", "ton", "吨")
_units("mass", 453.592, "lbs", "lb", "pounds")
_units("mass", 500.0, "斤")
_units("length", 1e-3, "mm", "Millimeter", "millimetres", "millimeters", "毫米")
_units("length", 1e-2, "cm", "Zentimeter", "centimetres", "centimeters", "厘米")
_units("length", 0.1, "dm")
_units("length", 1.0, "m", "Meter", "metres", "meters", "metre", "meter", "米")
_units("length", 1e3, "km", "Kilometer", "kilometres", "kilometers", "公里", "千米")
_units("length", 1609.344, "miles", "mile")
_units("length", 0.3048, "feet", "foot", "ft")
_units("percent", 1.0, "%", "％", "Prozent", "percent", "per cent")
_units("EUR", 1.0, "€", "EUR", "Euro", "euros", "欧元")
_units("USD", 1.0, "$", "USD", "US-Dollar", "dollars", "dollar", "Dollar", "美元")
_units("GBP", 1.0, "£", "GBP")
_units("CNY", 1.0, "元", "人民币", "RMB", "CNY", "¥")
_units("CNY", 1.0, "块")
_units("CNY", 0.1, "角", "毛")
# Chinese measure words name what is counted: "续借两次" is not supported by "五本书" (five books).
_units("count:times", 1.0, "次", "回", "遍")
_units("count:people", 1.0, "人", "名", "位")
_units("count:volumes", 1.0, "本", "册")
_units("count:pieces", 1.0, "节", "根", "张", "台", "辆", "页")
_units("count:size", 1.0, "号")
_units("clock", 1.0, "点")
_units("CHF", 1.0, "CHF", "Franken")
_units("time", 1e-3, "ms", "Millisekunden", "milliseconds", "毫秒")
_units("time", 1.0, "s", "Sek", "Sekunden", "Sekunde", "seconds", "second", "sec", "秒")
_units("time", 60.0, "min", "Minuten", "Minute", "minutes", "minute", "分钟")
_units("time", 3600.0, "h", "Std", "Stunden", "Stunde", "hours", "hour", "hrs", "小时")
_units("time", 86400.0, "Tagen", "Tage", "Tag", "days", "day", "天")
_units("time", 604800.0, "Wochen", "Woche", "weeks", "week", "周")
_units("time", 2629800.0, "Monaten", "Monate", "Monat", "months", "month", "个月")
_units("time", 31557600.0, "Jahren", "Jahre", "Jahr", "years", "year", "年")
_units("temp", 1.0, "°C", "Grad Celsius", "Grad", "degrees", "℃")
_units("tesla", 1.0, "T", "Tesla")
_units("power", 1.0, "W", "Watt")
_units("power", 1e3, "kW", "Kilowatt")
_units("power", 1e6, "MW", "Megawatt")
_units("voltage", 1.0, "V", "Volt")
_units("freq", 1.0, "Hz")
_units("freq", 1e3, "kHz")
_units("freq", 1e6, "MHz")
_units("freq", 1e9, "GHz")
_units("bytes", 1e6, "MB")
_units("bytes", 1e9, "GB")
_units("bytes", 1e12, "TB")

_UNIT_INDEX: dict[str, tuple[str, float]] = {n: (d, f) for n, d, f in _U}
_UNIT_INDEX_CI: dict[str, tuple[str, float]] = {
    n.casefold(): (d, f) for n, d, f in _U if len(n) > 3 and not CJK_RE.search(n)
}
_UNIT_ALT = "|".join(re.escape(n) for n in sorted(_UNIT_INDEX, key=len, reverse=True))

_MULTIPLIERS: dict[str, float] = {
    "tsd": 1e3,
    "tausend": 1e3,
    "thousand": 1e3,
    "mio": 1e6,
    "millionen": 1e6,
    "million": 1e6,
    "millions": 1e6,
    "mrd": 1e9,
    "milliarden": 1e9,
    "milliarde": 1e9,
    "billion": 1e9,
    "billions": 1e9,
    "万": 1e4,
    "亿": 1e8,
    "千": 1e3,
    "百": 1e2,
}
_MULT_ALT = "|".join(re.escape(m) for m in sorted(_MULTIPLIERS, key=len, reverse=True))

_PREFIX_CURRENCY = {"€": "EUR", "$": "USD", "£": "GBP", "¥": "CNY", "EUR": "EUR", "USD": "USD", "CHF": "CHF"}

_NUM_RE = re.compile(
    r"(?P<pre>(?:€|\$|£|¥|EUR|USD|CHF)\s?)?"
    # Not inside a Latin word or number ("7b", "v1.2"); right after a Chinese character it is a number
    # ("套餐3.8元"), so CJK characters do not count as the word before it.
    r"(?<![.,])(?<![^\W\u3400-\u9fff\uf900-\ufaff])(?<![A-Za-zÄÖÜäöüß]-)"
    r"(?P<num>\d{1,3}(?:[.,'\u00a0\u202f\u2009]\d{3})+(?:[.,]\d+)?|\d+(?:[.,]\d+)?)"
    r"(?!\d)"
    # A hyphen may join them ("20-watt", "4-million-euro", "a 315-mile-long river").
    rf"(?:[\s-]?(?P<mult>{_MULT_ALT})\.?(?![A-Za-z]))?"
    rf"(?:[\s-]?(?P<unit>{_UNIT_ALT})(?![A-Za-zÄÖÜäöüß]))?",
    re.IGNORECASE,
)
_LETTER_AFTER_RE = re.compile(r"[A-Za-zÄÖÜäöüß]")

_ZH_DIGITS = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
_ZH_NUM_RE = re.compile(
    r"[零〇一二两三四五六七八九十百千万亿]{2,}"
    r"(?=[位个名人年岁元角块毛米吨克次回遍本册根张台辆座条种件天月日号点秒%％公千周节页所门届倍]|小时|分钟)"
)
#: A time of day in English ("6 pm", "8 in the evening"): the hour on a 24-hour clock, so that "8 in the
#: evening" is not supported by "8 am".
_CLOCK_RE = re.compile(
    r"(?<![\d.,:])(\d{1,2})(?::(\d{2}))?\s*(?:(?P<am>a\.?m\.?|in the morning)|(?P<pm>p\.?m\.?|in the afternoon|in the evening|at night))(?![A-Za-z])",
    re.IGNORECASE,
)
#: "百分之二十" is 20 %.
_ZH_PERCENT_RE = re.compile(r"百分之([零〇一二两三四五六七八九十百]+)")

_NUMBER_WORDS: dict[str, float] = {
    # numbers written as words (German/English); "one"/"eins" count on the facts' side only (see below)
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
    "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16,
    "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100, "thousand": 1000,
    "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9, "zehn": 10,
    "elf": 11, "zwölf": 12, "dreizehn": 13, "vierzehn": 14, "fünfzehn": 15, "sechzehn": 16, "siebzehn": 17,
    "achtzehn": 18, "neunzehn": 19, "zwanzig": 20, "dreißig": 30, "vierzig": 40, "fünfzig": 50,
    "sechzig": 60, "siebzig": 70, "achtzig": 80, "neunzig": 90, "hundert": 100, "tausend": 1000,
    "one": 1, "eins": 1,
}  # fmt: skip
#: Number words that are as often no number at all ("one of them", "no one"): a claim's "one" is not read
#: as the number 1 (a fact's "one" still supports a claim's "1").
_CONTEXT_ONLY_NUMBER_WORDS = frozenset({"one", "eins"})
#: Words that carry a number but are read on the facts' side only, to support a claim that writes it out
#: ("renew twice" supports "two times", "in the next decade" supports "within ten years").
_CONTEXT_NUMBER_WORDS: dict[str, float] = {
    "twice": 2, "thrice": 3, "zweimal": 2, "dreimal": 3, "decade": 10, "jahrzehnt": 10, "dozen": 12,
    "dutzend": 12, "century": 100, "jahrhundert": 100,
}  # fmt: skip
_NUMBER_WORD_RE = re.compile(
    r"(?<!\w)(?:" + "|".join(sorted({*_NUMBER_WORDS, *_CONTEXT_NUMBER_WORDS}, key=len, reverse=True)) + r")(?!\w)",
    re.IGNORECASE,
)
_UNIT_AFTER_RE = re.compile(rf"[\s-]?个?({_UNIT_ALT})(?![A-Za-zÄÖÜäöüß])", re.IGNORECASE)
_UNITS_WORD_ALT = "ein|zwei|drei|vier|fünf|sechs|sieben|acht|neun"
_TENS_WORD_ALT = "zwanzig|dreißig|vierzig|fünfzig|sechzig|siebzig|achtzig|neunzig"
_EN_TENS_ALT = "twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety"
_EN_UNITS_ALT = "one|two|three|four|five|six|seven|eight|nine"
#: Compound number words: "dreiundzwanzig", "twenty-three", and German number-word adjectives
#: ("dreiwöchiges Praktikum", "zweitägig", "dreifach"), read as one number.
_COMPOUND_NUMBER_RE = re.compile(
    rf"(?<![\w-])(?:(?P<de_units>{_UNITS_WORD_ALT})und(?P<de_tens>{_TENS_WORD_ALT})"
    rf"|(?P<en_tens>{_EN_TENS_ALT})[- ](?P<en_units>{_EN_UNITS_ALT})"
    rf"|(?P<adj>{_UNITS_WORD_ALT}|zehn|elf|zwölf)(?:wöchig|tägig|jährig|monatig|stündig|minütig|fach|mal)\w*)"
    r"(?![\w-])",
    re.IGNORECASE,
)
#: A single Chinese numeral counts before a measure word ("八周", "两个月", "三天"); "一" does not, since
#: "一个"/"一下"/"一起" are rarely the number one, and "十分" is "very", so 分 needs 分钟.
_ZH_SINGLE_NUM_RE = re.compile(
    r"(?<![零〇一二两三四五六七八九十百千万亿])[二两三四五六七八九十]"
    r"(?=周|个|小时|分钟|秒|点|天|年|岁|次|回|遍|名|位|人|元|角|块|毛|米|节|根|号|页|所|门|届|级|倍|本|册|张|台|辆|层|公里|公斤|千克|吨)"
)


@dataclass(frozen=True)
class NumberFact:
    """A number found in a text: its readings (value, decimals), multiplier, unit dimension and factor."""

    text: str
    readings: tuple[tuple[float, int], ...]
    mult: float = 1.0
    dim: str | None = None
    factor: float = 1.0

    def bases(self) -> list[float]:
        return [v * self.mult * self.factor for v, _ in self.readings]


def _readings(num: str) -> tuple[tuple[float, int], ...]:
    s = re.sub(r"['\u00a0\u202f\u2009]", "", num)
    has_dot, has_comma = "." in s, "," in s
    if has_dot and has_comma:
        dec = "." if s.rfind(".") > s.rfind(",") else ","
        thou = "," if dec == "." else "."
        s2 = s.replace(thou, "").replace(dec, ".")
        return ((float(s2), len(s2.split(".")[1])),)
    for sep in (".", ","):
        if sep in s:
            parts = s.split(sep)
            if all(len(p) == 3 for p in parts[1:]) and len(parts[0]) <= 3:
                as_int = float("".join(parts))
                if len(parts) > 2:
                    return ((as_int, 0),)
                return ((as_int, 0), (float(parts[0] + "." + parts[1]), len(parts[1])))
            if len(parts) == 2:
                return ((float(parts[0] + "." + parts[1]), len(parts[1])),)
            return ((float("".join(parts)), 0),)
    return ((float(s), 0),)


def _zh_number(text: str) -> float | None:
    total, section, digit = 0.0, 0.0, -1.0
    units = {"十": 10.0, "百": 100.0, "千": 1000.0}
    big = {"万": 1e4, "亿": 1e8}
    for ch in text:
        if ch in _ZH_DIGITS:
            digit = float(_ZH_DIGITS[ch])
        elif ch in units:
            section += (digit if digit >= 0 else 1.0) * units[ch]
            digit = -1.0
        elif ch in big:
            section += max(digit, 0.0)
            total += section * big[ch]
            section, digit = 0.0, -1.0
        else:
            return None
    return total + section + max(digit, 0.0)


def extract_numbers(text: str, *, context: bool = False) -> list[NumberFact]:
    """Numbers in ``text`` with their unit readings (dates should be masked out first).

    German/English number words ("zwölf", "twelve") and single Chinese numerals before a measure word
    ("八周") count on both sides. With ``context=True`` (the facts side) extraction is more lenient: numbers
    glued to letters ("401k") and "one"/"eins" count too, so that they can support a claim's number."""
    out: list[NumberFact] = []
    for m in _NUM_RE.finditer(text):
        num = m.group("num")
        unit = m.group("unit")
        mult_s = m.group("mult")
        end = m.end()
        if not context and not unit and not mult_s and end < len(text) and _LETTER_AFTER_RE.match(text[end]):
            continue  # part of a token such as "7b", "3D", "1st"
        dim: str | None = None
        factor = 1.0
        if unit:
            if unit in _UNIT_INDEX:
                dim, factor = _UNIT_INDEX[unit]
            elif unit.casefold() in _UNIT_INDEX_CI:
                dim, factor = _UNIT_INDEX_CI[unit.casefold()]
            else:
                unit = None
        pre = (m.group("pre") or "").strip()
        if pre and dim is None:
            dim = _PREFIX_CURRENCY.get(pre.upper())
        readings = _readings(num)
        if unit == "年" and dim == "time" and all(1000 <= v <= 2100 and d == 0 for v, d in readings):
            dim, factor = None, 1.0  # "2023年" is a year, not a duration
        mult = _MULTIPLIERS.get((mult_s or "").casefold(), 1.0)
        out.append(NumberFact(m.group(0).strip(), readings, mult, dim, factor))
    for m in _ZH_NUM_RE.finditer(text):
        value = _zh_number(m.group(0))
        if value is not None:
            out.append(_written(text, m, value))
    for m in _CLOCK_RE.finditer(text):
        hour = int(m.group(1)) % 12 + (12 if m.group("pm") else 0)
        minutes = int(m.group(2) or 0)
        if hour < 24 and minutes < 60:
            out.append(NumberFact(m.group(0), ((hour + minutes / 60, 2),), 1.0, "clock", 1.0))
    for m in _ZH_PERCENT_RE.finditer(text):
        value = _zh_number(m.group(1))
        if value is not None:
            out.append(NumberFact(m.group(0), ((value, 0),), 1.0, "percent", 1.0))
    for m in _ZH_SINGLE_NUM_RE.finditer(text):
        out.append(_written(text, m, float(_ZH_DIGITS.get(m.group(0), 10))))
    compounds = list(_COMPOUND_NUMBER_RE.finditer(text))
    for m in compounds:
        out.append(_written(text, m, _compound_value(m)))
    if compounds:
        # The parts of a compound are not numbers of their own ("twenty-three" is not 20 and 3).
        text = _COMPOUND_NUMBER_RE.sub(" ", text)
    for m in _NUMBER_WORD_RE.finditer(text):
        # "innerhalb von zwölf Wochen" against facts that say "acht Wochen": a number like any other.
        w = m.group(0).casefold()
        if w in _NUMBER_WORDS and (context or w not in _CONTEXT_ONLY_NUMBER_WORDS):
            out.append(_written(text, m, _NUMBER_WORDS[w]))
        elif context and w in _CONTEXT_NUMBER_WORDS:
            out.append(NumberFact(m.group(0), ((_CONTEXT_NUMBER_WORDS[w], 0),)))
    return out


def _unit_reading(unit: str) -> tuple[str, float] | None:
    if unit in _UNIT_INDEX:
        return _UNIT_INDEX[unit]
    return _UNIT_INDEX_CI.get(unit.casefold())


def _written(text: str, m: re.Match[str], value: float) -> NumberFact:
    """A number written as a word or numeral, with the unit that follows it ("zwölf Wochen", "两个小时")."""
    after = _UNIT_AFTER_RE.match(text, m.end())
    reading = _unit_reading(after.group(1)) if after else None
    if after is None or reading is None or (after.group(1) == "年" and 1000 <= value <= 2100):
        return NumberFact(m.group(0), ((value, 0),))
    dim, factor = reading
    return NumberFact(m.group(0) + after.group(0), ((value, 0),), 1.0, dim, factor)


def _word_value(word: str) -> float:
    key = word.casefold()
    return 1.0 if key == "ein" else _NUMBER_WORDS[key]


def _compound_value(m: re.Match[str]) -> float:
    if m.group("de_units"):
        return _word_value(m.group("de_units")) + _word_value(m.group("de_tens"))
    if m.group("en_tens"):
        return _word_value(m.group("en_tens")) + _word_value(m.group("en_units"))
    return _word_value(m.group("adj"))


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-9)


def number_supported(claim: NumberFact, context: list[NumberFact]) -> bool:
    """Whether ``claim`` equals (or is a coarser rounding of) some context number."""
    for other in context:
        same_dim = claim.dim is not None and claim.dim == other.dim
        if claim.dim is not None and other.dim is not None and not same_dim:
            continue
        c_scale = claim.mult * (claim.factor if same_dim else 1.0)
        o_scale = other.mult * (other.factor if same_dim else 1.0)
        for v, d in claim.readings:
            for v2, _ in other.readings:
                if _close(v * c_scale, v2 * o_scale):
                    return True
                in_claim_units = v2 * o_scale / c_scale
                if d < 6 and _close(round(in_claim_units, d), v) and v != 0:
                    return True
    return False
