from __future__ import annotations

import json
import sys
import time

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from pipeline import registry
from pipeline.corpus import CorpusError, detections_to_rows, read_corpus, write_jsonl
from pipeline.detectors.base import ConfigError, DetectorError


class Command(BaseCommand):
    help = "Run a detector over an import-format corpus file (no database) and write per-message predictions."
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("corpus")
        parser.add_argument("--detector", required=True, help=f"One of: {', '.join(registry.available())}")
        parser.add_argument("--config", default="{}", help="Detector config as JSON.")
        parser.add_argument("--out", required=True, help="Output JSONL ('-' for stdout).")

    def handle(self, corpus, detector, config, out, **opts):
        try:
            cfg = json.loads(config)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--config is not valid JSON: {exc.msg}") from None
        try:
            dialogues = read_corpus(corpus)
            det = registry.build(detector, cfg)
        except FileNotFoundError:
            raise CommandError(f"No such file: {corpus}") from None
        except (CorpusError, ConfigError, registry.UnknownDetectorError) as exc:
            raise CommandError(str(exc)) from None
        n_messages = sum(len(d.messages) for d in dialogues)
        t0 = time.perf_counter()
        fh = sys.stdout if out == "-" else open(out, "w", encoding="utf-8")  # noqa: SIM115
        written = 0
        try:
            with tqdm(total=n_messages, unit="msg", disable=out == "-" or not sys.stderr.isatty()) as bar:
                for detections in det.detect_many(dialogues):
                    written += write_jsonl(detections_to_rows(detections), fh)
                    bar.update(len(detections))
        except DetectorError as exc:
            raise CommandError(f"{detector} failed: {exc}") from None
        finally:
            if fh is not sys.stdout:
                fh.close()
        seconds = time.perf_counter() - t0
        self.stderr.write(
            f"{detector} ({det.model_version}): {written} messages in {seconds:.1f}s "
            f"({written / seconds if seconds else 0:,.0f} messages/s) -> {out}"
        )
