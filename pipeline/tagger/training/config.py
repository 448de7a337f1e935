"""What a training run is asked to do: :class:`TrainConfig`, its defaults, and its errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from pipeline.tagger.encoding import WindowConfig
from pipeline.tagger.store import DEFAULT_ROOT, ModelInfo
from pipeline.types import Dialogue

Progress = Callable[[int, int, str], None]

DEFAULT_NUM_LAYERS = 3  # encoder layers kept: the throughput target met, names and numbers kept
# The distillation recipe measured with bench/tagger_bench.py --student (docs/tagger.md): 2 of the
# 3-layer teacher's layers, half of each layer's feed-forward units, and 300 generated dialogues of
# its own beside the teacher's data (narrower students taught on the teacher's data alone fell
# behind it; 1-layer students, taught on more, flagged twice the junk); 5 epochs, as the student
# trained for 3 lost 0.010 dev name recall.
STUDENT_DEFAULTS: dict[str, int] = {
    "num_layers": 2, "student_feed_forward": 768, "student_generated": 300, "epochs": 5, "patience": 2,
}
DISTILL_ALPHA = 0.5  # weight of the teacher's soft labels against the gold ones
DISTILL_TEMPERATURE = 2.0
# How a student's recall-first thresholds are chosen (distillation.student_thresholds).
THRESHOLD_RULES = ("imitate", "lower", "own")
# Dev F-beta and recall a student may lose against its teacher on the same dev dialogues and still
# become active: the bar any faster model must meet (every quality figure within 0.01 of
# the teacher's).
DISTILL_TOLERANCE = 0.01
PRECISION_TOLERANCE = 0.01  # dev F1 an int8 or bf16 model may lose against fp32
# A version whose dev F-beta (recall-first thresholds) ends below this is taken as diverged and
# may never become active: the demo tagger scores about 0.9, a run cut off in warm-up about 0.7,
# and a model that collapsed to "no PII anywhere" scores near 0.
MIN_DEV_SCORE = 0.5
# The seeds of generated training dialogues. They differ by path, and each is the value that path
# has always trained with (the same options give the same dialogues, so a student distilled with
# its teacher's options finds the teacher's dev dialogues by id):
STUDENT_SYNTHETIC_SEED = 4321  # a student's own generated dialogues (data.student_generated)
SYNTHETIC_SEED = 1234  # the app's and the command's training data (annotator.services.tagger)
RETRAIN_SYNTHETIC_SEED = 2026  # a retrain's generated dialogues (pipeline.tagger.retrain)


class TrainingError(ValueError):
    """The training request cannot be carried out (no data, bad settings)."""


class TeacherDevError(TrainingError):
    """A student cannot be scored against its teacher: none of the teacher's dev dialogues are in
    the data and no dev dialogues were given."""


@dataclass(frozen=True)
class TrainConfig:
    """One training run: gold ``train_dialogues`` in, a version saved under ``out_dir/name/``.

    ``dev_dialogues`` (or, when ``None``, a ``dev_fraction`` of the training dialogues split off by
    dialogue) drive early stopping on F-``f_beta`` and the per-label thresholds saved for the
    ``recall_first`` policy (use ``f_beta=5`` for an even more recall-hungry operating point).
    ``outside_weight`` scales the loss of ``O`` words (below 1: PII words count more).
    ``num_layers`` keeps only the encoder's first layers (default 3 of MiniLM's 6: half the
    work of the full encoder; 4 is about 0.015 demo F2 better and a third slower; ``None`` keeps
    them all).
    ``max_seconds`` budgets the optimisation steps only (forward, backward, update; not loading,
    encoding, dev scoring or export): training stops after the step that passes it, the best
    checkpoint so far is kept, and ``training`` in ``tagger.json`` says how many steps ran of how
    many planned. Such a version, one whose loss went non-finite, and one whose dev F-beta ends
    under ``min_dev_score`` are saved but never usable (``store.activation_blockers``).
    ``progress(done, total, message)`` is called after every batch. ``export_onnx`` exports and
    verifies the saved version to ONNX as the run's last step (``onnx_export.export_after_training``).

    ``teacher`` (a saved version directory or its ModelInfo) distils that model instead of
    fine-tuning the base: the student starts from the teacher's weights, keeping
    ``student_layers`` of its encoder layers (default: ``num_layers`` of them, spread evenly, so
    2 of 3 keeps layers 0 and 2) and, with ``student_feed_forward``, that many of each kept
    layer's feed-forward units (those that weigh most: ``distillation.prune_feed_forward``), and
    learns from ``distill_alpha`` x the teacher's soft labels
    (KL divergence at ``distill_temperature``) plus the rest x the gold loss, on the same words,
    and, with ``distill_hidden`` above 0, that weight x the distance between its kept layers'
    outputs and the teacher's same layers (TinyBERT's intermediate-layer loss).
    Its recall-first thresholds are, per label, the lower of those tuned on its dev and those at
    which it best reproduces its teacher's spans on its data (``distill_thresholds="imitate"``;
    ``"lower"``: the teacher's own thresholds; ``"own"`` keeps its own:
    ``distillation.student_thresholds``).
    With ``student_generated``, it also learns on that many generated dialogues of its own
    (``data.student_generated``; never its dev).
    Its window defaults to the teacher's; scheme and labels must be the teacher's.
    Without ``dev_dialogues`` the student's dev is the teacher's (``data.teacher_dev_split``).
    ``tagger.json`` records the teacher's version under ``distilled_from``, and under
    ``hyper.distillation.check`` both models scored on that dev (``distillation.teacher_check``):
    a student that falls behind cannot become active.

    ``init_from`` (a saved version directory or its ModelInfo) warm-starts from that version: its
    weights, head, window and layers, instead of the base model (its scheme and labels must be
    the ones asked for; :class:`TrainingError` otherwise). ``tagger.json`` records it under
    ``warm_started_from``. ``max_steps`` caps the optimisation steps as a planned stop (unlike
    ``max_seconds``, reaching it does not block the version: ``stopped`` is ``"step budget"``);
    ``eval_every`` scores dev every that many steps instead of once an epoch, so ``patience``
    counts those scorings and early stopping can end a short warm-started run mid-epoch.
    ``empty_window_share`` keeps that share of the training windows with no PII word in them
    (drawn afresh each epoch; 1 keeps all): the steps go to the windows that teach names.
    """

    train_dialogues: Sequence[Dialogue]
    dev_dialogues: Sequence[Dialogue] | None = None
    name: str = "tagger"
    out_dir: str | Path = DEFAULT_ROOT
    base_model: str | None = None
    scheme: str = "bio"
    labels: Sequence[str] | None = None
    epochs: int = 3
    lr: float = 3e-4
    batch_size: int = 4
    num_layers: int | None = DEFAULT_NUM_LAYERS
    outside_weight: float = 0.5
    seed: int = 13
    f_beta: float = 2.0
    dev_fraction: float = 0.1
    patience: int = 1
    window: WindowConfig | None = None
    freeze_embeddings: bool = True
    check_precision: bool = True
    max_seconds: float | None = None
    min_dev_score: float = MIN_DEV_SCORE
    progress: Progress | None = None
    teacher: str | Path | ModelInfo | None = None
    student_layers: Sequence[int] | None = None
    student_feed_forward: int | None = None
    student_generated: int = 0
    distill_alpha: float = DISTILL_ALPHA
    distill_temperature: float = DISTILL_TEMPERATURE
    distill_hidden: float = 0.0
    distill_thresholds: str = "imitate"
    export_onnx: bool = True
    init_from: str | Path | ModelInfo | None = None
    max_steps: int | None = None
    eval_every: int | None = None
    empty_window_share: float = 1.0

    def hyper(self) -> dict[str, object]:
        """The hyper-parameters ``tagger.json`` records under ``hyper``."""
        return {
            "epochs": self.epochs, "lr": self.lr, "batch_size": self.batch_size, "seed": self.seed,
            "patience": self.patience, "outside_weight": self.outside_weight,
            "freeze_embeddings": self.freeze_embeddings,
            **({"max_steps": self.max_steps} if self.max_steps else {}),
            **({"eval_every": self.eval_every} if self.eval_every else {}),
            **({"empty_window_share": self.empty_window_share} if self.empty_window_share < 1 else {}),
            **({"student_generated": self.student_generated} if self.student_generated else {}),
        }
