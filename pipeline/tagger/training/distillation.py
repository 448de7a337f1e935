"""Distillation: a trained version (the teacher) taught to a student that keeps some of its
encoder layers (DistilBERT-style), learning from the teacher's soft labels as well as the gold
ones, and checked against its teacher on dialogues neither trained on."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipeline.tagger.encoding import IGNORE, WindowConfig
from pipeline.tagger.model import TaggerModel, import_torch
from pipeline.tagger.scoring import tune_thresholds
from pipeline.tagger.store import ModelInfo, load_model, read_info, teacher_shortfalls
from pipeline.tagger.training.config import DISTILL_TOLERANCE, THRESHOLD_RULES, TrainingError
from pipeline.tagger.training.tuning import SCORING_BATCH_SIZE, tune_on_dev
from pipeline.tags import LabelMap
from pipeline.types import Dialogue


def teacher_info(teacher: str | Path | ModelInfo, label_map: LabelMap) -> ModelInfo:
    """The teacher's record; refused unless its tags are the student's, word for word: the KL
    term compares the two models' tag distributions column by column."""
    info = teacher if isinstance(teacher, ModelInfo) else read_info(teacher)
    if info.label_map.id2tag() != label_map.id2tag():
        raise TrainingError(
            f"teacher {info.full_version} tags {info.scheme} {list(info.labels)}, the student "
            f"{label_map.scheme} {list(label_map.labels)}: a student must keep its teacher's "
            "scheme and labels (pass scheme= and labels= to match)"
        )
    return info



def spread_layers(teacher_layers: int, keep: int) -> list[int]:
    """``keep`` of ``teacher_layers`` layer indices, evenly spread and always with the first and
    the last (DistilBERT keeps every other layer): 2 of 3 -> [0, 2], 3 of 6 -> [0, 2, 5]."""
    if not 1 <= keep <= teacher_layers:
        raise TrainingError(f"a student keeps 1 to {teacher_layers} of its teacher's layers, not {keep}")
    if keep == 1:
        return [0]
    return [round(i * (teacher_layers - 1) / (keep - 1)) for i in range(keep)]



def prune_feed_forward(torch: Any, model: Any, width: int) -> None:
    """Keep ``width`` of each encoder layer's feed-forward units, those that matter most by weight
    (the norm of a unit's input row times the norm of its output column, the first-order
    criterion of structured pruning): two thirds of a BERT layer's multiply-adds are its
    feed-forward, so half its units is about a third less work a layer. The units kept are
    re-learnt by the distillation that follows (the student's recall is checked against its
    teacher's either way)."""
    from transformers.pytorch_utils import prune_linear_layer  # what BERT's own head pruning uses

    encoder = getattr(model, model.base_model_prefix).encoder
    full = int(model.config.intermediate_size)
    if width < 1:
        raise TrainingError(f"a student keeps at least 1 feed-forward unit a layer, not {width}")
    if width >= full:  # a teacher already as narrow keeps its own width
        return
    with torch.no_grad():
        for layer in encoder.layer:
            grow, shrink = layer.intermediate.dense, layer.output.dense
            weight = grow.weight.norm(dim=1) * shrink.weight.norm(dim=0)
            keep = torch.topk(weight, width).indices.sort().values
            layer.intermediate.dense = prune_linear_layer(grow, keep, dim=0)
            layer.output.dense = prune_linear_layer(shrink, keep, dim=1)
    model.config.intermediate_size = width


