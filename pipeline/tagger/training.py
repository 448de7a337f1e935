"""Fine-tuning: gold dialogues in, a versioned model directory out.

``train_tagger`` splits by dialogue (never by message, so a dialogue's names cannot leak from
train to dev), trains with length-bucketed, dynamically padded batches, stops early on dev F-beta,
tunes one threshold per label on dev for recall-first operation, checks whether int8 dynamic
quantisation and bfloat16 keep F1 within 0.01 of fp32, and saves everything under
``<out_dir>/<name>/<version>/``.

Costs are kept for the 2-core machines it runs on: the word-embedding matrix is frozen (it is
most of the parameters and the optimiser's time), windows are packed, the encoder cut to 3 layers.
With ``teacher=`` a trained version is distilled into a student that keeps some of its layers
(DistilBERT-style): fewer layers, the teacher's soft labels as well as the gold ones.
"""

from __future__ import annotations

import copy
import hashlib
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.tagger.encoding import IGNORE, WindowConfig, WindowEncoder
from pipeline.tagger.model import (
    TaggerModel,
    TaggerUnavailableError,
    collate,
    default_base_model,
    import_torch,
    length_batches,
    offline_env,
    set_threads,
)
from pipeline.tagger.onnx_export import export_after_training
from pipeline.tagger.scoring import span_scores, tune_thresholds
from pipeline.tagger.store import (
    DEFAULT_ROOT,
    ModelInfo,
    data_hash,
    load_model,
    read_info,
    teacher_shortfalls,
    write_model,
)
from pipeline.tags import LabelMap
from pipeline.types import DEFAULT_LABELS, Dialogue, Span

Progress = Callable[[int, int, str], None]

DEFAULT_NUM_LAYERS = 3  # encoder layers kept: the throughput target met, names and numbers kept
# The distillation recipe measured with bench/tagger_bench.py --student (docs/tagger.md): 2 of the
# 3-layer teacher's layers; 5 epochs, as the student trained for 3 lost 0.010 dev name recall.
STUDENT_DEFAULTS: dict[str, int] = {"num_layers": 2, "epochs": 5, "patience": 2}
DISTILL_ALPHA = 0.5  # weight of the teacher's soft labels against the gold ones
DISTILL_TEMPERATURE = 2.0
# Dev F-beta and recall a student may lose against its teacher on the same dev dialogues and still
# become active: issue 14's bar (every quality figure within 0.01 of the teacher's).
DISTILL_TOLERANCE = 0.01
PRECISION_TOLERANCE = 0.01  # dev F1 an int8 or bf16 model may lose against fp32
# A version whose dev F-beta (recall-first thresholds) ends below this is taken as diverged and
# may never become active: the demo tagger scores about 0.9, a run cut off in warm-up about 0.7,
# and a model that collapsed to "no PII anywhere" scores near 0.
MIN_DEV_SCORE = 0.5


class TrainingError(ValueError):
    """The training request cannot be carried out (no data, bad settings)."""


class TeacherDevError(TrainingError):
    """A student cannot be scored against its teacher: none of the teacher's dev dialogues are in
    the data and no dev dialogues were given."""


DEMO_SEED = 7  # pipeline/synthetic/__main__.py DEMO_ARGS: the demo corpus's seed
SYNTHETIC_SEED = 2026


def collect_training_data(
    dialogues: Sequence[Dialogue] = (),
    *,
    jsonl_paths: Sequence[str | Path] = (),
    synthetic_n: int = 0,
    synthetic_seed: int = SYNTHETIC_SEED,
    synthetic_policy: str = "strict",
) -> list[Dialogue]:
    """Gold dialogues + labelled JSONL/CSV files + ``synthetic_n`` generated dialogues, in one list.

    What ``manage.py train_tagger --project SLUG [--jsonl PATH] [--synthetic N]`` and the Celery
    job pass to :func:`train_tagger`. Dialogue ids are prefixed by source so they stay unique.
    The demo corpus's seed is refused: the demo gold must stay unseen.
    """
    out = [_prefixed(d, "gold") for d in dialogues]
    for k, path in enumerate(jsonl_paths):
        from pipeline.formats import read_corpus

        out.extend(_prefixed(d, f"file{k}") for d in read_corpus(path))
    if synthetic_n > 0:
        if synthetic_seed == DEMO_SEED:
            raise TrainingError(
                f"synthetic seed {DEMO_SEED} generates the demo corpus; pick another seed"
            )
        from pipeline.synthetic import generate_corpus

        out.extend(
            generate_corpus(synthetic_n, synthetic_seed, policy=synthetic_policy, id_prefix="synth")
        )
    return out


