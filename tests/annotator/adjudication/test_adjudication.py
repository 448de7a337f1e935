"""Auto-merging, the risk-ordered queue, adjudication decisions with provenance, and the pages."""

from __future__ import annotations

import pytest

from annotator.models import (
    AdjudicationDecision,
    AdjudicationItem,
    AuditEvent,
    GoldSpan,
    Membership,
)
from annotator.services.adjudication import AdjudicationError, adjudication_submit, gold_merge_ready
from tests.annotator.helpers import label, msg

pytestmark = pytest.mark.django_db

Outcome = AdjudicationDecision.Outcome


def pseudo(project, user) -> str:
    return Membership.objects.get(project=project, user=user).pseudonym


# ----------------------------------------------------------------------------------- services


def test_agreement_becomes_gold_with_provenance(study, members):
    out = gold_merge_ready(project=study)
    assert out == {"merged": 2, "queued": 3}
    d = AdjudicationDecision.objects.get(message=msg(study, "d1", 0))
    assert d.outcome == Outcome.UNANIMOUS and d.risk == 0
    gold = GoldSpan.objects.get(message=msg(study, "d1", 0))
    assert (gold.start, gold.end, gold.label, gold.provenance) == (3, 8, "NAME", "unanimous")
    assert gold.model_matched  # the suggestion run predicted "Maria"
    assert gold.annotators == [
        {"annotator": pseudo(study, members["annotator"]), "condition": "aware"},
        {"annotator": pseudo(study, members["annotator2"]), "condition": "blind"},
    ]
    empty = AdjudicationDecision.objects.get(message=msg(study, "d1", 1))
    assert empty.outcome == Outcome.UNANIMOUS and not GoldSpan.objects.filter(message=empty.message).exists()
    assert AuditEvent.objects.filter(action="gold.merge").count() == 2
    assert AuditEvent.objects.filter(action="adjudication.queue").count() == 3


def test_unfinished_items_wait_and_merging_is_idempotent(study):
    gold_merge_ready(project=study)
    assert not AdjudicationDecision.objects.filter(message=msg(study, "d2", 0)).exists()
    assert not AdjudicationItem.objects.filter(message=msg(study, "d2", 0)).exists()
    assert gold_merge_ready(project=study) == {"merged": 0, "queued": 0}


def test_queue_is_ordered_by_risk(study):
    gold_merge_ready(project=study)
    order = [(i.message.dialogue.external_id, i.message.position, i.risk_details["kind"])
             for i in AdjudicationItem.objects.filter(project=study).order_by("-risk", "-risk_weight")]
    assert order == [("d1", 2, "possible leak"), ("d1", 3, "label"), ("d2", 1, "boundary")]


def test_majority_rule_with_three_annotators(model_project, members, make_user):
    from annotator.models import Role
    from annotator.services.projects import membership_set

    p = model_project
    p.merge_rule = "majority"
    p.overlap_k = 3
    p.save()
    third = make_user("annotator3")
    membership_set(project=p, user=third, role=Role.ANNOTATOR)
    m = msg(p, "d1", 2)
    label(members["annotator"], m, [(12, 35, "EMAIL")])
    label(members["annotator2"], m, [(12, 35, "EMAIL")], condition="aware")
    label(third, m, [])
    assert gold_merge_ready(project=p) == {"merged": 1, "queued": 0}
    d = AdjudicationDecision.objects.get(message=m)
    assert d.outcome == Outcome.MAJORITY and d.risk == 2  # a leak the majority settled
    g = GoldSpan.objects.get(message=m)
    assert g.provenance == "majority" and len(g.annotators) == 2


def test_adjudicator_decision_records_provenance(study, members):
    gold_merge_ready(project=study)
    item = AdjudicationItem.objects.get(message=msg(study, "d1", 2))
    adjudication_submit(item=item, user=members["adjudicator"], spans=[(12, 35, "EMAIL")],
                        version=item.version, notes="clearly an address")
    item.refresh_from_db()
    assert item.status == "settled" and item.decision.outcome == Outcome.ADJUDICATED
    assert item.decision.decided_by == members["adjudicator"]
    assert item.decision.model_favoured is True  # the model predicted the email; it was kept
    g = GoldSpan.objects.get(message=item.message)
    assert g.provenance == "adjudicated" and g.model_matched
    assert g.annotators == [{"annotator": pseudo(study, members["annotator"]), "condition": "blind"}]
    ev = AuditEvent.objects.get(action="adjudication.submit")
    assert ev.user == members["adjudicator"] and ev.details["spans"] == [
        {"start": 12, "end": 35, "label": "EMAIL"}]


