"""The release review in the app: the release-review examples (conftest.ISSUE) imported as gold
and released from the Exports page, and the release review that settles what the self-audit
leaves (confirm, dismiss, races)."""

from __future__ import annotations

import json
import threading

import pytest
from django.db import connection
from django.urls import reverse

from annotator.models import AuditEvent, CandidateDecision, Export, GoldSpan, ReleaseCandidate
from annotator.selectors.exports import export_is_stale
from annotator.services import release_review as review
from annotator.services import releases as release_services
from annotator.services.exports import ExportError, export_dir
from annotator.services.releases import release_build
from tests.annotator.helpers import original_ids


def _build(capture, project, user) -> Export:
    with capture(execute=True):
        export = release_services.release_start(project=project, user=user)
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    return export


def _released(export) -> dict[str, list[str]]:
    """The released texts by the corpus's dialogue ids (the release keys its ids: the mapping has them)."""
    rows = [json.loads(line) for line in (export_dir(export) / "release.jsonl").read_text().splitlines()]
    ids = original_ids(export)
    return {ids[r["id"]]: [m["text"] for m in r["messages"]] for r in rows}


@pytest.mark.django_db
def test_the_issues_examples_no_longer_ship_as_publishable(issue_project, members,
                                                           django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    texts = _released(export)
    assert not texts["A"][1].startswith("Maria") and texts["A"][1].endswith("'s dog is called Rex, he is 3 years old.")
    assert "Lopez" not in texts["B"][0]
    assert "(555)" not in texts["A"][2] and texts["A"][2].endswith(" after 6.")
    assert texts["C"][0].endswith(" is 14.")  # the maths answer is kept, and asked about
    found = {(c.message.text[c.start:c.end], c.reason) for c in export.candidates.select_related("message")}
    assert ("jo.bloggs@example.org", "second_opinion") in found
    assert ("14", "word_problem_number") in found or ("14", "maths_number") in found
    assert export.manifest["self_audit"]["pending"] == len(found)
    # what nobody reviewed in Blindspot does not read "100 % reviewed"
    assert export.report["evidence"]["needs_acknowledgement"] and export.report["evidence"]["reviewed_messages"] == 0
    # the record and the downloadable files hold positions and counts, never the original strings
    public = json.dumps(export.report) + json.dumps(export.manifest)
    for name in ("manifest.json", "leaks.json", "utility.json"):
        public += (export_dir(export) / name).read_text()
    assert "jo.bloggs" not in public and "Okafor" not in public and "Lopez" not in public
    with pytest.raises(ExportError, match="1 place|place\\(s\\)"):
        release_services.release_publish(export=export, user=members["admin"])


@pytest.mark.django_db
def test_confirm_adds_audited_gold_makes_the_release_stale_and_the_rebuild_replaces_it(
        issue_project, members, django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    email = next(c for c in export.candidates.select_related("message")
                 if c.message.text[c.start:c.end] == "jo.bloggs@example.org")
    review.candidate_decide(candidate_id=email.pk, export=export, user=members["adjudicator"], verdict="confirmed")
    gold = GoldSpan.objects.get(message=email.message, start=email.start, end=email.end)
    assert gold.provenance == "audited" and gold.label == "EMAIL"
    assert AuditEvent.objects.filter(action="release.candidate.confirm", user=members["adjudicator"]).exists()
    assert export_is_stale(export)
    with pytest.raises(ExportError, match="build a new version"):
        release_services.release_publish(export=export, user=members["admin"], acknowledge=True)

    again = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    assert "jo.bloggs@example.org" not in _released(again)["A"][3]
    assert not again.candidates.filter(key=email.key).exists()
    assert not export_is_stale(again)


@pytest.mark.django_db
def test_a_confirmed_maths_number_is_replaced_and_a_dismissed_one_not_asked_again(
        issue_project, members, django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    number = export.candidates.get(reason__in=["maths_number", "word_problem_number"])
    others = export.candidates.exclude(pk=number.pk)
    for c in others:
        review.candidate_decide(candidate_id=c.pk, export=export, user=members["adjudicator"], verdict="dismissed")
    review.candidate_decide(candidate_id=number.pk, export=export, user=members["adjudicator"], verdict="confirmed",
                            label="AGE")
    again = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    assert not _released(again)["C"][0].endswith(" is 14.")  # people said it is PII: replaced
    assert again.candidates.count() == 0
    audit = again.manifest["self_audit"]
    assert audit["pending"] == 0 and audit["dismissed"] == others.count()  # the number is replaced, not re-asked
    release_services.release_publish(export=again, user=members["admin"], acknowledge=True)


@pytest.mark.django_db
def test_a_second_reviewer_is_told_not_overwritten(issue_project, members, django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    c = export.candidates.first()
    review.candidate_decide(candidate_id=c.pk, export=export, user=members["adjudicator"], verdict="dismissed")
    with pytest.raises(review.ReviewConflict, match="already decided"):
        review.candidate_decide(candidate_id=c.pk, export=export, user=members["admin"], verdict="confirmed")
    assert CandidateDecision.objects.get(key=c.key).verdict == "dismissed"
    with pytest.raises(review.ReviewError, match="not a label"):
        review.candidate_decide(candidate_id=export.candidates.filter(status="pending").first().pk, export=export,
                                user=members["admin"], verdict="confirmed", label="NOPE")


@pytest.mark.django_db(transaction=True)
def test_concurrent_verdicts_on_one_candidate_record_exactly_one(issue_project, members):
    if connection.vendor != "postgresql":
        pytest.skip("row locks need PostgreSQL (DATABASE_URL); SQLite serialises writers anyway")
    export = Export.objects.create(project=issue_project, kind=Export.Kind.RELEASE, version=1,
                                   status=Export.Status.SUCCEEDED)
    msg = issue_project.messages.get(dialogue__external_id="B")
    c = ReleaseCandidate.objects.create(export=export, message=msg, start=28, end=33, label="NAME",
                                        key="c" * 32, reason="fragment")
    outcomes, barrier = [], threading.Barrier(6)

    def decide(verdict, who):
        barrier.wait()
        try:
            review.candidate_decide(candidate_id=c.pk, export=export, user=members[who], verdict=verdict)
            outcomes.append("ok")
        except review.ReviewConflict:
            outcomes.append("conflict")
        finally:
            connection.close()

    threads = [threading.Thread(target=decide, args=(v, w)) for v, w in
               [("confirmed", "admin"), ("dismissed", "adjudicator")] * 3]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["conflict"] * 5 + ["ok"]
    assert CandidateDecision.objects.filter(key=c.key).count() == 1


@pytest.mark.django_db
def test_review_pages_keyboard_first_blind_to_the_detector_and_role_checked(
        issue_project, members, django_capture_on_commit_callbacks, client):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    client.force_login(members["adjudicator"])
    url = reverse("release-review", args=[issue_project.slug, export.pk])
    page = client.get(url).content.decode()
    assert "review.js" in page and 'id="review-confirm"' in page and "<kbd>a</kbd>" in page
    sources = set(export.candidates.values_list("source", flat=True))
    assert all(s and s not in page for s in sources)  # never says which detector raised it
    first = export.candidates.order_by("pk").first()
    response = client.post(reverse("release-review-decide", args=[issue_project.slug, export.pk, first.pk]),
                           {"verdict": "dismissed"}, headers={"HX-Request": "true"})
    assert response.status_code == 200 and "review-counts" in response.content.decode()
    first.refresh_from_db()
    assert first.status == "dismissed"
    client.force_login(members["annotator"])
    assert client.get(url).status_code == 403
    # the admin's release page links the queue and names what is waiting
    client.force_login(members["admin"])
    detail = client.get(reverse("export-detail", args=[issue_project.slug, export.pk])).content.decode()
    pending = export.candidates.filter(status="pending").count()
    assert f"Review {pending} place" in detail and f"{pending} place(s) its self-audit flagged" in detail


@pytest.mark.django_db
def test_a_redelivered_build_records_the_queue_once(issue_project, members, django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    n = export.candidates.count()
    Export.objects.filter(pk=export.pk).update(status=Export.Status.FAILED)
    assert release_build(export_id=export.pk) == "built"
    assert export.candidates.count() == n


# --- a queue that forgives a mis-key: undo, remembered skips, numbers confirmed by their label --


def _number(export) -> ReleaseCandidate:
    return export.candidates.get(reason__in=["maths_number", "word_problem_number", "uncued_number"])


@pytest.mark.django_db
def test_a_bare_number_is_confirmed_only_with_a_label_chosen_for_it(issue_project, members,
                                                                    django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    number = _number(export)
    with pytest.raises(review.ReviewError, match="with its label"):
        review.candidate_decide(candidate_id=number.pk, export=export, user=members["adjudicator"],
                                verdict="confirmed")
    assert not CandidateDecision.objects.exists()
    review.candidate_decide(candidate_id=number.pk, export=export, user=members["adjudicator"], verdict="dismissed")
    other = export.candidates.exclude(pk=number.pk).first()  # not a number: the candidate's label will do
    review.candidate_decide(candidate_id=other.pk, export=export, user=members["adjudicator"], verdict="confirmed")
    assert CandidateDecision.objects.get(key=other.key).label == other.label


@pytest.mark.django_db
def test_undoing_a_confirmed_number_keeps_it_in_the_next_build(issue_project, members,
                                                               django_capture_on_commit_callbacks):
    """One mis-key confirmed "14" as PII; undone, no later build replaces it, and it is asked again."""
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    number, other = _number(export), export.candidates.exclude(reason__contains="number").first()
    review.candidate_decide(candidate_id=other.pk, export=export, user=members["adjudicator"], verdict="dismissed")
    review.candidate_decide(candidate_id=number.pk, export=export, user=members["adjudicator"], verdict="confirmed",
                            label="DATE_OF_BIRTH")
    assert GoldSpan.objects.filter(message=number.message, provenance="audited").exists()
    with pytest.raises(review.ReviewError, match="no verdict"):
        review.candidate_undo(export=export, user=members["admin"])  # only your own verdicts

    undone = review.candidate_undo(export=export, user=members["adjudicator"])
    assert undone.pk == number.pk and undone.status == "pending" and undone.decision is None
    assert not CandidateDecision.objects.filter(key=number.key).exists()
    assert not GoldSpan.objects.filter(message=number.message, provenance="audited").exists()
    event = AuditEvent.objects.get(action="release.candidate.undo")
    assert event.user == members["adjudicator"] and event.details["verdict"] == "confirmed"
    assert (event.details["candidate"], event.details["label"]) == (number.pk, "DATE_OF_BIRTH")
    assert not export_is_stale(export)

    again = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    assert _released(again)["C"][0].endswith(" is 14.")  # kept: nobody says it is PII any more
    assert again.candidates.filter(key=number.key, status="pending").exists()  # and asked again
    assert not again.candidates.filter(key=other.key).exists()  # the dismissal before it stands

    assert review.candidate_undo(export=export, user=members["adjudicator"]).pk == other.pk  # the one before
    with pytest.raises(review.ReviewError, match="no verdict"):
        review.candidate_undo(export=export, user=members["adjudicator"])


@pytest.mark.django_db
def test_a_skip_is_remembered_for_the_reviewer_and_undo_is_a_page_action(issue_project, members, client,
                                                                         django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    queue = list(export.candidates.order_by("pk"))
    assert len(queue) >= 2
    client.force_login(members["adjudicator"])
    url = reverse("release-review", args=[issue_project.slug, export.pk])

    def shown(response) -> int:
        return response.context["candidate"].pk if response.context.get("candidate") else None

    assert shown(client.get(url)) == queue[0].pk
    response = client.post(reverse("release-review-skip", args=[issue_project.slug, export.pk, queue[0].pk]),
                           headers={"HX-Request": "true"})
    assert shown(response) == queue[1].pk
    assert shown(client.get(url)) == queue[1].pk  # a reload does not bring the skipped one back first
    for c in queue[1:]:
        client.post(reverse("release-review-decide", args=[issue_project.slug, export.pk, c.pk]),
                    {"verdict": "dismissed"}, headers={"HX-Request": "true"})
    assert shown(client.get(url)) == queue[0].pk  # the rest done: the skipped one comes back
    client.force_login(members["admin"])
    assert shown(client.get(url)) == queue[0].pk  # another reviewer never skipped it

    client.force_login(members["adjudicator"])
    page = client.get(url).content.decode()
    assert 'id="review-undo"' in page and "Not PII (dismissed)" in page
    response = client.post(reverse("release-review-undo", args=[issue_project.slug, export.pk]),
                           headers={"HX-Request": "true"})
    assert shown(response) == queue[-1].pk and "Undone" in response.content.decode()
    assert ReleaseCandidate.objects.get(pk=queue[-1].pk).status == "pending"
    client.force_login(members["annotator"])
    assert client.post(reverse("release-review-undo", args=[issue_project.slug, export.pk])).status_code == 403


@pytest.mark.django_db
def test_every_label_has_a_key_and_a_number_waits_for_its_label(issue_project, members, client,
                                                                django_capture_on_commit_callbacks):
    export = _build(django_capture_on_commit_callbacks, issue_project, members["admin"])
    number = _number(export)
    client.force_login(members["adjudicator"])
    response = client.get(reverse("release-review-item", args=[issue_project.slug, export.pk, number.pk]))
    keys = response.context["keymap"].data()
    labels = issue_project.labels
    assert len(labels) == 12 and set(keys["labels"].values()) == set(labels)  # every label has a key
    assert keys["labels"]["0"] == labels[9] and keys["labels"]["Shift+2"] == labels[11]
    assert (keys["commands"]["a"], keys["commands"]["r"], keys["commands"]["s"], keys["commands"]["u"]) == (
        "accept", "reject", "skip", "undo")
    page = response.content.decode()
    assert "data-number" in page and '<option value="" selected>' in page and "Shift+2 · " in page
    decide = reverse("release-review-decide", args=[issue_project.slug, export.pk, number.pk])
    response = client.post(decide, {"verdict": "confirmed", "label": ""}, headers={"HX-Request": "true"})
    assert response.context["candidate"].pk == number.pk and "with its label" in response.content.decode()
    client.post(decide, {"verdict": "confirmed", "label": "AGE"}, headers={"HX-Request": "true"})
    assert CandidateDecision.objects.get(key=number.key).label == "AGE"


@pytest.mark.django_db
@pytest.mark.parametrize("reason", ["maths_number", "word_problem_number", "uncued_number", "fragment"])
def test_every_kind_of_kept_number_needs_its_label(issue_project, members, reason):
    export = Export.objects.create(project=issue_project, kind=Export.Kind.RELEASE, version=1,
                                   status=Export.Status.SUCCEEDED)
    msg = issue_project.messages.get(dialogue__external_id="C")
    c = ReleaseCandidate.objects.create(export=export, message=msg, start=64, end=66, label="AGE", key="n" * 32,
                                        reason=reason)
    if reason == "fragment":  # not a number: the candidate's label will do
        review.candidate_decide(candidate_id=c.pk, export=export, user=members["adjudicator"], verdict="confirmed")
    else:
        with pytest.raises(review.ReviewError, match="with its label"):
            review.candidate_decide(candidate_id=c.pk, export=export, user=members["adjudicator"],
                                    verdict="confirmed")
        review.candidate_decide(candidate_id=c.pk, export=export, user=members["adjudicator"], verdict="confirmed",
                                label="AGE")
    assert CandidateDecision.objects.get(key=c.key).label == "AGE"
