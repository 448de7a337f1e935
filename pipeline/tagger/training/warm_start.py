"""Warm start: a training run that begins from a saved version's weights (head included) instead
of the base model, so a retrain on new gold needs a few hundred steps, not a full fine-tuning."""

from __future__ import annotations

from pathlib import Path

from pipeline.tagger.encoding import WindowConfig
from pipeline.tagger.model import TaggerModel
from pipeline.tagger.store import ModelInfo, load_model, read_info
from pipeline.tagger.training.config import TrainingError
from pipeline.tags import LabelMap


def parent_info(init_from: str | Path | ModelInfo, label_map: LabelMap) -> ModelInfo:
    """The record of the version to start from; refused unless it tags exactly ``label_map``'s
    tags, in order: its classifier's columns are those tags."""
    info = init_from if isinstance(init_from, ModelInfo) else read_info(init_from)
    if info.label_map.id2tag() != label_map.id2tag():
        raise TrainingError(
            f"cannot warm-start from {info.full_version}: it tags {info.scheme} {list(info.labels)}, "
            f"this training {label_map.scheme} {list(label_map.labels)}; the labels changed since it "
            "was trained, so train from the base model (retrain_tagger --full)"
        )
    return info


def load_parent(info: ModelInfo, window: WindowConfig | None) -> tuple[TaggerModel, WindowConfig]:
    """The parent's fp32 weights as a TaggerModel to train on (its window unless another is
    given), and that window. Its thresholds are not carried over: the run tunes its own."""
    window = window or WindowConfig.from_dict(info.window)
    parent = load_model(info.path, precision="fp32")
    tagger = TaggerModel(
        parent.model, parent.tokenizer, info.label_map, window, use_token_types=info.use_token_types
    )
    return tagger, window