def _prefixed(d: Dialogue, prefix: str) -> Dialogue:
    return replace(d, id=f"{prefix}:{d.id}")


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


def _seed_everything(torch: Any, seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % (2**32))
    torch.manual_seed(seed)


def _counts(dialogues: Sequence[Dialogue]) -> dict[str, int]:
    return {
        "dialogues": len(dialogues),
        "messages": sum(len(d.messages) for d in dialogues),
        "spans": sum(len(m.spans) for d in dialogues for m in d.messages),
    }


def evaluate_model(
    tagger: TaggerModel,
    dialogues: Sequence[Dialogue],
    *,
    beta: float,
    thresholds: dict[str, float] | None = None,
    batch_size: int = 64,
) -> tuple[dict, list]:
    """Exact-span scores of ``tagger`` on gold ``dialogues`` (raw model output, no post-filter)."""
    probs = tagger.predict(dialogues, batch_size=batch_size)
    known = set(tagger.label_map.labels)
    gold, pred = [], []
    for d, dp in zip(dialogues, probs, strict=True):
        for m, mp in zip(d.messages, dp, strict=True):
            gold.append([s for s in m.spans if s.label in known])
            pred.append(tagger.to_spans(m.text, mp, thresholds or {}))
    return span_scores(gold, pred, beta=beta), probs


