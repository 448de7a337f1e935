"""What agreement comes out as: figures with their bootstrap intervals, the report that holds them,
and the emitter that turns point values and resampled values into figures."""

from __future__ import annotations

import io
import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from pipeline import csvsafe
from pipeline.metrics.coefficients import percentile_ci


@dataclass(frozen=True, slots=True)
class Figure:
    """One agreement figure with its bootstrap confidence interval."""

    metric: str  # cohen_kappa | fleiss_kappa | krippendorff_alpha | span_f1
    level: str  # token | span
    scheme: str  # typed | untyped (token); exact | overlap (span)
    pair: str  # "a~b" for pairwise figures, "*" for all annotators
    by: str  # all | label | role | segment | condition
    group: str
    value: float
    ci_low: float
    ci_high: float
    n: int  # tokens compared (Cohen), units (Fleiss), pairable values (alpha) or spans (span F1)

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        for k in ("value", "ci_low", "ci_high"):
            out[k] = _clean(out[k])
        return out


@dataclass
class AgreementReport:
    annotators: tuple[str, ...]
    labels: tuple[str, ...]
    n_items: int
    n_dialogues: int
    n_tokens: int
    n_boot: int
    confidence: float
    seed: int
    figures: list[Figure] = field(default_factory=list)

    CSV_FIELDS = tuple(Figure.__slots__)

    def get(self, metric: str, **where: str) -> Figure | None:
        """The first figure of ``metric`` matching ``where`` (defaults: by="all", group="all")."""
        where = {"by": "all", "group": "all", **where}
        for f in self.figures:
            if f.metric == metric and all(getattr(f, k) == v for k, v in where.items()):
                return f
        return None

    def select(self, **where: str) -> list[Figure]:
        return [f for f in self.figures if all(getattr(f, k) == v for k, v in where.items())]

    def csv_rows(self) -> list[dict[str, Any]]:
        return [f.to_dict() for f in self.figures]

    def to_csv(self) -> str:
        buf = io.StringIO()
        writer = csvsafe.DictWriter(buf, fieldnames=self.CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(self.csv_rows())
        return buf.getvalue()

    def to_dict(self) -> dict[str, Any]:
        return {
            "annotators": list(self.annotators),
            "labels": list(self.labels),
            "n_items": self.n_items,
            "n_dialogues": self.n_dialogues,
            "n_tokens": self.n_tokens,
            "n_boot": self.n_boot,
            "confidence": self.confidence,
            "seed": self.seed,
            "figures": self.csv_rows(),
        }


def _clean(x: float) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 6)


class Emitter:
    """Turns point values and bootstrap arrays into :class:`Figure` rows."""

    def __init__(self, confidence: float):
        self.confidence = confidence
        self.figures: list[Figure] = []

    def add(self, point, boot, n, **keys) -> None:
        point, n = np.atleast_1d(point), np.atleast_1d(n)
        lo, hi = percentile_ci(np.asarray(boot).reshape(-1, point.size), self.confidence)
        groups = keys.pop("groups")
        for i, g in enumerate(groups):
            if n[i] > 0:
                self.figures.append(Figure(**keys, group=g, value=float(point[i]),
                                           ci_low=float(lo[i]), ci_high=float(hi[i]),
                                           n=int(n[i])))
