"""Merging audits made at different times, the compatibility rules, and the release gate."""

from __future__ import annotations

import dataclasses
import json
import re

import numpy as np
import pytest

from sampleaudit import audit
from sampleaudit.compare import merge_audits, release_gate
from sampleaudit.config import Config
from sampleaudit.errors import IncompatibleAuditsError, InputError
from sampleaudit.report.html import render_html
from sampleaudit.results import from_json, to_json

WORDS = ("the rover measured dust storms on the red planet a sourdough loaf needs a long cold proof "
         "the violin sonata opens with a slow adagio tax law changed the deduction for home offices "
         "quartz fjord nimbus xylophone kettle brisk olive plume ember zinc").split()


def healthy(n, seed):
    rng = np.random.default_rng(seed)
    return [{"text": " ".join(rng.choice(WORDS, 10))} for _ in range(n)]


def collapsed(n):
    return [{"text": "the rover measured dust storms on the red planet." if i % 5 else f"variant {i} of a loaf"}
            for i in range(n)]


def slightly_similar(n):
    rows = healthy(n, 11)
    return [{"text": "the violin sonata opens with a slow adagio."} if i % 6 == 0 else r for i, r in enumerate(rows)]


FAST = Config().with_overrides(**{"stats.n_resamples": 20})  # intervals are not what is tested here


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    def _write_jsonl(path, records):
        path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        return path

    tmp = tmp_path_factory.mktemp("audits")
    return {
        "base": _write_jsonl(tmp / "train.jsonl", healthy(200, 2)),
        "other_base": _write_jsonl(tmp / "train2.jsonl", healthy(200, 9)),
        "ckpt-20k": _write_jsonl(tmp / "ckpt-20k.jsonl", healthy(80, 1)),
        "ckpt-28k": _write_jsonl(tmp / "ckpt-28k.jsonl", slightly_similar(80)),
        "ckpt-35k": _write_jsonl(tmp / "ckpt-35k.jsonl", collapsed(80)),
    }


def run(files, names, *, embedder, base="base", **overrides):
    config = FAST.with_overrides(**overrides) if overrides else FAST
    return audit([files[n] for n in names], baseline=files[base], embedder=embedder, config=config)


@pytest.fixture(scope="module")
def hashing_embedder():
    from sampleaudit.embed.hashing import HashingEmbedder

    return HashingEmbedder(dim=256)


@pytest.fixture(scope="module")
def week(files, hashing_embedder):
    """A checkpoint audited last week and two audited today, with the same embedder and baseline."""
    return run(files, ["ckpt-20k"], embedder=hashing_embedder), run(files, ["ckpt-28k", "ckpt-35k"],
                                                                       embedder=hashing_embedder)


def test_merge_keeps_every_checkpoint_and_reranks(week):
    last_week, today = week
    merged = merge_audits([last_week, today], sources=["a/audit.json", "b/audit.json"])
    assert [c.name for c in merged.checkpoints] == ["ckpt-20k", "ckpt-28k", "ckpt-35k"]
    assert merged.ranking[0] == "ckpt-20k" and merged.ranking[-1] == "ckpt-35k"
    assert merged.checkpoint("ckpt-35k") == today.checkpoint("ckpt-35k")  # nothing recomputed
    assert merged.baseline == last_week.baseline and merged.embedder == last_week.embedder
    assert from_json(to_json(merged)) == merged
    sources = getattr(merged, "sources", None)
    html = render_html(merged)
    if sources is not None:  # once the results model records them
        assert [s.path for s in sources] == ["a/audit.json", "b/audit.json"]
        assert sources[1].checkpoints == ["ckpt-28k", "ckpt-35k"] and "Merged from these audits" in html
    for name in ("ckpt-20k", "ckpt-28k", "ckpt-35k"):
        assert name in html


def test_settings_that_change_no_figure_may_differ(files, hashing_embedder):
    a = run(files, ["ckpt-20k"], embedder=hashing_embedder)
    b = run(files, ["ckpt-35k"], embedder=hashing_embedder,
            **{"embed.batch_size": 8, "report.max_chars": 100, "fail_on": "warn"})
    assert len(merge_audits([a, b], sources=["a", "b"]).checkpoints) == 2


