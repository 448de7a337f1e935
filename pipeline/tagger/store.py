"""The model registry on disk: ``<root>/<name>/<version>/``.

Each version directory holds the Hugging Face weights and tokenizer (``save_pretrained``) and
``tagger.json``: the label map, window settings, thresholds, training-data hash, dev dialogue
ids, dev metrics, training time and the quantisation check. A version is ``YYYYmmdd-HHMMSS-<data hash>``, so
versions sort by time and two models trained on the same data are recognisable (a second one saved
in the same second gets ``-2``; see :func:`write_model`).

Training records under ``training`` whether a version trained fully and sanely;
:func:`activation_blockers` turns those facts into the reasons it should not become active.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pipeline.tagger.encoding import WindowConfig
from pipeline.tagger.model import (
    PRECISIONS,
    TaggerModel,
    TaggerUnavailableError,
    import_torch,
    native_bf16,
    offline_env,
)
from pipeline.tags import LabelMap
from pipeline.types import Dialogue

META_FILE = "tagger.json"
DEFAULT_FILE = "default.json"  # in the models root: the version a command without a project runs
DEFAULT_ROOT = "var/models"
FORMAT = 1


@dataclass(frozen=True)
class ModelInfo:
    """What ``tagger.json`` says about one trained version."""

    name: str
    version: str
    path: str
    base_model: str
    scheme: str
    labels: tuple[str, ...]
    data_hash: str
    created_at: str
    training_seconds: float
    window: dict[str, Any] = field(default_factory=dict)
    thresholds: dict[str, float] = field(default_factory=dict)
    f_beta: float = 2.0
    dev_metrics: dict[str, Any] = field(default_factory=dict)
    precision_checks: dict[str, Any] = field(default_factory=dict)  # "int8"/"bf16" -> dev check
    data: dict[str, Any] = field(default_factory=dict)  # counts of dialogues/messages/spans
    hyper: dict[str, Any] = field(default_factory=dict)  # epochs, lr, batch size, seed, ...
    software: dict[str, str] = field(default_factory=dict)
    use_token_types: bool = True
    onnx: dict[str, Any] = field(default_factory=dict)  # "fp32"/"int8" -> file, sha256, check
    training: dict[str, Any] = field(default_factory=dict)  # steps run/planned, why it stopped, ...
    activation: dict[str, Any] = field(default_factory=dict)  # decision, reason, dev comparison
    distilled_from: str = ""  # the teacher's full version, for a distilled student
    # A teacher's automatic student (training.student.distil_after): its version, whether it may
    # be used in the teacher's place, and why not.
    student: dict[str, Any] = field(default_factory=dict)
    # The ids of the dev dialogues, sorted: a student distilled from this version is scored on
    # these, which neither model trained on (training.teacher_dev_split).
    dev_ids: tuple[str, ...] = ()
    # The ids of the dialogues it trained on, sorted: a warm-started retrain trains on the gold
    # this version has not seen (pipeline.tagger.retrain.warm_retraining_set).
    train_ids: tuple[str, ...] = ()
    warm_started_from: str = ""  # the full version whose weights training started from
    format: int = FORMAT

    @property
    def full_version(self) -> str:
        """``name/version``: what a run records as its model version."""
        return f"{self.name}/{self.version}"

    def precision_kept(self, precision: str) -> bool:
        """Whether training found ``precision`` within tolerance of fp32 on dev."""
        return precision == "fp32" or bool(self.precision_checks.get(precision, {}).get("keep"))

    @property
    def label_map(self) -> LabelMap:
        return LabelMap(self.scheme, self.labels)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["labels"] = list(self.labels)
        out["dev_ids"] = list(self.dev_ids)
        out["train_ids"] = list(self.train_ids)
        out.pop("path")
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any], path: str | Path) -> ModelInfo:
        known = {f for f in cls.__dataclass_fields__ if f != "path"}
        kwargs = {k: v for k, v in data.items() if k in known}
        kwargs["labels"] = tuple(kwargs.get("labels", ()))
        kwargs["dev_ids"] = tuple(kwargs.get("dev_ids", ()))
        kwargs["train_ids"] = tuple(kwargs.get("train_ids", ()))
        return cls(path=str(path), **kwargs)


class ModelNotFoundError(LookupError):
    """No trained model where one was asked for."""


def activation_blockers(info: ModelInfo) -> list[str]:
    """Why ``info`` may not run or become active (empty: it may), from the facts training recorded
    in ``tagger.json``: stopped early by its time budget, diverged (non-finite loss, or a dev score
    under the floor it was trained with), no dev score to check, an ONNX export that failed
    its verification, or a distilled student that fell behind its teacher on its dev dialogues
    (:func:`teacher_shortfalls`). A version trained before these facts were recorded is refused too."""
    t = info.training or {}
    if not t:
        return ["it was trained before training checks were recorded (no 'training' entry); retrain it"]
    problems = []
    steps, planned = t.get("steps", 0), t.get("planned_steps", 0)
    if t.get("stopped") == "time limit" and steps < planned:
        warm = " (still in warm-up)" if steps <= t.get("warmup_steps", 0) else ""
        problems.append(
            f"training stopped early: its {t.get('max_seconds')} s budget ran out after {steps} of "
            f"{planned} planned steps{warm}"
        )
    if t.get("diverged_at_step") is not None:
        problems.append(f"training diverged: non-finite loss at step {t['diverged_at_step']}")
    score, floor, key = t.get("dev_score"), t.get("min_dev_score", 0.0), t.get("dev_metric", "f2")
    if score is None:
        problems.append("it has no dev score (no dev split), so it cannot be checked")
    elif score < floor:
        problems.append(f"training diverged: dev {key.upper()} {score:.3f} is below the floor {floor:g}")
    if (info.onnx or {}).get("verified") is False:
        problems.append(f"its ONNX export failed verification: {info.onnx.get('error', 'no reason kept')}")
    distillation = (info.hyper or {}).get("distillation")
    if distillation is not None:
        check = distillation.get("check")
        if not check:
            problems.append(
                "it was distilled without a check against its teacher on dev (distilled before the "
                "check was recorded, or with no dev split); retrain it"
            )
        else:
            problems.extend(teacher_shortfalls(check))
    return problems


def gold_free(info: ModelInfo, parent: Callable[[str], ModelInfo | None] = lambda version: None, *,
              depth: int = 4) -> bool:
    """Whether ``info`` was trained on generated dialogues only, so that it carries no project's
    gold and may run in any project (a deployment's day-one model). Its own data, as training
    recorded it (``hyper.sources``: dialogues from a project's gold, from a labelled file, and
    generated; before those counts were recorded, ``hyper.data_options`` with no gold, no file and
    generated dialogues), and the same of the version it was distilled or warm-started from,
    found through ``parent(name/version)``. Anything unknown counts as gold: a version with no
    record, a labelled file (it may be a project's gold export), a parent not found."""
    hyper = info.hyper or {}
    sources = hyper.get("sources")
    if isinstance(sources, dict):
        own = not sources.get("gold") and not sources.get("file") and bool(sources.get("generated"))
    else:
        options = hyper.get("data_options") or {}
        own = options.get("use_gold", True) is False and not options.get("jsonl") and bool(options.get("synthetic"))
    if not own:
        return False
    for ref in (info.distilled_from, info.warm_started_from):
        if ref:
            found = parent(ref) if depth > 0 else None
            if found is None or not gold_free(found, parent, depth=depth - 1):
                return False
    return True


def metric_name(key: str) -> str:
    """A dev metric's key as people read it: ``f2`` -> ``F2``, ``recall`` stays."""
    return key.upper() if key.startswith("f") else key


def teacher_shortfalls(check: dict[str, Any]) -> list[str]:
    """Each dev figure of a distilled student that is more than the check's tolerance under its
    teacher's on the same dev dialogues (``hyper.distillation.check``, written by training):
    a student replaces its teacher only where it is as good, give or take the tolerance."""
    tolerance = check["tolerance"]
    out = []
    for metric, teacher in check["teacher"].items():
        student = check["student"][metric]
        gap = round(teacher - student, 4)
        if gap > tolerance:
            out.append(
                f"the student's dev {metric_name(metric)} {student:.3f} is {gap:.3f} under its teacher's "
                f"{teacher:.3f} (tolerance {tolerance:g})"
            )
    return out


def data_hash(dialogues: Iterable[Dialogue]) -> str:
    """A stable hash of the training data: ids, anchors, roles, texts and gold spans."""
    h = hashlib.sha256()
    for d in dialogues:
        row = [
            d.id,
            d.anchor,
            [[m.role, m.text, [s.key() for s in sorted(m.spans)]] for m in d.messages],
        ]
        h.update(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode())
        h.update(b"\n")
    return h.hexdigest()


def read_info(path: str | Path) -> ModelInfo:
    path = Path(path)
    meta = path / META_FILE
    if not meta.is_file():
        raise ModelNotFoundError(f"{path} is not a tagger model directory (no {META_FILE})")
    return ModelInfo.from_dict(json.loads(meta.read_text(encoding="utf-8")), path)


def write_model(target: Path, info: ModelInfo, model: Any, tokenizer: Any) -> ModelInfo:
    """Save into ``target`` atomically (a private temporary sibling renamed at the end).

    Two trainings on the same data within one second compute the same version; the later one
    gets the first free ``<version>-N`` instead of failing after all its training (or, worse,
    overwriting the other), and its returned info says which version it became.
    """
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent))
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        for attempt in range(1, 100):
            version = info.version if attempt == 1 else f"{info.version}-{attempt}"
            final = target.parent / version
            chosen = replace(info, version=version)
            (tmp / META_FILE).write_text(
                json.dumps(chosen.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
            )
            try:
                tmp.rename(final)  # refused when ``final`` exists and is not empty: try the next name
            except OSError:
                if not final.exists():
                    raise
                continue
            return ModelInfo.from_dict(chosen.to_dict(), final)
        raise OSError(f"no free version name for {info.version} under {target.parent}")
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)