def load_student(
    teacher: ModelInfo, window: WindowConfig, num_layers: int | None,
    student_layers: Sequence[int] | None, feed_forward: int | None = None,
) -> tuple[TaggerModel, Any, list[int]]:
    """The teacher's weights, head included, with only ``student_layers`` of its encoder layers
    and, given ``feed_forward``, that many of each layer's feed-forward units (also returned: the
    indices of the layers kept)."""
    torch = import_torch()
    tagger = load_model(teacher.path, precision="fp32")
    model = tagger.model
    encoder = getattr(model, model.base_model_prefix).encoder
    n = len(encoder.layer)
    keep = list(student_layers) if student_layers else spread_layers(n, num_layers or n - 1)
    if not keep or sorted(set(keep)) != keep or keep[0] < 0 or keep[-1] >= n:
        raise TrainingError(f"student layers {keep}: distinct increasing indices below {n}")
    encoder.layer = torch.nn.ModuleList(encoder.layer[i] for i in keep)
    model.config.num_hidden_layers = len(keep)
    if feed_forward is not None:
        prune_feed_forward(torch, model, feed_forward)
    student = TaggerModel(
        model, tagger.tokenizer, teacher.label_map, window, use_token_types=teacher.use_token_types
    )
    return student, tagger.tokenizer, keep



class Distiller:
    """The teacher's soft labels, computed on the fly (eval, no grad) for the student's batch."""

    def __init__(
        self, info: ModelInfo, teacher: TaggerModel, kept: list[int], alpha: float, temperature: float,
        hidden: float = 0.0,
    ) -> None:
        if not 0 <= alpha <= 1 or temperature <= 0 or hidden < 0:
            raise TrainingError("distill_alpha must be in [0, 1], distill_temperature positive and "
                                "distill_hidden not negative")
        self.info, self.teacher, self.model, self.kept = info, teacher, teacher.model.eval(), kept
        self.alpha, self.temperature, self.hidden = alpha, temperature, hidden

    def loss(self, torch: Any, batch: dict, logits: Any, targets: Any, hard: Any,
             hidden_states: Any = None) -> Any:
        """``alpha * KL(student/T || teacher/T) * T^2 + (1 - alpha) * hard`` over target words,
        plus ``hidden`` x the mean squared distance between each kept layer's output and the
        teacher's same layer over every real token (TinyBERT's intermediate-layer loss: the
        student's layers learn to reproduce what the teacher's computed, not only its answers)."""
        with torch.no_grad():
            out = self.model(**batch, output_hidden_states=self.hidden > 0)
        words = targets != IGNORE
        t = self.temperature
        soft = torch.nn.functional.kl_div(
            torch.log_softmax(logits[words] / t, dim=-1),
            torch.log_softmax(out.logits[words] / t, dim=-1),
            reduction="batchmean", log_target=True,
        )
        total = self.alpha * soft * t * t + (1 - self.alpha) * hard
        if self.hidden > 0 and hidden_states is not None:
            real = batch["attention_mask"].bool()
            layers = [torch.nn.functional.mse_loss(hidden_states[i + 1][real], out.hidden_states[k + 1][real])
                      for i, k in enumerate(self.kept)]
            total = total + self.hidden * torch.stack(layers).mean()
        return total

    @property
    def wants_hidden_states(self) -> bool:
        return self.hidden > 0

    def facts(self) -> dict[str, Any]:
        """What ``tagger.json`` records under ``hyper.distillation``."""
        return {
            "teacher": self.info.full_version, "alpha": self.alpha,
            "temperature": self.temperature, **({"hidden": self.hidden} if self.hidden else {}),
            "teacher_layers": self.info.hyper.get("num_layers"), "kept_layers": self.kept,
        }



IMITATION_MESSAGES = 5000  # messages of its data a student's imitation thresholds are tuned on, at most


def imitation_thresholds(
    student: TaggerModel, teacher: TaggerModel, teacher_thresholds: Mapping[str, float],
    dialogues: Sequence[Dialogue], labels: tuple[str, ...], f_beta: float,
) -> tuple[dict[str, float], dict[str, dict]]:
    """Per label, the threshold at which ``student`` best reproduces its teacher's spans (the
    teacher's output at its own thresholds taken as the target, F-``f_beta`` at word level, as
    :func:`~pipeline.tagger.scoring.tune_thresholds` tunes on gold) on ``dialogues``: the
    student's whole data, up to ``IMITATION_MESSAGES`` messages in order, so the thresholds rest
    on thousands of the teacher's decisions rather than the hundred gold words of a small dev."""
    from pipeline.parallel import chunked

    picked = next(chunked(dialogues, IMITATION_MESSAGES), [])
    words, targets, ent = [], [], []
    t_probs = teacher.predict(picked, batch_size=SCORING_BATCH_SIZE)
    s_probs = student.predict(picked, batch_size=SCORING_BATCH_SIZE)
    for d, tp, sp in zip(picked, t_probs, s_probs, strict=True):
        for m, tm, sm in zip(d.messages, tp, sp, strict=True):
            words.append(sm.words)
            targets.append([s for s in teacher.to_spans(m.text, tm, dict(teacher_thresholds)) if s.label in labels])
            ent.append(student.entity_probs(sm.probs)[0])
    return tune_thresholds(words, targets, ent, labels, beta=f_beta)


