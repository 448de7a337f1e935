"""The automatic student: after a teacher trains, distil it (the recipe of ``STUDENT_DEFAULTS``) on
the same data, so that the student's dev is the teacher's dev dialogues, and say whether the
student may replace it (its check against the teacher passed and nothing else blocks it).

The decision is recorded in the teacher's ``tagger.json`` under ``student``: the student's version
(or none), whether it may be used, and, when not, why, in words for the Tagger page.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pipeline.tagger.store import ModelInfo, activation_blockers, update_info
from pipeline.tagger.training.config import STUDENT_DEFAULTS, TrainConfig, TrainingError


def student_config(config: TrainConfig, teacher: ModelInfo, overrides: Mapping[str, Any] | None = None) -> TrainConfig:
    """The teacher's ``config`` (its data, dev, budget, floor, seed and output) made a student's:
    ``teacher`` distilled with ``STUDENT_DEFAULTS`` and ``overrides`` (fields of :class:`TrainConfig`)."""
    recipe = {**STUDENT_DEFAULTS, **(overrides or {})}
    report = config.progress

    def progress(done: int, total: int, message: str = "") -> None:
        if report is not None:
            report(done, total, f"student: {message}")

    return replace(config, teacher=teacher.path, progress=progress, **recipe)


def skip_reason(teacher: ModelInfo, student_layers: int) -> str:
    """Why no student is distilled from ``teacher`` (empty: one is)."""
    blockers = activation_blockers(teacher)
    if blockers:
        return f"the teacher cannot become active ({'; '.join(blockers)})"
    layers = int((teacher.hyper or {}).get("num_layers") or 0)
    if layers <= student_layers:
        return f"the teacher has {layers} encoder layer{'' if layers == 1 else 's'}, no more than a student's {student_layers}"
    return ""


def distil_after(
    teacher: ModelInfo, config: TrainConfig, overrides: Mapping[str, Any] | None = None
) -> tuple[ModelInfo, ModelInfo | None]:
    """Distil the just-trained ``teacher`` (trained with ``config``) into a student, unless
    :func:`skip_reason` finds a reason not to; ``(teacher, student or None)``, the teacher's
    ``tagger.json`` rewritten with the ``student`` record (``used``: the student passed its check
    and has no other activation blocker; ``reason``: why not)."""
    from pipeline.tagger.training import train_tagger

    cfg = student_config(config, teacher, overrides)
    student, reason = None, skip_reason(teacher, int(cfg.num_layers or 0))
    if not reason:
        try:
            student = train_tagger(cfg)
        except TrainingError as exc:  # e.g. no dev dialogues to check the student on
            reason = f"it could not be distilled: {exc}"
        else:
            reason = "; ".join(activation_blockers(student))
    record = {"version": student.full_version if student else None, "used": student is not None and not reason,
              "reason": reason}
    return update_info(teacher.path, student=record), student
