"""What annotators tell the adjudicator (a comment, an "uncertain" flag) reaches
them on the item page and in the queue's filters, travels in the gold export's provenance but
never in a release, and the adjudicator's reply reaches each annotator on their own item only.

The study fixture: d1#0 both annotators agree on "Maria" (merged automatically), d1#2 a possible
leak (annotator's EMAIL, annotator2 marked nothing), d1#3 a label difference, d2#1 a boundary one.
"""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from annotator.models import (
    AdjudicationDecision,
    AdjudicationItem,
    Assignment,
    AuditEvent,
    Membership,
    Role,
)
from annotator.services import exports as export_services
from annotator.services import releases as release_services
from annotator.services.adjudication import (
    adjudication_submit,
    gold_merge_ready,
    gold_remerge_message,
)
from annotator.services.exports import export_dir, private_dir
from annotator.services.projects import membership_set
from tests.annotator.helpers import RUN_DETECTOR, RUN_MODEL, label, msg

pytestmark = pytest.mark.django_db

LEAK_NOTE = "Is maria.lopez a pupil? NOTE-7qz"
OTHER_NOTE = "I left the address out on purpose NOTE-k3v"
REPLY = "It is the pupil's address: keep it. REPLY-w9p"


def assignment(project, user, dialogue: str, position: int) -> Assignment:
    return Assignment.objects.get(annotator=user, message=msg(project, dialogue, position))


def note(a: Assignment, text: str = "", uncertain: bool = False) -> None:
    Assignment.objects.filter(pk=a.pk).update(comment=text, uncertain=uncertain)


def pseudo(project, user) -> str:
    return Membership.objects.get(project=project, user=user).pseudonym


@pytest.fixture
def noted(study, members):
    """The possible leak carries both annotators' notes, the first one flagged uncertain."""
    note(assignment(study, members["annotator"], "d1", 2), LEAK_NOTE, uncertain=True)
    note(assignment(study, members["annotator2"], "d1", 2), OTHER_NOTE)
    gold_merge_ready(project=study)
    return AdjudicationItem.objects.get(message=msg(study, "d1", 2))


def item_url(item) -> str:
    return reverse("adjudication-item", kwargs={"slug": "test", "item_id": item.pk})


def ws_url(a: Assignment) -> str:
    return reverse("workspace-item", kwargs={"slug": "test", "public_id": a.public_id})


# ----------------------------------------------------------------------------------- the adjudicator


def test_the_item_page_shows_each_annotators_note_beside_their_spans(client, members, noted):
    client.force_login(members["adjudicator"])
    page = client.get(item_url(noted)).content.decode()
    first, second = page.index('data-annotator="1"'), page.index('data-annotator="2"')
    assert first < page.index("NOTE-7qz") < second < page.index("NOTE-k3v")
    assert page[first:second].count("uncertain") == 1 and "uncertain" not in page[second:page.index("NOTE-k3v")]
    for secret in ("annotator2", pseudo(noted.project, members["annotator"])):  # pseudonymised as the spans
        assert secret not in page


def test_an_uncertain_flag_sends_an_agreed_item_to_a_person(study, members):
    note(assignment(study, members["annotator2"], "d1", 0), uncertain=True)
    assert gold_merge_ready(project=study) == {"merged": 1, "queued": 4}
    item = AdjudicationItem.objects.get(message=msg(study, "d1", 0))
    assert item.risk == 0 and not AdjudicationDecision.objects.filter(message=item.message).exists()


def test_flagging_uncertain_after_a_merge_queues_it_with_its_gold_until_decided(study, members):
    gold_merge_ready(project=study)
    message = msg(study, "d1", 0)
    note(assignment(study, members["annotator"], "d1", 0), "not sure", uncertain=True)
    assert gold_remerge_message(message=message) == "requeued"
    item = AdjudicationItem.objects.get(message=message)
    assert item.changed_after_decision and message.decision.outcome == "unanimous"  # gold stands
    decision = adjudication_submit(item=item, user=members["adjudicator"], spans=[(3, 8, "NAME")],
                                   version=item.version, reply="a name, yes")
    assert decision.outcome == "adjudicated" and decision.reply == "a name, yes"


