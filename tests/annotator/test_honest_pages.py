"""Honest pages: what the pages say is what the data says. The Client-level
checks; what only a browser can see is in ``test_browser_honest_pages.py``."""

from __future__ import annotations

import io
import json
import zipfile

import pytest

from annotator.models import AdjudicationItem
from annotator.services.adjudication import gold_merge_ready

pytestmark = pytest.mark.django_db

NON_LATIN1 = "Jośko’s"


@pytest.fixture
def queued(study):
    gold_merge_ready(project=study)
    return AdjudicationItem.objects.filter(project=study).order_by("-risk").first()


# ---- c. a refusal's message survives the latin-1 header -------------------------------------

def test_a_refusal_carries_non_latin1_text_intact_in_body_and_header(client, members, queued):
    client.force_login(members["adjudicator"])
    response = client.post(f"/p/test/adjudication/{queued.pk}/decide/",
                           {"version": queued.version, "span": [f"0:4:{NON_LATIN1}"]}, HTTP_HX_REQUEST="true")
    assert response.status_code == 400
    body = response.content.decode()
    header = response["X-Blindspot-Error"]
    assert NON_LATIN1 in body
    assert header.isascii() and json.loads(header) == body


# ---- a. a search counts every message of a dialogue once ------------------------------------

def test_a_search_that_matches_several_messages_keeps_the_message_count(client, members, corpus):
    from annotator.selectors.projects import dialogue_page

    rows, total = dialogue_page(corpus, q="e")  # matches all four messages of d1 and both of d2
    assert total == 2 and {d.external_id: d.n_messages for d in rows} == {"d1": 4, "d2": 2}
    rows, total = dialogue_page(corpus, q="apples")  # the text of one message (and d1's anchor)
    assert [(d.external_id, d.n_messages) for d in rows] == [("d1", 4)]
    client.force_login(members["adjudicator"])
    page = client.get("/p/test/dialogues/", {"q": "e"}).content.decode()
    assert "<td>4</td>" in page and "<td>2</td>" in page


# ---- d. help text that shows a literal tag --------------------------------------------------

def test_the_release_form_shows_the_tag_mode_s_literal_name_tag(client, members, project):
    client.force_login(members["admin"])
    page = client.get("/p/test/exports/").content.decode()
    assert "tag: &lt;NAME&gt;" in page and "<NAME>" not in page


# ---- l. every file of an export in one zip --------------------------------------------------

@pytest.fixture
def gold_export(corpus, members, django_capture_on_commit_callbacks):
    from annotator.services.exports import gold_export_start

    with django_capture_on_commit_callbacks(execute=True):
        export = gold_export_start(project=corpus, user=members["admin"])
    export.refresh_from_db()
    return export


def _zip(response) -> zipfile.ZipFile:
    return zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))


def test_the_zip_holds_every_listed_file_of_the_export(client, members, gold_export):
    from annotator.services.exports import export_dir

    client.force_login(members["admin"])
    page = client.get(f"/p/test/exports/{gold_export.pk}/").content.decode()
    assert f"/p/test/exports/{gold_export.pk}/files.zip" in page
    response = client.get(f"/p/test/exports/{gold_export.pk}/files.zip")
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert response["Content-Disposition"] == 'attachment; filename="test-gold-v001.zip"'
    archive = _zip(response)
    listed = [f["name"] for f in gold_export.files]
    assert "conll/gold.bio.conll" in listed
    assert archive.namelist() == [f"test-gold-v001/{name}" for name in listed]
    for name in listed:
        assert archive.read(f"test-gold-v001/{name}") == (export_dir(gold_export) / name).read_bytes()
    assert archive.testzip() is None


@pytest.mark.parametrize(("who", "status"), [("adjudicator", 403), ("annotator", 403), ("outsider", 404)])
def test_the_zip_is_for_admins_only(client, members, gold_export, who, status):
    client.force_login(members[who])
    assert client.get(f"/p/test/exports/{gold_export.pk}/files.zip").status_code == status


@pytest.mark.parametrize("name", ["../../secret.txt", "/etc/passwd", "missing.txt"])
def test_a_zip_with_a_file_outside_the_export_or_missing_is_refused(client, members, gold_export, name):
    from annotator.models import Export

    Export.objects.filter(pk=gold_export.pk).update(files=[*gold_export.files, {"name": name, "size": 1}])
    client.force_login(members["admin"])
    assert client.get(f"/p/test/exports/{gold_export.pk}/files.zip").status_code == 404


