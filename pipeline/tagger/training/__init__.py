"""Fine-tuning: gold dialogues in, a versioned model directory out.

``train_tagger(TrainConfig(...))`` splits by dialogue (:mod:`.data`; never by message, so a
dialogue's names cannot leak from train to dev), trains with length-bucketed, dynamically padded
batches (:mod:`.loop`), stops early on dev F-beta, tunes one threshold per label on dev for
recall-first operation, checks whether int8 dynamic quantisation and bfloat16 keep F1 within 0.01
of fp32 (:mod:`.tuning`), saves everything under ``<out_dir>/<name>/<version>/`` and, unless
``export_onnx`` is off, exports and verifies it to ONNX.

Costs are kept for the 2-core machines it runs on: the word-embedding matrix is frozen (it is
most of the parameters and the optimiser's time), windows are packed, the encoder cut to 3 layers.
With ``teacher=`` a trained version is distilled into a student that keeps some of its layers
(DistilBERT-style, :mod:`.distillation`): fewer layers, the teacher's soft labels as well as the
gold ones.
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.tagger.encoding import WindowConfig, WindowEncoder
from pipeline.tagger.model import (
    TaggerModel,
    TaggerUnavailableError,
    default_base_model,
    import_torch,
    offline_env,
    set_threads,
)
from pipeline.tagger.onnx_export import export_after_training
from pipeline.tagger.store import ModelInfo, data_hash, load_model, write_model
from pipeline.tagger.training.config import TrainConfig, TrainingError
from pipeline.tagger.training.data import check_inputs, counts
from pipeline.tagger.training.distillation import (
    Distiller,
    imitation_thresholds,
    load_student,
    student_thresholds,
    teacher_check,
    teacher_info,
)
from pipeline.tagger.training.loop import TrainingLoop, reproducible
from pipeline.tagger.training.tuning import evaluate_model, tune_on_dev
from pipeline.tagger.training.warm_start import load_parent, parent_info
from pipeline.tags import LabelMap
from pipeline.types import DEFAULT_LABELS, Dialogue


def train_tagger(config: TrainConfig) -> ModelInfo:
    """Fine-tune a token classifier on ``config.train_dialogues`` (or distil ``config.teacher``
    into a student); save and return its ModelInfo. :class:`TrainConfig` says what each field does."""
    started = time.perf_counter()
    cpu_started = time.process_time()
    report = config.progress or (lambda done, total, message: None)
    labels = tuple(config.labels or DEFAULT_LABELS)
    label_map = LabelMap(config.scheme, labels)
    teacher = teacher_info(config.teacher, label_map) if config.teacher is not None else None
    parent = parent_info(config.init_from, label_map) if config.init_from is not None else None
    if parent is not None and teacher is not None:
        raise TrainingError("a run either distils a teacher or warm-starts from a version, not both")
    train, dev = check_inputs(config, teacher)
    torch = _prepare_torch()
    with reproducible(torch, config.seed):  # the head's initial weights, dropout, the shuffles
        base, window, tagger, tokenizer, distiller = _models_to_train(label_map, teacher, parent, config)
        loop = TrainingLoop(
            torch, tagger, WindowEncoder(tokenizer, tagger.label_map, window), train, dev, config,
            report, distiller, score_first=parent is not None,
        )
        loop.run()
    total = loop.total

    def say(message: str) -> None:
        report(total, total, message)

    thresholds, dev_metrics, checks = tune_on_dev(
        tagger, dev, labels, config.f_beta, config.check_precision,
        {"history": loop.history, "best_epoch": loop.best_epoch, "stopped": loop.stopped}, say,
    )
    chosen = check = None
    if distiller is not None:
        thresholds, chosen, check = _student_thresholds(
            tagger, distiller, train, dev, labels, config, thresholds, dev_metrics, say
        )
    info = _model_info(
        torch, tagger, train, dev, config, base=base, labels=labels, window=window,
        thresholds=thresholds, dev_metrics=dev_metrics, checks=checks,
        elapsed=time.perf_counter() - started, cpu_started=cpu_started, steps=loop.done,
        training=loop.facts(dev_metrics, config.f_beta, config.min_dev_score),
        hyper={
            **config.hyper(),
            **({"distillation": {**distiller.facts(), "thresholds": chosen, "check": check}} if distiller else {}),
        },
    )
    if distiller:
        info = replace(info, distilled_from=distiller.info.full_version)
    if parent is not None:
        info = replace(info, warm_started_from=parent.full_version)
    say("saving")
    saved = write_model(Path(config.out_dir) / config.name / info.version, info, tagger.model, tokenizer)
    say(f"saved {saved.full_version}")
    if config.export_onnx:
        saved = export_after_training(saved, dev, lambda done, all_, message: say(message))
    return saved


# -- the phases of train_tagger ---------------------------------------------------------------


def _prepare_torch() -> Any:
    """torch, offline, on this process's threads, with transformers' logging quiet."""
    offline_env()
    torch = import_torch()
    try:
        from transformers.utils import logging as hf_logging
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise TaggerUnavailableError("the tagger needs transformers") from exc
    hf_logging.set_verbosity_error()
    set_threads(torch)
    return torch


def _student_thresholds(
    tagger: TaggerModel, distiller: Distiller, train: list[Dialogue], dev: list[Dialogue],
    labels: tuple[str, ...], config: TrainConfig, thresholds: dict[str, float], dev_metrics: dict[str, Any],
    say: Any,
) -> tuple[dict[str, float], dict[str, Any], dict[str, Any]]:
    """A student's thresholds (``config.distill_thresholds``: imitating its teacher's spans by
    default), its dev scores rescored at them when they were lowered (``dev_metrics`` updated),
    and its check against the teacher: ``(thresholds, chosen, check)``."""
    imitation = None
    if config.distill_thresholds == "imitate" and dev:
        say("tuning thresholds to the teacher's spans")
        imitation, _ = imitation_thresholds(tagger, distiller.teacher, distiller.info.thresholds,
                                            [*dev, *train], labels, config.f_beta)
    thresholds, chosen = student_thresholds(thresholds, distiller.info.thresholds, config.distill_thresholds,
                                            imitation)
    if chosen["lowered"] and dev_metrics.get("recall_first"):
        say("scoring dev at the thresholds the student keeps")
        chosen["own_scores"] = {k: dev_metrics["recall_first"][k] for k in (f"f{config.f_beta:g}", "recall")}
        dev_metrics["recall_first"] = evaluate_model(tagger, dev, beta=config.f_beta, thresholds=thresholds)[0]
    check = teacher_check(distiller.teacher, dev, labels, config.f_beta, dev_metrics, say,
                          teacher_dev=None if config.dev_dialogues is not None else len(distiller.info.dev_ids))
    return thresholds, chosen, check


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


def _models_to_train(
    label_map: LabelMap, teacher: ModelInfo | None, parent: ModelInfo | None, config: TrainConfig
) -> tuple[str, WindowConfig, TaggerModel, Any, Distiller | None]:
    """``(base, window, tagger, tokenizer, distiller)``: the base model cut to ``num_layers``,
    or, given a ``teacher``, its student (the teacher's window unless another is given) and the
    distiller that runs the teacher beside it, or, given a ``parent``, its weights as they are."""
    if parent is not None:
        tagger, window = load_parent(parent, config.window)
        return parent.base_model, window, tagger, tagger.tokenizer, None
    if teacher is None:
        base = str(config.base_model or default_base_model())
        window = config.window or WindowConfig()
        tagger, tokenizer = _load_base(base, label_map, window, config.num_layers)
        return base, window, tagger, tokenizer, None
    window = config.window or WindowConfig.from_dict(teacher.window)
    tagger, tokenizer, kept = load_student(
        teacher, window, config.num_layers, config.student_layers, config.student_feed_forward
    )
    distiller = Distiller(
        teacher, load_model(teacher.path, precision="fp32"), kept,
        config.distill_alpha, config.distill_temperature, config.distill_hidden,
    )
    return teacher.base_model, window, tagger, tokenizer, distiller


def _model_info(
    torch: Any, tagger: TaggerModel, train: list[Dialogue], dev: list[Dialogue], config: TrainConfig,
    *, base: str, labels: tuple[str, ...], window: WindowConfig,
    thresholds: dict[str, float], dev_metrics: dict[str, Any],
    checks: dict[str, Any], elapsed: float, cpu_started: float, steps: int,
    training: dict[str, Any], hyper: dict[str, Any],
) -> ModelInfo:
    """The trained model's record: data hash, version, metrics, hyper-parameters, software."""
    import transformers

    digest = data_hash([*train, *dev])
    now = datetime.now(UTC)
    version = f"{now:%Y%m%d-%H%M%S}-{digest[:8]}"
    info = ModelInfo(
        name=config.name,
        version=version,
        path="",
        base_model=base,
        scheme=config.scheme,
        labels=labels,
        data_hash=digest,
        created_at=now.isoformat(timespec="seconds"),
        training_seconds=round(elapsed, 1),
        window=window.to_dict(),
        thresholds=thresholds,
        f_beta=config.f_beta,
        dev_metrics=dev_metrics,
        precision_checks=checks,
        data={"train": counts(train), "dev": counts(dev)},
        dev_ids=tuple(sorted(d.id for d in dev)),
        train_ids=tuple(sorted(d.id for d in train)),
        hyper={
            **hyper,
            "steps": steps,
            "threads": torch.get_num_threads(),
            "num_layers": int(tagger.model.config.num_hidden_layers),
            "feed_forward": int(tagger.model.config.intermediate_size),
            "cpu_seconds": round(time.process_time() - cpu_started, 1),
        },
        software={"torch": torch.__version__, "transformers": transformers.__version__},
        use_token_types=tagger.use_token_types,
        training=training,
    )
    return info