def _refusal(audits, sources=("a/audit.json", "b/audit.json")) -> str:
    with pytest.raises(IncompatibleAuditsError) as err:
        merge_audits(audits, sources=list(sources))
    assert isinstance(err.value, InputError)  # the CLI maps it to exit code 2
    return str(err.value)


def test_different_embedder_is_refused(files, hashing_embedder):
    from sampleaudit.embed.hashing import HashingEmbedder

    a = run(files, ["ckpt-20k"], embedder=hashing_embedder)
    b = run(files, ["ckpt-35k"], embedder=HashingEmbedder(dim=128))
    message = _refusal([a, b])
    assert ("the embedder is 'hashing-char-3-5-256' in a/audit.json but 'hashing-char-3-5-128' in b/audit.json"
            in message)
    assert "the embedding dimension is 256 in a/audit.json but 128 in b/audit.json" in message


def test_different_baseline_is_refused(files, hashing_embedder):
    a = run(files, ["ckpt-20k"], embedder=hashing_embedder)
    b = run(files, ["ckpt-35k"], embedder=hashing_embedder, base="other_base")
    message = _refusal([a, b])
    assert "the baseline file hash (sha256)" in message and a.baseline.sha256 in message
    assert b.baseline.sha256 in message and "b/audit.json" in message


def test_different_thresholds_are_refused(files, hashing_embedder):
    a = run(files, ["ckpt-20k"], embedder=hashing_embedder)
    b = run(files, ["ckpt-35k"], embedder=hashing_embedder, **{"checks.mode_collapse.fail": 0.25})
    assert "setting checks.mode_collapse.fail is 0.3 in a/audit.json but 0.25 in b/audit.json" in _refusal([a, b])
    c = run(files, ["ckpt-35k"], embedder=hashing_embedder, **{"similarity.threshold": 0.8})
    message = _refusal([a, c])
    assert "setting similarity.threshold is unset in a/audit.json but 0.8 in b/audit.json" in message
    assert re.search(r"the similarity threshold is [\d.]+ \(\w+\) for ckpt-20k in a/audit.json but 0\.8 \(fixed\) "
                     r"for ckpt-35k in b/audit.json", message)


def test_a_threshold_changed_in_the_results_is_refused(week):
    last_week, today = week
    c = today.checkpoints[0]
    moved = dataclasses.replace(c, similarity=dataclasses.replace(c.similarity, threshold=0.85,
                                                                  threshold_source="calibrated"))
    message = _refusal([last_week, dataclasses.replace(today, checkpoints=[moved])])
    assert "0.85 (calibrated) for ckpt-28k in b/audit.json" in message


def test_in_memory_baseline_cannot_be_verified(week):
    last_week, today = week
    unknown = dataclasses.replace(today, baseline=dataclasses.replace(today.baseline, sha256=None))
    assert "has no file hash" in _refusal([last_week, unknown])


def test_a_different_embedding_backend_is_refused(week, hashing_embedder):
    last_week, today = week
    assert last_week.embedder.backend == "unknown"  # the hashing embedder names no runtime
    openvino = dataclasses.replace(today, embedder=dataclasses.replace(today.embedder, backend="openvino",
                                                                       precision="bf16"))
    message = _refusal([last_week, openvino])
    assert "the embedding backend is 'unknown' in a/audit.json but 'openvino' in b/audit.json" in message
    assert "the embedding precision is 'fp32' in a/audit.json but 'bf16' in b/audit.json" in message
    assert from_json(to_json(openvino)).embedder.backend == "openvino"  # audit.json keeps it


def test_schema_version_must_match(week):
    last_week, today = week
    assert "schema_version is 2 in a/audit.json but 3 in b/audit.json" in _refusal(
        [last_week, dataclasses.replace(today, schema_version=3)])


def test_same_checkpoint_twice_is_kept_once(files, hashing_embedder):
    a = run(files, ["ckpt-20k", "ckpt-35k"], embedder=hashing_embedder)
    b = run(files, ["ckpt-35k", "ckpt-28k"], embedder=hashing_embedder)
    merged = merge_audits([a, b], sources=["a", "b"])
    assert [c.name for c in merged.checkpoints] == ["ckpt-20k", "ckpt-35k", "ckpt-28k"]
    assert any("ckpt-35k is in a and b with the same samples; kept the result from a" in w for w in merged.warnings)


