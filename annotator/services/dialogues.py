"""The read path's entry for services: merge pending gold, then stream dialogues with their spans.

A gold export, a release, tagger training and the reports must be built from the same gold, so
every one of them reads through :func:`stream_dialogues`, which merges finished items first
(:func:`annotator.services.adjudication.gold_merge_ready`) and then streams
:func:`annotator.selectors.dialogues.iter_dialogues`.
"""

from __future__ import annotations

from collections.abc import Iterator

from annotator.models import Project
from annotator.selectors.dialogues import Source, StreamedDialogue, iter_dialogues
from annotator.services.adjudication import gold_merge_ready


def stream_dialogues(project: Project, source: Source = "gold", complete_only: bool = False,
                     **options) -> Iterator[StreamedDialogue]:
    """Dialogues of ``project`` with ``source``'s spans ("gold" or a run), after merging pending
    gold (the gold set is also what ``complete_only`` and a run's review evidence rest on).
    ``options`` are :func:`~annotator.selectors.dialogues.iter_dialogues`'s."""
    gold_merge_ready(project=project)
    return iter_dialogues(project, source, complete_only=complete_only, **options)
