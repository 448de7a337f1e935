"""``tagger``: the project's fine-tuned transformer PII tagger as a detector.

Config:

- ``model_path`` — one saved version directory (the app passes the project's active version);
  or ``version`` (``name/version``) under ``model_dir`` (registry root, default ``var/models``);
  with neither, the default recorded in ``model_dir`` (``default.json``, set by ``train_tagger``,
  ``demo_setup`` or ``tagger_activate --default``), never simply the newest directory; an error
  says what to do when there is none (``store.resolve``);
- ``policy`` — ``recall_first`` (dev-tuned per-label thresholds; names from the word problem kept
  as potential PII) or ``strict`` (thresholds 0.5; word-problem names dropped);
- ``batch_size`` — windows per forward pass (default: the runtime's own, one on ONNX Runtime,
  where a message's int8 spans then depend on its own window only, 16 on torch);
- ``precision`` — ``auto`` (bf16 on CPUs that have it natively, else int8, each only where
  training found it within 0.01 F1 of fp32), ``fp32``, ``int8`` or ``bf16``;
- ``postfilter`` — the maths-aware filter (default on);
- ``backend`` — ``auto`` (the version's verified ONNX Runtime file where it has one and bf16 is
  not chosen, else torch), ``torch`` or ``onnx`` (int8, or fp32 when ``precision`` says so).

``model_version`` is ``name/version`` of the weights in use (plus ``+int8`` or ``+bf16``, and
``+onnx`` / ``+onnx-int8`` for the ONNX files), which
every run records. Each message's detection carries its decision ``margin`` (the uncertainty
that the app's "least sure" plans rank by). The model is loaded on first use, never in ``__init__``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from functools import lru_cache
from typing import Any

from pipeline.detectors.base import BaseDetector, ConfigError, DetectorError
from pipeline.registry import register
from pipeline.tagger.backends import BACKENDS
from pipeline.tagger.model import PRECISIONS
from pipeline.types import Detection, Dialogue

POLICIES = ("strict", "recall_first")
CHUNK_MESSAGES = 1024  # messages per forward sweep: enough windows to batch by length with little padding


class TaggerDetector(BaseDetector):
    """Fine-tuned token classifier with PIIvot's context window and a maths-aware post-filter."""

    name = "tagger"
    # 1.1: the post-filter drops junk flags (pipeline.filters.junk); 1.2: one window per ONNX pass
    version = "1.2.0"
    defaults: Mapping[str, Any] = {
        "model_path": None,
        "model_dir": "var/models",
        "version": None,
        "policy": "recall_first",
        "batch_size": None,
        "precision": "auto",
        "postfilter": True,
        "backend": "auto",
    }

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        cfg = self.config
        if cfg["policy"] not in POLICIES:
            raise ConfigError(f"tagger: 'policy' must be one of {', '.join(POLICIES)}")
        size = cfg["batch_size"]
        if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 1):
            raise ConfigError("tagger: 'batch_size' must be a positive integer (or null: the runtime's own)")
        if cfg["precision"] not in ("auto", *PRECISIONS):
            raise ConfigError(f"tagger: 'precision' must be one of auto, {', '.join(PRECISIONS)}")
        if cfg["backend"] not in BACKENDS:
            raise ConfigError(f"tagger: 'backend' must be one of {', '.join(BACKENDS)}")
        if cfg["backend"] == "onnx" and cfg["precision"] == "bf16":
            raise ConfigError("tagger: the onnx backend runs fp32 or int8, not bf16")
        self._info: Any = None
        self._model: Any = None

    # -- model ---------------------------------------------------------------------------------

    @property
    def info(self) -> Any:
        """The resolved model's ``ModelInfo`` (reads ``tagger.json`` only, not the weights)."""
        if self._info is None:
            from pipeline.tagger.store import ModelNotFoundError, resolve

            try:
                self._info = resolve(
                    self.config["model_path"],
                    root=self.config["model_dir"],
                    version=self.config["version"],
                )
            except ModelNotFoundError as exc:
                raise DetectorError(f"tagger: {exc}") from exc
        return self._info

    @property
    def model(self) -> Any:
        if self._model is None:
            try:
                self._model = _load(self.info.path, *self.runtime)
            except (OSError, ValueError, RuntimeError) as exc:
                raise DetectorError(f"tagger: cannot load {self.info.path}: {exc}") from exc
        return self._model

    @property
    def runtime(self) -> tuple[str, str]:
        """``(backend, precision)`` the model runs in (see ``backends.choose_backend``)."""
        from pipeline.tagger.backends import choose_backend

        return choose_backend(self.info, self.config["backend"], self.config["precision"])

    @property
    def precision(self) -> str:
        return self.runtime[1]

    @property
    def model_version(self) -> str:
        backend, precision = self.runtime
        if backend == "onnx":
            return self.info.full_version + ("+onnx" if precision == "fp32" else f"+onnx-{precision}")
        return self.info.full_version + ("" if precision == "fp32" else f"+{precision}")

    def thresholds(self) -> dict[str, float]:
        if self.config["policy"] == "strict":
            return dict.fromkeys(self.info.labels, 0.5)
        return dict(self.info.thresholds)

    # -- detection -----------------------------------------------------------------------------

    @property
    def filters(self) -> tuple[str, ...]:
        from pipeline.tagger.postfilter import POLICY_FILTERS

        return POLICY_FILTERS[self.config["policy"]] if self.config["postfilter"] else ()

    def detect(self, dialogue: Dialogue) -> list[Detection]:
        return next(self.detect_many([dialogue]))

    def detect_many(self, dialogues: Iterable[Dialogue]) -> Iterator[list[Detection]]:
        return self.batched(dialogues, self._run, max_messages=CHUNK_MESSAGES)

    def _run(self, dialogues: list[Dialogue]) -> Iterator[list[Detection]]:
        from pipeline.tagger.postfilter import filter_dialogue

        model = self.model
        try:
            probs = model.predict(dialogues, batch_size=self.config["batch_size"])
        except (RuntimeError, ValueError, IndexError) as exc:
            raise DetectorError(f"tagger: inference failed on a batch: {exc}") from exc
        decided = model.decisions(  # the whole chunk's messages at once, then handed out per dialogue
            [m.text for d in dialogues for m in d.messages], [mp for dp in probs for mp in dp], self.thresholds()
        )
        policy = self.config["policy"]
        at = 0
        for dialogue in dialogues:
            mine = decided[at : at + len(dialogue.messages)]
            at += len(dialogue.messages)
            spans = [found for found, _ in mine]
            if self.config["postfilter"]:
                spans = filter_dialogue(dialogue, spans, policy=policy)
            out = []
            for message, found, (_, margin) in zip(dialogue.messages, spans, mine, strict=True):
                found = [s.__class__(s.start, s.end, s.label, s.score, self.name) for s in found]
                out.append(Detection(dialogue.id, message.index, tuple(sorted(found)), margin=margin))
            yield out


@lru_cache(maxsize=2)
def _load(path: str, backend: str, precision: str) -> Any:
    """Loaded models are shared by the detectors of a process (a worker builds one per run)."""
    from pipeline.tagger.backends import load_tagger

    return load_tagger(path, precision=precision, backend=backend)


@register("tagger", "Fine-tuned transformer PII tagger (PIIvot context window, maths-aware).")
def build_tagger(config: Mapping[str, Any]) -> TaggerDetector:
    return TaggerDetector(config)