def test_decision_against_the_model_and_revision(study, members):
    gold_merge_ready(project=study)
    item = AdjudicationItem.objects.get(message=msg(study, "d1", 2))
    adjudication_submit(item=item, user=members["adjudicator"], spans=[], version=0, confirm_drop=True)
    item.refresh_from_db()
    assert item.decision.model_favoured is False
    assert item.decision.details["dropped"] == [{"start": 12, "end": 35, "label": "EMAIL"}]
    assert not GoldSpan.objects.filter(message=item.message).exists()
    adjudication_submit(item=item, user=members["admin"], spans=[(12, 35, "EMAIL")], version=item.version)
    assert GoldSpan.objects.filter(message=item.message).count() == 1
    assert AdjudicationDecision.objects.filter(message=item.message).count() == 1
    assert AuditEvent.objects.filter(action="adjudication.revise").count() == 1


@pytest.mark.parametrize(
    ("spans", "status", "text"),
    [
        ([(0, 4, "NAME"), (2, 6, "NAME")], 422, "overlap"),
        ([(0, 4, "PET_NAME")], 400, "Unknown label"),
        ([(0, 400, "NAME")], 400, "does not fit"),
    ],
)
def test_bad_decisions_are_refused(study, members, spans, status, text):
    gold_merge_ready(project=study)
    item = AdjudicationItem.objects.get(message=msg(study, "d1", 3))
    with pytest.raises(AdjudicationError, match=text) as exc:
        adjudication_submit(item=item, user=members["adjudicator"], spans=spans, version=0)
    assert exc.value.status == status
    assert not GoldSpan.objects.filter(message=item.message).exists()


def test_dropping_marked_text_needs_confirmation(study, members, client):
    gold_merge_ready(project=study)
    item = AdjudicationItem.objects.get(message=msg(study, "d1", 2))
    with pytest.raises(AdjudicationError, match="maria.lopez@example.com") as exc:
        adjudication_submit(item=item, user=members["adjudicator"], spans=[], version=0)
    assert exc.value.status == 422
    client.force_login(members["adjudicator"])
    url = item_url(item) + "decide/"
    refused = client.post(url, {"version": 0}, HTTP_HX_REQUEST="true")
    assert refused.status_code == 422 and "confirm the drop" in refused["X-Blindspot-Error"]
    assert client.post(url, {"version": 0, "confirm_drop": "on"}).status_code == 302
    assert AuditEvent.objects.get(action="adjudication.submit").details["dropped"][0]["label"] == "EMAIL"


def test_stale_version_is_a_conflict(study, members):
    gold_merge_ready(project=study)
    item = AdjudicationItem.objects.get(message=msg(study, "d1", 3))
    adjudication_submit(item=item, user=members["adjudicator"], spans=[(0, 4, "NAME")], version=0)
    with pytest.raises(AdjudicationError) as exc:
        adjudication_submit(item=item, user=members["admin"], spans=[], version=0)
    assert exc.value.status == 409


# ----------------------------------------------------------------------------------- pages

PAGES = ["/p/test/adjudication/", "/p/test/adjudication/next/"]


@pytest.fixture
def queued(study):
    gold_merge_ready(project=study)
    return AdjudicationItem.objects.filter(project=study).order_by("-risk").first()


def item_url(item) -> str:
    return f"/p/test/adjudication/{item.pk}/"


@pytest.mark.parametrize("who", ["adjudicator", "admin"])
def test_owners_reach_the_pages(client, members, queued, who):
    client.force_login(members[who])
    assert client.get("/p/test/adjudication/").status_code == 200
    assert client.get("/p/test/adjudication/next/")["Location"] == item_url(queued)
    assert client.get(item_url(queued)).status_code == 200


@pytest.mark.parametrize("who,status", [("annotator", 403), ("outsider", 404)])
def test_colleagues_and_outsiders_are_refused(client, members, queued, who, status):
    client.force_login(members[who])
    for url in [*PAGES, item_url(queued)]:
        assert client.get(url).status_code == status, url
    for url in ["/p/test/adjudication/merge/", item_url(queued) + "decide/"]:
        assert client.post(url, {"version": 0}).status_code == status, url
    assert not AdjudicationDecision.objects.filter(message=queued.message).exists()


