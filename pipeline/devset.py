"""A development set from real tutoring text: generated names where the text has placeholders.

The real transcripts under ``../shared/data`` were anonymised upstream: the student's name became
``[STUDENT]`` (bridge) or ``Student A`` … ``Student Z`` (NCTE). Putting a generated name back at
each placeholder gives realistic, gold-labelled name positions inside genuine maths talk, while
every number, fraction and time stays exactly as the tutor and student typed it.

- Names are consistent per dialogue (each distinct placeholder is one person) and varied in form
  per occurrence: "Maria", "maria", "Maria Lopez", "Ms. Lopez" (the title stays outside the span,
  as in the synthetic corpus).
- A share of placeholders (``keep_placeholders``) is left as it is: already anonymised, so an
  unlabelled negative that a detector should not flag.
- The set is for ``bench/`` scripts and development evaluations only. It is built from text the
  project must not copy, so it is never written into the repository and never used by tests.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from pipeline.formats.native import iter_jsonl_dialogues
from pipeline.synthetic import pools as P
from pipeline.types import Dialogue, Message, Span

DEFAULT_FILES = ("bridge.jsonl", "ncte_uptake.jsonl")
PLACEHOLDER_RE = re.compile(r"\[STUDENT\]|\bStudent [A-Z]\b")
# (form, weight): how a name stands where a placeholder stood
FORMS = (("first", 50), ("lower", 20), ("full", 12), ("titled", 13), ("upper_first", 5))


def find_placeholders(text: str) -> list[re.Match]:
    return list(PLACEHOLDER_RE.finditer(text))


def _name_form(person: P.Person, rng: random.Random) -> tuple[str, str]:
    """``(prefix, name)``: ``prefix`` is a title kept outside the span ("Ms. ")."""
    form = rng.choices([f for f, _ in FORMS], weights=[w for _, w in FORMS])[0]
    if form == "first":
        return "", person.first
    if form == "lower" and len(person.first.lower()) == len(person.first):
        return "", person.first.lower()
    if form == "full":
        return "", person.full
    if form == "titled":
        return person.title(rng, adult=False) + " ", person.last
    return "", person.first


def insert_names(dialogue: Dialogue, pools: P.Pools, rng: random.Random, *, keep_placeholders: float = 0.15
                 ) -> Dialogue:
    """Replace the dialogue's placeholders by generated names and label them NAME."""
    cast = _Cast(pools, rng, keep_placeholders)
    messages = tuple(_rename(message, cast, rng) for message in dialogue.messages)
    meta = {
        **dict(dialogue.meta),
        "devset": {
            "replaced": cast.replaced,
            "kept_placeholders": cast.kept,
            "names": {k: (p.full if p else None) for k, p in cast.people.items()},
        },
    }
    return dataclasses.replace(dialogue, messages=messages, meta=meta)


class _Cast:
    """Who each placeholder of one dialogue stands for (None: the placeholder is kept), chosen at
    its first appearance; and how many placeholders were replaced or kept."""

    def __init__(self, pools: P.Pools, rng: random.Random, keep_placeholders: float):
        self.pools, self.rng, self.keep_placeholders = pools, rng, keep_placeholders
        self.people: dict[str, P.Person | None] = {}
        self.taken: set[str] = set()
        self.replaced = self.kept = 0

    def person(self, key: str) -> P.Person | None:
        if key not in self.people:
            if self.rng.random() < self.keep_placeholders:
                self.people[key] = None
            else:
                person = P.make_person(self.pools, self.rng, exclude=self.taken)
                self.taken.update((person.first, person.last))
                self.people[key] = person
        return self.people[key]


