"""House rules of the tree that no linter checks.

Comments, docstrings and docs give their reason in their own words: a tracker issue cited by its
number means nothing to someone who picks up the code without the tracker, so no such reference
may appear in the sources, tests, benches or docs.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Where the rule holds: every text file under these folders, and these files at the top.
CHECKED_DIRS = ("annotator", "pipeline", "tests", "bench", "docs", "bin", "static", "templates",
                ".ci")
CHECKED_FILES = ("README.md", "Dockerfile", "docker-compose.yml", "pyproject.toml", "manage.py",
                 ".env.example")
SKIPPED_DIRS = {"__pycache__", ".venv", "node_modules", ".pytest_cache", ".ruff_cache"}
BINARY_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".ico", ".svgz", ".woff", ".woff2", ".ttf",
                   ".spacy", ".onnx", ".gz", ".zip", ".pyc", ".sqlite3"}

# The word, singular or plural and any case, then a number, maybe after "#" or a hyphen, maybe
# on the comment's next line. The pattern cannot match its own source, so this file passes too.
TRACKER_REFERENCE = re.compile(r"\bissues?[-\s#]*\d+", re.IGNORECASE)


def _checked_files(root: Path) -> list[Path]:
    found = [root / name for name in CHECKED_FILES if (root / name).is_file()]
    for folder in CHECKED_DIRS:
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*")):
            if (path.is_file() and path.suffix.lower() not in BINARY_SUFFIXES
                    and not SKIPPED_DIRS.intersection(path.relative_to(root).parts)):
                found.append(path)
    return found


def tracker_references(root: Path) -> list[str]:
    """Every "issue N" in the checked files under ``root``, as ``path:line: text``."""
    hits = []
    for path in _checked_files(root):
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue  # not text
        for match in TRACKER_REFERENCE.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            snippet = " ".join(match.group(0).split())
            hits.append(f"{path.relative_to(root)}:{line}: {snippet}")
    return hits


def test_no_comment_or_doc_points_at_a_tracker_issue():
    hits = tracker_references(ROOT)
    assert not hits, ("write the reason instead of the issue number:\n" + "\n".join(hits))


def test_the_check_finds_a_planted_reference(tmp_path):
    word = "Issue"  # spelt apart so that this file carries no reference itself
    (tmp_path / "pipeline").mkdir()
    (tmp_path / "pipeline" / "x.py").write_text(f"x = 1  # kept so ({word.lower()} 26)\n")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text(f"Fine.\n\nSee the fix ({word}\n# 7, item 2).\n")
    (tmp_path / "README.md").write_text(f"{word}s #12 and 13 are done; no issues left.\n")
    (tmp_path / "docs" / "shot.png").write_bytes(f"{word} 1".encode())  # binary: not read
    assert sorted(tracker_references(tmp_path)) == [
        f"README.md:1: {word}s #12", f"docs/a.md:3: {word} # 7", f"pipeline/x.py:1: {word.lower()} 26",
    ]