def test_anonymous_is_sent_to_login(client, queued):
    for url in [*PAGES, item_url(queued)]:
        assert client.get(url)["Location"].startswith("/accounts/login/")


def test_workspace_shows_annotators_anonymised_and_hides_the_model(client, members, queued):
    client.force_login(members["adjudicator"])
    page = client.get(item_url(queued)).content.decode()
    assert "Annotator 1" in page and "Annotator 2" in page
    for secret in ("annotator2", pseudo(queued.project, members["annotator"]), "small.jsonl"):
        assert secret not in page
    assert "model-row" not in page and "· model" not in page


def test_project_setting_shows_model_predictions(client, members, queued):
    queued.project.show_predictions_to_adjudicators = True
    queued.project.save()
    client.force_login(members["adjudicator"])
    page = client.get(item_url(queued)).content.decode()
    assert "model-row" in page and "· model" in page


def test_queue_page_lists_leaks_first(client, members, queued):
    client.force_login(members["adjudicator"])
    page = client.get("/p/test/adjudication/").content.decode()
    assert page.index("possible leak") < page.index("boundary")
    fragment = client.get("/p/test/adjudication/?status=open", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in fragment and "possible leak" in fragment


def test_decide_by_form_saves_gold_and_moves_on(client, members, queued):
    client.force_login(members["adjudicator"])
    response = client.post(item_url(queued) + "decide/", {
        "version": queued.version, "span": ["12:35:EMAIL"], "notes": "kept",
    })
    nxt = AdjudicationItem.objects.filter(project=queued.project, status="open").order_by("-risk").first()
    assert response.status_code == 302 and response["Location"] == item_url(nxt)
    assert GoldSpan.objects.get(message=queued.message).label == "EMAIL"


def test_decide_adds_a_span_by_offsets_and_htmx_redirects(client, members, queued):
    client.force_login(members["adjudicator"])
    response = client.post(item_url(queued) + "decide/", {
        "version": queued.version, "add_start": 0, "add_end": 5, "add_label": "OTHER_IDENTIFIER",
        "confirm_drop": "on",
    }, HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and "HX-Redirect" in response
    assert GoldSpan.objects.get(message=queued.message).label == "OTHER_IDENTIFIER"


def test_decide_refusal_over_htmx_carries_the_message(client, members, queued):
    client.force_login(members["adjudicator"])
    response = client.post(item_url(queued) + "decide/", {"version": queued.version, "span": ["0:4:NOPE"]},
                           HTTP_HX_REQUEST="true")
    assert response.status_code == 400 and "Unknown label" in response["X-Blindspot-Error"]


def test_merge_button_runs_the_merge(client, members, study, django_capture_on_commit_callbacks):
    client.force_login(members["adjudicator"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/adjudication/merge/")
    assert response.status_code == 302
    assert AdjudicationItem.objects.filter(project=study).count() == 3


@pytest.mark.django_db
def test_the_last_submit_merges_the_item_into_gold(django_capture_on_commit_callbacks):
    """Two annotators agree: as soon as the second submits, the item is gold with provenance."""
    from django.contrib.auth import get_user_model

    from annotator.models import Assignment, GoldSpan, Message, Role
    from annotator.services import workspace as annotation
    from annotator.services.projects import membership_set, project_create

    project = project_create(name="Merge on submit", slug="merge-on-submit")
    from annotator.models import Dialogue

    d = Dialogue.objects.create(project=project, external_id="d")
    msg = Message.objects.create(dialogue=d, project=project, position=0, speaker="Tutor", text="Hi Maria!")
    users = [get_user_model().objects.create_user(f"ann{i}") for i in range(2)]
    for u in users:
        membership_set(project=project, user=u, role=Role.ANNOTATOR)
    assignments = [Assignment.objects.create(project=project, annotator=u, message=msg) for u in users]
    for u, a in zip(users, assignments, strict=True):
        with django_capture_on_commit_callbacks(execute=True):
            annotation.span_add(assignment=a, user=u, version=None, start=3, end=8, label="NAME")
            a.refresh_from_db()
            annotation.item_submit(assignment=a, user=u, version=a.version)
        if u is users[0]:
            assert not GoldSpan.objects.exists()
    gold = GoldSpan.objects.get()
    assert (gold.start, gold.end, gold.label, gold.provenance) == (3, 8, "NAME", "unanimous")
