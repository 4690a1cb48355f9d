"""The README is a contract: its commands are what CI runs, and every option is documented."""

import re
from pathlib import Path

from sampleaudit.config import describe_defaults

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _quickstart_commands():
    section = README.split("## Quickstart", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.+?)\n```", section)


def test_quickstart_is_two_commands_and_ci_runs_the_test_one():
    demo, tests = _quickstart_commands()
    assert demo.endswith("sampleaudit demo") and "pytest" in tests
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").strip().splitlines()
    assert ci[-1] == tests


def test_every_option_is_in_the_readme_table():
    missing = [key for key, _, _ in describe_defaults() if f"`{key}`" not in README]
    assert not missing, missing