def test_same_name_with_different_samples_is_an_error(tmp_path, files, hashing_embedder, write_jsonl):
    a = run(files, ["ckpt-35k"], embedder=hashing_embedder)
    (tmp_path / "later").mkdir()
    rewritten = write_jsonl(tmp_path / "later" / "ckpt-35k.jsonl", healthy(80, 5))  # same name, new samples
    b = run(dict(files, **{"ckpt-35k": rewritten}), ["ckpt-35k"], embedder=hashing_embedder)
    with pytest.raises(InputError, match=r"'ckpt-35k' is in both a and b with different samples"):
        merge_audits([a, b], sources=["a", "b"])


def test_bad_arguments(week):
    with pytest.raises(InputError, match="at least one"):
        merge_audits([], sources=[])
    with pytest.raises(InputError, match="one per audit"):
        merge_audits(list(week), sources=["a"])


# ---------------------------------------------------------------------------------------------
# the release gate


@pytest.fixture
def merged(week):
    return merge_audits(list(week), sources=["a", "b"])


def test_gate_blocks_a_failing_candidate(merged):
    code, reason = release_gate(merged, candidate="ckpt-35k", current="ckpt-20k")
    assert code == 1
    assert reason.startswith("blocked: candidate ckpt-35k fails mode_collapse (") and reason.endswith(".")


def test_gate_blocks_a_candidate_ranked_below_the_current(merged):
    assert merged.checkpoint("ckpt-28k").status != "fail"
    code, reason = release_gate(merged, candidate="ckpt-28k", current="ckpt-20k")
    assert code == 1 and "ranks below the current ckpt-20k (2 vs 1 of 3)" in reason


def test_gate_passes_a_better_candidate(merged):
    code, reason = release_gate(merged, candidate="ckpt-20k", current="ckpt-28k")
    assert code == 0 and "ranks above the current ckpt-28k" in reason
    assert release_gate(merged, candidate="ckpt-20k", current=None)[0] == 0


def test_gate_fail_on_warn(merged):
    c = merged.checkpoint("ckpt-20k")
    warned = dataclasses.replace(c, status="warn", checks=[dataclasses.replace(c.checks[0], status="warn")])
    result = dataclasses.replace(merged, checkpoints=[warned, *merged.checkpoints[1:]])
    assert release_gate(result, candidate="ckpt-20k")[0] == 0
    code, reason = release_gate(result, candidate="ckpt-20k", fail_on="warn")
    assert code == 1 and "warns on mode_collapse" in reason


def test_gate_passes_a_candidate_below_the_current_only_within_noise(merged):
    from sampleaudit.checks import rank

    cur = merged.checkpoint("ckpt-20k")
    twin = dataclasses.replace(cur, name="ckpt-21k", similarity=dataclasses.replace(
        cur.similarity, high_similarity_share=cur.similarity.high_similarity_share + 0.001))
    checkpoints = [*merged.checkpoints, twin]
    result = dataclasses.replace(merged, checkpoints=checkpoints, ranking=rank(checkpoints))
    assert result.ranking.index("ckpt-21k") == result.ranking.index("ckpt-20k") + 1
    code, reason = release_gate(result, candidate="ckpt-21k", current="ckpt-20k")
    assert code == 0 and "only within noise" in reason


def test_merged_map_holds_every_checkpoint(week):
    merged = merge_audits(list(week), sources=["a", "b"])
    assert merged.map is not None and all(c.map_points for c in merged.checkpoints)
    assert {c.name for c in merged.checkpoints} == {"ckpt-20k", "ckpt-28k", "ckpt-35k"}
    assert merged.map.baseline == week[0].map.baseline
    moved = dataclasses.replace(week[1], map=dataclasses.replace(
        week[1].map, baseline=[[x + 1.0, y] for x, y in week[1].map.baseline]))
    merged = merge_audits([week[0], moved], sources=["a", "b"])
    assert merged.map is None and any("map of b is not in the same coordinates" in w for w in merged.warnings)


def test_merged_ranking_notes_follow_the_new_ranking(merged):
    pairs = list(zip(merged.ranking, merged.ranking[1:], strict=False))
    assert [(n.better, n.worse) for n in merged.ranking_notes] == pairs