def update_info(path: str | Path, **fields: Any) -> ModelInfo:
    """Rewrite fields of a saved version's ``tagger.json`` (e.g. re-measured precision checks).

    The weights are untouched, so the version string stays; ``model_version`` still tells int8
    and bf16 runs apart (``+int8``, ``+bf16``).
    """
    info = read_info(path)
    data = {**info.to_dict(), **fields}
    meta = Path(path) / META_FILE
    tmp = meta.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(meta)
    return ModelInfo.from_dict(data, path)


def list_models(root: str | Path = DEFAULT_ROOT, name: str | None = None) -> list[ModelInfo]:
    """Every saved version under ``root`` (optionally of one ``name``), oldest first."""
    root = Path(root)
    if not root.is_dir():
        return []
    infos = []
    for meta in sorted(root.glob(f"{name or '*'}/*/{META_FILE}")):
        if meta.parent.name.startswith("."):
            continue
        try:
            infos.append(read_info(meta.parent))
        except (ValueError, KeyError, TypeError, ModelNotFoundError):
            continue  # a damaged directory is skipped, not fatal for the listing
    return sorted(infos, key=lambda i: (i.name, i.version))


def default_version(root: str | Path = DEFAULT_ROOT) -> str | None:
    """The ``name/version`` recorded as the default of ``root`` (``<root>/default.json``, written by
    :func:`set_default`), or ``None``: what a command with no project and no version runs."""
    path = Path(root) / DEFAULT_FILE
    try:
        version = json.loads(path.read_text(encoding="utf-8")).get("version")
    except FileNotFoundError:
        return None
    except (ValueError, AttributeError) as exc:
        raise ModelNotFoundError(f"{path} is damaged ({exc}); set the default again") from None
    return version if isinstance(version, str) and version else None