def student_thresholds(
    own: Mapping[str, float], teacher: Mapping[str, float], rule: str = "imitate",
    imitation: Mapping[str, float] | None = None,
) -> tuple[dict[str, float], dict[str, Any]]:
    """The recall-first thresholds a student keeps, and the record of how they were chosen.

    Its own (tuned on its dev dialogues: the teacher's 10 in the app, about 100 name words, where
    one word moves the optimum by several grid steps) are kept, or lowered per label:
    ``"imitate"`` (the default) to the threshold at which it best reproduces its teacher's spans
    on its data (``imitation``, from :func:`imitation_thresholds`) where that is lower; ``"lower"``
    to the teacher's own threshold where that is lower; ``"own"`` keeps its own. Never above its
    own recall-first point. A label missing from the other table keeps the student's. The check
    against the teacher is scored at the thresholds returned.
    """
    if rule not in THRESHOLD_RULES:
        raise TrainingError(f"distill_thresholds must be one of {', '.join(THRESHOLD_RULES)}, not {rule!r}")
    other = {"imitate": imitation or {}, "lower": teacher, "own": {}}[rule]
    kept = {lab: min(float(t), float(other.get(lab, t))) for lab, t in own.items()}
    lowered = {lab: {"own": float(own[lab]), "kept": kept[lab]} for lab in kept if kept[lab] < float(own[lab])}
    record: dict[str, Any] = {"rule": rule, "own": {lab: float(t) for lab, t in own.items()}, "lowered": lowered}
    if rule == "imitate":
        record["imitation"] = {lab: float(t) for lab, t in (imitation or {}).items()}
    return kept, record


def teacher_check(
    teacher: TaggerModel,
    dev: list[Dialogue],
    labels: tuple[str, ...],
    f_beta: float,
    student_metrics: dict[str, Any],
    say: Callable[[str], None],
    *,
    teacher_dev: int | None,
) -> dict[str, Any] | None:
    """The student's dev F-beta and recall against its teacher's on the student's dev dialogues,
    both scored by :func:`tune_on_dev` (recall-first thresholds tuned on those dialogues for
    each model alike), so a student is judged on what it will replace; ``None`` without dev.

    ``teacher_dev`` is the number of the teacher's dev dialogues when ``dev`` is those of them
    the data holds (:func:`~pipeline.tagger.training.data.teacher_dev_split`; ``"dev": "teacher"``), ``None`` when the caller
    gave ``dev`` (``"dev": "caller"``: the caller answers for neither model having trained on it).
    """
    student = student_metrics.get("recall_first")
    if not dev or not student:
        return None
    say("scoring the teacher on the student's dev dialogues")
    _, teacher_metrics, _ = tune_on_dev(teacher, dev, labels, f_beta, False, {}, say)
    figures = (f"f{f_beta:g}", "recall")
    source: dict[str, Any] = {"dev": "caller"}
    if teacher_dev is not None:
        source = {"dev": "teacher", "teacher_dev_dialogues": teacher_dev}
    check = {
        "policy": "recall_first",
        **source,
        "dev_dialogues": len(dev),
        "teacher": {k: teacher_metrics["recall_first"][k] for k in figures},
        "student": {k: student[k] for k in figures},
        "tolerance": DISTILL_TOLERANCE,
    }
    return {**check, "passed": not teacher_shortfalls(check)}