def train_tagger(
    train_dialogues: Sequence[Dialogue],
    dev_dialogues: Sequence[Dialogue] | None = None,
    *,
    name: str = "tagger",
    out_dir: str | Path = DEFAULT_ROOT,
    base_model: str | None = None,
    scheme: str = "bio",
    labels: Sequence[str] | None = None,
    epochs: int = 3,
    lr: float = 3e-4,
    batch_size: int = 4,
    num_layers: int | None = DEFAULT_NUM_LAYERS,
    outside_weight: float = 0.5,
    seed: int = 13,
    f_beta: float = 2.0,
    dev_fraction: float = 0.1,
    patience: int = 1,
    window: WindowConfig | None = None,
    freeze_embeddings: bool = True,
    check_precision: bool = True,
    max_seconds: float | None = None,
    min_dev_score: float = MIN_DEV_SCORE,
    progress: Progress | None = None,
    teacher: str | Path | ModelInfo | None = None,
    student_layers: Sequence[int] | None = None,
    distill_alpha: float = DISTILL_ALPHA,
    distill_temperature: float = DISTILL_TEMPERATURE,
) -> ModelInfo:
    """Fine-tune a token classifier on gold ``train_dialogues``; save and return its ModelInfo.

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
    ``progress(done, total, message)`` is called after every batch.

    ``teacher`` (a saved version directory or its ModelInfo) distils that model instead of
    fine-tuning the base: the student starts from the teacher's weights, keeping
    ``student_layers`` of its encoder layers (default: ``num_layers`` of them, spread evenly, so
    2 of 3 keeps layers 0 and 2), and learns from ``distill_alpha`` x the teacher's soft labels
    (KL divergence at ``distill_temperature``) plus the rest x the gold loss, on the same words.
    Its window defaults to the teacher's; scheme and labels must be the teacher's.
    Without ``dev_dialogues`` the student's dev is the teacher's (:func:`teacher_dev_split`).
    ``tagger.json`` records the teacher's version under ``distilled_from``, and under
    ``hyper.distillation.check`` both models scored on that dev (:func:`teacher_check`): a student
    that falls behind cannot become active.
    """
    started = time.perf_counter()
    cpu_started = time.process_time()
    report = progress or (lambda done, total, message: None)
    labels = tuple(labels or DEFAULT_LABELS)
    label_map = LabelMap(scheme, labels)
    teacher_info = _teacher_info(teacher, label_map) if teacher is not None else None
    train, dev = _check_inputs(
        train_dialogues, dev_dialogues, name=name, epochs=epochs, batch_size=batch_size, lr=lr,
        dev_fraction=dev_fraction, seed=seed, teacher=teacher_info,
    )
    torch = _prepare_torch(seed)
    base, window, tagger, tokenizer, distiller = _models_to_train(
        label_map, teacher_info, base_model=base_model, window=window, num_layers=num_layers,
        student_layers=student_layers, alpha=distill_alpha, temperature=distill_temperature,
    )
    loop = _TrainingLoop(
        torch, tagger, WindowEncoder(tokenizer, tagger.label_map, window), train, dev,
        epochs=epochs, lr=lr, batch_size=batch_size, outside_weight=outside_weight, seed=seed,
        f_beta=f_beta, patience=patience, freeze_embeddings=freeze_embeddings,
        max_seconds=max_seconds, report=report, distiller=distiller,
    )
    loop.run()
    total = loop.total
    thresholds, dev_metrics, checks = _tune_on_dev(
        tagger, dev, labels, f_beta, check_precision,
        {"history": loop.history, "best_epoch": loop.best_epoch, "stopped": loop.stopped},
        lambda message: report(total, total, message),
    )
    check = (
        teacher_check(distiller.teacher, dev, labels, f_beta, dev_metrics,
                      lambda message: report(total, total, message),
                      teacher_dev=None if dev_dialogues is not None else len(distiller.info.dev_ids))
        if distiller is not None else None
    )
    elapsed = time.perf_counter() - started

    info = _model_info(
        torch, tagger, train, dev, name=name, base=base, scheme=scheme, labels=labels,
        window=window, thresholds=thresholds, f_beta=f_beta, dev_metrics=dev_metrics,
        checks=checks, elapsed=elapsed, cpu_started=cpu_started, steps=loop.done,
        training=loop.facts(dev_metrics, f_beta, min_dev_score),
        hyper={
            "epochs": epochs, "lr": lr, "batch_size": batch_size, "seed": seed,
            "patience": patience, "outside_weight": outside_weight,
            "freeze_embeddings": freeze_embeddings,
            **({"distillation": {**distiller.facts(), "check": check}} if distiller else {}),
        },
    )
    if distiller:
        info = replace(info, distilled_from=distiller.info.full_version)
    report(total, total, "saving")
    saved = write_model(Path(out_dir) / name / info.version, info, tagger.model, tokenizer)
    report(total, total, f"saved {saved.full_version}")
    saved = export_after_training(saved, dev, lambda done, all_, message: report(total, total, message))
    return saved


# -- the phases of train_tagger ---------------------------------------------------------------


def _check_inputs(
    train_dialogues: Sequence[Dialogue],
    dev_dialogues: Sequence[Dialogue] | None,
    *,
    name: str,
    epochs: int,
    batch_size: int,
    lr: float,
    dev_fraction: float,
    seed: int,
    teacher: ModelInfo | None,
) -> tuple[list[Dialogue], list[Dialogue]]:
    """Validate the arguments and return the (train, dev) dialogues that have messages: dev as
    given, else the ``teacher``'s dev dialogues, else a seeded split."""
    if name != Path(name).name or name.startswith(".") or not name.strip():
        raise TrainingError(f"model name {name!r} must be a plain directory name")
    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise TrainingError("epochs and batch_size must be at least 1 and lr positive")
    train = [d for d in train_dialogues if d.messages]
    if dev_dialogues is not None:
        dev = [d for d in dev_dialogues if d.messages]
    elif teacher is not None:
        train, dev = teacher_dev_split(train, teacher)
    else:
        train, dev = split_by_dialogue(train, dev_fraction, seed)
    if not train:
        raise TrainingError("no training dialogues")
    if not any(m.spans for d in train for m in d.messages):
        raise TrainingError("the training dialogues carry no gold spans")
    return train, dev


