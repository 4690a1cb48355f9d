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


@pytest.mark.parametrize("text, expected", [
    ("[similarity]\nthreshhold = 0.8\n", 'unknown option "similarity.threshhold" in {p}; did you mean "threshold"?'),
    ("[similarity]\ntreshold = 0.8\n", 'unknown option "similarity.treshold" in {p}; did you mean "threshold"?'),
    ("[checks.mode_colapse]\nfail = 0.3\n",
     'unknown option "checks.mode_colapse" in {p}; did you mean "checks.mode_collapse"?'),
    ("[similarity]\nthreshold = 'high'\n", "similarity.threshold in {p} must be a valid number"),
    ("[similarity]\nthreshold = 3\n", "similarity.threshold in {p} must be less than or equal to 1; got 3"),
    ("seed = -1\n", "seed in {p} must be greater than or equal to 0; got -1"),
    ("[similarity]\nhistogram_bins = 7\n",
     "similarity.histogram_bins in {p} must divide 2000 (e.g. 40, 50, 100 or 200); got 7"),
    ("[checks.coverage]\nwarn = 0.5\nfail = 0.7\n", "checks.coverage in {p}: warn (0.5) must not be below fail (0.7)"),
    ("[similarity\n", "{p}: invalid TOML"),
])
def test_bad_config_is_input_error_in_the_users_words(tmp_path, text, expected):
    p = tmp_path / "sa.toml"
    p.write_text(text)
    with pytest.raises(InputError) as err:
        load_config(p)
    assert str(err.value).startswith(expected.format(p=p))


def test_a_config_that_is_a_folder_or_not_text_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="is a folder, not a config file"):
        load_config(tmp_path)
    binary = tmp_path / "c.toml"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(InputError, match="not a TOML file"):
        load_config(binary)


def test_origins_say_where_each_setting_came_from(tmp_path):
    p = tmp_path / "sa.toml"
    p.write_text("[similarity]\nthreshold = 0.8\n")
    c = load_config(p).with_overrides(flags={"seed": "--seed"}, seed=4)
    assert c.origins == {"similarity.threshold": str(p), "seed": "--seed"}
    c = c.with_overrides(flags={"similarity.threshold": "--threshold"}, **{"similarity.threshold": 0.7})
    assert c.origin("similarity.threshold") == "--threshold"


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
