"""Span-level agreement: F1 of each pair of annotators' spans, exact and overlapping, per breakdown,
from the span matches the token table recorded."""

from __future__ import annotations

import numpy as np

from pipeline.metrics.agreement.figures import Emitter
from pipeline.metrics.agreement.items import PAIR_CONDITIONS, SEGMENTS
from pipeline.metrics.agreement.table import Table
from pipeline.metrics.coefficients import f1_from_counts, grouped_sums, resampled_sums
from pipeline.types import SPEAKER_ROLES


def span_figures(out: Emitter, matches: dict[tuple[str, str], np.ndarray], t: Table, w: np.ndarray) -> None:
    for (a, b), r in matches.items():
        msg, lab_c, pc = r[:, 0], r[:, 1], r[:, 2]
        cols = [r[:, 3], r[:, 4], r[:, 5], r[:, 6], r[:, 7]]
        pair = f"{a}~{b}"
        for by, groups, code in [("all", ("all",), np.zeros_like(msg)),
                                 ("label", t.labels, lab_c),
                                 ("role", SPEAKER_ROLES, t.item_role[msg]),
                                 ("segment", SEGMENTS, t.item_seg[msg]),
                                 ("condition", PAIR_CONDITIONS, pc)]:
            g = len(groups)
            stats = grouped_sums(t.item_d[msg], code, t.n_dialogues, g, cols)
            point = stats.sum(0)
            boot = resampled_sums(w, stats.reshape(t.n_dialogues, -1)).reshape(-1, g, 5)
            n = point[:, 0] + point[:, 1]
            for scheme, (ma, mb) in (("exact", (2, 2)), ("overlap", (3, 4))):
                out.add(f1_from_counts(point[:, 0], point[:, 1], point[:, ma], point[:, mb]),
                        f1_from_counts(boot[..., 0], boot[..., 1], boot[..., ma], boot[..., mb]),
                        n, metric="span_f1", level="span", scheme=scheme, pair=pair, by=by,
                        groups=groups)