def test_the_queue_filters_by_notes_and_uncertain_flags(client, members, noted):
    note(assignment(noted.project, members["annotator"], "d2", 1), "boundary?")
    client.force_login(members["adjudicator"])
    queue = reverse("adjudication-queue", kwargs={"slug": "test"})
    everything = client.get(queue).content.decode()
    assert 'href="?status=open&amp;flag=uncertain"' in everything and "badge fail\">uncertain" in everything
    uncertain = client.get(queue, {"flag": "uncertain"}).content.decode()
    assert "maria.lopez" in uncertain and "3 items" not in uncertain and "1 item" in uncertain
    notes = client.get(queue, {"flag": "notes", "status": "open"}, HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in notes and "2 items" in notes and "possible leak" in notes and "boundary" in notes
    assert "Alex has 3 apples" not in notes  # the label difference has no note
    assert "No settled item has" in client.get(queue, {"flag": "notes", "status": "settled"}).content.decode()
    # the filter and the search combine, and each link keeps the other
    rows = client.get(queue, {"flag": "notes", "q": "d2"}, HTTP_HX_REQUEST="true").content.decode()
    assert "1 item" in rows and "boundary" in rows and "possible leak" not in rows
    page = client.get(queue, {"flag": "notes", "q": "d2"}).content.decode()
    assert 'flag=uncertain&amp;q=d2"' in page and 'name="flag" value="notes"' in page
    assert "No item matches “zebra” with an annotator's comment" in client.get(
        queue, {"flag": "notes", "q": "zebra"}).content.decode()


# ----------------------------------------------------------------------------------- gold and releases


def build(start, capture, **kwargs):
    with capture(execute=True):
        export = start(**kwargs)
    export.refresh_from_db()
    assert export.status == "succeeded", export.error
    return export


def test_gold_provenance_carries_the_notes_and_a_release_never_does(study, members, noted, settings,
                                                                    django_capture_on_commit_callbacks):
    settings.BLINDSPOT_SURROGATE_KEY, settings.OPENAI_BASE_URL = "test-release-key-0001", ""
    study.second_opinion_presidio = False
    study.save(update_fields=["second_opinion_presidio"])
    adjudication_submit(item=noted, user=members["adjudicator"], spans=[(12, 35, "EMAIL")], version=noted.version,
                        reply=REPLY)
    gold = build(export_services.gold_export_start, django_capture_on_commit_callbacks, project=study,
                 user=members["admin"])
    rows = {(r["dialogue_id"], r["index"]): r for r in map(json.loads, (export_dir(gold) / "gold.jsonl")
                                                            .read_text(encoding="utf-8").splitlines())}
    assert rows[("d1", 2)]["notes"] == [
        {"annotator": pseudo(study, members["annotator"]), "text": LEAK_NOTE, "uncertain": True},
        {"annotator": pseudo(study, members["annotator2"]), "text": OTHER_NOTE, "uncertain": False},
    ]
    assert rows[("d1", 0)]["notes"] == []
    release = build(release_services.release_start, django_capture_on_commit_callbacks, project=study,
                    user=members["admin"], complete_only=False)
    files = [p for root in (export_dir(release), private_dir(release)) for p in root.rglob("*") if p.is_file()]
    assert files
    for path in files:
        data = path.read_text(encoding="utf-8", errors="replace")
        for secret in ("NOTE-7qz", "NOTE-k3v", "REPLY-w9p"):
            assert secret not in data, (path.name, secret)


# ----------------------------------------------------------------------------------- the reply


def test_the_reply_is_audited_and_each_annotator_sees_it_on_their_own_item(client, members, noted):
    adjudication_submit(item=noted, user=members["adjudicator"], spans=[(12, 35, "EMAIL")], version=noted.version,
                        notes="adjudicators only NOTE-adj", reply=REPLY)
    event = AuditEvent.objects.get(action="adjudication.submit")
    assert event.details["reply"] == REPLY
    mine, theirs = (assignment(noted.project, members[u], "d1", 2) for u in ("annotator", "annotator2"))
    for user, a, own_note, other_note in [("annotator", mine, "NOTE-7qz", "NOTE-k3v"),
                                          ("annotator2", theirs, "NOTE-k3v", "NOTE-7qz")]:
        client.force_login(members[user])
        page = client.get(ws_url(a)).content.decode()
        assert 'id="ws-decision"' in page and "REPLY-w9p" in page and "maria.lopez@example.com" in page
        assert own_note in page  # their own comment, in its box
        for secret in (other_note, "NOTE-adj", RUN_DETECTOR, RUN_MODEL, "model"):
            assert secret not in page.split('id="ws-decision"')[1].split("</section>")[0], secret
        assert other_note not in page
    client.force_login(members["annotator"])
    assert client.get(ws_url(theirs)).status_code == 404  # never another annotator's item


def test_the_decision_stays_hidden_until_the_annotator_is_done_and_from_newcomers(client, members, noted, make_user):
    adjudication_submit(item=noted, user=members["adjudicator"], spans=[(12, 35, "EMAIL")], version=noted.version,
                        reply=REPLY)
    late = make_user("annotator3")
    membership_set(project=noted.project, user=late, role=Role.ANNOTATOR)
    newcomer = label(late, noted.message, [])  # assigned (and done) after the decision
    client.force_login(late)
    assert "REPLY-w9p" not in client.get(ws_url(newcomer)).content.decode()
    mine = assignment(noted.project, members["annotator"], "d1", 2)
    Assignment.objects.filter(pk=mine.pk).update(status=Assignment.Status.IN_PROGRESS)  # reopened
    client.force_login(members["annotator"])
    assert "REPLY-w9p" not in client.get(ws_url(mine)).content.decode()


def test_an_automatic_merge_shows_no_decision(client, members, study):
    gold_merge_ready(project=study)
    client.force_login(members["annotator2"])
    page = client.get(ws_url(assignment(study, members["annotator2"], "d1", 0))).content.decode()
    assert 'id="ws-decision"' not in page
