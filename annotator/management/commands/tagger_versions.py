"""``manage.py tagger_versions [--project SLUG]``: the versions the Tagger page lists, as a table, the
version each project runs and where it came from (its own, or the deployment's default day-one model)
and the runtime ``backend: auto`` measured for it on this machine,
and the default version that commands without a project run (``ACTIVE`` says ``default`` beside it)."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from annotator.management.cli import project_or_error
from annotator.model_store import model_default
from annotator.models import Project
from annotator.selectors.tagger import dev_summary, project_tagger, runtime_note, version_rows

HEADER = ("VERSION", "ACTIVE", "CREATED", "DEV", "CAN BECOME ACTIVE")


class Command(BaseCommand):
    help = ("List each project's trained tagger versions, newest first, as the Tagger page does: which one is "
            "active, which is the default of commands without a project (detect, deidentify), when each was trained, "
            "its dev scores, and what keeps a version from becoming active.")

    def add_arguments(self, parser):
        parser.add_argument("--project", help="Project slug (default: every project).")

    def handle(self, project=None, **opts):
        projects = [project_or_error(project)] if project else list(Project.objects.order_by("slug"))
        if not projects:
            self.stdout.write("No projects yet (create one with: manage.py create_project NAME --slug SLUG).")
            return
        default = model_default()
        self.stdout.write(f"Default of commands without a project: {default or 'none'}"
                          + ("" if default else " (train_tagger sets it; or tagger_activate VERSION --default)"))
        for proj in projects:
            self.stdout.write("")
            self._project(proj, default)

    def _project(self, project: Project, default: str | None) -> None:
        rows = version_rows(project)
        active = project.active_tagger or "none"
        self.stdout.write(self.style.MIGRATE_HEADING(
            f"{project.slug}: {len(rows)} version{'' if len(rows) == 1 else 's'}, active: {active}"))
        runs_on = project_tagger(project)
        self.stdout.write(f"  Runs {runs_on.version}: {runs_on.note}." if runs_on
                          else f"  Runs no tagger: {runs_on.note}.")
        if runs_on:
            self.stdout.write(f"  Runtime (backend auto): {runtime_note(runs_on.version)}.")
        if not rows:
            self.stdout.write(f"  No trained version yet (manage.py train_tagger --project {project.slug}).")
            return
        table = [HEADER] + [(row["info"].full_version, _marks(row, default),
                             row["info"].created_at[:16].replace("T", " "), dev_summary(row["info"]),
                             "no: " + "; ".join(row["blockers"]) if row["blockers"] else "yes") for row in rows]
        widths = [max(len(r[k]) for r in table) for k in range(len(HEADER) - 1)]
        for r in table:
            self.stdout.write("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=False)) + "  " + r[-1])


def _marks(row: dict, default: str | None) -> str:
    """The ACTIVE column: ``yes`` for the project's active version, ``default`` for the default."""
    marks = ["yes"] if row["active"] else []
    return ",".join(marks + (["default"] if row["info"].full_version == default else []))
