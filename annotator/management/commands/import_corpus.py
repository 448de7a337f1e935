from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.template.defaultfilters import pluralize

from annotator.models import Project
from annotator.services.imports import SPANS_AS, ExistingDialoguesError, corpus_import_file
from pipeline.corpus import CorpusError
from pipeline.formats import FORMATS


class Command(BaseCommand):
    help = ("Import a corpus into a project, all or nothing: JSONL, CSV, Label Studio task JSON, doccano JSONL "
            "or a spaCy DocBin (.spacy).")

    def add_arguments(self, parser):
        parser.add_argument("path")
        parser.add_argument("--project", required=True, help="Project slug.")
        parser.add_argument("--spans-as", choices=SPANS_AS, default="run",
                            help="What spans inside the file become (default: a detector run named after the file).")
        parser.add_argument("--format", dest="fmt", choices=FORMATS, default=None,
                            help="The file's format (default: from its extension and first bytes).")
        parser.add_argument("--skip-existing", action="store_true",
                            help="Add only dialogues whose id is new; without it a re-import is refused.")
        parser.add_argument("--default-speaker", metavar="NAME",
                            help="The speaker of messages the file gives none (an empty 'speaker'), set before the "
                                 "file is checked; without it such messages are refused.")

    def handle(self, path, project, spans_as, skip_existing, fmt, default_speaker=None, **opts):
        proj = Project.objects.filter(slug=project).first()
        if proj is None:
            raise CommandError(f"No project with slug {project!r}.")
        if default_speaker is not None and not default_speaker.strip():
            raise CommandError("--default-speaker takes a name, e.g. --default-speaker unknown.")
        try:
            result = corpus_import_file(project=proj, path=path, spans_as=spans_as, skip_existing=skip_existing,
                                        fmt=fmt, default_speaker=default_speaker)
        except FileNotFoundError:
            raise CommandError(f"No such file: {path}") from None
        except ExistingDialoguesError as exc:
            raise CommandError(exc.advice("run again with --skip-existing")) from None
        except CorpusError as exc:
            raise CommandError(f"Nothing was imported.\n{exc}{_speaker_hint(exc)}") from None
        rate = result.messages / result.seconds if result.seconds else 0
        self.stdout.write(self.style.SUCCESS(
            f"Imported {result.dialogues} dialogues, {result.messages} messages, {result.spans} spans "
            f"in {result.seconds:.1f}s ({rate:,.0f} messages/s)"
            + (f"; skipped {len(result.skipped)} existing" if result.skipped else "")
            + (f"; {_repeats(result)}" if result.repeats else "")
            + (f"; {result.normalised} message{pluralize(result.normalised)} with CR line breaks stored with LF"
               if result.normalised else "")
            + (f"; spans are run #{result.run_id}" if result.run_id else "")
            + (f"; ids: {result.derived_ids} derived from the file name and content (the file had none)"
               if result.derived_ids else "")
        ))


def _repeats(result) -> str:
    """"107 identical duplicates skipped (104 with other meta: the first line's kept)"."""
    n, other = result.repeats, result.repeats_other_meta
    return (f"{n} identical duplicate{pluralize(n)} skipped"
            + (f" ({other} with other dialogue meta: the first line's kept)" if other else ""))


def _speaker_hint(exc: CorpusError) -> str:
    """What to do about messages refused for want of a speaker: name one with --default-speaker."""
    if any(p.message.endswith("missing or empty 'speaker'") for p in exc.problems):
        return ("\nMessages without a speaker can be imported with one name for them all: "
                "--default-speaker NAME (e.g. --default-speaker unknown).")
    return ""
