"""The lexicon signal's effect on real tutoring chats, before and after.

    nice -n 10 .venv/bin/python bench/lexicon_bench.py [--data ../shared/data] [--model PATH]
        [--policy recall_first|strict] [--split dev|test|both] [--show 40]

"Before" is the junk filter without its lexicon rules (slips of frequent English, chat and maths
words, glued frequent words, words without a vowel, drawn-out words, laughter) and the
post-filter without the places of maths problems; "after" is the filter as shipped. Both run on
the held-out dialogues of :mod:`bench.classroom_bench` (its dev and test halves, seeded), and
report per half and set (tutoring: bridge chats; classroom: NCTE exchanges):

- flagged spans per 1,000 messages, and spans on no gold name per 1,000 messages (the issue's
  "junk"; names the upstream anonymisation missed count too);
- classroom name recall (a gold name overlapped by any span) and number tokens removed;
- the words the new rules dropped, counted (``--show``), to read what they cut.

Detectors: Presidio tuned (its junk stage is the same :func:`pipeline.filters.junk.junk_kind`),
and the tagger at ``--model`` (a version directory) when given. Then two checks of the rules
alone: the junk words the issue quotes, and every lower-case given name of Faker's English
locales read without the given-name list (as if the list did not know them): how many the rules
would cut, the risk for names no list knows.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from unittest import mock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.classroom_bench import SETS, dev_test_split, flagged_per_1k, load_split  # noqa: E402
from bench.tagger_bench import dev_scores, run  # noqa: E402
from pipeline.filters import junk  # noqa: E402
from pipeline.registry import build  # noqa: E402
from pipeline.tagger import postfilter  # noqa: E402
from pipeline.types import Dialogue  # noqa: E402

ISSUE_WORDS = ("gona", "goninga", "alreda", "ahah", "aight", "rightcause", "coolsta")


def without_lexicon() -> ExitStack:
    """The filters as they were before the lexicon rules and the places of maths problems."""
    stack = ExitStack()
    stack.enter_context(mock.patch.object(junk, "lexicon_kind", lambda word: None))
    stack.enter_context(mock.patch.object(junk, "is_laughter", lambda word: False))
    stack.enter_context(mock.patch.object(postfilter, "story_places", lambda dialogue, spans: {}))
    return stack


def scores(dialogues: Sequence[Dialogue], pred) -> dict:
    out = {}
    for name, prefix in SETS.items():
        idx = [i for i, d in enumerate(dialogues) if d.id.startswith(prefix)]
        ds, ps = [dialogues[i] for i in idx], [pred[i] for i in idx]
        out[name] = {**flagged_per_1k(ds, ps), **dev_scores(ds, ps)}
    return out


def dropped(dialogues: Sequence[Dialogue], before, after) -> Counter:
    """The spans before that are gone after, by their lower-cased text and label."""
    gone: Counter = Counter()
    for d, b, a in zip(dialogues, before, after, strict=True):
        for m, pb, pa in zip(d.messages, b, a, strict=True):
            kept = {(s.start, s.end) for s in pa}
            gone.update(f"{m.text[s.start:s.end].lower()} ({s.label})" for s in pb if (s.start, s.end) not in kept)
    return gone


def compare(label: str, make: Callable, dialogues: Sequence[Dialogue], show: int) -> None:
    t0 = time.perf_counter()
    with without_lexicon():
        before = run(make(), dialogues)[0]
    after = run(make(), dialogues)[0]
    b, a = scores(dialogues, before), scores(dialogues, after)
    print(f"\n{label} ({time.perf_counter() - t0:.0f} s)")
    for name in SETS:
        x, y = b[name], a[name]
        print(f"  {name:9} {x['messages']:5} messages: flagged {x['flagged_per_1k']:6.1f} -> {y['flagged_per_1k']:6.1f}, "
              f"on no gold name {x['junk_per_1k']:6.1f} -> {y['junk_per_1k']:6.1f} per 1,000; name recall "
              f"{x['name_recall']:.3f} -> {y['name_recall']:.3f} ({x['names']} names); numbers removed "
              f"{100 * x['numbers_removed']:.2f} % -> {100 * y['numbers_removed']:.2f} %")
    gone = dropped(dialogues, before, after)
    if show and gone:
        print(f"  dropped by the new rules ({sum(gone.values())} spans): "
              + ", ".join(f"{w} x{n}" for w, n in gone.most_common(show)))


def rules_alone() -> None:
    from pipeline.filters.vocabulary import _faker_names

    print("\nthe issue's junk words, flagged NAME in lower case:")
    for word in ISSUE_WORDS:
        text = f"ok {word} so"
        print(f"  {word:12} -> {junk.junk_kind(text, 3, 3 + len(word), 'NAME')}")
    import faker.providers.person as person

    english = sorted({n for n in _faker_names(("first_names", "first_names_male", "first_names_female"))
                      if n} & _english_locale_names(person))
    cut = [n for n in english if junk.lexicon_kind(n) or junk.is_laughter(n)]
    print(f"\nFaker's English-locale given names read without the given-name list: {len(cut)} of {len(english)} "
          f"({100 * len(cut) / max(1, len(english)):.1f} %) would be cut: {', '.join(cut[:40])}")


def _english_locale_names(person) -> set[str]:
    import importlib
    import pkgutil

    from pipeline.filters.vocabulary import listed_form

    names: set[str] = set()
    for module in pkgutil.iter_modules(person.__path__):
        if not module.name.startswith("en"):
            continue
        provider = importlib.import_module(f"{person.__name__}.{module.name}").Provider
        for table in ("first_names", "first_names_male", "first_names_female"):
            value = getattr(provider, table, None)
            if isinstance(value, dict | list | tuple | set | frozenset):
                names.update(n for n in map(listed_form, value) if n.isalpha())
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--gold", type=int, default=300, help="as bench/classroom_bench.py: dialogues set aside")
    parser.add_argument("--model", help="a tagger version directory to score too")
    parser.add_argument("--policy", default="recall_first", choices=("recall_first", "strict"))
    parser.add_argument("--split", default="both", choices=("dev", "test", "both"))
    parser.add_argument("--show", type=int, default=40, help="dropped words to list")
    parser.add_argument("--skip-presidio", action="store_true")
    args = parser.parse_args(argv)
    rules_alone()
    _, held_out = load_split(args.data, args.gold)
    halves = dev_test_split(held_out)
    for split in ("dev", "test") if args.split == "both" else (args.split,):
        dialogues = halves[split]
        print(f"\n=== {split}: {len(dialogues)} dialogues, {sum(len(d.messages) for d in dialogues)} messages")
        if not args.skip_presidio:
            compare("presidio tuned", lambda: build("presidio", {"preset": "tuned"}), dialogues, args.show)
        if args.model:
            compare(f"tagger {args.model} ({args.policy})",
                    lambda: build("tagger", {"model_path": args.model, "policy": args.policy}), dialogues, args.show)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
