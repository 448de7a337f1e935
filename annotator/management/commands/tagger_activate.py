"""``manage.py tagger_activate VERSION --project SLUG``: what "Make active" on the Tagger page does;
``--default`` also (or, without ``--project``, only) makes it the default of commands without a project."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from annotator.management.cli import project_or_error
from annotator.selectors.tagger import tagger_versions
from annotator.services.tagger import TaggerError, tagger_activate, tagger_default_set


class Command(BaseCommand):
    help = ("Make a trained version the project's active tagger, with the Tagger page's checks (a version of this "
            "project's tagger whose training neither stopped early nor diverged and whose export passed its check) "
            "and its audit event; with --default, also the default version of commands without a project (detect, "
            "deidentify). List the versions with tagger_versions.")

    def add_arguments(self, parser):
        parser.add_argument("version", metavar="VERSION",
                            help="The version, as tagger_versions lists it: SLUG/VERSION, or VERSION alone.")
        parser.add_argument("--project", help="Project slug (required unless --default).")
        parser.add_argument("--default", action="store_true",
                            help="Make VERSION (SLUG/VERSION without --project) the default of commands without a "
                                 "project, as train_tagger does for the first project it trains.")

    def handle(self, version, project=None, default=False, **opts):
        if not project and not default:
            raise CommandError("--project is required (or --default, with VERSION as SLUG/VERSION).")
        if project:
            self._activate(version, project_or_error(project))
        if default:
            full = version if "/" in version or not project else f"{project}/{version}"
            try:
                previous = tagger_default_set(version=full)
            except TaggerError as exc:
                raise CommandError(f"{exc} The default stays as it was; the versions: manage.py tagger_versions") from None
            self.stdout.write(self.style.SUCCESS(
                f"{full} is now the default tagger of commands without a project (was {previous or 'none'})."))

    def _activate(self, version: str, proj) -> None:
        full = version if "/" in version else f"{proj.slug}/{version}"
        if full == proj.active_tagger:
            self.stdout.write(f"{full} is already the active tagger of {proj.slug}.")
            return
        previous = proj.active_tagger
        if full.split("/")[0] == proj.slug and full not in {v.full_version for v in tagger_versions(proj)}:
            raise CommandError(f"{proj.slug}'s tagger has no version {full[:120]}. " + _listing(proj))
        try:
            tagger_activate(project=proj, version=full, user=None)
        except TaggerError as exc:
            raise CommandError(f"{exc} {proj.slug} keeps {previous or 'no active tagger'}. " + _listing(proj)) from None
        self.stdout.write(self.style.SUCCESS(
            f"{full} is now the active tagger of {proj.slug} (was {previous or 'none'})."))


def _listing(project) -> str:
    return f"Its versions: manage.py tagger_versions --project {project.slug}"
