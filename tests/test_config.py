import pytest

from sampleaudit.config import Config, describe_defaults, load_config
from sampleaudit.errors import InputError


def test_defaults_documented_in_one_place():
    rows = {key: (value, doc) for key, value, doc in describe_defaults()}
    assert rows["checks.mode_collapse"][0] == {"warn": 0.15, "fail": 0.30}
    assert rows["similarity.threshold"][0] is None
    assert all(doc for _, doc in rows.values()), [k for k, (_, d) in rows.items() if not d]


def test_toml_overrides(tmp_path):
    p = tmp_path / "sa.toml"
    p.write_text("seed = 3\n[similarity]\nthreshold = 0.8\n[checks.mode_collapse]\nwarn = 0.1\nfail = 0.2\n")
    c = load_config(p)
    assert c.seed == 3 and c.similarity.threshold == 0.8
    assert c.checks.mode_collapse.fail == 0.2
    assert c.embed.batch_size == Config().embed.batch_size


@pytest.mark.parametrize("text, match", [
    ("[similarity]\nthreshhold = 0.8\n", r"\[similarity.threshhold\] Extra inputs are not permitted"),
    ("[similarity]\nthreshold = 'high'\n", r"\[similarity.threshold\]"),
    ("[similarity]\nthreshold = 3\n", r"less than or equal to 1"),
    ("[similarity\n", "invalid TOML"),
])
def test_bad_config_is_input_error(tmp_path, text, match):
    p = tmp_path / "sa.toml"
    p.write_text(text)
    with pytest.raises(InputError, match=match) as err:
        load_config(p)
    assert str(err.value).startswith(str(p))


def test_overrides_ignore_none():
    c = Config().with_overrides(**{"similarity.threshold": None, "seed": 5})
    assert c.seed == 5 and c.similarity.threshold is None


@pytest.mark.parametrize("section, text, match", [
    ("mode_collapse", "warn = 0.5\nfail = 0.3\n", r"warn \(0.5\) must not be above fail \(0.3\)"),
    ("coverage", "warn = 0.5\nfail = 0.7\n", r"warn \(0.5\) must not be below fail \(0.7\)"),
])
def test_warn_and_fail_levels_must_be_ordered(tmp_path, section, text, match):
    p = tmp_path / "sa.toml"
    p.write_text(f"[checks.{section}]\n{text}")
    with pytest.raises(InputError, match=match):
        load_config(p)
