from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from pipeline import csvsafe
from pipeline.corpus import CorpusError
from pipeline.evaluate_files import GRID_LEGEND, format_grid, grid_search_files


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
        parser.add_argument("--t-anchor", default="0.1,0.2,0.3,0.4,0.5")
        parser.add_argument("--t-sim", default="0.3,0.4,0.5,0.6,0.7")
        parser.add_argument("--config", default="{}", help="math_segments config as JSON (model, batch size).")
        parser.add_argument("--csv", dest="csv_out", help="Write the grid as CSV here (default: a table on stdout).")

    def handle(self, gold, predictions, t_anchor, t_sim, config, csv_out, **opts):
        try:
            rows = grid_search_files(predictions, gold, _floats(t_anchor), _floats(t_sim),
                                     config=json.loads(config))
        except FileNotFoundError as exc:
            raise CommandError(f"No such file: {exc.filename}") from None
        except (CorpusError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        if csv_out:
            with open(csv_out, "w", newline="", encoding="utf-8") as fh:
                writer = csvsafe.DictWriter(fh, fieldnames=list(rows[0]))
                writer.writeheader()
                writer.writerows(rows)
            self.stdout.write(f"Wrote {len(rows)} rows to {csv_out}.")
        else:
            self.stdout.write(format_grid(rows))
            self.stdout.write("\nColumns:\n" + "\n".join(f"  {line}" for line in GRID_LEGEND))
