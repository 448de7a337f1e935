"""``python -m pipeline.synthetic --dialogues 60 --seed 7 --out PATH`` writes the import format."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from pipeline.corpus import write_jsonl
from pipeline.synthetic.generator import (
    CLASSROOM_SHARE,
    HARD_NEGATIVE_SHARE,
    NAMED_SPEAKERS_SHARE,
    POLICIES,
    corpus_stats,
    dialogue_to_row,
    generate_corpus,
)
from pipeline.types import Dialogue

# The checked-in demo corpus is exactly ``python -m pipeline.synthetic --demo``: tutoring sessions
# and a few lessons (five), three of whose records name their speakers, all among the dialogues
# the demo imports with gold (its first ``DEMO_GOLD_SHARE``), so its first release shows them.
DEMO_PATH = Path(__file__).resolve().parents[2] / "annotator" / "demo" / "demo_corpus.jsonl"
DEMO_ARGS = {"dialogues": 56, "seed": 7, "min_messages": 20, "max_messages": None, "classroom": 0.05,
             "hard_negatives": 0.0, "named_speakers": 1 / 3}
DEMO_GOLD_SHARE = 0.7  # manage.py demo_setup imports these first with gold and queues the rest
TARGET_MAX = 36  # without --max-messages, plans aim at up to this many messages and may overshoot


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    low, high = _message_range(parser, args)
    started = time.perf_counter()
    dialogues = _generate(args, low, high)
    elapsed = time.perf_counter() - started
    _write(args, dialogues)
    if args.stats or args.out:
        stats = corpus_stats(dialogues)
        stats["seconds"] = round(elapsed, 3)
        print(json.dumps(stats, indent=1), file=sys.stderr)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pipeline.synthetic", description=__doc__)
    parser.add_argument("--dialogues", type=int, default=60, help="number of dialogues (default 60)")
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.add_argument("--policy", choices=POLICIES, default="strict",
                        help="strict: word-problem characters are not PII; recall_first: they are")
    parser.add_argument("--min-messages", type=int, default=None,
                        help="at least this many messages per dialogue (default 18, or --max-messages if lower)")
    parser.add_argument("--max-messages", type=int, default=None,
                        help=f"at most this many messages per dialogue (default: no cap; plans aim at "
                             f"{TARGET_MAX} or fewer and a few run longer)")
    parser.add_argument("--classroom", type=float, default=CLASSROOM_SHARE,
                        help=f"share of whole-class lesson transcripts (default {CLASSROOM_SHARE}; 0: tutoring only)")
    parser.add_argument("--hard-negatives", type=float, default=HARD_NEGATIVE_SHARE,
                        help=f"share of tutoring sessions with endearment, filler and maths-word turns "
                             f"(default {HARD_NEGATIVE_SHARE}; 0: none)")
    parser.add_argument("--named-speakers", type=float, default=NAMED_SPEAKERS_SHARE,
                        help=f"share of the lessons whose speaker labels, id and metadata name people, with "
                             f"timestamps (default {NAMED_SPEAKERS_SHARE:.2f}; 0: none)")
    parser.add_argument("--no-trap-meta", action="store_true", help="omit per-message trap records")
    parser.add_argument("--out", type=Path, help="output JSONL (default: standard output)")
    parser.add_argument("--stats", action="store_true", help="print corpus statistics to stderr")
    parser.add_argument("--demo", action="store_true",
                        help=f"write the demo corpus with its fixed settings {DEMO_ARGS} to {DEMO_PATH}")
    return parser


def _message_range(parser: argparse.ArgumentParser, args: argparse.Namespace) -> tuple[int, int]:
    """Settle ``args`` (``--demo`` fixes them all) and check them: the shares between 0 and 1, and
    the messages per dialogue as ``(low, high)`` (without a cap, plans aim at ``TARGET_MAX``)."""
    if args.demo:
        for key, value in DEMO_ARGS.items():
            setattr(args, key, value)
        args.policy, args.out = "strict", args.out or DEMO_PATH
    cap = args.max_messages
    low = args.min_messages if args.min_messages is not None else min(18, cap or 18)
    high = cap or max(low, TARGET_MAX)
    if args.dialogues < 1 or not 1 <= low <= high:
        parser.error("need --dialogues >= 1 and 1 <= --min-messages <= --max-messages")
    if not 0 <= args.classroom <= 1:
        parser.error("--classroom is a share between 0 and 1")
    if not 0 <= args.hard_negatives <= 1:
        parser.error("--hard-negatives is a share between 0 and 1")
    if not 0 <= args.named_speakers <= 1:
        parser.error("--named-speakers is a share between 0 and 1")
    return low, high


def _generate(args: argparse.Namespace, low: int, high: int) -> list[Dialogue]:
    """The corpus; under ``--demo``, the dialogues past the gold share are all tutoring sessions."""
    options = {"policy": args.policy, "length": (low, high), "max_messages": args.max_messages,
               "hard_negatives": args.hard_negatives, "named_speakers": args.named_speakers}
    dialogues = generate_corpus(args.dialogues, args.seed, classroom=args.classroom, **options)
    if args.demo:
        # the queued dialogues stay tutoring sessions (each dialogue depends only on its seed and
        # place): the demo's simulated round, and the anchoring it shows, are the sessions' own
        cut = int(args.dialogues * DEMO_GOLD_SHARE)
        dialogues[cut:] = generate_corpus(args.dialogues, args.seed, classroom=0.0, **options)[cut:]
    return dialogues


def _write(args: argparse.Namespace, dialogues: list[Dialogue]) -> None:
    """The dialogues in the import format, to ``--out`` or standard output."""
    rows = (dialogue_to_row(d) for d in dialogues)
    if args.no_trap_meta:
        rows = ({**r, "messages": [{k: v for k, v in m.items() if k != "meta"} for m in r["messages"]]}
                for r in rows)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with args.out.open("w", encoding="utf-8") as fh:
            write_jsonl(rows, fh)
    else:
        write_jsonl(rows, sys.stdout)


if __name__ == "__main__":
    raise SystemExit(main())
