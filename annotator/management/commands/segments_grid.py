from __future__ import annotations

import csv

from django.core.management.base import BaseCommand, CommandError

from pipeline.corpus import CorpusError, gold_from_dialogues, read_corpus, read_predictions
from pipeline.detectors.segments import grid_search


def _floats(raw: str) -> list[float]:
    try:
        return [float(x) for x in raw.split(",") if x.strip()]
    except ValueError:
        raise CommandError(f"expected comma-separated numbers, got {raw!r}") from None


class Command(BaseCommand):
    help = ("Grid-search the math segmenter's (T_anchor, T_sim) against gold: for each pair, the share of a "
            "detector's false positives and of true PII that fall inside MATH segments (MathEd-PII's analysis).")
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("gold", help="Import-format corpus with gold spans.")
        parser.add_argument("--predictions", required=True, help="Per-message predictions (e.g. presidio vanilla).")
        parser.add_argument("--t-anchor", default="0.05,0.1,0.15,0.2,0.3")
        parser.add_argument("--t-sim", default="0.3,0.4,0.5,0.6,0.7")
        parser.add_argument("--csv", dest="csv_out", help="Write the grid as CSV here (default: a table on stdout).")

    def handle(self, gold, predictions, t_anchor, t_sim, csv_out, **opts):
        try:
            dialogues = read_corpus(gold)
            preds = read_predictions(predictions)
        except FileNotFoundError as exc:
            raise CommandError(f"No such file: {exc.filename}") from None
        except CorpusError as exc:
            raise CommandError(str(exc)) from None
        rows = grid_search(dialogues, gold_from_dialogues(dialogues), preds, _floats(t_anchor), _floats(t_sim),
                           progress=lambda msg: self.stderr.write(msg))
        if csv_out:
            with open(csv_out, "w", newline="", encoding="utf-8") as fh:
                writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
            return
        cols = ["t_anchor", "t_sim", "math_message_share", "fp_in_math_share", "pii_in_math_share",
                "fp_per_pii_math", "fp_per_pii_non_math"]
        self.stdout.write("  ".join(f"{c:>18}" for c in cols))
        for r in rows:
            self.stdout.write("  ".join(f"{r[c]:>18}" if not isinstance(r[c], float) else f"{r[c]:>18.3f}" for c in cols))
