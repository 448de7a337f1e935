"""``manage.py run_detector --project SLUG --detector NAME``: what Start run on the Runs page does."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.management.cli import (
    Progress,
    follow,
    json_object_or_error,
    project_or_error,
    runs_in_this_process,
)
from annotator.models import DetectorRun, RunChunk
from annotator.selectors.runs import run_label_counts
from annotator.services import runs as run_services
from pipeline import registry


class Command(BaseCommand):
    help = ("Start a detector run over a project's corpus: queued in chunks through the same services as the "
            "Runs page, so the run, its progress and its predictions appear there too. With a broker "
            "(REDIS_URL) the workers run it and --wait follows its progress; without one its chunks run "
            "here, one after another, and the command waits.")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument("--detector", required=True,
                            help=f"One of: {', '.join(registry.available())}.")
        parser.add_argument("--config", default="",
                            help='JSON object, e.g. \'{"preset": "tuned"}\' for presidio or '
                                 '\'{"strategy": "math_aware"}\' for llm.')
        parser.add_argument("--wait", action="store_true", help="Show progress until the run finishes.")

    def handle(self, project, detector, config, wait, **opts):
        proj = project_or_error(project)
        cfg = json_object_or_error(config)
        try:
            run = run_services.run_start(project=proj, detector=detector, config=cfg)
        except run_services.RunError as exc:
            raise CommandError(str(exc)) from None
        if runs_in_this_process():
            self.stdout.write(f"Run {run.label}: {run.progress_total:,} messages in {run.total_chunks} chunk(s), "
                              "running here (no broker).")
            _run_here(run, Progress(self.stdout, "messages"))
        else:
            queued = run_services.run_enqueue(run)
            self.stdout.write(f"Run {run.label} queued: {run.progress_total:,} messages in {queued} chunk(s).")
            if not wait:
                self.stdout.write(f"Follow it on the Runs page of {proj.slug}, or wait for it with --wait next time.")
                return
            try:
                follow(self.stdout, lambda: _poll(run), unit="messages")
            except KeyboardInterrupt:
                raise CommandError(f"Stopped waiting; run {run.label} goes on in the workers.") from None
        run.refresh_from_db()
        if run.status != DetectorRun.Status.SUCCEEDED:
            raise CommandError(f"Run {run.label} {run.status}: {run.error.splitlines()[0] if run.error else ''}".rstrip(": "))
        counts = ", ".join(f"{label} {n}" for label, n in run_label_counts(run)) or "no spans"
        self.stdout.write(self.style.SUCCESS(f"Run {run.label} succeeded: {counts}."))


def _run_here(run: DetectorRun, bar: Progress) -> None:
    """Without a broker, process the chunks one after another in this process, with the service
    the chunk task calls; a failure is recorded on the run by that service."""
    chunks = run.chunks.exclude(status=RunChunk.Status.DONE).order_by("index").values_list("pk", flat=True)
    try:
        for chunk_id in list(chunks):
            try:
                run_services.chunk_process(chunk_id=chunk_id)
            except Exception:  # noqa: BLE001 - chunk_fail has recorded it on the run
                break
            run.refresh_from_db(fields=["status", "progress_done", "progress_total"])
            bar.update(run.progress_done, run.progress_total, finished=run.is_finished)
    except KeyboardInterrupt:
        run_services.run_cancel(run=run)
        raise CommandError(f"Interrupted: run {run.label} cancelled; resume it from its page.") from None


def _poll(run: DetectorRun) -> tuple[int, int, bool]:
    run.refresh_from_db(fields=["status", "progress_done", "progress_total"])
    return run.progress_done, run.progress_total, run.is_finished
