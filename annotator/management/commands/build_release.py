"""``manage.py build_release --project SLUG [--from gold|RUN]``: what Build release on the Exports page does."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator import dispatch
from annotator.management.cli import follow, project_or_error, quiet_task_logs, runs_in_this_process
from annotator.models import DetectorRun, Export
from annotator.selectors.release_review import review_counts
from annotator.services.exports import ExportError, export_location
from annotator.services.releases import release_start
from pipeline.surrogates import MODES, SCOPES


class Command(BaseCommand):
    help = ("Build a new anonymized release version of a project: its gold set (default) or a finished "
            "detector run's spans, replaced by surrogates, tags or redaction, with a leak check and a "
            "utility report. Queued like the Exports page's button; --wait follows the build (without "
            "a broker it runs here and the command always waits).")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument("--from", dest="source", default="gold", metavar="gold|RUN",
                            help="gold (default), or the id of a succeeded detector run.")
        parser.add_argument("--mode", choices=MODES, default="surrogate",
                            help="surrogate: realistic replacements; tag: <NAME>; redact: [REDACTED].")
        parser.add_argument("--scope", choices=SCOPES, default="dialogue",
                            help="Keep surrogates consistent within each dialogue or across the corpus.")
        parser.add_argument("--llm", action="store_true", help="Ask the LLM for surrogates (one call per dialogue).")
        parser.add_argument("--include-incomplete", action="store_true",
                            help="From gold: also release dialogues with messages not yet in the gold set.")
        parser.add_argument("--wait", action="store_true", help="Show progress until the build finishes.")

    def handle(self, project, source, mode, scope, llm, include_incomplete, wait, **opts):
        proj = project_or_error(project)
        run = None
        if source != "gold":
            if not source.isdigit():
                raise CommandError(f"--from takes gold or a run id, not {source!r}.")
            run = DetectorRun.objects.filter(pk=int(source), project=proj).first()
            if run is None:
                raise CommandError(f"Project {proj.slug} has no run #{source}.")
        here = runs_in_this_process()
        if here:
            self.stdout.write(f"Building a release of {proj.slug} here (no broker).")
        try:  # without a broker the build runs in this thread: Ctrl-C stops it and marks it failed
            with dispatch.in_this_thread(), quiet_task_logs():
                export = release_start(project=proj, user=None, source="run" if run else "gold", run=run,
                                       mode=mode, scope=scope, use_llm=llm, complete_only=not include_incomplete)
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        except KeyboardInterrupt:
            failed = Export.objects.filter(project=proj, kind=Export.Kind.RELEASE).order_by("-pk").first()
            raise CommandError("Interrupted: " + (f"release v{failed.version} was marked failed; build a new one."
                                                  if failed else "no release was started.")) from None
        self.stdout.write(f"Release v{export.version} of {proj.slug} queued"
                          + (" (no broker: building here)." if here else "."))
        if not (wait or here):
            self.stdout.write(f"Follow it on the Exports page of {proj.slug}, or wait for it with --wait next time.")
            return
        try:
            with quiet_task_logs():
                follow(self.stdout, lambda: _poll(export), unit="steps")
        except KeyboardInterrupt:
            raise CommandError(f"Stopped waiting for release v{export.version}"
                               + ("; it was building here and stopped with this command." if here else
                                  "; it goes on in the workers.")) from None
        export.refresh_from_db()
        if export.status != Export.Status.SUCCEEDED:
            raise CommandError(f"Release v{export.version} failed: {(export.error or 'no reason recorded').splitlines()[0]}")
        leaks = export.report.get("leaks", {}).get("leaks", 0)
        pending = review_counts(export)["pending"]
        if not export.publishable:
            verdict = f"NOT publishable: the leak check found {leaks}"
        elif pending:
            verdict = f"NOT publishable yet: {pending} place(s) wait in its review queue"
        else:
            verdict = "publishable"
        write = self.stdout.write if export.publishable and not pending else self.stderr.write
        write(f"Release v{export.version}: {export.manifest.get('dialogues', 0)} dialogues, "
              f"{export.manifest.get('messages', 0)} messages -> {export_location(export)} ({verdict}).")
        for f in export.files:
            self.stdout.write(f"  {f['sha256']}  {f['name']}")
        if not export.publishable or pending:  # a pipeline must not ship it as it is
            raise CommandError(f"Release v{export.version} is not publishable as it is: review its candidates on "
                               f"the release's page (Review), or publish it there with an acknowledgement.")


def _poll(export: Export) -> tuple[int, int, bool]:
    export.refresh_from_db(fields=["status", "progress_done", "progress_total"])
    return export.progress_done, export.progress_total, export.status in (Export.Status.SUCCEEDED,
                                                                         Export.Status.FAILED)