def _prepare_torch(seed: int) -> Any:
    """torch, offline and seeded, with transformers' logging quiet."""
    offline_env()
    torch = import_torch()
    try:
        from transformers.utils import logging as hf_logging
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise TaggerUnavailableError("the tagger needs transformers") from exc
    hf_logging.set_verbosity_error()
    set_threads(torch)
    _seed_everything(torch, seed)
    return torch


def _load_base(
    base: str, label_map: LabelMap, window: WindowConfig, num_layers: int | None
) -> tuple[TaggerModel, Any]:
    """The base encoder with a fresh token-classification head, wrapped as a TaggerModel."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    if not getattr(tokenizer, "is_fast", False):
        raise TrainingError(f"{base}: the tagger needs a fast tokenizer (offsets)")
    extra = {"num_hidden_layers": int(num_layers)} if num_layers else {}
    model = AutoModelForTokenClassification.from_pretrained(
        base,
        **extra,
        num_labels=label_map.num_tags,
        id2label=label_map.id2tag(),
        label2id={t: i for i, t in label_map.id2tag().items()},
    )
    use_types = int(getattr(model.config, "type_vocab_size", 0) or 0) >= 2
    return TaggerModel(model, tokenizer, label_map, window, use_token_types=use_types), tokenizer


def _teacher_info(teacher: str | Path | ModelInfo, label_map: LabelMap) -> ModelInfo:
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


def _load_student(
    teacher: ModelInfo, window: WindowConfig, num_layers: int | None,
    student_layers: Sequence[int] | None,
) -> tuple[TaggerModel, Any, list[int]]:
    """The teacher's weights, head included, with only ``student_layers`` of its encoder layers
    (also returned: the indices kept)."""
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
    student = TaggerModel(
        model, tagger.tokenizer, teacher.label_map, window, use_token_types=teacher.use_token_types
    )
    return student, tagger.tokenizer, keep


def _models_to_train(
    label_map: LabelMap,
    teacher: ModelInfo | None,
    *,
    base_model: str | None,
    window: WindowConfig | None,
    num_layers: int | None,
    student_layers: Sequence[int] | None,
    alpha: float,
    temperature: float,
) -> tuple[str, WindowConfig, TaggerModel, Any, _Distiller | None]:
    """``(base, window, tagger, tokenizer, distiller)``: the base model cut to ``num_layers``,
    or, given a ``teacher``, its student (the teacher's window unless another is given) and the
    distiller that runs the teacher beside it."""
    if teacher is None:
        base = str(base_model or default_base_model())
        window = window or WindowConfig()
        tagger, tokenizer = _load_base(base, label_map, window, num_layers)
        return base, window, tagger, tokenizer, None
    window = window or WindowConfig.from_dict(teacher.window)
    tagger, tokenizer, kept = _load_student(teacher, window, num_layers, student_layers)
    distiller = _Distiller(teacher, load_model(teacher.path, precision="fp32"), kept, alpha, temperature)
    return teacher.base_model, window, tagger, tokenizer, distiller


class _Distiller:
    """The teacher's soft labels, computed on the fly (eval, no grad) for the student's batch."""

    def __init__(
        self, info: ModelInfo, teacher: TaggerModel, kept: list[int], alpha: float, temperature: float
    ) -> None:
        if not 0 <= alpha <= 1 or temperature <= 0:
            raise TrainingError("distill_alpha must be in [0, 1] and distill_temperature positive")
        self.info, self.teacher, self.model, self.kept = info, teacher, teacher.model.eval(), kept
        self.alpha, self.temperature = alpha, temperature

    def loss(self, torch: Any, batch: dict, logits: Any, targets: Any, hard: Any) -> Any:
        """``alpha * KL(student/T || teacher/T) * T^2 + (1 - alpha) * hard`` over target words."""
        with torch.no_grad():
            teacher_logits = self.model(**batch).logits
        words = targets != IGNORE
        t = self.temperature
        soft = torch.nn.functional.kl_div(
            torch.log_softmax(logits[words] / t, dim=-1),
            torch.log_softmax(teacher_logits[words] / t, dim=-1),
            reduction="batchmean", log_target=True,
        )
        return self.alpha * soft * t * t + (1 - self.alpha) * hard

    def facts(self) -> dict[str, Any]:
        """What ``tagger.json`` records under ``hyper.distillation``."""
        return {
            "teacher": self.info.full_version, "alpha": self.alpha,
            "temperature": self.temperature,
            "teacher_layers": self.info.hyper.get("num_layers"), "kept_layers": self.kept,
        }


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
    both scored by :func:`_tune_on_dev` (recall-first thresholds tuned on those dialogues for
    each model alike), so a student is judged on what it will replace; ``None`` without dev.

    ``teacher_dev`` is the number of the teacher's dev dialogues when ``dev`` is those of them
    the data holds (:func:`teacher_dev_split`; ``"dev": "teacher"``), ``None`` when the caller
    gave ``dev`` (``"dev": "caller"``: the caller answers for neither model having trained on it).
    """
    student = student_metrics.get("recall_first")
    if not dev or not student:
        return None
    say("scoring the teacher on the student's dev dialogues")
    _, teacher_metrics, _ = _tune_on_dev(teacher, dev, labels, f_beta, False, {}, say)
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


class _TrainingLoop:
    """Epochs of AdamW over shuffled length-bucketed windows, early-stopped on dev F-beta;
    the best epoch's weights are loaded back at the end."""

    def __init__(
        self, torch: Any, tagger: TaggerModel, encoder: WindowEncoder, train: list[Dialogue],
        dev: list[Dialogue], *, epochs: int, lr: float, batch_size: int, outside_weight: float,
        seed: int, f_beta: float, patience: int, freeze_embeddings: bool,
        max_seconds: float | None, report: Progress, distiller: _Distiller | None = None,
    ) -> None:
        self.torch, self.tagger, self.model = torch, tagger, tagger.model
        self.distiller = distiller
        self.encoder, self.train, self.dev = encoder, train, dev
        self.epochs, self.batch_size, self.seed = epochs, batch_size, seed
        self.f_beta, self.patience, self.max_seconds, self.report = f_beta, patience, max_seconds, report
        self.step_seconds = 0.0  # optimisation time only: what max_seconds budgets
        self.diverged_at: int | None = None
        self.params, self.optimizer = self._optimizer(lr, freeze_embeddings)
        self.first = self.epoch_batches(0)
        self.total = len(self.first) * epochs
        warmup = self.warmup = max(1, int(0.06 * self.total))
        total = self.total
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer,
            lambda step: min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup))),
        )
        self.class_weight = torch.ones(tagger.label_map.num_tags)
        self.class_weight[0] = outside_weight  # rarer PII tags weigh more: recall first
        self.best_f, self.best_state, self.best_epoch, self.bad, self.done = -1.0, None, 0, 0, 0
        self.history: list[dict] = []
        self.stopped = "epochs"

    def _optimizer(self, lr: float, freeze_embeddings: bool) -> tuple[list, Any]:
        model = self.model
        if freeze_embeddings:
            model.get_input_embeddings().weight.requires_grad_(False)
        head_names = {"classifier.weight", "classifier.bias"}
        body = [p for n, p in model.named_parameters() if p.requires_grad and n not in head_names]
        head = [p for n, p in model.named_parameters() if p.requires_grad and n in head_names]
        optimizer = self.torch.optim.AdamW(
            [{"params": body, "lr": lr}, {"params": head, "lr": lr * 10}], weight_decay=0.01
        )
        return body + head, optimizer

    def epoch_batches(self, epoch: int) -> list[list]:
        rng = random.Random(self.seed * 1000 + epoch)
        windows = [
            w
            for d in self.train
            for w in self.encoder.encode(d, with_labels=True, rng=rng)
            if w.positions
        ]
        batches = [[windows[i] for i in b] for b in length_batches(windows, self.batch_size)]
        rng.shuffle(batches)
        return batches

    def run(self) -> None:
        for epoch in range(self.epochs):
            losses = self._train_epoch(epoch)
            if self.stopped == "diverged":  # nan weights: nothing to score; the best epoch is kept
                self.history.append({"epoch": epoch + 1, "loss": None})
                break
            entry: dict[str, Any] = {"epoch": epoch + 1, "loss": round(float(np.mean(losses)), 5)}
            self._score_epoch(epoch, entry)
            self.history.append(entry)
            if self.stopped == "time limit":
                break
            if self.dev and self.bad >= self.patience and epoch + 1 < self.epochs:
                self.stopped = "early stopping"
                break
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        self.model.eval()

    def _train_epoch(self, epoch: int) -> list[float]:
        torch, model = self.torch, self.model
        batches = self.first if epoch == 0 else self.epoch_batches(epoch)
        model.train()
        losses: list[float] = []
        for batch_windows in batches:
            t0 = time.perf_counter()
            batch = collate(torch, batch_windows, self.tagger.pad_id, with_labels=True)
            if not self.tagger.use_token_types:
                batch.pop("token_type_ids")
            targets = batch.pop("labels")
            logits = model(**batch).logits
            loss = torch.nn.functional.cross_entropy(
                logits.view(-1, logits.shape[-1]), targets.view(-1), weight=self.class_weight
            )
            if self.distiller is not None:
                loss = self.distiller.loss(torch, batch, logits, targets, loss)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(self.params, 1.0)
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
            self.step_seconds += time.perf_counter() - t0
            losses.append(float(loss.detach()))
            self.done += 1
            if not math.isfinite(losses[-1]):
                self.stopped, self.diverged_at = "diverged", self.done
                break
            self.report(
                self.done, self.total,
                f"epoch {epoch + 1}/{self.epochs}, loss {np.mean(losses[-50:]):.4f}",
            )
            if self.max_seconds and self.step_seconds >= self.max_seconds:
                self.stopped = "time limit"
                break
        return losses

    def facts(self, dev_metrics: dict[str, Any], f_beta: float, min_dev_score: float) -> dict[str, Any]:
        """What ``tagger.json`` records under ``training``, for ``store.activation_blockers``."""
        key = f"f{f_beta:g}"
        score = (dev_metrics.get("recall_first") or {}).get(key)
        return {
            "steps": self.done, "planned_steps": self.total, "warmup_steps": self.warmup,
            "stopped": self.stopped, "max_seconds": self.max_seconds,
            "step_seconds": round(self.step_seconds, 2), "diverged_at_step": self.diverged_at,
            "dev_metric": key, "dev_score": score, "min_dev_score": min_dev_score,
        }

    def _score_epoch(self, epoch: int, entry: dict[str, Any]) -> None:
        if not self.dev:
            self.best_epoch = epoch + 1
            return
        self.report(self.done, self.total, f"epoch {epoch + 1}: scoring dev")
        scores, _ = evaluate_model(self.tagger, self.dev, beta=self.f_beta)
        f = scores[f"f{self.f_beta:g}"]
        entry["dev"] = {k: scores[k] for k in ("precision", "recall", "f1", f"f{self.f_beta:g}")}
        if f > self.best_f:
            self.best_f, self.best_epoch, self.bad = f, epoch + 1, 0
            self.best_state = copy.deepcopy(self.model.state_dict())
        else:
            self.bad += 1


