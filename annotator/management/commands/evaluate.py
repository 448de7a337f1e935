from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from pipeline.corpus import CorpusError
from pipeline.evaluate_files import evaluate_files


class Command(BaseCommand):
    help = "Score per-message predictions against gold: token and span P/R/F1/F2 with bootstrap CIs."
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("predictions", help="Per-message JSONL written by `manage.py detect`.")
        parser.add_argument("--gold", required=True,
                            help="Gold: an import-format corpus with spans, or per-message JSONL (then --corpus).")
        parser.add_argument("--corpus", help="The corpus (texts) when --gold is per-message.")
        parser.add_argument("--segments", help="Per-message JSONL with MATH/NON-MATH (a math_segments run).")
        parser.add_argument("--n-boot", type=int, default=1000)
        parser.add_argument("--json", dest="json_out", help="Also write the full report as JSON here.")

    def handle(self, predictions, gold, corpus, segments, n_boot, json_out, **opts):
        try:
            report = evaluate_files(predictions, gold, corpus_path=corpus, segments_path=segments, n_boot=n_boot)
        except FileNotFoundError as exc:
            raise CommandError(f"No such file: {exc.filename}") from None
        except (CorpusError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(report.format_table())
        if json_out:
            with open(json_out, "w", encoding="utf-8") as fh:
                json.dump(report.to_dict(), fh, indent=1)
