"""docs/architecture.md is the map a newcomer reads first, so it is checked against the tree: every
path it writes exists, its map of the tree names every module (and no folder that is gone), and its
floor pictures draw exactly the floors tests/test_boundaries.py holds. A map that drifts from the
code sends readers to modules that moved; these tests make the drift fail where it happens."""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_boundaries import ANNOTATOR_FLOORS, FLOORS

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "architecture.md"
PATH_ROOTS = ("annotator/", "pipeline/", "tests/", "templates/", "bench/", "docs/", "static/")
PACKAGES = ("annotator", "pipeline")
SKIPPED_DIRS = {"migrations", "__pycache__"}


def _backticked(text: str) -> list[str]:
    return re.findall(r"`([^`\n]+)`", text)


def missing_paths(doc: str, root: Path) -> list[str]:
    """The paths written in backticks under the tree's folders that name nothing (``<area>`` stands
    for any name)."""
    missing = []
    for token in sorted(set(_backticked(doc))):
        if not token.startswith(PATH_ROOTS) or " " in token:
            continue
        pattern = re.sub(r"<[^>]+>", "*", token.rstrip("/"))
        if not any(root.glob(pattern)):
            missing.append(token)
    return missing


def _map_rows(doc: str) -> dict[str, str]:
    """The map's rows: folder (as written, with its slash) -> the rest of the row."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `([\w/]+/)` \|(.*)\|$", doc, re.MULTILINE)}


def map_gaps(doc: str, root: Path) -> list[str]:
    """Folders of Python code without a row in the map, rows of folders that are gone, and modules
    their folder's row does not name."""
    rows = _map_rows(doc)
    folders = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            rel = path.relative_to(root)
            if not SKIPPED_DIRS.intersection(rel.parts):
                folders.setdefault(f"{rel.parent.as_posix()}/", []).append(path.stem)
    gaps = [f"no row for {folder}" for folder in sorted(folders) if folder not in rows]
    gaps += [f"row for {folder}, which has no module" for folder in sorted(rows) if folder not in folders]
    for folder, stems in sorted(folders.items()):
        named = set(_backticked(rows.get(folder, "")))
        gaps += [f"{folder}{stem}.py is not in its row" for stem in stems
                 if stem != "__init__" and stem not in named and folder in rows]
    return gaps


def _picture(doc: str, heading: str) -> set[str]:
    """The words of the first drawing after ``heading``."""
    after = doc[doc.index(heading):]
    return set(re.findall(r"[\w./]+", after.split("```")[1]))


def picture_gaps(doc: str) -> list[str]:
    """Floor entries of tests/test_boundaries.py that the doc's floor pictures leave out."""
    gaps = []
    # pipeline's drawing names modules as files (``maths.py``, ``metrics/``) beside words that
    # describe them; annotator's names its infrastructure modules bare (``access  adapters``)
    for heading, floors, bare in (("## The pipeline: pure Python in floors", FLOORS, False),
                                  ("## The app in floors", ANNOTATOR_FLOORS, True)):
        drawn = _picture(doc, heading)
        for _floor, prefixes in floors:
            for module in prefixes:
                name = module.partition(".")[2].replace(".", "/")
                forms = {f"{name}.py", f"{name}/"} | ({name} if bare else set())
                if name and not forms & drawn:
                    gaps.append(f"{module} is not drawn under {heading!r}")
    return gaps


def test_every_path_in_the_architecture_doc_exists():
    missing = missing_paths(DOC.read_text(encoding="utf-8"), ROOT)
    assert not missing, "docs/architecture.md names paths that do not exist (moved? update the doc):\n" + "\n".join(missing)


def test_the_map_names_every_module():
    gaps = map_gaps(DOC.read_text(encoding="utf-8"), ROOT)
    assert not gaps, ("docs/architecture.md's map of the tree is out of date: give each module its word in its "
                      "folder's row (and each new folder a row):\n" + "\n".join(gaps))


def test_the_floor_pictures_draw_every_floor_entry():
    gaps = picture_gaps(DOC.read_text(encoding="utf-8"))
    assert not gaps, "draw each module on its floor in docs/architecture.md:\n" + "\n".join(gaps)


def test_the_checks_find_a_missing_path_module_row_and_floor(tmp_path):
    for module in ("pipeline/metrics/kept.py", "pipeline/metrics/new.py", "pipeline/gone_soon.py",
                   "annotator/services/runs.py", "annotator/migrations/0001_initial.py"):
        (tmp_path / module).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / module).write_text("")
    doc = ("Runs start in `annotator/services/<area>.py` and `annotator/services/runs.py`, not in "
           "`annotator/services/moved.py` nor `annotator/tasks/<area>.py`.\n\n"
           "| folder | modules |\n|---|---|\n| `annotator/services/` | `runs` |\n"
           "| `pipeline/metrics/` | `kept` (kept) |\n| `pipeline/old/` | `gone` |\n")
    assert missing_paths(doc, tmp_path) == ["annotator/services/moved.py", "annotator/tasks/<area>.py", "pipeline/old/"]
    assert map_gaps(doc, tmp_path) == [
        "no row for pipeline/", "row for pipeline/old/, which has no module", "pipeline/metrics/new.py is not in its row",
    ]
    undrawn = re.sub(r"\bbulk\b", "", DOC.read_text(encoding="utf-8"))
    assert picture_gaps(undrawn) == ["annotator.bulk is not drawn under '## The app in floors'"]