def default_record(info: ModelInfo, *, by: str) -> dict[str, Any]:
    """What ``default.json`` holds: the version, when and by what it was made the default."""
    return {"version": info.full_version, "set_at": datetime.now(UTC).isoformat(timespec="seconds"), "by": by}


def set_default(root: str | Path, info: ModelInfo, *, by: str) -> dict[str, Any]:
    """Record ``info`` as the default of ``root``, atomically (a temporary file renamed); refused
    (``ModelNotFoundError``) for a version with :func:`activation_blockers`."""
    blockers = activation_blockers(info)
    if blockers:
        raise ModelNotFoundError(f"{info.full_version} cannot be the default: {'; '.join(blockers)}")
    record = default_record(info, by=by)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".{DEFAULT_FILE}.tmp"
    tmp.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    tmp.replace(root / DEFAULT_FILE)
    return record


def version_path(root: str | Path, version: str) -> Path:
    """The directory of ``name/version`` under ``root``; ``ModelNotFoundError`` for anything else."""
    parts = version.split("/") if isinstance(version, str) else []
    if len(parts) != 2 or not all(p and not p.startswith(".") for p in parts):
        raise ModelNotFoundError(f"{str(version)[:120]!r} is not a model version (name/version)")
    return Path(root) / parts[0] / parts[1]


