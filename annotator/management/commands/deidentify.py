from __future__ import annotations

import json
import resource
import sys
import time

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotator.management.cli import add_workers_argument, workers_or_error
from annotator.model_store import command_detector_config
from annotator.storage import StorageError
from pipeline import registry
from pipeline.corpus import CorpusError
from pipeline.detectors.base import ConfigError, DetectorError
from pipeline.parallel import ParallelDetector
from pipeline.surrogates import MODES, SCOPES, SurrogateKeyError
from pipeline.surrogates.batch import deidentify_file, report_paths
from pipeline.surrogates.fields import FieldPolicy, FieldPolicyError


class Command(BaseCommand):
    help = (
        "De-identify an import-format corpus file (no database): replace the spans inside the file, "
        "or a detector's, and write the release in the same format plus leak, utility and summary "
        "reports and the mapping table beside it. Streams, so memory stays flat; a detector runs in "
        "--workers processes."
    )
    requires_system_checks: list = []
    requires_migrations_checks = False

    def add_arguments(self, parser):
        parser.add_argument("corpus")
        parser.add_argument("--out", required=True, help="Release JSONL; reports are written beside it.")
        parser.add_argument("--detector", default="",
                            help=f"Find spans with a detector ({', '.join(registry.available())}); "
                                 "default: the spans inside the file (gold).")
        parser.add_argument("--config", default="{}", help="Detector config as JSON.")
        add_workers_argument(parser)
        parser.add_argument("--model", metavar="NAME/VERSION",
                            help="The tagger version to run (--detector tagger or ensemble, --second-opinion "
                                 "tagger); default: the default version train_tagger published, never the newest.")
        parser.add_argument("--mode", choices=MODES, default="surrogate")
        parser.add_argument("--scope", choices=SCOPES, default="dialogue",
                            help="Surrogates consistent within each dialogue (default) or across the corpus.")
        parser.add_argument("--llm", action="store_true",
                            help="LLM surrogates (OPENAI_BASE_URL, OPENAI_API_KEY, BLINDSPOT_LLM_MODEL).")
        parser.add_argument("--key", default="", help="Surrogate key (default: BLINDSPOT_SURROGATE_KEY).")
        parser.add_argument("--no-mapping", action="store_true", help="Do not write the mapping table.")
        parser.add_argument("--gold", default="",
                            help="Reviewed dialogues of the corpus (import format, their spans are gold): "
                                 "released with their gold spans, and what the detector misses on them "
                                 "estimates the residual PII of the rest, per 1,000 messages, with a 95 %% "
                                 "upper bound (or, with too few to bound it, how many dialogues a bound needs).")
        parser.add_argument("--second-opinion", default="", metavar="DETECTOR[,DETECTOR]",
                            help="Detectors that also scan the released text, beside the rules detector's "
                                 "structured identifiers (always): tagger (recall first, --model or the "
                                 "default version), presidio (tuned). Their hits nobody marked become review "
                                 "candidates.")
        parser.add_argument("--fields", default="{}", metavar="JSON",
                            help='The policy for the record around the texts (docs/exports.md), e.g. '
                                 '\'{"speaker": "pseudonym", "id": "keyed", "ts": "shift", "meta": "scan", '
                                 '"meta_keys": {"grade": "keep", "notes": "drop"}, "role_labels": [...]}\'; '
                                 'every key optional, these are the defaults.')
        parser.add_argument("--fail-on-leaks", action="store_true",
                            help="Exit with status 1 if the leak check finds any, or review candidates remain.")

    def handle(self, corpus, out, detector, config, mode, scope, llm, key, no_mapping, fail_on_leaks, gold="",
               workers=None, second_opinion="", model=None, fields="{}", **opts):
        workers = workers_or_error(workers)
        policy = self._fields(fields)
        key = key or settings.BLINDSPOT_SURROGATE_KEY
        if not key and mode != "surrogate" and policy.id == "keyed":
            raise CommandError("Keyed dialogue ids need a key: pass --key or set BLINDSPOT_SURROGATE_KEY "
                               "(an HMAC under a known key is undone by guessing ids), or --fields '{\"id\": \"keep\"}'.")
        key = key or ("no-key-needed-for-tags" if mode != "surrogate" else "")
        det = self._detector(detector, config, workers, model)
        opinion = self._second_opinion(second_opinion, model)
        proposer = self._proposer(llm)
        bar = tqdm(unit="dlg", disable=not sys.stderr.isatty())
        t0 = time.perf_counter()
        try:
            summary = deidentify_file(
                corpus, out, key=key, spans_for=det, mode=mode, scope=scope, proposer=proposer,
                mapping=not no_mapping, progress=lambda stage, n: (bar.set_description(stage), bar.update(100)),
                extra_summary={"detector": detector or "spans in the file",
                               "model_version": det.model_version if det is not None else None},
                gold=gold or None, second_opinion=opinion, fields=policy,
            )
        except FileNotFoundError as exc:
            raise CommandError(f"No such file: {exc.filename or corpus}") from None
        except SurrogateKeyError as exc:
            raise CommandError(f"{exc} (or pass --key)") from None
        except (CorpusError, DetectorError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            bar.close()
        paths = report_paths(out)
        self._report(summary, paths, seconds=time.perf_counter() - t0, workers=workers if det is not None else 1,
                     mapping=not no_mapping)
        self._verdict(summary, fail_on_leaks=fail_on_leaks, leaks_file=paths["leaks"].name)

    def _detector(self, detector: str, config: str, workers: int, model: str | None) -> ParallelDetector | None:
        """The detector that finds the spans (None: the spans inside the file), in ``workers`` processes."""
        try:
            cfg = json.loads(config)
        except json.JSONDecodeError as exc:
            raise CommandError(f"--config is not valid JSON: {exc.msg}") from None
        if not detector:
            return None
        if detector == "llm":
            cfg.setdefault("model", settings.BLINDSPOT_LLM_MODEL)
            if settings.OPENAI_BASE_URL:
                cfg.setdefault("base_url", settings.OPENAI_BASE_URL)
        try:
            cfg = command_detector_config(detector, cfg, model=model)
            return ParallelDetector(detector, cfg, workers=workers, plugins=settings.BLINDSPOT_DETECTOR_PLUGINS)
        except (ConfigError, registry.UnknownDetectorError, ImportError, ValueError, StorageError) as exc:
            raise CommandError(str(exc)) from None

    def _fields(self, fields: str) -> FieldPolicy:
        try:
            return FieldPolicy.from_config(json.loads(fields))
        except json.JSONDecodeError as exc:
            raise CommandError(f"--fields is not valid JSON: {exc.msg}") from None
        except (FieldPolicyError, TypeError) as exc:
            raise CommandError(f"--fields: {exc}") from None

    def _proposer(self, llm: bool):
        """LLM surrogates with ``--llm``, else None (the rule-based surrogates)."""
        if not llm:
            return None
        from pipeline.surrogates.llm import LLMSurrogates

        return LLMSurrogates(model=settings.BLINDSPOT_LLM_MODEL, base_url=settings.OPENAI_BASE_URL or None,
                             api_key=settings.OPENAI_API_KEY)

    def _report(self, summary: dict, paths: dict, *, seconds: float, workers: int, mapping: bool) -> None:
        """What was written, how fast, the residual risk, the review candidates and capture-recapture."""
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        worker_rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
        self.stdout.write(
            f"{summary['messages']:,} messages, {summary['spans']:,} spans in {seconds:.1f} s "
            f"({summary['messages'] / seconds if seconds else 0:,.0f} messages/s); peak RSS {rss:.0f} MB"
            + (f", {worker_rss:.0f} MB in the largest of {workers} workers" if workers > 1 else "")
        )
        self.stdout.write(f"release -> {paths['release']}; reports: {paths['leaks'].name}, "
                          f"{paths['utility'].name}, {paths['summary'].name}"
                          + (f"; mapping table (keep private): {paths['mapping'].name}" if mapping else ""))
        fields = summary["strategy"]["fields"]
        self.stdout.write(f"record: speaker labels {fields['speaker']} ({summary['speaker_originals']:,} names "
                          f"from speaker labels), ids {fields['id']}, timestamps {fields['ts']}, metadata "
                          f"{fields['meta']}" + "".join(f", meta.{k} {v}" for k, v in fields["meta_keys"].items())
                          + (f"; {summary['fallbacks']['ts_unread_dropped']:,} unreadable timestamp(s) left out"
                             if summary["fallbacks"].get("ts_unread_dropped") else ""))
        self.stdout.write(f"residual risk: {summary['residual_risk']['sentence']}")
        cands = summary["candidates"]
        self.stdout.write(f"review candidates: {cands['pending']} pending {cands['by_reason']}, "
                          f"{cands['dismissed']} dismissed (private: {paths['candidates'].name})")
        capture = summary["capture_recapture"]
        for name, est in capture.items() if "available" not in capture else []:
            self.stdout.write(f"capture-recapture ({name}): {est['sentence']}")

    def _verdict(self, summary: dict, *, fail_on_leaks: bool, leaks_file: str) -> None:
        """Not publishable with candidates pending; the leak check's result. ``--fail-on-leaks``
        exits with status 1 on either."""
        pending = summary["candidates"]["pending"]
        if pending:
            self.stdout.write(self.style.ERROR(f"not publishable: {pending} candidate(s) to review"))
            if fail_on_leaks:
                sys.exit(1)
        if summary["leaks"] == 0:
            self.stdout.write(self.style.SUCCESS("leak check: no original PII string in the release"))
        else:
            self.stdout.write(self.style.ERROR(
                f"leak check: {summary['leaks']} original PII string(s) found — see {leaks_file}"))
            if fail_on_leaks:
                sys.exit(1)

    def _second_opinion(self, names: str, model: str | None) -> list:
        from pipeline.surrogates.audit import default_second_opinion

        configs = {"tagger": {"policy": "recall_first"}, "presidio": {"preset": "tuned"}}
        detectors = default_second_opinion()
        for name in filter(None, (n.strip() for n in names.split(","))):
            if name not in configs:
                raise CommandError(f"--second-opinion takes {' and '.join(configs)}, not {name!r}.")
            try:
                detectors.append(registry.build(name, command_detector_config(name, configs[name], model=model)))
            except (ConfigError, ImportError, ValueError, StorageError, OSError) as exc:
                raise CommandError(f"--second-opinion {name}: {exc}") from None
        return detectors
