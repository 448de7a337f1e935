from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.models import Export, Project
from annotator.services.exports import (
    ExportError,
    export_copy_to,
    export_create,
    export_location,
    gold_export_build,
)


class Command(BaseCommand):
    help = ("Export a project's gold set as a new immutable version (JSONL, CoNLL, Hugging Face, Label Studio, "
            "doccano, spaCy DocBin, manifest).")

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument("--test-fraction", type=float, default=0.2, help="Share of dialogues in the test split.")
        parser.add_argument("--seed", type=int, default=0, help="Seed of the train/test split.")
        parser.add_argument("--out", default="", help="Also copy the files to this directory.")

    def handle(self, project, test_fraction, seed, out, **opts):
        proj = Project.objects.filter(slug=project).first()
        if proj is None:
            raise CommandError(f"No project with slug {project!r}.")
        if not 0 <= test_fraction < 1:
            raise CommandError("--test-fraction must be at least 0 and below 1.")
        try:
            export = export_create(project=proj, kind=Export.Kind.GOLD, user=None,
                                   params={"test_fraction": test_fraction, "seed": seed})
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        gold_export_build(export_id=export.pk)
        export.refresh_from_db()
        if export.status != Export.Status.SUCCEEDED:
            raise CommandError(f"Export v{export.version} failed: {export.error}")
        root = export_location(export)
        if out:
            export_copy_to(export, Path(out))
        m = export.manifest
        self.stdout.write(self.style.SUCCESS(
            f"Gold export v{export.version}: {m['messages']} messages, {m['dialogues']} dialogues, "
            f"{m['spans']} spans -> {root}" + (f" (copied to {out})" if out else "")
        ))
        for f in export.files:
            self.stdout.write(f"  {f['sha256']}  {f['name']}")
