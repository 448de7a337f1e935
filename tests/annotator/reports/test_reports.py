"""Agreement, circularity and detectors-versus-gold: computed as jobs, cached, shown, downloaded."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import call_command

from annotator.models import BackgroundJob, DetectorRun, Prediction
from annotator.services.adjudication import gold_merge_ready
from annotator.services.reports import agreement_request, circularity_request
from tests.annotator.helpers import msg

pytestmark = pytest.mark.django_db

Kind = BackgroundJob.Kind


def urls(c) -> list[str]:
    job = c["circularity"]
    return [
        "/p/test/reports/agreement/", "/p/test/reports/agreement.csv", "/p/test/reports/agreement.json",
        "/p/test/reports/detectors/", "/p/test/reports/detectors.csv", "/p/test/reports/detectors.json",
        "/p/test/reports/circularity/", f"/p/test/reports/circularity/?run={c['run'].pk}",
        f"/p/test/reports/circularity/{job.pk}.csv", f"/p/test/reports/circularity/{job.pk}.json",
    ]


@pytest.mark.parametrize("who", ["adjudicator", "admin"])
def test_owners_reach_every_report(client, members, computed, who):
    client.force_login(members[who])
    for url in urls(computed):
        assert client.get(url).status_code == 200, url


@pytest.mark.parametrize("who,status", [("annotator", 403), ("outsider", 404)])
def test_colleagues_and_outsiders_are_refused(client, members, computed, who, status):
    client.force_login(members[who])
    for url in urls(computed):
        assert client.get(url).status_code == status, url
    before = BackgroundJob.objects.count()
    assert client.post("/p/test/reports/agreement/", {"n_boot": 10}).status_code == status
    assert client.post("/p/test/reports/circularity/", {"run": computed["run"].pk}).status_code == status
    assert BackgroundJob.objects.count() == before


def test_anonymous_is_sent_to_login(client, computed):
    for url in urls(computed):
        assert client.get(url)["Location"].startswith("/accounts/login/"), url


def test_agreement_job_caches_a_report(computed):
    job = BackgroundJob.objects.get(kind=Kind.AGREEMENT)
    assert job.status == "succeeded", job.error
    ag = job.result["agreement"]
    assert ag["n_items"] == 6 and ag["n_boot"] == 50
    kappa = next(f for f in ag["figures"] if f["metric"] == "cohen_kappa" and f["by"] == "all"
                 and f["scheme"] == "typed")
    # By hand: the two annotators share d1#0, d1#1, d1#2, d1#3 and d2#1 (d2#0 is still to do for
    # annotator2), 7 + 8 + 15 + 6 + 8 = 44 word tokens. Typed labels per token (a = annotator,
    # b = annotator2): "Maria" and "Sam" NAME/NAME (2), "Alex" NAME/LOCATION (1), the 7 tokens of
    # maria.lopez@example.com EMAIL/O (7), the other 34 O/O.
    #   p_o = (34 + 2) / 44;  marginals a: O 34, EMAIL 7, NAME 3; b: O 41, LOCATION 1, NAME 2
    #   p_e = (34 * 41 + 3 * 2) / 44**2 = 1400 / 1936
    #   kappa = (p_o - p_e) / (1 - p_e) = (36 * 44 - 1400) / (1936 - 1400) = 184 / 536 = 23 / 67
    # Untyped (PII or not): a marks 10 tokens, b 3, both 3:
    #   kappa = (37 * 44 - (34 * 41 + 10 * 3)) / (1936 - 1424) = 204 / 512 = 51 / 128
    # The report stores figures rounded to 6 places.
    assert kappa["n"] == 44
    assert kappa["value"] == pytest.approx(23 / 67, abs=1e-6) and kappa["ci_low"] <= kappa["ci_high"]
    untyped = next(f for f in ag["figures"] if f["metric"] == "cohen_kappa" and f["by"] == "all"
                   and f["scheme"] == "untyped")
    assert untyped["n"] == 44 and untyped["value"] == pytest.approx(51 / 128, abs=1e-6)


def test_agreement_page_shows_tables_charts_and_no_usernames(client, members, computed):
    client.force_login(members["adjudicator"])
    page = client.get("/p/test/reports/agreement/").content.decode()
    assert "cohen_kappa" in page and "krippendorff_alpha" in page and "<svg" in page
    assert "annotator2" not in page  # pseudonyms only
    rows = list(csv.DictReader(io.StringIO(client.get("/p/test/reports/agreement.csv").content.decode())))
    assert rows and {"metric", "value", "ci_low", "ci_high", "by", "group"} <= set(rows[0])
    data = json.loads(client.get("/p/test/reports/agreement.json").content)
    assert data["figures"] and "annotator2" not in json.dumps(data)


def test_recompute_from_the_page(client, members, computed, django_capture_on_commit_callbacks):
    client.force_login(members["admin"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/reports/agreement/", {"n_boot": 20})
    assert response.status_code == 302
    latest = BackgroundJob.objects.filter(kind=Kind.AGREEMENT).order_by("-pk").first()
    assert latest.status == "succeeded" and latest.result["agreement"]["n_boot"] == 20


def test_polling_a_finished_job_refreshes_the_page(client, members, computed):
    client.force_login(members["adjudicator"])
    response = client.get("/p/test/reports/agreement/", HTTP_HX_REQUEST="true")
    assert response["HX-Refresh"] == "true"


def test_detectors_against_gold(client, members, computed):
    client.force_login(members["adjudicator"])
    page = client.get("/p/test/reports/detectors/").content.decode()
    assert "span_exact" in page and "import:small.jsonl" in page
    rows = list(csv.DictReader(io.StringIO(client.get("/p/test/reports/detectors.csv").content.decode())))
    overall = [r for r in rows if r["label"] == "ALL" and r["level"] == "span_exact"]
    # Gold is d1#0 NAME "Maria" (unanimous), d1#1 empty (unanimous) and d1#2 EMAIL (adjudicated);
    # the run (the import's spans) predicts exactly those two spans: 2 true positives, nothing else.
    assert len(overall) == 1
    assert (overall[0]["n_pred"], overall[0]["n_gold"]) == ("2", "2")
    assert (float(overall[0]["precision"]), float(overall[0]["recall"])) == (1.0, 1.0)


def test_detectors_against_gold_count_a_false_positive(client, members, computed,
                                                       django_capture_on_commit_callbacks):
    # One wrong prediction on a gold message: "3/4" in d1#1, whose gold is empty.
    Prediction.objects.create(run=computed["run"], message=msg(computed["project"], "d1", 1),
                              start=8, end=11, label="ID_NUMBER", score=1.0)
    with django_capture_on_commit_callbacks(execute=True):
        agreement_request(project=computed["project"], user=members["adjudicator"], n_boot=20)
    client.force_login(members["adjudicator"])
    rows = list(csv.DictReader(io.StringIO(client.get("/p/test/reports/detectors.csv").content.decode())))
    row = {r["level"]: r for r in rows if r["label"] == "ALL"}
    # Spans: 3 predicted, 2 of them gold: precision 2/3, recall 2/2, F1 = 2PR/(P+R) = 0.8.
    exact = row["span_exact"]
    assert (exact["n_pred"], exact["n_gold"]) == ("3", "2")
    assert float(exact["precision"]) == pytest.approx(2 / 3, abs=1e-6)
    assert float(exact["recall"]) == 1.0 and float(exact["f1"]) == pytest.approx(0.8, abs=1e-6)
    # Tokens: "Maria" + the 7 email tokens are gold and predicted; "3/4" is one more predicted token.
    token = row["token"]
    assert (token["n_pred"], token["n_gold"]) == ("9", "8")
    assert float(token["precision"]) == pytest.approx(8 / 9, abs=1e-6) and float(token["recall"]) == 1.0


def test_circularity_report_page_and_downloads(client, members, computed):
    job = computed["circularity"]
    job.refresh_from_db()
    assert job.status == "succeeded", job.error
    r = job.result
    assert r["n_paired_items"] == 3  # d1#0, d1#1, d1#2 have one blind and one aware annotation
    assert r["adjudication"]["disputed"] == 1 and r["adjudication"]["settled_for_model"] == 1
    client.force_login(members["adjudicator"])
    page = client.get(f"/p/test/reports/circularity/?run={computed['run'].pk}").content.decode()
    assert r["summary"][:40] in page and "ΔF1" in page
    data = json.loads(client.get(f"/p/test/reports/circularity/{job.pk}.json").content)
    assert data["threshold"] == 0.02
    rows = list(csv.DictReader(io.StringIO(client.get(f"/p/test/reports/circularity/{job.pk}.csv").content.decode())))
    assert any(row["figure"] == "delta_f1" for row in rows)


def test_circularity_post_queues_a_job(client, members, computed, django_capture_on_commit_callbacks):
    client.force_login(members["adjudicator"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post("/p/test/reports/circularity/", {
            "run": computed["run"].pk, "threshold": 0.05, "match": "overlap", "n_boot": 20})
    assert response.status_code == 302 and f"run={computed['run'].pk}" in response["Location"]
    latest = BackgroundJob.objects.filter(kind=Kind.CIRCULARITY).order_by("-pk").first()
    assert latest.status == "succeeded" and latest.result["match"] == "overlap"


def test_circularity_refuses_another_projects_run(client, members, computed):
    from annotator.services.projects import project_create

    other = project_create(name="Other", slug="other")
    foreign = DetectorRun.objects.create(project=other, detector="x", status="succeeded")
    client.force_login(members["adjudicator"])
    response = client.post("/p/test/reports/circularity/", {"run": foreign.pk})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()


def test_empty_project_pages_say_so(client, members, model_project):
    client.force_login(members["adjudicator"])
    assert "No agreement report yet" in client.get("/p/test/reports/agreement/").content.decode()
    assert "Nothing computed yet" in client.get("/p/test/reports/detectors/").content.decode()
    assert "No circularity report yet" in client.get("/p/test/reports/circularity/").content.decode()
    assert client.get("/p/test/reports/agreement.csv").status_code == 404


def test_management_command(study, capsys):
    run = DetectorRun.objects.get(project=study)
    call_command("circularity_report", "--project", "test", "--run", str(run.pk), "--boot", "30", "--merge")
    out = capsys.readouterr().out
    assert "labelled both blind and aware: 3" in out and "ΔF1" in out
    call_command("circularity_report", "--project", "test", "--run", str(run.pk), "--boot", "10", "--json")
    data = json.loads(capsys.readouterr().out)
    assert data["n_paired_items"] == 3 and "summary" in data


def test_management_command_errors(study):
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="No project"):
        call_command("circularity_report", "--project", "nope", "--run", "1")
    with pytest.raises(CommandError, match="has no run"):
        call_command("circularity_report", "--project", "test", "--run", "99999")


# --- unit, exposure and design weights on both reports; the command stores ---------------------


def test_management_command_stores_its_result_for_the_page(client, members, study, capsys):
    run = DetectorRun.objects.get(project=study)
    call_command("circularity_report", "--project", "test", "--run", str(run.pk), "--boot", "30", "--merge")
    assert "Stored as report" in capsys.readouterr().out
    job = BackgroundJob.objects.get(kind=Kind.CIRCULARITY)
    assert job.status == "succeeded" and job.params["run"] == run.pk
    assert job.result["n_paired_items"] == 3 and job.result["exposure"]["blind"] > 0
    client.force_login(members["adjudicator"])
    page = client.get("/p/test/reports/circularity/").content.decode()
    assert job.result["summary"][:40] in page
    call_command("circularity_report", "--project", "test", "--run", str(run.pk), "--boot", "10", "--no-store")
    assert BackgroundJob.objects.filter(kind=Kind.CIRCULARITY).count() == 1


def test_reports_state_unit_exposure_and_weighting(client, members, study, django_capture_on_commit_callbacks):
    from annotator.models import Assignment

    # one message came from an audit at rate 0.25: it weighs 4
    audited = Assignment.objects.filter(project=study, message__dialogue__external_id="d1", message__position=1)
    audited.update(inclusion_probability=0.25, flagged=False)
    gold_merge_ready(project=study)
    run = DetectorRun.objects.get(project=study)
    with django_capture_on_commit_callbacks(execute=True):
        agreement_request(project=study, user=members["adjudicator"], n_boot=20)
        job = circularity_request(project=study, user=members["adjudicator"], run=run, n_boot=20)
    job.refresh_from_db()
    r = job.result
    assert r["weighting"]["weighted"] and r["weighting"]["items_weighted"] == 1
    assert r["cluster_unit"] == "dialogue" and r["randomization_unit"] is None
    # annotator 1 saw suggestions on d1#0 and labelled d1#2 and d1#3 blind (the old per-item rule)
    assert r["exposure"]["exposed"] >= 2
    client.force_login(members["adjudicator"])
    page = client.get(f"/p/test/reports/circularity/?run={run.pk}").content.decode()
    assert "Cross-condition exposure" in page and "weighted by the sampling design" in page
    assert "whole dialogues" in page
    detectors = BackgroundJob.objects.filter(kind=Kind.AGREEMENT).latest("pk").result["detectors"]
    assert detectors[0]["weighting"]["weighted"] and detectors[0]["evaluation"]["weighted"]
    page = client.get("/p/test/reports/detectors/").content.decode()
    assert "weighted by the sampling design" in page


def test_a_run_is_scored_against_gold_once(study, members):
    """The run page and the detectors-versus-gold report show the same scoring of a run
    (they were two computations that could disagree: labels, weights, source labels)."""
    from annotator.selectors.reports import detectors_against_gold, evaluate_run

    gold_merge_ready(project=study)
    run = DetectorRun.objects.get(project=study)
    page = evaluate_run(run, n_boot=20)
    report = next(r for r in detectors_against_gold(project=study, n_boot=20) if r["run"] == run.pk)
    assert page is not None and page == report["evaluation"]


def test_scoring_reads_the_gold_s_dialogues_not_the_corpus(study, members, monkeypatch):
    """The detectors' scores and the run page read the gold set through the messages
    that hold gold (the decisions), not every dialogue of the project (a 200-dialogue gold set at
    a million messages read all 33,355 dialogues); the gold they read is the same."""
    from annotator.models import Dialogue
    from annotator.selectors import dialogues as dsel

    gold_merge_ready(project=study, user=members["admin"])
    gold_dialogues = set(Dialogue.objects.filter(project=study, messages__decision__isnull=False).values_list("pk", flat=True))
    assert gold_dialogues and gold_dialogues != set(Dialogue.objects.filter(project=study).values_list("pk", flat=True))
    everything = {(s.dialogue.id, m.index): (m.text, m.spans)
                  for s in dsel.iter_dialogues(study, "gold", reviewed_only=True) for m in s.dialogue.messages}
    read = []
    real = dsel.dialogues_from_db
    monkeypatch.setattr(dsel, "dialogues_from_db", lambda pks: read.extend(pks) or real(pks))
    streamed = [(key, (text, spans)) for _order, key, text, spans in dsel.gold_messages(study)]
    assert not read  # the gold messages' rows, no dialogue built
    assert streamed == [(k, (t, tuple(s))) for k, (t, s) in everything.items()]
    assert any(spans for _k, (_t, spans) in streamed) and any(not spans for _k, (_t, spans) in streamed)
    assert {dpk for (dpk, _pos), *_ in dsel.gold_messages(study)} == gold_dialogues


def test_an_unknown_download_format_says_so_not_that_nothing_was_computed(client, members, project, settings):
    settings.DEBUG = True  # the demo's 404 page shows the reason
    client.force_login(members["adjudicator"])
    response = client.get("/p/test/reports/agreement.xml")
    assert response.status_code == 404
    body = response.content.decode()
    assert "csv or json" in body and "computed" not in body