def test_an_unfinished_export_has_no_zip(client, members, gold_export):
    from annotator.models import Export

    Export.objects.filter(pk=gold_export.pk).update(status=Export.Status.RUNNING)
    client.force_login(members["admin"])
    assert client.get(f"/p/test/exports/{gold_export.pk}/files.zip").status_code == 404


# ---- f. a report computed before gold changed says so ----------------------------------------

STALE = "stale: gold changed since"


def test_the_reports_say_stale_once_gold_changed_after_they_were_computed(client, members, computed):
    from annotator.services.adjudication import adjudication_submit
    from tests.annotator.helpers import msg

    urls = ["/p/test/reports/agreement/", "/p/test/reports/detectors/",
            f"/p/test/reports/circularity/?run={computed['run'].pk}"]
    client.force_login(members["adjudicator"])
    for url in urls:
        page = client.get(url).content.decode()
        assert "Computed" in page or "as it was" in page or "computed" in page, url
        assert STALE not in page, url
    item = AdjudicationItem.objects.get(message=msg(computed["project"], "d1", 3))
    adjudication_submit(item=item, user=members["adjudicator"], spans=[(0, 4, "NAME")], version=item.version)
    for url in urls:
        assert STALE in client.get(url).content.decode(), url


# ---- e. recorded dicts, timestamps and paths shown for people -------------------------------

LONG_BASE = "/srv/models/huggingface/hub/models--distilbert--distilbert-base-multilingual-cased/snapshots/abc123"


def test_the_tagger_page_shows_dates_data_and_the_whole_base_model_path(client, members, corpus, monkeypatch):
    from annotator.selectors import tagger as tagger_selectors
    from pipeline.tagger.store import ModelInfo

    info = ModelInfo(name="tagger", version="7", path="", base_model=LONG_BASE, scheme="bio", labels=("NAME",),
                     data_hash="h", created_at="2026-03-04T05:06:07+00:00", training_seconds=12.0,
                     data={"gold_dialogues": 3, "generated_dialogues": 40, "spans": {"NAME": 5}})
    monkeypatch.setattr(tagger_selectors, "tagger_versions", lambda project: [info])
    client.force_login(members["admin"])
    page = client.get("/p/test/tagger/").content.decode()
    assert "4 Mar 2026, 05:06 UTC (" in page and "2026-03-04T05:06:07" not in page
    assert LONG_BASE in page
    assert "<li>gold dialogues: 3</li>" in page and "<li>spans: NAME 5</li>" in page and "{" not in page.split(
        "<tbody>")[1].split("</tbody>")[0]


def test_an_export_page_lists_its_parameters_and_dates_for_people(client, members, gold_export):
    client.force_login(members["admin"])
    page = client.get(f"/p/test/exports/{gold_export.pk}/").content.decode()
    assert "<li>test fraction: 0.2</li>" in page and "<li>seed: 0</li>" in page
    assert "{&#x27;" not in page and "{'" not in page
    assert "UTC (just now)" in page


# ---- h. a run's progress moves while a chunk is detected --------------------------------------

def test_a_run_s_progress_advances_within_a_chunk(corpus, monkeypatch):
    from annotator.models import DetectorRun
    from annotator.services import runs

    monkeypatch.setattr(runs, "PROGRESS_SECONDS", 0)  # the Slow detector below is instant
    run = runs.run_start(project=corpus, detector="rules", chunk_dialogues=10)  # one chunk: d1 (4), d2 (2)
    seen: list[int] = []

    class Slow:
        """Yields a dialogue's (empty) detections, then looks at the run before the next one."""

        def detect_many(self, dialogues):
            for _ in dialogues:
                yield []
                seen.append(DetectorRun.objects.get(pk=run.pk).progress_done)

    monkeypatch.setattr(runs, "detector_for", lambda r: Slow())
    chunk = run.chunks.get()
    assert chunk.message_count == 6
    assert runs.chunk_process(chunk_id=chunk.pk) == "done"
    run.refresh_from_db()
    assert seen == [4, 4]  # after d1, before the chunk finished: 4 of 6; the last is written at the end
    assert (run.status, run.progress_done, run.progress_total) == ("succeeded", 6, 6)


