"""Named speakers as a pre-label signal: name recall with speaker labels as they come and neutralised.

    nice -n 10 .venv/bin/python bench/speakers_bench.py --model MODEL_DIR [--dialogues 120] [--seed 4242]

Real classroom transcripts name their speakers ("Caleb", "Ms. Carroll") and the students and the
teacher are then named in the talk too. The files of ``../shared/data`` label speakers by role only,
so this measures on generated lessons whose every speaker label is a name or a role
(``generate_corpus(classroom=1.0, named_speakers=1.0)``, seeded, never the demo's seed): the
share of gold NAME spans overlapped by a detected span, for the tagger alone and for the default
ensemble (tagger + rules + the ``speakers`` detector, which marks mentions of a dialogue's named
speakers), each with the labels as generated and with every label replaced by its role (what a
corpus whose labels were already de-identified gives). The tagger reads roles, not labels, so its
two figures differ only by chance; the ensemble's difference is what the labels add.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.tagger_bench import dev_scores  # noqa: E402
from pipeline.registry import build  # noqa: E402
from pipeline.speakers import speaker_name  # noqa: E402
from pipeline.synthetic import generate_corpus  # noqa: E402
from pipeline.types import Dialogue  # noqa: E402


def neutralised(dialogue: Dialogue) -> Dialogue:
    """Every speaker label replaced by the message's role."""
    messages = tuple(dataclasses.replace(m, speaker=m.role or "speaker") for m in dialogue.messages)
    return dataclasses.replace(dialogue, messages=messages)


def name_recall(detector, dialogues: list[Dialogue]) -> tuple[float, int]:
    """Share of gold NAME spans overlapped by a detected span (``tagger_bench.dev_scores``), and how
    many gold names there are."""
    predicted = [[list(d.spans) for d in found] for found in detector.detect_many(dialogues)]
    scores = dev_scores(dialogues, predicted)
    return scores["name_recall"], scores["names"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", required=True, help="a tagger version directory")
    parser.add_argument("--dialogues", type=int, default=120)
    parser.add_argument("--seed", type=int, default=4242)
    args = parser.parse_args(argv)
    lessons = [d for d in generate_corpus(args.dialogues, args.seed, classroom=1.0, named_speakers=1.0,
                                          id_prefix="spk") if any(speaker_name(m.speaker) for m in d.messages)]
    print(f"{len(lessons)} generated lessons naming their speakers, "
          f"{sum(len(d.messages) for d in lessons):,} messages")
    tagger = {"model_path": args.model}
    for name, detector in (("tagger", build("tagger", tagger)), ("default ensemble", build("ensemble", {"tagger": tagger}))):
        as_they_come, names = name_recall(detector, lessons)
        neutral, _ = name_recall(detector, [neutralised(d) for d in lessons])
        print(f"  {name:17} name recall: labels as they come {as_they_come:.3f}, neutralised {neutral:.3f} "
              f"({names} gold names)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
