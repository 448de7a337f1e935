"""Versioned prompt files: ``### system``, ``### user`` and ``### reask`` sections of ``$`` templates.

A prompt's version is its file name plus a hash of its text, so a run or a release records the
exact wording it was produced with.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from string import Template

PROMPTS_DIR = Path(__file__).resolve().parent / "prompts"
SECTIONS = ("system", "user", "reask")


class PromptError(ValueError):
    """A prompt file is missing or lacks a section."""


class Prompt:
    def __init__(self, path: str | Path) -> None:
        path = Path(path)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PromptError(f"no prompt file {path.name} in {path.parent}") from None
        self.name = path.stem
        self.sha = hashlib.sha256(raw.encode("utf-8")).hexdigest()[:12]
        sections: dict[str, list[str]] = {}
        current: list[str] | None = None
        for line in raw.splitlines():
            if line.startswith("### "):
                current = sections.setdefault(line[4:].strip(), [])
            elif current is not None:
                current.append(line)
        missing = set(SECTIONS) - set(sections)
        if missing:
            raise PromptError(f"prompt {path.name} lacks section(s) {', '.join(sorted(missing))}")
        self.templates = {k: Template("\n".join(v).strip()) for k, v in sections.items()}
        self.system, self.user, self.reask = (self.templates[k] for k in SECTIONS)

    def __getitem__(self, section: str) -> Template:
        return self.templates[section]

    @property
    def version(self) -> str:
        return f"{self.name}#{self.sha}"
