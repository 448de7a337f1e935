from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from annotator.models import Project
from annotator.selectors.tagger import (
    dev_summary,
    distillation_summary,
    tagger_versions,
    threshold_note,
    version_blockers,
)
from annotator.services.tagger import (
    TaggerError,
    TeacherError,
    tagger_default_publish,
    tagger_distil,
    tagger_export,
    tagger_train,
    version_info,
)
from pipeline.tagger.training.config import STUDENT_DEFAULTS, TeacherDevError

TINY_DEV = 10  # dev dialogues under which the dev scores (and activation) rest on too little


class TrainingProgress:
    """The training's progress callback (``progress(done, total, message)``, after every batch):
    a bar on a terminal; elsewhere (a log, CI, a pipe) one line when the phase changes (each
    epoch, scoring dev, tuning, saving) and every 10 % of the steps, never silence until the end."""

    def __init__(self, stdout):
        self.stdout, self.phase, self.tenth = stdout, None, -1
        self.bar = tqdm(total=0, unit="batch") if sys.stderr.isatty() else None

    def __call__(self, done: int, total: int, message: str = "") -> None:
        if self.bar is not None:
            self.bar.total, self.bar.n = total, done
            self.bar.set_postfix_str(message[:40])
            self.bar.refresh()
            return
        phase, tenth = message.split(",")[0], (10 * done // total if total else 0)
        if phase != self.phase or tenth != self.tenth:
            self.stdout.write(f"  {done:,}/{total:,} steps  {message}")
        self.phase, self.tenth = phase, tenth

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


class Command(BaseCommand):
    help = "Train the Blindspot tagger from a project's gold set and/or a labelled JSONL, plus synthetic data."

    def add_arguments(self, parser):
        parser.add_argument("--project", help="The project whose gold set trains the tagger.")
        parser.add_argument("--export-only", metavar="NAME/VERSION",
                            help="Do not train: export a saved version to ONNX (verified against torch).")
        parser.add_argument("--jsonl", help="Import-format corpus with gold spans to train on as well.")
        parser.add_argument("--synthetic", type=int, default=0,
                            help="Add N generated dialogues (always seed 1234: the same N, the same dialogues).")
        parser.add_argument("--dev-jsonl", metavar="PATH",
                            help="Score dev on this labelled corpus instead of a split of the training data "
                                 "(with --distill-from: instead of the teacher's dev dialogues); "
                                 "dialogues neither model trained on.")
        parser.add_argument("--no-gold", action="store_true", help="Do not use the project's gold set.")
        parser.add_argument("--epochs", type=int)
        parser.add_argument("--max-seconds", type=float,
                            help="Budget for the optimisation steps (not data encoding); a version cut short is kept "
                                 "but cannot become active.")
        parser.add_argument("--f-beta", type=float, help="Tune thresholds for F2 (default) or e.g. F5.")
        parser.add_argument("--min-dev-score", type=float,
                            help="Dev F-beta under which the version counts as diverged and is never activated "
                                 "(default 0.5; 0 for a quick experiment on a few dialogues).")
        parser.add_argument("--layers", type=int, choices=range(1, 13), metavar="N",
                            help="Keep the encoder's first N layers (default 3; 4 is a little more accurate, ~1.4x slower); "
                                 f"with --distill-from, N of the teacher's layers spread evenly (default {STUDENT_DEFAULTS['num_layers']}).")
        parser.add_argument("--feed-forward", type=int, metavar="N",
                            help="With --distill-from: keep N of each layer's feed-forward units, those that weigh "
                                 f"most (default {STUDENT_DEFAULTS['student_feed_forward']}; the teacher's width or more keeps "
                                 "all of them).")
        parser.add_argument("--distill-from", metavar="NAME/VERSION|PATH",
                            help="Distil this trained version into a smaller student: its weights less some layers, "
                                 "trained on its soft labels as well as the gold ones, and checked against it on "
                                 "its dev dialogues (give the data options the teacher was trained with) "
                                 f"(defaults: {', '.join(f'{k} {v}' for k, v in STUDENT_DEFAULTS.items())}).")
        parser.add_argument("--no-student", action="store_true",
                            help="Do not distil the faster student after the teacher (by default it is distilled "
                                 "and made active when it passes its check against the teacher).")
        parser.add_argument("--no-default", action="store_true",
                            help="Do not make the version this training activates the default of commands without "
                                 "a project (detect, deidentify); by default it becomes the default unless another "
                                 "project's version is.")
        parser.add_argument("--if-missing", action="store_true",
                            help="Do nothing when the project already has a trained tagger (for the demo).")

    def handle(self, project, jsonl, synthetic, no_gold, epochs, max_seconds, f_beta, layers, if_missing,
               min_dev_score=None, dev_jsonl=None, **opts):
        if opts.get("export_only"):
            try:
                info = tagger_export(opts["export_only"])
            except TaggerError as exc:
                raise CommandError(str(exc)) from None
            self.stdout.write(self.style.SUCCESS(
                f"Exported {info.full_version} to ONNX ({', '.join(k for k in ('fp32', 'int8') if k in info.onnx)}), "
                "verified against torch."
            ))
            return
        if not project:
            raise CommandError("--project is required (or --export-only NAME/VERSION).")
        proj = Project.objects.filter(slug=project).first()
        if proj is None:
            raise CommandError(f"No project with slug {project!r}.")
        if if_missing and tagger_versions(proj):
            self.stdout.write(f"Tagger {proj.active_tagger or tagger_versions(proj)[0].full_version} exists; not training.")
            return
        distill_from = opts.get("distill_from")
        if opts.get("feed_forward") is not None and not distill_from:
            raise CommandError("--feed-forward narrows a student: give --distill-from NAME/VERSION too.")
        options = {k: v for k, v in {"epochs": epochs, "max_seconds": max_seconds, "f_beta": f_beta,
                                     "num_layers": layers, "min_dev_score": min_dev_score,
                                     "student_feed_forward": opts.get("feed_forward")}.items() if v is not None}
        progress = TrainingProgress(self.stdout)
        train = {"project": proj, "use_gold": not no_gold, "jsonl": jsonl, "synthetic": synthetic,
                 "dev_jsonl": dev_jsonl, "options": options, "progress": progress}
        try:
            info = (tagger_distil(teacher=distill_from, **train) if distill_from
                    else tagger_train(student=not opts.get("no_student"), **train))
        except TeacherError as exc:
            raise CommandError(f"--distill-from: {exc}") from None
        except TeacherDevError as exc:
            raise CommandError(f"--distill-from: {exc} (--dev-jsonl PATH)") from None
        except (TaggerError, FileNotFoundError, ValueError) as exc:
            raise CommandError(str(exc)) from None
        finally:
            progress.close()
        self._warn_if_dev_is_tiny(info)
        self._report(proj, info)
        if not opts.get("no_default"):
            self.stdout.write(tagger_default_publish(project=proj))

    def _report(self, proj, info) -> None:
        """The version trained (and its student), its dev scores, and what is active now."""
        proj.refresh_from_db(fields=["active_tagger"])
        if info.distilled_from:
            self.stdout.write(f"Distilled from {info.distilled_from}: {distillation_summary(info)}.")
            self._threshold_note(info)
        trained = f"Trained {info.full_version} in {info.training_seconds:.0f}s on {_data(info)}; {dev_summary(info)}"
        blockers = version_blockers(info)
        if blockers:
            self.stdout.write(self.style.WARNING(f"{trained}; NOT activated: {'; '.join(blockers)}."))
        else:
            self.stdout.write(f"{trained}.")
        student = info.student or {}
        if student.get("version"):
            student_info = version_info(student["version"])
            self.stdout.write(f"Distilled its student {student['version']}: {distillation_summary(student_info)}.")
            self._threshold_note(student_info)
        if student and not student.get("used"):
            self.stdout.write(self.style.WARNING(f"Student not used: {student['reason']}."))
        if proj.active_tagger in (info.full_version, student.get("version")):
            self.stdout.write(self.style.SUCCESS(f"{proj.active_tagger} is now the active tagger of {proj.slug}."))
        else:
            self.stdout.write(self.style.WARNING(f"{proj.slug} keeps {proj.active_tagger or 'no active tagger'}."))

    def _threshold_note(self, info) -> None:
        note = threshold_note(info)
        if note:
            self.stdout.write(f"Its {note}.")

    def _warn_if_dev_is_tiny(self, info) -> None:
        n = (info.data.get("dev") or {}).get("dialogues")
        if n is not None and n < TINY_DEV:
            self.stderr.write(self.style.WARNING(
                f"Warning: the dev set has only {n} dialogue{'' if n == 1 else 's'} (under {TINY_DEV}): its scores, "
                "the tuned thresholds and whether this version may become active rest on very little. Add gold, "
                "generated dialogues (--synthetic N) or a labelled --dev-jsonl PATH."))


def _data(info) -> str:
    """What a version trained on, for people: ``info.data`` without its braces."""
    train, dev = info.data.get("train") or {}, info.data.get("dev") or {}
    return (f"{train.get('dialogues', 0):,} dialogues ({train.get('messages', 0):,} messages, "
            f"{train.get('spans', 0):,} spans), dev {dev.get('dialogues', 0):,} dialogues")
