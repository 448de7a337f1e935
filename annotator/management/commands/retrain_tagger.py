"""``manage.py retrain_tagger --project SLUG [--wait] [--full]``: what "Retrain now" on the Tagger page
does (warm-started from the active version; ``--full`` trains from the base model instead)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.dispatch import in_this_thread
from annotator.management.cli import follow, project_or_error, quiet_task_logs, runs_in_this_process
from annotator.models import BackgroundJob
from annotator.services.tagger_retrain import tagger_retrain_job_run, tagger_retrain_request


class Command(BaseCommand):
    help = (
        "Retrain a project's tagger from its gold (plus generated dialogues) as a background job; the new "
        "version becomes active only if it beats the active one on the project's dev dialogues. It starts "
        "from the active version and trains on the gold that version has not seen (with a sample of the "
        "old and of generated data), unless --full or there is no active version. At most "
        "one retrain per project is queued at a time: asking again shows the one in progress. Without a "
        "broker the job runs here and the command waits; with one, --wait follows it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument(
            "--wait", action="store_true", help="Show progress until the retrain finishes."
        )
        parser.add_argument(
            "--full",
            action="store_true",
            help="Train from the base model on all the gold, not warm-started from the active version.",
        )
        parser.add_argument(
            "--epochs", type=int, help="Training epochs (default 3; 2 when warm-started)."
        )
        parser.add_argument(
            "--layers",
            type=int,
            choices=range(1, 13),
            metavar="N",
            help="Keep the encoder's first N layers (default 3; a warm start keeps its parent's).",
        )
        parser.add_argument(
            "--max-steps",
            type=int,
            metavar="N",
            help="Stop after N optimisation steps (a planned stop; a warm start's default is 500).",
        )

    def handle(self, project, wait, full=False, epochs=None, layers=None, max_steps=None, **opts):
        proj = project_or_error(project)
        here = runs_in_this_process()
        with in_this_thread(), quiet_task_logs():
            options = {
                k: v
                for k, v in {"epochs": epochs, "num_layers": layers, "max_steps": max_steps}.items()
                if v is not None
            }
            job, created = tagger_retrain_request(
                project=proj, trigger="command", options=options, full=full
            )
        if not created:
            self.stdout.write(f"A retrain of {proj.slug} is already {job.status} (job #{job.pk}).")
        else:
            self.stdout.write(f"Retrain of {proj.slug} queued as job #{job.pk}.")
        if not here:
            if not wait:
                self.stdout.write(
                    "Follow it on the Tagger page, or wait for it with --wait next time."
                )
                return
            try:
                follow(self.stdout, lambda: _poll(job), unit="steps")
            except KeyboardInterrupt:
                raise CommandError(
                    f"Stopped waiting; job #{job.pk} goes on in the workers."
                ) from None
        job.refresh_from_db()
        if (
            here and job.status == BackgroundJob.Status.QUEUED
        ):  # still queued (in a transaction): run it here;
            with quiet_task_logs():  # the queued task then finds it finished and does nothing
                tagger_retrain_job_run(job)
            job.refresh_from_db()
        if job.status == BackgroundJob.Status.FAILED:
            raise CommandError(
                f"Retrain job #{job.pk} failed: {job.error.splitlines()[0] if job.error else ''}"
            )
        if job.status != BackgroundJob.Status.SUCCEEDED:
            self.stdout.write(f"Retrain job #{job.pk} is {job.status}.")
            return
        result = job.result
        style = self.style.SUCCESS if result.get("activated") else self.style.WARNING
        self.stdout.write(style(f"{result['version']}: {result['decision']} — {result['reason']}"))


def _poll(job: BackgroundJob) -> tuple[int, int, bool]:
    job.refresh_from_db(fields=["status", "progress_done", "progress_total"])
    return job.progress_done, job.progress_total, job.is_finished