def _tune_on_dev(
    tagger: TaggerModel,
    dev: list[Dialogue],
    labels: tuple[str, ...],
    f_beta: float,
    check_precision: bool,
    dev_metrics: dict[str, Any],
    say: Callable[[str], None],
) -> tuple[dict[str, float], dict[str, Any], dict[str, Any]]:
    """Per-label thresholds for recall-first operation, tuned on dev; dev metrics; precision checks."""
    thresholds = dict.fromkeys(labels, 0.5)
    checks: dict[str, Any] = {}
    if not dev:
        return thresholds, dev_metrics, checks
    say("tuning thresholds on dev")
    strict, probs = evaluate_model(tagger, dev, beta=f_beta)
    words, gold, ent = [], [], []
    for d, dp in zip(dev, probs, strict=True):
        for m, mp in zip(d.messages, dp, strict=True):
            words.append(mp.words)
            gold.append([s for s in m.spans if s.label in labels])
            ent.append(tagger.entity_probs(mp.probs)[0])
    thresholds, tuning = tune_thresholds(words, gold, ent, labels, beta=f_beta)
    recall_first = _rescore(tagger, dev, probs, thresholds, f_beta)
    dev_metrics.update(strict=strict, recall_first=recall_first, thresholds=tuning)
    if check_precision:
        say("checking int8 and bf16 against fp32")
        checks = measure_precisions(tagger, dev, strict, f_beta)
    return thresholds, dev_metrics, checks


