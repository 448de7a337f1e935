"""Fine-tuning: gold dialogues in, a versioned model directory out.

``train_tagger`` splits by dialogue (never by message, so a dialogue's names cannot leak from
train to dev), trains with length-bucketed, dynamically padded batches, stops early on dev F-beta,
tunes one threshold per label on dev for recall-first operation, checks whether int8 dynamic
quantisation and bfloat16 keep F1 within 0.01 of fp32, and saves everything under
``<out_dir>/<name>/<version>/``.

Costs are kept for the 2-core machines it runs on: the word-embedding matrix is frozen (it is
most of the parameters and the optimiser's time), windows are packed, the encoder cut to 3 layers.
"""

from __future__ import annotations

import copy
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from pipeline.tagger.encoding import WindowConfig, WindowEncoder
from pipeline.tagger.labels import LabelMap
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
from pipeline.tagger.scoring import span_scores, tune_thresholds
from pipeline.tagger.store import DEFAULT_ROOT, ModelInfo, data_hash, write_model
from pipeline.types import DEFAULT_LABELS, Dialogue, Span

Progress = Callable[[int, int, str], None]

DEFAULT_NUM_LAYERS = 3  # encoder layers kept: the throughput target met, names and numbers kept
PRECISION_TOLERANCE = 0.01  # dev F1 an int8 or bf16 model may lose against fp32