def _rename(message: Message, cast: _Cast, rng: random.Random) -> Message:
    """The message with its placeholders replaced by the cast's names, each labelled NAME, and its
    existing spans moved by what the replacements added."""
    matches = find_placeholders(message.text)
    if not matches:
        return message
    parts: list[str] = []
    spans: list[Span] = list(message.spans)
    pos = out_len = 0
    shift: list[tuple[int, int]] = []  # (old offset, delta) for existing spans
    for m in matches:
        key = m.group()
        person = cast.person(key)
        before = message.text[pos : m.start()]
        parts.append(before)
        out_len += len(before)
        if person is None:
            parts.append(key)
            out_len += len(key)
            cast.kept += 1
        else:
            prefix, name = _name_form(person, rng)
            start = out_len + len(prefix)
            parts.append(prefix + name)
            out_len += len(prefix) + len(name)
            spans.append(Span(start, start + len(name), "NAME", source="devset"))
            shift.append((m.end(), len(prefix) + len(name) - len(key)))
            cast.replaced += 1
        pos = m.end()
    parts.append(message.text[pos:])
    text = "".join(parts)
    old = [s for s in spans if s.source != "devset"]
    moved = [
        dataclasses.replace(s, start=s.start + _delta(shift, s.start), end=s.end + _delta(shift, s.start))
        for s in old
    ]
    new_spans = tuple(sorted(moved + [s for s in spans if s.source == "devset"]))
    for s in new_spans:
        s.check(text)
    return dataclasses.replace(message, text=text, spans=new_spans)


def _delta(shift: Sequence[tuple[int, int]], offset: int) -> int:
    return sum(d for at, d in shift if at <= offset)


def build_devset(
    data_dir: Path,
    seed: int = 0,
    limit: int | None = None,
    *,
    files: Iterable[str] = DEFAULT_FILES,
    keep_placeholders: float = 0.15,
    only_with_placeholders: bool = False,
) -> list[Dialogue]:
    """Dialogues of ``data_dir``'s files with generated names inserted and labelled.

    Repeated dialogue ids (bridge repeats a few excerpts verbatim) are kept once. Every dialogue is kept (those without placeholders measure what a detector removes from plain
    maths talk) unless ``only_with_placeholders``; ``limit`` keeps a seeded sample in file order.
    Dialogue ``d`` gets the same names whatever ``limit`` is: its generator is seeded by
    ``(seed, d.id)``.
    """
    data_dir = Path(data_dir)
    pools = P.build_pools(seed)
    dialogues: list[Dialogue] = []
    seen: set[str] = set()
    for name in files:
        path = data_dir / name
        if not path.exists():
            raise FileNotFoundError(f"{path} not found (expected the shared data directory)")
        with path.open(encoding="utf-8") as fh:
            found = list(iter_jsonl_dialogues(fh))
        for d in found:
            if d.id in seen:  # bridge repeats some excerpts verbatim under the same id
                continue
            seen.add(d.id)
            if only_with_placeholders and not any(find_placeholders(m.text) for m in d.messages):
                continue
            dialogues.append(d)
    if limit is not None and limit < len(dialogues):
        keep = sorted(random.Random(seed).sample(range(len(dialogues)), limit))
        dialogues = [dialogues[i] for i in keep]
    return [
        insert_names(d, pools, random.Random(f"devset:{seed}:{d.id}"), keep_placeholders=keep_placeholders)
        for d in dialogues
    ]


def main(argv: list[str] | None = None) -> int:
    from pipeline.corpus import write_jsonl
    from pipeline.synthetic.generator import dialogue_to_row

    parser = argparse.ArgumentParser(prog="python -m pipeline.devset", description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int)
    parser.add_argument("--only-with-placeholders", action="store_true")
    parser.add_argument("--out", type=Path, help="output JSONL, outside the repository (default: stdout)")
    args = parser.parse_args(argv)
    dialogues = build_devset(args.data, args.seed, args.limit, only_with_placeholders=args.only_with_placeholders)
    rows = (dialogue_to_row(d) for d in dialogues)
    if args.out:
        with args.out.open("w", encoding="utf-8") as fh:
            write_jsonl(rows, fh)
    else:
        write_jsonl(rows, sys.stdout)
    names = sum(len(m.spans) for d in dialogues for m in d.messages)
    print(f"{len(dialogues)} dialogues, {sum(len(d.messages) for d in dialogues)} messages, "
          f"{names} NAME spans", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
