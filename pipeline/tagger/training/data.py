"""The data of a training run: train/dev splits of whole dialogues and the checks on the inputs.

Splits are by dialogue, never by message, so a dialogue's names cannot leak from train to dev.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from pathlib import Path

from pipeline.synthetic import generate_corpus
from pipeline.synthetic.generator import GENERATOR_NAME
from pipeline.tagger.store import ModelInfo
from pipeline.tagger.training.config import (
    STUDENT_SYNTHETIC_SEED,
    THRESHOLD_RULES,
    TeacherDevError,
    TrainConfig,
    TrainingError,
)
from pipeline.types import Dialogue


def split_by_dialogue(
    dialogues: Sequence[Dialogue], dev_fraction: float, seed: int
) -> tuple[list[Dialogue], list[Dialogue]]:
    """A seeded train/dev split of whole dialogues (dev is empty for fewer than 2 dialogues)."""
    items = list(dialogues)
    if len(items) < 2 or dev_fraction <= 0:
        return items, []
    rng = random.Random(seed)
    order = sorted(range(len(items)), key=lambda i: items[i].id)
    rng.shuffle(order)
    n_dev = min(len(items) - 1, max(1, round(len(items) * dev_fraction)))
    dev_idx = set(order[:n_dev])
    return (
        [d for i, d in enumerate(items) if i not in dev_idx],
        [d for i, d in enumerate(items) if i in dev_idx],
    )


def teacher_dev_split(
    dialogues: Sequence[Dialogue], teacher: ModelInfo
) -> tuple[list[Dialogue], list[Dialogue]]:
    """(train, dev) for a student of ``teacher``: dev is those of ``dialogues`` whose ids are the
    teacher's dev dialogues (``ModelInfo.dev_ids``), train the rest, so the two models are
    compared on dialogues neither trained on. A split of the student's own would put dialogues
    the teacher trained on into dev and flatter the teacher; a teacher's dev the data does not
    hold leaves nothing fair to compare on, and is refused."""
    ids = set(teacher.dev_ids)
    dev = [d for d in dialogues if d.id in ids]
    if not dev:
        found = (
            f"none of its dev dialogues ({len(ids)}, e.g. {min(ids)!r}) is in the data"
            if ids else "it recorded no dev dialogue ids (trained before they were recorded)"
        )
        raise TeacherDevError(
            f"teacher {teacher.full_version}: {found}, so the student cannot be compared with it on "
            "dialogues neither trained on; distil on the data the teacher was trained on (the same "
            "gold, files and synthetic options), or give dev dialogues that neither model trained on"
        )
    return [d for d in dialogues if d.id not in ids], dev


def stable_dev_split(
    dialogues: Sequence[Dialogue], dev_fraction: float, seed: int
) -> tuple[list[Dialogue], list[Dialogue]]:
    """(train, dev) of whole dialogues, each placed by a seeded hash of its id, not by a shuffle:
    a dialogue stays on its side as the gold set grows, so a later version is never compared with
    an earlier one on dialogues the earlier one trained on."""
    if not 0 < dev_fraction < 1:
        raise TrainingError(f"dev fraction {dev_fraction} must be between 0 and 1")

    def in_dev(d: Dialogue) -> bool:
        digest = hashlib.sha256(f"{seed}:{d.id}".encode()).digest()
        return int.from_bytes(digest[:8], "big") < dev_fraction * 2**64

    return [d for d in dialogues if not in_dev(d)], [d for d in dialogues if in_dev(d)]



def counts(dialogues: Sequence[Dialogue]) -> dict[str, int]:
    return {
        "dialogues": len(dialogues),
        "messages": sum(len(d.messages) for d in dialogues),
        "spans": sum(len(m.spans) for d in dialogues for m in d.messages),
    }


def check_inputs(config: TrainConfig, teacher: ModelInfo | None) -> tuple[list[Dialogue], list[Dialogue]]:
    """Validate ``config`` and return the (train, dev) dialogues that have messages: dev as
    given, else the ``teacher``'s dev dialogues, else a seeded split."""
    name = config.name
    if name != Path(name).name or name.startswith(".") or not name.strip():
        raise TrainingError(f"model name {name!r} must be a plain directory name")
    if config.epochs < 1 or config.batch_size < 1 or config.lr <= 0:
        raise TrainingError("epochs and batch_size must be at least 1 and lr positive")
    if (config.max_steps is not None and config.max_steps < 0) or (config.eval_every or 0) < 0:
        raise TrainingError("max_steps and eval_every must not be negative")
    if config.distill_thresholds not in THRESHOLD_RULES:
        raise TrainingError(f"distill_thresholds must be one of {', '.join(THRESHOLD_RULES)}, "
                            f"not {config.distill_thresholds!r}")
    if not 0 < config.empty_window_share <= 1:
        raise TrainingError(f"empty_window_share {config.empty_window_share} must be in (0, 1]")
    if config.student_generated < 0 or (config.student_generated and teacher is None):
        raise TrainingError("student_generated is a student's (with a teacher), and not negative")
    train = [d for d in config.train_dialogues if d.messages]
    if config.dev_dialogues is not None:
        dev = [d for d in config.dev_dialogues if d.messages]
    elif teacher is not None:
        train, dev = teacher_dev_split(train, teacher)
    else:
        train, dev = split_by_dialogue(train, config.dev_fraction, config.seed)
    if config.student_generated:
        train = train + student_generated(train, config.student_generated)
    if not train:
        raise TrainingError("no training dialogues")
    if not any(m.spans for d in train for m in d.messages):
        raise TrainingError("the training dialogues carry no gold spans")
    return train, dev


def student_generated(teacher_train: Sequence[Dialogue], count: int) -> list[Dialogue]:
    """``count`` generated dialogues a student learns on beside its teacher's training data (never
    as dev: its check against the teacher stays on the teacher's dev dialogues). A student learns
    to give its teacher's answers, and a smaller one needs more text to learn them from than its
    teacher needed: these cost nothing to make and carry no project's gold. They follow the
    labelling policy of the generated dialogues in the teacher's data (strict where it has none),
    so both models learn the same rule for word-problem characters."""
    policies = {d.meta.get("policy") for d in teacher_train if d.meta.get("generator") == GENERATOR_NAME}
    policy = policies.pop() if len(policies) == 1 and None not in policies else "strict"
    return generate_corpus(count, seed=STUDENT_SYNTHETIC_SEED, policy=policy, id_prefix="student")