class TrainingError(ValueError):
    """The training request cannot be carried out (no data, bad settings)."""


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
        from pipeline.corpus import read_corpus

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
    progress: Progress | None = None,
) -> ModelInfo:
    """Fine-tune a token classifier on gold ``train_dialogues``; save and return its ModelInfo.

    ``dev_dialogues`` (or, when ``None``, a ``dev_fraction`` of the training dialogues split off by
    dialogue) drive early stopping on F-``f_beta`` and the per-label thresholds saved for the
    ``recall_first`` policy (use ``f_beta=5`` for an even more recall-hungry operating point).
    ``outside_weight`` scales the loss of ``O`` words (below 1: PII words count more).
    ``num_layers`` keeps only the encoder's first layers (default 3 of MiniLM's 6: half the
    work of the full encoder; 4 is about 0.015 demo F2 better and a third slower; ``None`` keeps
    them all).
    ``max_seconds`` stops training at the end of the batch that passes it (the best checkpoint
    so far is kept). ``progress(done, total, message)`` is called after every batch.
    """
    started = time.perf_counter()
    cpu_started = time.process_time()
    report = progress or (lambda done, total, message: None)
    if name != Path(name).name or name.startswith(".") or not name.strip():
        raise TrainingError(f"model name {name!r} must be a plain directory name")
    labels = tuple(labels or DEFAULT_LABELS)
    label_map = LabelMap(scheme, labels)
    if epochs < 1 or batch_size < 1 or lr <= 0:
        raise TrainingError("epochs and batch_size must be at least 1 and lr positive")
    train = [d for d in train_dialogues if d.messages]
    if dev_dialogues is None:
        train, dev = split_by_dialogue(train, dev_fraction, seed)
    else:
        dev = [d for d in dev_dialogues if d.messages]
    if not train:
        raise TrainingError("no training dialogues")
    if not any(m.spans for d in train for m in d.messages):
        raise TrainingError("the training dialogues carry no gold spans")

    offline_env()
    torch = import_torch()
    try:
        from transformers import AutoModelForTokenClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise TaggerUnavailableError("the tagger needs transformers") from exc
    hf_logging.set_verbosity_error()
    set_threads(torch)
    _seed_everything(torch, seed)

    base = str(base_model or default_base_model())
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
    window = window or WindowConfig()
    encoder = WindowEncoder(tokenizer, label_map, window)
    tagger = TaggerModel(model, tokenizer, label_map, window, use_token_types=use_types)

    if freeze_embeddings:
        emb = model.get_input_embeddings()
        emb.weight.requires_grad_(False)
    head_names = {"classifier.weight", "classifier.bias"}
    body = [p for n, p in model.named_parameters() if p.requires_grad and n not in head_names]
    head = [p for n, p in model.named_parameters() if p.requires_grad and n in head_names]
    optimizer = torch.optim.AdamW(
        [{"params": body, "lr": lr}, {"params": head, "lr": lr * 10}], weight_decay=0.01
    )

    def epoch_batches(epoch: int) -> list[list]:
        rng = random.Random(seed * 1000 + epoch)
        windows = [
            w
            for d in train
            for w in encoder.encode(d, with_labels=True, rng=rng)
            if w.positions
        ]
        batches = [[windows[i] for i in b] for b in length_batches(windows, batch_size)]
        rng.shuffle(batches)
        return batches

    first = epoch_batches(0)
    steps_per_epoch = len(first)
    total = steps_per_epoch * epochs
    warmup = max(1, int(0.06 * total))
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer,
        lambda step: min((step + 1) / warmup, max(0.0, (total - step) / max(1, total - warmup))),
    )
    pad_id = tagger.pad_id
    class_weight = torch.ones(label_map.num_tags)
    class_weight[0] = outside_weight  # rarer PII tags weigh more: recall first

    best_f, best_state, best_epoch, bad, done = -1.0, None, 0, 0, 0
    history: list[dict] = []
    stopped = "epochs"
    for epoch in range(epochs):
        batches = first if epoch == 0 else epoch_batches(epoch)
        model.train()
        losses = []
        for batch_windows in batches:
            batch = collate(torch, batch_windows, pad_id, with_labels=True)
            if not use_types:
                batch.pop("token_type_ids")
            targets = batch.pop("labels")
            logits = model(**batch).logits
            loss = torch.nn.functional.cross_entropy(
                logits.view(-1, logits.shape[-1]), targets.view(-1), weight=class_weight
            )
            loss.backward()
            torch.nn.utils.clip_grad_norm_(body + head, 1.0)
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(float(loss.detach()))
            done += 1
            report(done, total, f"epoch {epoch + 1}/{epochs}, loss {np.mean(losses[-50:]):.4f}")
            if max_seconds and time.perf_counter() - started > max_seconds:
                stopped = "time limit"
                break
        entry: dict[str, Any] = {"epoch": epoch + 1, "loss": round(float(np.mean(losses)), 5)}
        if dev:
            report(done, total, f"epoch {epoch + 1}: scoring dev")
            scores, _ = evaluate_model(tagger, dev, beta=f_beta)
            f = scores[f"f{f_beta:g}"]
            entry["dev"] = {k: scores[k] for k in ("precision", "recall", "f1", f"f{f_beta:g}")}
            if f > best_f:
                best_f, best_epoch, bad = f, epoch + 1, 0
                best_state = copy.deepcopy(model.state_dict())
            else:
                bad += 1
        else:
            best_epoch = epoch + 1
        history.append(entry)
        if stopped == "time limit":
            break
        if dev and bad >= patience and epoch + 1 < epochs:
            stopped = "early stopping"
            break
    if best_state is not None:
        model.load_state_dict(best_state)
    model.eval()

    # thresholds for recall-first operation, tuned on dev
    thresholds = dict.fromkeys(labels, 0.5)
    dev_metrics: dict[str, Any] = {"history": history, "best_epoch": best_epoch, "stopped": stopped}
    checks: dict[str, Any] = {}
    if dev:
        report(total, total, "tuning thresholds on dev")
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
            report(total, total, "checking int8 and bf16 against fp32")
            checks = measure_precisions(tagger, dev, strict, f_beta)
    elapsed = time.perf_counter() - started

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
        hyper={
            "epochs": epochs,
            "lr": lr,
            "batch_size": batch_size,
            "seed": seed,
            "patience": patience,
            "outside_weight": outside_weight,
            "freeze_embeddings": freeze_embeddings,
            "steps": done,
            "threads": torch.get_num_threads(),
            "num_layers": int(model.config.num_hidden_layers),
            "cpu_seconds": round(time.process_time() - cpu_started, 1),
        },
        software={"torch": torch.__version__, "transformers": transformers.__version__},
        use_token_types=use_types,
    )
    report(total, total, "saving")
    saved = write_model(Path(out_dir) / name / version, info, model, tokenizer)
    report(total, total, f"saved {saved.full_version}")
    return saved


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