def test_gate_names_unknown_checkpoints(merged):
    with pytest.raises(InputError, match=r"--candidate 'ckpt-99k' is not a checkpoint of these audits; "
                                         r"they hold: ckpt-20k, ckpt-28k, ckpt-35k"):
        release_gate(merged, candidate="ckpt-99k", current="ckpt-20k")
    with pytest.raises(InputError, match="--current 'nope'"):
        release_gate(merged, candidate="ckpt-20k", current="nope")


# ---------------------------------------------------------------------------------------------
# the command line (runs once `sampleaudit compare` is wired into cli.py)


def _has_compare_command() -> bool:
    from sampleaudit.cli import build_parser

    action = next(a for a in build_parser()._actions if a.dest == "command")
    return "compare" in action.choices


@pytest.mark.skipif(not _has_compare_command(), reason="`sampleaudit compare` is not wired into the CLI yet")
def test_cli_compare_gate_and_refusal(tmp_path, files, hashing_embedder, capsys):
    from sampleaudit import render
    from sampleaudit.cli import main
    from sampleaudit.embed.hashing import HashingEmbedder

    render(run(files, ["ckpt-20k"], embedder=hashing_embedder), tmp_path / "week1", formats=["json"])
    render(run(files, ["ckpt-28k", "ckpt-35k"], embedder=hashing_embedder), tmp_path / "today", formats=["json"])
    render(run(files, ["ckpt-35k"], embedder=HashingEmbedder(dim=128)), tmp_path / "other", formats=["json"])
    a, b, c = (str(tmp_path / d / "audit.json") for d in ("week1", "today", "other"))
    out = tmp_path / "release"
    assert main(["compare", a, b, "--out", str(out), "--format", "json,html",
                 "--candidate", "ckpt-35k", "--current", "ckpt-20k"]) == 1
    assert "blocked: candidate ckpt-35k fails mode_collapse" in capsys.readouterr().out
    assert (out / "report.html").exists() and (out / "audit.json").exists()
    assert main(["compare", a, b, "--out", str(out), "--format", "html", "--candidate", "ckpt-20k",
                 "--current", "ckpt-28k"]) == 0
    capsys.readouterr()
    assert main(["compare", a, c, "--out", str(tmp_path / "refused")]) == 2
    err = capsys.readouterr().err
    assert "the embedding dimension is 256 in" in err and err.count("\n") == 1
    assert not (tmp_path / "refused").exists()
    assert main(["compare", a, b, "--out", str(tmp_path / "unknown"), "--candidate", "ckpt-99k"]) == 2
    assert not (tmp_path / "unknown").exists()


def test_checkpoints_of_different_sizes_keep_their_own_calibrated_thresholds(tmp_path):
    """The calibrated threshold depends on the checkpoint's size: an audit of a 40- and a 60-sample
    checkpoint merges with itself, and with a second audit of the same sizes."""
    import numpy as np

    from sampleaudit import audit, merge_audits
    from sampleaudit.samples import SampleSet

    rng = np.random.default_rng(3)
    unit = lambda n: (lambda v: v / np.linalg.norm(v, axis=1, keepdims=True))(rng.normal(size=(n, 16)))  # noqa: E731
    base_path = tmp_path / "base.jsonl"
    base_path.write_text("".join(f'{{"text": "baseline text {i}"}}\n' for i in range(200)))
    from sampleaudit.samples import load_samples

    base = load_samples(base_path)
    base_x = unit(200)
    small, large = SampleSet.from_texts([f"s{i}" for i in range(40)], name="small"), \
        SampleSet.from_texts([f"l{i}" for i in range(60)], name="large")
    first = audit([small, large], baseline=base, embeddings={"small": unit(40), "large": unit(60), "base": base_x},
                  embedder_id="random-16")
    assert first.checkpoint("small").similarity.threshold != first.checkpoint("large").similarity.threshold
    other = SampleSet.from_texts([f"o{i}" for i in range(40)], name="other")
    second = audit([other], baseline=base, embeddings={"other": unit(40), "base": base_x}, embedder_id="random-16")
    merged = merge_audits([first, second], sources=["a.json", "b.json"])
    assert sorted(merged.ranking) == ["large", "other", "small"]
    assert [s.path for s in merged.sources] == ["a.json", "b.json"]
