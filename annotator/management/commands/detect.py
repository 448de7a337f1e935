from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotator.management.cli import add_workers_argument, workers_or_error
from annotator.model_store import command_detector_config
from annotator.storage import StorageError
from pipeline import registry
from pipeline.corpus import CorpusError, detections_to_rows, write_jsonl
from pipeline.detectors.base import ConfigError, DetectorError
from pipeline.detectors.llm import failed_share_error, usage_line
from pipeline.formats import read_corpus, sniff
from pipeline.formats.native import iter_jsonl_dialogues
from pipeline.parallel import ParallelDetector
from pipeline.types import Dialogue


def _stream(path: Path, *, count: bool) -> tuple[Iterator[Dialogue], int | None]:
    """The corpus's dialogues and, with ``count``, its message count (for the progress bar):
    JSONL streamed (the count from a first look at each line, a pass over the whole file that a
    run with no bar to show does not pay), CSV read whole (its rows may come in any order)."""
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if sniff(path.name, head) != "jsonl":
        dialogues = read_corpus(path)
        return iter(dialogues), sum(len(d.messages) for d in dialogues)
    total = None
    if count:
        with open(path, encoding="utf-8-sig") as fh:
            total = sum(len(obj.get("messages") or []) for obj in _objects(fh))

    def read() -> Iterator[Dialogue]:
        with open(path, encoding="utf-8-sig") as fh:
            yield from iter_jsonl_dialogues(fh)

    return read(), total


def _processes(used: int, asked: int) -> str:
    """The processes that detected, and the ``--workers`` asked for when those differ (a stream of
    one chunk, or a detector such as the LLM that runs in one process)."""
    text = f"{used} process{'es' * (used != 1)}"
    return text if used == asked else f"{text}, {asked} asked for"


def _objects(fh) -> Iterator[dict]:
    for line in fh:
        try:
            obj = json.loads(line) if line.strip() else None
        except json.JSONDecodeError:
            continue  # the reader reports it, with its line number
        if isinstance(obj, dict):
            yield obj


class Command(BaseCommand):
    help = ("Run a detector over an import-format corpus file (no database) and write per-message predictions. "
            "Streams a JSONL corpus through --workers processes; the output is the same for any number.")
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("corpus")
        parser.add_argument("--detector", required=True, help=f"One of: {', '.join(registry.available())}")
        parser.add_argument("--config", default="{}", help="Detector config as JSON.")
        parser.add_argument("--model", metavar="NAME/VERSION",
                            help="The tagger version to run (tagger, ensemble); default: the default version "
                                 "train_tagger published (tagger_versions marks it), never simply the newest.")
        parser.add_argument("--out", required=True, help="Output JSONL ('-' for stdout).")
        add_workers_argument(parser)

    def handle(self, corpus, detector, config, out, workers=None, model=None, **opts):
        workers = workers_or_error(workers)
        try:
            cfg = json.loads(config)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--config is not valid JSON: {exc.msg}") from None
        try:
            show_bar = out != "-" and sys.stderr.isatty()
            dialogues, n_messages = _stream(Path(corpus), count=show_bar)
            cfg = command_detector_config(detector, cfg, model=model)
            det = ParallelDetector(detector, cfg, workers=workers, plugins=settings.BLINDSPOT_DETECTOR_PLUGINS)
        except FileNotFoundError:
            raise CommandError(f"No such file: {corpus}") from None
        except (CorpusError, ConfigError, registry.UnknownDetectorError, StorageError) as exc:
            raise CommandError(str(exc)) from None
        t0 = time.perf_counter()
        fh = sys.stdout if out == "-" else open(out, "w", encoding="utf-8")  # noqa: SIM115
        written = 0
        try:
            with tqdm(total=n_messages, unit="msg", disable=not show_bar) as bar:
                for detections in det.detect_many(dialogues):
                    written += write_jsonl(detections_to_rows(detections), fh)
                    bar.update(len(detections))
        except CorpusError as exc:
            raise CommandError(str(exc)) from None
        except DetectorError as exc:
            self._report_usage(det)
            raise CommandError(f"{detector} failed after {written} messages written: {exc}") from None
        finally:
            if fh is not sys.stdout:
                fh.close()
        seconds = time.perf_counter() - t0
        self.stderr.write(
            f"{detector} ({det.model_version}): {written} messages in {seconds:.1f}s "
            f"({written / seconds if seconds else 0:,.1f} messages/s, {_processes(det.processes, workers)}) -> {out}"
        )
        usage = self._report_usage(det)
        failed = failed_share_error(usage, det.detector.config["max_failed_share"]) if usage else None
        if failed:
            raise CommandError(f"{detector} failed: {failed}; the {written} messages are written to {out}")

    def _report_usage(self, det: ParallelDetector) -> dict:
        """What the detector spent and what went wrong (an LLM's; others report nothing), and each
        message that got no usable answer."""
        usage = dict(getattr(det.detector, "usage", None) or {})
        if usage:
            self.stderr.write(f"usage: {usage_line(usage)}")
            for p in usage.get("failed", []):
                self.stderr.write(f"  failed: dialogue {p['dialogue_id']} message {p['index']}: "
                                  f"{p['kind']}: {p['detail'][:200]}")
        return usage
