"""The Blindspot tagger: a fine-tuned transformer PII tagger trained from the project's gold set.

Public API::

    from pipeline.tagger import TrainConfig, train_tagger, list_models, resolve, load_model

    info = train_tagger(TrainConfig(train_dialogues, dev_dialogues, name="demo", out_dir="var/models"))
    tagger = load_model(info.path)          # a TaggerModel; .tag(dialogues) -> spans
    list_models("var/models", "demo")       # every saved version, oldest first (for listings)
    resolve(root="var/models", version="demo/20260101-000000-1a2b3c4d")  # an explicit version
    resolve(root="var/models")              # the root's recorded default (default.json), never the newest

The ``tagger`` detector (:mod:`pipeline.detectors.tagger`) adds the policy and the maths-aware
post-filter. torch and transformers are imported only when a model is trained or loaded.
"""

from pipeline.tagger.encoding import Window, WindowConfig, WindowEncoder, align_words, trim_edges
from pipeline.tagger.model import MessageProbs, TaggerModel, TaggerUnavailableError
from pipeline.tagger.postfilter import POLICIES, filter_spans, is_math_number, is_placeholder_span
from pipeline.tagger.store import (
    DEFAULT_ROOT,
    ModelInfo,
    ModelNotFoundError,
    activation_blockers,
    data_hash,
    default_version,
    list_models,
    load_model,
    read_info,
    resolve,
    set_default,
)
from pipeline.tagger.training import train_tagger
from pipeline.tagger.training.config import TrainConfig, TrainingError
from pipeline.tagger.training.data import split_by_dialogue

__all__ = [
    "DEFAULT_ROOT",
    "POLICIES",
    "MessageProbs",
    "ModelInfo",
    "ModelNotFoundError",
    "TaggerModel",
    "TaggerUnavailableError",
    "TrainConfig",
    "TrainingError",
    "Window",
    "WindowConfig",
    "WindowEncoder",
    "activation_blockers",
    "align_words",
    "data_hash",
    "filter_spans",
    "is_math_number",
    "is_placeholder_span",
    "default_version",
    "list_models",
    "load_model",
    "read_info",
    "resolve",
    "set_default",
    "split_by_dialogue",
    "train_tagger",
    "trim_edges",
]
