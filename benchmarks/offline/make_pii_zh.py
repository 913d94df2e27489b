"""Build the Chinese PII test set ``tests/fixtures/pii_zh.jsonl`` (written for BQAS, Apache-2.0).

Hand-written sentence templates of a teachers' assistant (notes, letters, reminders, class messages) are
filled with names and places from Faker's ``zh_CN`` providers (Faker 40.63.0, MIT: surnames, given names,
cities, districts). Each record lists the gold PII spans (``person``, ``address``). Negatives have no
personal data, among them hard ones: places and firms that start with a surname character (张家界,
王府井大街, 马鞍山市), specimen names (张三), cities and schools without a person.

Regenerate (needs Faker, which BQAS does not depend on)::

    python -m venv /tmp/fk && /tmp/fk/bin/pip install faker==40.63.0
    /tmp/fk/bin/python benchmarks/offline/make_pii_zh.py [--seed 2026] [--per-template 6]
"""

from __future__ import annotations

import argparse
import json
import random
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "fixtures" / "pii_zh.jsonl"

# {P} person, {P2} a second person, {A} an address, {C} a city, {S} a school/firm (no PII on its own).
POSITIVE = [
    "{P}同学今天没有交数学作业。",
    "请提醒{P}的家长明天来学校开家长会。",
    "{P}和{P2}在课堂上吵架了，需要和班主任谈一谈。",
    "昨天{P}在体育课上扭伤了脚。",
    "给{P}的妈妈写一封信，说明他最近进步很大。",
    "{P}的成绩单已经寄到{A}。",
    "家长会的通知请发给{P}，地址是{A}。",
    "{P}这周请了三天病假。",
    "记一下：{P}的作文写得很好，可以在班上朗读。",
    "{P}老师下午要去{C}开会。",
    "请把这份材料交给{P}。",
    "{P}住在{A}，离学校很远。",
    "明天上午{P}要补考语文。",
    "{P}和{P2}被选为班级代表。",
    "我已经通知了{P}，他会准时到。",
    "下周一{P}的爸爸会来接他。",
    "{P}的家庭住址：{A}。",
    "这次竞赛{P}获得了一等奖。",
    "学生{P}上课经常迟到。",
    "{P}说他的作业忘在{C}的奶奶家了。",
    "请联系{P}，确认周五的春游安排。",
    "{P}的哥哥{P2}也在我们学校读书。",
    "快递请寄到{A}，收件人{P}。",
    "家访安排在{A}，{P}的家。",
]
NEGATIVE = [
    "今天的作业是第三课的练习题。",
    "明天上午第二节课改成数学课。",
    "请同学们周五之前交作文。",
    "张三同学是教材里的例子。",
    "下周我们去张家界春游。",
    "王府井大街很热闹。",
    "马鞍山市的天气预报说明天有雨。",
    "黄山的风景非常美。",
    "我们学校在{C}。",
    "{S}下周举办运动会。",
    "这学期的期中考试安排在五月。",
    "高一同学请到操场集合。",
    "历史老师生病了，今天的课取消。",
    "请把教室的窗户关好。",
    "石家庄和{C}之间有高铁。",
    "班主任老师说今天不考试。",
    "{C}市图书馆周一闭馆。",
    "这道题的答案是二十五。",
    "李四和王五是例题中的人物。",
    "请在周记里写一写你的周末。",
]
SCHOOLS = ["第一中学", "实验小学", "外国语学校", "师范大学附属中学", "科技有限公司", "人民医院"]
ROADS = ["路", "街", "大道"]


def _name(rng: random.Random, last: list[str], first: list[str], avoid: set[str]) -> str:
    singles = [f for f in first if len(f) == 1]
    while True:
        given = rng.choice(first)
        if len(given) == 1 and rng.random() < 0.6:
            given += rng.choice(singles)  # two-character given names are the most common
        surname = rng.choice(last)
        name = surname + given
        if name not in avoid and len(given) <= 2:
            return name


def _address(rng: random.Random, cities: list[str], districts: list[str]) -> str:
    city, district = rng.choice(cities), rng.choice(districts)
    if rng.random() < 0.7:
        road = rng.choice(districts) + rng.choice(ROADS)
        return f"{city}市{district}区{road}{rng.randint(1, 300)}号"
    return f"{city}市{district}区幸福小区{rng.randint(1, 30)}栋{rng.randint(1, 6)}单元{rng.randint(101, 2502)}室"


def _fill(template: str, values: dict[str, tuple[str, str]]) -> tuple[str, list[dict[str, object]]]:
    text, entities, pos = "", [], 0
    for m in re.finditer(r"\{(P2|P|A|C|S)\}", template):
        text += template[pos : m.start()]
        value, kind = values[m.group(1)]
        if kind:
            entities.append({"start": len(text), "end": len(text) + len(value), "type": kind, "text": value})
        text += value
        pos = m.end()
    return text + template[pos:], entities


def main(argv: list[str] | None = None) -> int:
    from faker.providers.address.zh_CN import Provider as Address
    from faker.providers.person.zh_CN import Provider as Person

    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--per-template", type=int, default=6)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args(argv)
    rng = random.Random(args.seed)
    last = list(Person.last_names)
    first = list(Person.first_names)
    cities, districts = list(Address.cities), list(Address.districts)
    specimen = {"张三", "李四", "王五", "赵六"}
    records: list[dict[str, object]] = []
    for t_id, template in enumerate(POSITIVE + NEGATIVE):
        negative = t_id >= len(POSITIVE)
        for k in range(args.per_template if ("{" in template or not negative) else 1):
            p = _name(rng, last, first, specimen)
            values = {
                "P": (p, "person"),
                "P2": (_name(rng, last, first, specimen | {p}), "person"),
                "A": (_address(rng, cities, districts), "address"),
                "C": (rng.choice(cities), ""),
                "S": (rng.choice(cities) + rng.choice(SCHOOLS), ""),
            }
            text, entities = _fill(template, values)
            records.append({"id": f"zh-pii/{t_id:02d}/{k}", "text": text, "entities": entities, "negative": negative})
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    n_ent = sum(len(r["entities"]) for r in records)  # type: ignore[arg-type]
    print(f"wrote {len(records)} sentences ({n_ent} gold spans) to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