def _model_info(
    torch: Any, tagger: TaggerModel, train: list[Dialogue], dev: list[Dialogue], *, name: str,
    base: str, scheme: str, labels: tuple[str, ...], window: WindowConfig,
    thresholds: dict[str, float], f_beta: float, dev_metrics: dict[str, Any],
    checks: dict[str, Any], elapsed: float, cpu_started: float, steps: int,
    training: dict[str, Any], hyper: dict[str, Any],
) -> ModelInfo:
    """The trained model's record: data hash, version, metrics, hyper-parameters, software."""
    import transformers

    digest = data_hash([*train, *dev])
    now = datetime.now(UTC)
    version = f"{now:%Y%m%d-%H%M%S}-{digest[:8]}"
    info = ModelInfo(
        name=name,
        version=version,
        path="",
        base_model=base,
        scheme=scheme,
        labels=labels,
        data_hash=digest,
        created_at=now.isoformat(timespec="seconds"),
        training_seconds=round(elapsed, 1),
        window=window.to_dict(),
        thresholds=thresholds,
        f_beta=f_beta,
        dev_metrics=dev_metrics,
        precision_checks=checks,
        data={"train": _counts(train), "dev": _counts(dev)},
        dev_ids=tuple(sorted(d.id for d in dev)),
        hyper={
            **hyper,
            "steps": steps,
            "threads": torch.get_num_threads(),
            "num_layers": int(tagger.model.config.num_hidden_layers),
            "cpu_seconds": round(time.process_time() - cpu_started, 1),
        },
        software={"torch": torch.__version__, "transformers": transformers.__version__},
        use_token_types=tagger.use_token_types,
        training=training,
    )
    return info