def resolve(
    model_path: str | Path | None = None,
    *,
    root: str | Path = DEFAULT_ROOT,
    version: str | None = None,
) -> ModelInfo:
    """The one rule for which model runs outside a project (the app passes each run the project's
    active version as ``model_path``): the version directory ``model_path``, else ``version``
    (``name/version`` under ``root``) — explicit choices, taken as given — else the default recorded
    in ``root`` (:func:`default_version`), which must be free of :func:`activation_blockers`.
    Never "the newest directory": with no default a ``ModelNotFoundError`` says what to do."""
    if model_path:
        return read_info(model_path)
    if version:
        return read_info(version_path(root, version))
    default = default_version(root)
    if default is None:
        raise ModelNotFoundError(
            f"no tagger version chosen and no default under {root}: pass one (model_path, or version "
            "name/version; --model on the commands), or make one the default (train_tagger and "
            "demo_setup publish theirs; manage.py tagger_activate VERSION --default)"
        )
    info = read_info(version_path(root, default))
    blockers = activation_blockers(info)
    if blockers:
        raise ModelNotFoundError(
            f"the default tagger {default} is blocked: {' and '.join(blockers)}; make another the "
            "default, or pass model_path to run it on purpose"
        )
    return info


def choose_precision(info: ModelInfo, requested: str = "auto") -> str:
    """``auto``: bf16 where the CPU has it natively, else int8, else fp32 — each only when
    training found it within tolerance of fp32 on dev. Anything else is taken as asked."""
    if requested != "auto":
        if requested not in PRECISIONS:
            raise ValueError(f"precision must be auto or one of {', '.join(PRECISIONS)}")
        return requested
    if native_bf16() and info.precision_kept("bf16"):
        return "bf16"
    return "int8" if info.precision_kept("int8") else "fp32"


def load_model(path: str | Path, *, precision: str = "auto") -> TaggerModel:
    """Load a saved version's torch weights in ``precision`` (see :func:`choose_precision`);
    :func:`pipeline.tagger.backends.load_tagger` also picks ONNX Runtime where it is verified."""
    info = read_info(path)
    offline_env()
    import_torch()
    try:
        from transformers import AutoModelForTokenClassification, AutoTokenizer
        from transformers.utils import logging as hf_logging
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise TaggerUnavailableError("the tagger needs transformers") from exc
    hf_logging.set_verbosity_error()
    tokenizer = AutoTokenizer.from_pretrained(str(path))
    model = AutoModelForTokenClassification.from_pretrained(str(path))
    model.eval()
    tagger = TaggerModel(
        model,
        tokenizer,
        info.label_map,
        WindowConfig.from_dict(info.window),
        thresholds=info.thresholds,
        use_token_types=info.use_token_types,
        info=info,
    )
    return tagger.set_precision(choose_precision(info, precision))