def test_a_fast_chunk_writes_no_progress_before_it_is_done(corpus, monkeypatch):
    """A chunk detected within PROGRESS_SECONDS writes its progress once, at the end: no UPDATE and
    count over the run's chunks for every few dialogues of a detector that takes a second."""
    from annotator.models import DetectorRun
    from annotator.services import runs

    run = runs.run_start(project=corpus, detector="rules", chunk_dialogues=10)
    seen: list[int] = []

    class Fast:
        def detect_many(self, dialogues):
            for _ in dialogues:
                yield []
                seen.append(DetectorRun.objects.get(pk=run.pk).progress_done)

    monkeypatch.setattr(runs, "detector_for", lambda r: Fast())
    assert runs.chunk_process(chunk_id=run.chunks.get().pk) == "done"
    run.refresh_from_db()
    assert seen == [0, 0]
    assert (run.status, run.progress_done) == ("succeeded", 6)


# ---- k. search in the annotator's queue and the adjudication queue ---------------------------

def _rows_text(page: str) -> str:
    return page.split("<tbody>")[1].split("</tbody>")[0]


def test_the_annotator_s_queue_searches_dialogue_ids_and_text(client, members, ws_project, planned):
    planned("blind")
    client.force_login(members["annotator"])
    everything = client.get("/p/test/queue/items/").content.decode()
    assert "6 items" in everything
    maria = client.get("/p/test/queue/items/", {"q": "maria"}).content.decode()
    assert "2 items" in maria and "Hi Maria!" in maria and "Email me" in maria and "Alex has" not in maria
    d2 = client.get("/p/test/queue/items/", {"q": "d2", "status": "pending"}, HTTP_HX_REQUEST="true").content.decode()
    assert "2 items" in d2 and "Great work, Sam" in d2 and "d1 ·" not in d2
    none = client.get("/p/test/queue/items/", {"q": "zebra"}).content.decode()
    assert "No items match “zebra”" in none


def test_the_adjudication_queue_searches(client, members, queued):
    client.force_login(members["adjudicator"])
    everything = client.get("/p/test/adjudication/").content.decode()
    assert "3 items" in everything
    alex = client.get("/p/test/adjudication/", {"q": "ALEX"}).content.decode()
    assert "1 item" in alex and "Alex has 3 apples" in _rows_text(alex) and 'value="ALEX"' in alex
    d2 = client.get("/p/test/adjudication/", {"q": "d2"}, HTTP_HX_REQUEST="true").content.decode()
    assert "Great work, Sam" in d2 and "Alex" not in d2
    none = client.get("/p/test/adjudication/", {"q": "zebra"}).content.decode()
    assert "No item matches “zebra”" in none


# ---- g. the key to the pseudonyms, for the project's admins only ------------------------------

@pytest.mark.parametrize("url", ["/p/test/reports/agreement/", "/p/test/adjudication/"])
def test_only_the_project_s_admins_see_the_pseudonym_key(client, members, computed, url):
    from annotator.selectors.projects import pseudonyms

    names = pseudonyms(computed["project"])
    a1, a2 = names[members["annotator"].pk], names[members["annotator2"].pk]
    client.force_login(members["admin"])
    page = client.get(url).content.decode()
    assert "Pseudonym key" in page
    assert f"<li><b>{a1}</b>: annotator</li>" in page and f"<li><b>{a2}</b>: annotator2</li>" in page
    client.force_login(members["adjudicator"])
    page = client.get(url).content.decode()
    assert "Pseudonym key" not in page and "annotator2" not in page


# ---- a page a list does not have is a 404 on every list -------------------------------------

@pytest.mark.parametrize("url,who", [("/p/test/dialogues/", "adjudicator"), ("/p/test/adjudication/", "adjudicator"),
                                     ("/p/test/queue/items/", "annotator")])
def test_every_list_answers_a_page_past_its_end_with_404(client, members, queued, url, who):
    client.force_login(members[who])
    assert client.get(url, {"page": 1}).status_code == 200
    for page in (2, 10**30):
        assert client.get(url, {"page": page}).status_code == 404, (url, page)