def _rescore(
    tagger: TaggerModel, dev: Sequence[Dialogue], probs: list, thresholds: dict, beta: float
) -> dict:
    gold: list[list[Span]] = []
    pred: list[list[Span]] = []
    known = set(tagger.label_map.labels)
    for d, dp in zip(dev, probs, strict=True):
        for m, mp in zip(d.messages, dp, strict=True):
            gold.append([s for s in m.spans if s.label in known])
            pred.append(tagger.to_spans(m.text, mp, thresholds))
    return span_scores(gold, pred, beta=beta)


def measure_precisions(
    tagger: TaggerModel, dev: Sequence[Dialogue], fp32: dict, beta: float
) -> dict[str, dict]:
    """Score an int8 and a bf16 copy on dev; each is kept only if F1 drops by at most 0.01.

    Dev seconds are recorded for all three (bf16 is fast only where the CPU has it natively).
    """
    t0 = time.perf_counter()
    evaluate_model(tagger, dev, beta=beta)
    fp32_seconds = round(time.perf_counter() - t0, 2)
    methods = {
        "int8": "torch.ao.quantization.quantize_dynamic(encoder nn.Linear, qint8, per-channel)",
        "bf16": "model.to(torch.bfloat16)",
    }
    checks = {}
    for precision, method in methods.items():
        copy_ = TaggerModel(
            copy.deepcopy(tagger.model),
            tagger.tokenizer,
            tagger.label_map,
            tagger.window,
            use_token_types=tagger.use_token_types,
        ).set_precision(precision)
        t0 = time.perf_counter()
        scores, _ = evaluate_model(copy_, dev, beta=beta)
        drop = round(fp32["f1"] - scores["f1"], 4)
        checks[precision] = {
            "method": method,
            "f1_fp32": fp32["f1"],
            "f1": scores["f1"],
            "f1_drop": drop,
            "tolerance": PRECISION_TOLERANCE,
            "keep": drop <= PRECISION_TOLERANCE,
            "dev_seconds": round(time.perf_counter() - t0, 2),
            "dev_seconds_fp32": fp32_seconds,
        }
    return checks
