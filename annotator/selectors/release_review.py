"""Reads of the release review: the verdicts a build obeys and the queue people work through.

A build reads :func:`review_verdicts` (which candidate keys people dismissed or confirmed) and
:func:`confirmed_spans` (the spans confirmations add, whatever the release's source); the review
pages read the queue of one release (:func:`review_progress`, :func:`next_candidate`) and one
candidate in its context window (:func:`candidate_context`); a reviewer's skips live in their
session (:func:`skipped_candidates`). The reviewer never sees which check or detector raised a
candidate: :attr:`ReleaseCandidate.source` is not read here.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from django.db.models import Count

from annotator.models import CandidateDecision, Export, Project, ReleaseCandidate
from annotator.rendering import Mark, highlight
from annotator.selectors.keymap import label_keys
from annotator.selectors.projects import message_window
from pipeline.surrogates.candidates import NUMBER_REASONS
from pipeline.surrogates.fields import field_title, field_value
from pipeline.types import Span

Verdict = CandidateDecision.Verdict
PENDING = ReleaseCandidate.Status.PENDING

# Why a place is asked about, in the reviewer's words (the reason, never the detector).
QUESTIONS = {
    "fragment": "A part of a name marked elsewhere, left as it is because it is also a common word. Is it the person's name here?",
    "incomplete": "An identifier that was replaced, though its pattern does not cover all of it. Is it PII as marked?",
    "second_opinion": "Nobody marked this, and it looks like personal information. Is it PII?",
    "maths_number": "A number marked as PII in a stretch of maths: kept as it is so the maths stays right. Is it PII after all?",
    "word_problem_number": "A number marked as PII that also appears in the word problem: kept as it is. Is it PII after all?",
    "uncued_number": "A number marked as PII, though nothing in its message says what it is: kept as it is. Is it PII after all?",
}


@dataclass(frozen=True)
class Verdicts:
    dismissed: frozenset[str]
    confirmed: frozenset[str]


def review_verdicts(project: Project) -> Verdicts:
    """The candidate keys people settled in ``project``: what every later build obeys."""
    rows = CandidateDecision.objects.filter(project=project).values_list("key", "verdict")
    dismissed, confirmed = set(), set()
    for key, verdict in rows.iterator(chunk_size=5000):
        (confirmed if verdict == Verdict.CONFIRMED else dismissed).add(key)
    return Verdicts(frozenset(dismissed), frozenset(confirmed))


def confirmed_spans(project: Project) -> dict[int, list[Span]]:
    """message id -> the spans people confirmed in a release review (added to any release's spans,
    from gold or a run alike, so a confirmation holds even where gold is re-merged later)."""
    out: dict[int, list[Span]] = defaultdict(list)
    rows = (CandidateDecision.objects.filter(project=project, verdict=Verdict.CONFIRMED, field="")
            .values_list("message_id", "start", "end", "label"))
    for mid, start, end, label in rows.iterator(chunk_size=5000):
        out[mid].append(Span(start, end, label, source="release_review"))
    return out


def confirmed_fields(project: Project) -> dict[str, list[tuple[str, int, int, str]]]:
    """dialogue id -> ``(field, start, end, label)`` people confirmed outside the messages' text
    (a metadata value, the anchor): every later build replaces them."""
    out: dict[str, list[tuple[str, int, int, str]]] = defaultdict(list)
    rows = (CandidateDecision.objects.filter(project=project, verdict=Verdict.CONFIRMED).exclude(field="")
            .values_list("message__dialogue__external_id", "field", "start", "end", "label"))
    for dialogue_id, name, start, end, label in rows.iterator(chunk_size=5000):
        out[dialogue_id].append((name, start, end, label))
    return dict(out)


def candidate_text(candidate: ReleaseCandidate) -> str | None:
    """The original string a candidate lies in: its message's text, or the field outside the
    messages it names (``None`` when the dialogue no longer has that field)."""
    if not candidate.field:
        return candidate.message.text
    dialogue = candidate.message.dialogue
    return field_value(dialogue.anchor, dialogue.meta, candidate.field)


def review_counts(export: Export) -> dict[str, int]:
    """How many of the release's candidates wait, and how many people confirmed or dismissed."""
    counts = dict(export.candidates.values_list("status").annotate(n=Count("pk")).values_list("status", "n"))
    return {s: counts.get(s, 0) for s in ReleaseCandidate.Status.values} | {"total": sum(counts.values())}


def pending_candidates(export: Export) -> int:
    return export.candidates.filter(status=PENDING).count()


def next_candidate(export: Export, *, after: int | None = None, skipped: Sequence[int] = ()) -> ReleaseCandidate | None:
    """The next pending candidate in corpus order (after candidate ``after``, wrapping round) that
    the reviewer did not skip (``skipped``: :func:`skipped_candidates`, in the order skipped), so a
    reviewer comes back to a skipped one only when the rest are done, the longest skipped first."""
    pending = export.candidates.filter(status=PENDING).select_related("message", "message__dialogue")
    fresh = pending.exclude(pk__in=skipped) if skipped else pending
    if after is not None:
        later = fresh.filter(pk__gt=after).order_by("pk").first()
        if later is not None:
            return later
    first = fresh.order_by("pk").first()
    if first is not None or not skipped:
        return first
    waiting = {c.pk: c for c in pending.filter(pk__in=skipped)}
    return next((waiting[pk] for pk in skipped if pk in waiting), None)


def skipped_key(export: Export) -> str:
    """Where a reviewer's session keeps the candidates of ``export`` they skipped."""
    return f"release-review-skipped-{export.pk}"


def skipped_candidates(session: Mapping, export: Export) -> list[int]:
    """The candidates of ``export`` the reviewer skipped, the longest skipped first."""
    return list(session.get(skipped_key(export), []))


def last_verdict(export: Export, user) -> ReleaseCandidate | None:
    """The candidate of ``export`` that ``user`` decided last (what an undo takes back), or None."""
    return (export.candidates.filter(decision__decided_by=user).select_related("decision", "message")
            .order_by("-decision__decided_at", "-decision__pk").first())


def undo_offer(export: Export, user) -> dict | None:
    """What the review page's undo would take back: the verdict and the words it was given on."""
    last = last_verdict(export, user)
    if last is None:
        return None
    return {"verdict": last.get_status_display(), "words": last.message.text[last.start:last.end]}


def candidate_context(candidate: ReleaseCandidate) -> dict:
    """The candidate in its three-message window, highlighted in the original text, with the
    question its reason asks (and nothing that tells which detector raised it)."""
    msg = candidate.message
    project = candidate.export.project
    mark = Mark(candidate.start, candidate.end, candidate.label, css="span candidate")
    text = candidate_text(candidate) or ""
    return {
        "candidate": candidate,
        "message": msg,
        "window": message_window(msg, project.context_window),
        "field_title": field_title(candidate.field) if candidate.field else "",
        "target_html": highlight(text, [mark]),
        "words": text[candidate.start:candidate.end],
        "question": QUESTIONS.get(candidate.reason, ""),
        "number": candidate.reason in NUMBER_REASONS,  # confirmed only with a label key
        "labels": label_keys(project.taxonomy),
        "counts": review_counts(candidate.export),
    }
