"""Gold exports and anonymized releases: services, the leak gate, downloads, roles, commands."""

from __future__ import annotations

import hashlib
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from annotator.models import DetectorRun, Export
from annotator.services import exports as export_services
from annotator.services import release_review as review_services
from annotator.services import releases as release_services
from annotator.services.exports import ExportError, export_dir, gold_export_build, private_dir
from tests.annotator.helpers import original_ids

KEY = "test-release-key-0001"


@pytest.fixture(autouse=True)
def _surrogate_key(settings):
    settings.BLINDSPOT_SURROGATE_KEY = KEY
    settings.OPENAI_BASE_URL = ""
    settings.OPENAI_API_KEY = ""


@pytest.fixture
def built(django_capture_on_commit_callbacks):
    """Run the queued build at commit (in process), then reload the record."""

    def build(start, **kwargs) -> Export:
        with django_capture_on_commit_callbacks(execute=True):
            export = start(**kwargs)
        export.refresh_from_db()
        return export

    return build


def _read_jsonl(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --- gold export ---------------------------------------------------------------------------


@pytest.mark.django_db
def test_gold_export_writes_every_format_with_hashes(corpus, members, built):
    export = built(export_services.gold_export_start, project=corpus, user=members["admin"], test_fraction=0.5)
    assert export.status == "succeeded", export.error
    root = export_dir(export)
    names = {f["name"] for f in export.files}
    assert names == {"gold.jsonl", "conll/gold.io.conll", "conll/gold.bio.conll", "hf/train.jsonl",
                     "hf/test.jsonl", "hf/labels.json", "hf/README.md", "labelstudio/tasks.json",
                     "labelstudio/config.xml", "doccano/gold.jsonl", "spacy/train.spacy", "spacy/test.spacy",
                     "spacy/unaligned.jsonl", "manifest.json"}
    for f in export.files:
        data = (root / f["name"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == f["sha256"] and len(data) == f["size"]

    gold = _read_jsonl(root / "gold.jsonl")
    assert len(gold) == 6
    hi = next(r for r in gold if r["text"].startswith("Hi Maria"))
    assert hi["spans"] == [{"start": 3, "end": 8, "label": "NAME", "text": "Maria", "provenance": "imported",
                            "annotators": [], "model_matched": False}]
    bio = (root / "conll" / "gold.bio.conll").read_text()
    assert "# id = d1:0\nHi\tO\nMaria\tB-NAME\n" in bio
    assert "maria.lopez@example.com\tB-EMAIL" in bio or "maria\tB-EMAIL" in bio
    assert "\tI-NAME" not in (root / "conll" / "gold.io.conll").read_text().split("Maria")[0]

    hf = {s: _read_jsonl(root / "hf" / f"{s}.jsonl") for s in ("train", "test")}
    assert sum(len(v) for v in hf.values()) == 6
    for rows in hf.values():  # a dialogue is never split between train and test
        for row in rows:
            assert len(row["tokens"]) == len(row["ner_tags"]) == len(row["token_offsets"])
    assert not ({r["dialogue_id"] for r in hf["train"]} & {r["dialogue_id"] for r in hf["test"]})

    # the formats users already have read back to the same gold (spaCy's own DocBin for .spacy)
    from pipeline.formats.doccano import parse_doccano
    from pipeline.formats.labelstudio import parse_labelstudio

    def gold_of(dialogues):
        return sorted((d.id, m.index, m.text[s.start:s.end], s.label) for d in dialogues for m in d.messages
                      for s in m.spans)

    want = sorted((r["dialogue_id"], r["index"], s["text"], s["label"]) for r in gold for s in r["spans"])
    assert gold_of(parse_labelstudio((root / "labelstudio" / "tasks.json").read_text(encoding="utf-8"))) == want
    assert gold_of(parse_doccano((root / "doccano" / "gold.jsonl").read_text(encoding="utf-8"))) == want
    spacy = pytest.importorskip("spacy")
    from spacy.tokens import DocBin

    ents = [(doc.user_data["blindspot"]["dialogue_id"], doc.user_data["blindspot"]["index"], e.text, e.label_)
            for split in ("train", "test")
            for doc in DocBin().from_disk(root / "spacy" / f"{split}.spacy").get_docs(spacy.blank("en").vocab)
            for e in doc.ents]
    unaligned = _read_jsonl(root / "spacy" / "unaligned.jsonl")
    assert sorted(ents + [(u["dialogue_id"], u["index"], u["text"], u["label"]) for u in unaligned]) == want

    m = export.manifest
    assert m["spans_per_label"] == {"EMAIL": 1, "NAME": 1} and m["messages"] == 6 and m["dialogues"] == 2
    assert m["project_config"]["slug"] == "test" and m["exported_at"]
    assert {a["pseudonym"] for a in m["annotators"]} == {"A01", "A02", "A03", "A04"}
    assert "annotator2" not in json.dumps(m)  # pseudonyms only
    assert {f["name"] for f in m["files"]} == names - {"manifest.json"}


@pytest.mark.django_db
def test_gold_exports_are_versioned_and_immutable(corpus, members, built):
    first = built(export_services.gold_export_start, project=corpus, user=members["admin"])
    before = (export_dir(first) / "gold.jsonl").read_bytes()
    second = built(export_services.gold_export_start, project=corpus, user=members["admin"])
    assert (first.version, second.version) == (1, 2)
    assert export_dir(first) != export_dir(second)
    assert (export_dir(first) / "gold.jsonl").read_bytes() == before
    assert gold_export_build(export_id=first.pk) == "already built"


@pytest.mark.django_db
def test_gold_export_needs_a_gold_set(project, members):
    with pytest.raises(ExportError, match="no gold set"):
        export_services.gold_export_start(project=project, user=members["admin"])


@pytest.mark.django_db
def test_export_gold_command(corpus, tmp_path):
    call_command("export_gold", "--project", "test", "--out", str(tmp_path / "copy"))
    export = Export.objects.get(project=corpus, kind="gold")
    assert export.status == "succeeded" and (tmp_path / "copy" / "manifest.json").exists()


# --- releases -------------------------------------------------------------------------------


@pytest.mark.django_db
def test_release_from_gold_replaces_pii_keeps_maths_and_can_be_published(corpus, members, built):
    export = built(release_services.release_start, project=corpus, user=members["admin"])
    assert export.status == "succeeded", export.error
    assert export.publishable and export.report["leaks"]["leaks"] == 0
    release = (export_dir(export) / "release.jsonl").read_text(encoding="utf-8")
    assert "Maria" not in release and "maria.lopez@example.com" not in release
    assert "is 3/4 bigger than 2/3?" in release and "divide 4815162342 by 2" in release
    rows = _read_jsonl(export_dir(export) / "release.jsonl")
    ids = original_ids(export)  # keyed ids, the originals in the private mapping table
    assert [ids[d["id"]] for d in rows] == ["d1", "d2"] and not {"d1", "d2"} & {d["id"] for d in rows}
    assert export.report["utility"]["maths_intact"] is True
    # the mapping table is stored apart from the release and never listed as one of its files
    mapping = _read_jsonl(private_dir(export) / "mapping.jsonl")
    assert {m["original"] for m in mapping if m["label"] != "DIALOGUE_ID"} == {"Maria", "maria.lopez@example.com"}
    assert all("mapping" not in f["name"] for f in export.files)
    assert not (export_dir(export) / "mapping.jsonl").exists()
    # the gold was imported, not reviewed in Blindspot, and the self-audit's second opinion found
    # the name nobody marked ("Great work, Sam."): publishing it as it is takes an acknowledgement
    found = {(c.message.text[c.start:c.end], c.reason) for c in export.candidates.select_related("message")}
    assert ("Sam", "second_opinion") in found, found
    assert export.report["evidence"]["imported_messages"] == 6 and export.report["evidence"]["reviewed_messages"] == 0
    with pytest.raises(ExportError, match="acknowledge"):
        release_services.release_publish(export=export, user=members["admin"])
    release_services.release_publish(export=export, user=members["admin"], acknowledge=True)
    export.refresh_from_db()
    assert export.report["published"]["by"] == members["admin"].pk
    assert export.report["published"]["pending_candidates"] == len(found)


@pytest.mark.parametrize(("mode", "rep"), [("tag", "<NAME>"), ("redact", "[REDACTED]")])
@pytest.mark.django_db
def test_release_modes(corpus, members, built, mode, rep):
    export = built(release_services.release_start, project=corpus, user=members["admin"], mode=mode)
    assert export.status == "succeeded", export.error
    assert f"Hi {rep}! Ready for fractions?" in (export_dir(export) / "release.jsonl").read_text()


def _leaky_run(project):
    """A run that spans an id where it is PII but not where the same digits are maths."""
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    text = "my student id is 4815162342"
    rows = [{"id": "x1", "messages": [
        {"speaker": "Student", "text": text, "spans": [{"start": 17, "end": 27, "label": "ID_NUMBER"}]},
        {"speaker": "Tutor", "text": "Now divide 4815162342 by 2."},
    ]}]
    raw = "".join(json.dumps(r) + "\n" for r in rows).encode()
    corpus_import(project=project, dialogues=parse_upload(raw, name="leaky.jsonl"), source="leaky.jsonl",
                  spans_as="run")
    return DetectorRun.objects.get(project=project, detector="import:leaky.jsonl")


@pytest.mark.django_db
def test_leak_check_blocks_publishing(project, members, built, client):
    run = _leaky_run(project)
    export = built(release_services.release_start, project=project, user=members["admin"], source="run", run=run,
                   complete_only=False)  # nothing is reviewed in this project
    assert export.status == "succeeded", export.error
    assert not export.publishable
    hit = export.report["leaks"]["hits"][0]
    assert (original_ids(export)[hit["dialogue_id"]], hit["index"], hit["field"], hit["start"]) == ("x1", 1, "text", 11)
    # the record and the release's leaks.json hold positions only; the strings stay private
    assert "4815162342" not in json.dumps(export.report) + (export_dir(export) / "leaks.json").read_text()
    private = json.loads((private_dir(export) / "leaks.private.json").read_text())
    assert private["hits"][0]["found"] == "4815162342"
    with pytest.raises(ExportError, match="cannot be published"):
        release_services.release_publish(export=export, user=members["admin"])
    client.force_login(members["admin"])
    response = client.post(reverse("release-publish", args=[project.slug, export.pk]), follow=True)
    assert "cannot be published" in response.content.decode()
    export.refresh_from_db()
    assert "published" not in export.report


@pytest.mark.django_db
def test_surrogate_release_needs_a_key(corpus, members, settings):
    settings.BLINDSPOT_SURROGATE_KEY = ""
    with pytest.raises(ExportError, match="BLINDSPOT_SURROGATE_KEY"):
        release_services.release_start(project=corpus, user=members["admin"])
    # keyed ids need the key in every mode: an HMAC under a known key is undone by guessing ids
    with pytest.raises(ExportError, match="keyed dialogue ids"):
        release_services.release_start(project=corpus, user=members["admin"], mode="tag")
    corpus.release_fields = {"id": "keep"}
    corpus.save(update_fields=["release_fields"])
    release_services.release_start(project=corpus, user=members["admin"], mode="tag")
    assert Export.objects.count() == 1


@pytest.mark.django_db
def test_release_from_an_unfinished_run_is_refused(corpus, members):
    run = DetectorRun.objects.create(project=corpus, detector="rules", status=DetectorRun.Status.RUNNING)
    with pytest.raises(ExportError, match="not succeeded"):
        release_services.release_start(project=corpus, user=members["admin"], source="run", run=run)


# --- evidence, acknowledgement and residual risk -------------------------------------------

OYEKAN = "Hi Mr Oyekan, this is miss Gamble, Stephen's mom."


def _unreviewed_run(project):
    """An imported run over one new dialogue (no gold) that finds "Stephen" but not the others."""
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    rows = [{"id": "p1", "messages": [
        {"speaker": "Parent", "text": OYEKAN, "spans": [{"start": 35, "end": 42, "label": "NAME"}]},
        {"speaker": "Tutor", "text": "Thanks! Now 3/4 of 8 is 6."},
    ]}]
    raw = "".join(json.dumps(r) + "\n" for r in rows).encode()
    corpus_import(project=project, dialogues=parse_upload(raw, name="parents.jsonl"), source="parents.jsonl",
                  spans_as="run")
    return DetectorRun.objects.get(project=project, detector="import:parents.jsonl")


@pytest.mark.django_db
def _reviewed_in_app(project) -> None:
    """The imported gold as if people had reviewed it in Blindspot (adjudicated)."""
    from annotator.models import AdjudicationDecision

    AdjudicationDecision.objects.filter(message__project=project).update(outcome="adjudicated")


@pytest.mark.django_db
def test_complete_only_is_honoured_for_run_sources(corpus, members, built):
    run = _unreviewed_run(corpus)
    _reviewed_in_app(corpus)
    export = built(release_services.release_start, project=corpus, user=members["admin"], source="run", run=run,
                   complete_only=True)
    assert export.status == "succeeded", export.error
    release = (export_dir(export) / "release.jsonl").read_text(encoding="utf-8")
    ids = original_ids(export)
    assert "Oyekan" not in release and [ids[d["id"]] for d in _read_jsonl(export_dir(export) / "release.jsonl")] == ["d1", "d2"]
    assert export.manifest["skipped_dialogues"] == 1
    # every released message is reviewed: the run found nothing on d1, d2, but they go out with
    # their gold spans, so what the review found is not in the release
    assert "Maria" not in release and "maria.lopez" not in release
    residual = export.manifest["residual_risk"]
    assert residual["available"] and residual["census"]
    assert residual["missed_found"] == 0 and residual["per_1000"] == 0
    assert residual["sentence"] == "Every one of the 6 released messages was reviewed; none holds a miss."
    evidence = export.manifest["evidence"]
    assert evidence["kind"] == "run" and evidence["reviewed_share"] == 1.0 and not evidence["needs_acknowledgement"]
    assert "6 of the 6 released messages (100 %) were reviewed and go out with their gold spans" in evidence["statement"]


@pytest.mark.django_db
def test_unreviewed_run_release_states_it_and_needs_an_audited_acknowledgement(corpus, members, built, client):
    from annotator.models import AuditEvent

    run = _unreviewed_run(corpus)
    export = built(release_services.release_start, project=corpus, user=members["admin"], source="run", run=run,
                   complete_only=False)
    assert export.status == "succeeded", export.error
    # what the detector missed is in the release, and the leak check cannot know it
    assert "Hi Mr Oyekan, this is miss Gamble" in (export_dir(export) / "release.jsonl").read_text()
    assert export.publishable
    evidence = export.manifest["evidence"]
    assert evidence["kind"] == "run" and evidence["unreviewed"] and evidence["needs_acknowledgement"]
    assert "the run's spans go out unreviewed on the other 8" in evidence["statement"]
    residual = export.manifest["residual_risk"]
    assert not residual["available"] and residual["sentence"].startswith("No audit sample")
    assert export.report["residual_risk"] == residual

    client.force_login(members["admin"])
    detail = client.get(reverse("export-detail", args=["test", export.pk])).content.decode()
    assert "Unreviewed" in detail and "No audit sample to estimate from" in detail
    assert 'name="acknowledge"' in detail

    with pytest.raises(ExportError, match="unreviewed"):
        release_services.release_publish(export=export, user=members["admin"])
    response = client.post(reverse("release-publish", args=["test", export.pk]), follow=True)
    assert "unreviewed" in response.content.decode()
    export.refresh_from_db()
    assert "published" not in export.report

    client.post(reverse("release-publish", args=["test", export.pk]), {"acknowledge": "on"})
    export.refresh_from_db()
    acknowledged = export.report["published"]["acknowledged_risk"]
    pending = export.report["published"]["pending_candidates"]
    assert acknowledged.endswith(residual["sentence"]) and f"{pending} place(s)" in acknowledged and pending > 0
    ack = AuditEvent.objects.get(action="export.release.acknowledge_unreviewed")
    assert ack.details["residual_risk"] == acknowledged and ack.user == members["admin"]
    assert ack.details["pending_candidates"] == pending


@pytest.mark.django_db
def test_imported_gold_is_its_own_evidence_not_a_review(corpus, members, built):
    """Gold imported from a file used to read "100 % reviewed" and needed no acknowledgement."""
    export = built(release_services.release_start, project=corpus, user=members["admin"])
    evidence = export.manifest["evidence"]
    assert evidence["kind"] == "gold" and evidence["unreviewed"] and evidence["needs_acknowledgement"]
    assert evidence["reviewed_messages"] == 0 and evidence["imported_messages"] == 6
    assert evidence["decisions"] == {"imported": 6} and evidence["imported_from"] == {"small.jsonl": 6}
    assert "0 % of the 6 released messages reviewed" in evidence["statement"]
    assert "imported from small.jsonl, not reviewed in Blindspot" in evidence["statement"]
    assert not export.manifest["residual_risk"]["available"]  # imported gold stands for nothing else
    with pytest.raises(ExportError, match="acknowledge"):
        release_services.release_publish(export=export, user=members["admin"])


@pytest.mark.django_db
def test_unsampled_imported_gold_is_advised_a_plan_that_reaches_it(corpus, members, built, client):
    """The advice was a flagged + audit plan, which needs a run and never checks the imported gold."""
    export = built(release_services.release_start, project=corpus, user=members["admin"])
    sentence = export.manifest["residual_risk"]["sentence"]
    assert sentence.startswith("No audit sample to estimate from: none of the 6 imported gold released messages")
    assert "plan a random sample of whole dialogues and review it" in sentence and "flagged + audit" not in sentence
    client.force_login(members["admin"])
    detail = client.get(reverse("export-detail", args=["test", export.pk])).content.decode()
    assert "plan a random sample of whole dialogues and review it" in detail and "flagged + audit" not in detail


def _dialogue_sample_reviewed(project, annotator, dialogue: str, *, of: int) -> list:
    """One dialogue of ``of`` drawn by a dialogue-sample plan and reviewed in the app."""
    from annotator.models import AdjudicationDecision, Assignment, AssignmentPlan, Message

    plan = AssignmentPlan.objects.create(project=project, params={"strategy": "dialogues", "n_dialogues": 1})
    messages = list(Message.objects.filter(project=project, dialogue__external_id=dialogue).order_by("position"))
    for m in messages:
        Assignment.objects.create(project=project, plan=plan, annotator=annotator, message=m,
                                  status=Assignment.Status.DONE, inclusion_probability=1 / of)
    AdjudicationDecision.objects.filter(message__in=messages).update(outcome="adjudicated")
    return messages


@pytest.mark.django_db
def test_imported_gold_is_what_its_unreviewed_messages_release(corpus, members, built):
    """The demo's statement read 334 residual spans per 1,000 beside "0 miss(es) found": the imported
    gold's messages were estimated as if they went out with no spans."""
    _dialogue_sample_reviewed(corpus, members["annotator"], "d1", of=2)  # reviewers kept the imported gold
    export = built(release_services.release_start, project=corpus, user=members["admin"])
    rr = export.manifest["residual_risk"]
    assert rr["available"] and rr["per_1000"] == 0 and rr["sampled_dialogues"] == 1
    assert "recall" not in rr["sentence"]
    assert export.manifest["evidence"]["needs_acknowledgement"]  # imported gold is still unreviewed
    assert release_services.release_acknowledgement(export).endswith(rr["sentence"])


@pytest.mark.django_db
def test_one_reviewed_dialogue_is_said_too_few_to_bound_the_residual(corpus, members, built, client):
    """One reviewed dialogue of two used to bound the rest at hundreds of thousands per 1,000."""
    _dialogue_sample_reviewed(corpus, members["annotator"], "d1", of=2)
    export = built(release_services.release_start, project=corpus, user=members["admin"])
    rr = export.manifest["residual_risk"]
    headline = ("None found in 4 reviewed messages (1 dialogue), too few to bound the residual PII: a bound needs "
                "at least 2 reviewed dialogues of this length.")
    assert rr["sentence"] == headline and rr["per_1000_upper"] is None and rr["needed"] == {"imported gold": 2}
    assert release_services.release_acknowledgement(export).endswith(headline)
    client.force_login(members["admin"])
    detail = client.get(reverse("export-detail", args=["test", export.pk])).content.decode()
    assert headline in detail and "at most" not in detail


@pytest.mark.django_db
def test_a_miss_of_the_imported_gold_found_in_review_stands_for_the_unreviewed(corpus, members, built):
    from annotator.models import GoldSpan

    sam = _dialogue_sample_reviewed(corpus, members["annotator"], "d2", of=2)[1]
    GoldSpan.objects.create(message=sam, start=12, end=15, label="NAME", provenance="adjudicated")
    export = built(release_services.release_start, project=corpus, user=members["admin"])
    rr = export.manifest["residual_risk"]
    assert "Sam" not in (export_dir(export) / "release.jsonl").read_text()  # reviewed gold is released
    assert rr["missed_found"] == 0 and rr["residual_spans"] == pytest.approx(4 * 1 / 2)
    assert rr["sentence"].startswith("1 miss(es) found in 2 reviewed messages (1 dialogue): about 333.3 ")


@pytest.mark.django_db
def test_a_release_from_a_run_fixes_what_the_review_found(project, members, built, client):
    """The run (the rules: no names) misses "Miles" four times in a lesson people reviewed: the
    release from the run carries the lesson's gold there, and asks nobody about Miles."""
    from annotator.models import AdjudicationDecision, ReleaseCandidate
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload
    from tests.pipeline.test_release_gold import MILES, lesson

    other = [("Teacher", "What is 7 times 8?"), ("Student", "56")]
    raw = "".join(json.dumps(d) + "\n" for d in (lesson("lesson-1", other), lesson("lesson-miles", MILES, names=True),
                                                  lesson("lesson-3", other))).encode()
    corpus_import(project=project, dialogues=parse_upload(raw, name="lessons.jsonl"), source="lessons.jsonl",
                  spans_as="gold")
    AdjudicationDecision.objects.exclude(message__dialogue__external_id="lesson-miles").delete()
    _dialogue_sample_reviewed(project, members["annotator"], "lesson-miles", of=3)
    run = DetectorRun.objects.create(project=project, detector="rules", status=DetectorRun.Status.SUCCEEDED)

    export = built(release_services.release_start, project=project, user=members["admin"], source="run", run=run,
                   complete_only=False)
    assert export.status == "succeeded", export.error
    released = _read_jsonl(export_dir(export) / "release.jsonl")
    assert len(released) == 3 and not any("Miles" in m["text"] for m in released[1]["messages"])
    assert released[1]["messages"][1]["text"] == MILES[1][1]
    assert not ReleaseCandidate.objects.filter(export=export, message__dialogue__external_id="lesson-miles").exists()
    evidence, rr = export.manifest["evidence"], export.manifest["residual_risk"]
    assert (evidence["messages"], evidence["reviewed_messages"]) == (9, 5) and evidence["needs_acknowledgement"]
    assert "5 of the 9 released messages (56 %) were reviewed and go out with their gold spans" in evidence["statement"]
    assert rr["missed_found"] == 0 and rr["strata"][0]["missed_if_unreviewed"] == 4
    assert rr["sentence"].startswith("4 miss(es) found in 5 reviewed messages (1 dialogue)")
    client.force_login(members["admin"])
    detail = client.get(reverse("export-detail", args=[project.slug, export.pk])).content.decode()
    assert '<td class="num">4</td><td class="num">0</td></tr>' in detail  # found 4, none left in the release


@pytest.mark.django_db
def test_gold_release_states_its_review_evidence(corpus, members, built):
    _reviewed_in_app(corpus)
    export = built(release_services.release_start, project=corpus, user=members["admin"])
    evidence = export.manifest["evidence"]
    assert evidence["kind"] == "gold" and not evidence["unreviewed"] and not evidence["needs_acknowledgement"]
    assert evidence["reviewed_messages"] == 6 and evidence["reviewed_share"] == 1.0
    assert evidence["decisions"] == {"adjudicated": 6} and evidence["annotators"] == 0
    assert "100 % of the 6 released messages reviewed" in evidence["statement"]
    assert export.manifest["residual_risk"]["census"] and export.manifest["residual_risk"]["missed_found"] == 0
    # reviewed gold needs no acknowledgement, but the self-audit's places must be settled first
    for c in export.candidates.all():
        review_services.candidate_decide(candidate_id=c.pk, export=export, user=members["adjudicator"],
                                         verdict="dismissed")
    release_services.release_publish(export=export, user=members["admin"])  # no acknowledgement needed


@pytest.mark.django_db
def test_residual_risk_from_a_flagged_plus_audit_sample(project, members, built, client):
    """Flagged messages all reviewed, 10 unflagged ones audited: one miss found stands for many."""
    from annotator.models import AdjudicationDecision, Assignment, AssignmentPlan, GoldSpan, Message
    from annotator.services.imports import corpus_import
    from pipeline.formats import parse_upload

    rows = [{"id": f"t{i}", "messages": [
        {"speaker": "Tutor", "text": f"Hi Sam{i}!", "spans": [{"start": 3, "end": 7 + len(str(i)), "label": "NAME"}]},
        *({"speaker": "Student", "text": f"{j} + {i} = {i + j}"} for j in range(4)),
    ]} for i in range(20)]
    raw = "".join(json.dumps(r) + "\n" for r in rows).encode()
    corpus_import(project=project, dialogues=parse_upload(raw, name="tutoring.jsonl"), source="tutoring.jsonl",
                  spans_as="run")
    run = DetectorRun.objects.get(project=project, detector="import:tutoring.jsonl")
    messages = list(Message.objects.filter(project=project).order_by("dialogue_id", "position"))
    flagged = [m for m in messages if m.position == 0]
    unflagged = [m for m in messages if m.position != 0]
    audit = unflagged[::8]  # 10 of 80
    plan = AssignmentPlan.objects.create(project=project, params={"strategy": "flagged_audit", "runs": [run.pk]})
    for m in flagged + audit:
        Assignment.objects.create(project=project, plan=plan, annotator=members["annotator"], message=m,
                                  status=Assignment.Status.DONE, flagged=m in flagged,
                                  inclusion_probability=1.0 if m in flagged else len(audit) / len(unflagged))
        AdjudicationDecision.objects.create(message=m, outcome="unanimous")
        if m in flagged:
            GoldSpan.objects.create(message=m, start=3, end=len(m.text) - 1, label="NAME", provenance="unanimous")
    GoldSpan.objects.create(message=audit[3], start=0, end=1, label="AGE", provenance="unanimous")  # a miss

    export = built(release_services.release_start, project=project, user=members["admin"], source="run", run=run,
                   complete_only=False)
    assert export.status == "succeeded", export.error
    rr = export.manifest["residual_risk"]
    # the miss found goes out fixed (its message carries its gold), and stands for the unreviewed
    assert rr["available"] and not rr["census"] and (rr["sampled"], rr["missed_found"]) == (30, 0)
    assert rr["sentence"].startswith("1 miss(es) found in 30 reviewed messages")
    strata = {s["name"]: s for s in rr["strata"]}
    assert strata["flagged"]["released"] == strata["flagged"]["sampled"] == 20
    assert (strata["unflagged"]["released"], strata["unflagged"]["sampled"], strata["unflagged"]["rate"]) == (80, 10, 0.125)
    assert strata["unflagged"]["missed_if_unreviewed"] == 1
    assert rr["residual_spans"] == pytest.approx(70 / 10)  # 7 unreviewed messages per sampled one
    assert rr["per_1000"] == pytest.approx(70) and rr["per_1000_upper"] > 200
    assert rr["recall"] == pytest.approx(21 / 28)
    assert (export_dir(export) / "manifest.json").read_text().count("residual_risk") == 1
    client.force_login(members["admin"])
    detail = client.get(reverse("export-detail", args=["test", export.pk])).content.decode()
    assert "residual PII spans per 1,000 released messages" in detail and "0.125" in detail


# --- pages, downloads, roles ------------------------------------------------------------------


@pytest.fixture
def built_pair(corpus, members, built):
    gold = built(export_services.gold_export_start, project=corpus, user=members["admin"])
    release = built(release_services.release_start, project=corpus, user=members["admin"])
    return gold, release


def _urls(slug, gold, release):
    return [
        ("get", reverse("export-list", args=[slug])),
        ("get", reverse("export-detail", args=[slug, gold.pk])),
        ("get", reverse("export-download", args=[slug, gold.pk, "gold.jsonl"])),
        ("get", reverse("export-download", args=[slug, release.pk, "release.jsonl"])),
        ("get", reverse("release-mapping", args=[slug, release.pk])),
        ("post", reverse("release-publish", args=[slug, release.pk])),
    ]


@pytest.mark.django_db
@pytest.mark.parametrize(("who", "status"), [("adjudicator", 403), ("annotator", 403), ("outsider", 404)])
def test_exports_are_admin_only(client, members, built_pair, who, status):
    gold, release = built_pair
    client.force_login(members[who])
    for method, url in _urls("test", gold, release):
        assert getattr(client, method)(url).status_code == status, url
    assert client.post(reverse("export-list", args=["test"]), {"action": "gold"}).status_code == status
    assert Export.objects.count() == 2


@pytest.mark.django_db
def test_anonymous_users_are_sent_to_login(client, built_pair):
    gold, release = built_pair
    for _method, url in _urls("test", gold, release)[:5]:
        response = client.get(url)
        assert response.status_code == 302 and reverse("login") in response["Location"]


@pytest.mark.django_db
def test_admin_pages_and_downloads(client, members, built_pair):
    gold, release = built_pair
    client.force_login(members["admin"])
    page = client.get(reverse("export-list", args=["test"])).content.decode()
    assert "gold v1" in page and "release v1" in page
    detail = client.get(reverse("export-detail", args=["test", release.pk])).content.decode()
    assert "Leak check passed" in detail and "release.jsonl" in detail
    fragment = client.get(reverse("export-detail", args=["test", gold.pk]), HTTP_HX_REQUEST="true")
    assert fragment.content.decode().lstrip().startswith('<section id="export-progress"')
    response = client.get(reverse("export-download", args=["test", gold.pk, "conll/gold.bio.conll"]))
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == (export_dir(gold) / "conll" / "gold.bio.conll").read_bytes()
    assert "attachment" in response["Content-Disposition"]
    mapping = client.get(reverse("release-mapping", args=["test", release.pk]))
    assert mapping.status_code == 200 and b"Maria" in b"".join(mapping.streaming_content)
    for bad in ("nope.txt", "../release-v001/release.jsonl", "manifest.json/../../x"):
        assert client.get(reverse("export-download", args=["test", gold.pk, bad])).status_code == 404
    assert client.get(reverse("release-mapping", args=["test", gold.pk])).status_code == 404


@pytest.mark.django_db
def test_gold_and_mapping_downloads_are_never_stored_by_a_cache(client, members, built_pair):
    """Gold spans and the private mapping table are the originals: no browser or proxy cache keeps them."""
    gold, release = built_pair
    client.force_login(members["admin"])
    for url in (reverse("export-download", args=["test", gold.pk, "gold.jsonl"]),
                reverse("export-zip", args=["test", gold.pk]),
                reverse("release-mapping", args=["test", release.pk]),
                reverse("api:api-export-file", kwargs={"slug": "test", "export_id": gold.pk, "name": "gold.jsonl"})):
        response = client.get(url) if "/api/" not in url else _bearer(members["admin"]).get(url)
        assert response.status_code == 200, url
        assert "no-store" in response.get("Cache-Control", ""), url


def _bearer(user):
    from tests.annotator.api.conftest import bearer

    return bearer(user)


@pytest.mark.django_db
def test_admin_starts_exports_from_the_page(client, members, corpus, django_capture_on_commit_callbacks):
    client.force_login(members["admin"])
    url = reverse("export-list", args=["test"])
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(url, {"action": "gold", "gold-test_fraction": "0.2", "gold-seed": "1"})
    export = Export.objects.get(kind="gold")
    assert response.status_code == 302 and response["Location"].endswith(f"/exports/{export.pk}/")
    with django_capture_on_commit_callbacks(execute=True):
        client.post(url, {"action": "release", "release-source": "gold", "release-mode": "tag",
                          "release-scope": "corpus", "release-complete_only": "on"})
    release = Export.objects.get(kind="release")
    assert release.status == "succeeded" and release.params["mode"] == "tag" and release.params["scope"] == "corpus"
    response = client.post(url, {"action": "release", "release-source": "run:999", "release-mode": "tag",
                                 "release-scope": "dialogue"})
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()


# --- the batch command ------------------------------------------------------------------------


def test_deidentify_command_needs_no_database(tmp_path, capsys):
    from tests.conftest import SMALL_CORPUS

    src = tmp_path / "corpus.jsonl"
    src.write_text("".join(json.dumps(d) + "\n" for d in SMALL_CORPUS), encoding="utf-8")
    out = tmp_path / "release.jsonl"
    call_command("deidentify", str(src), "--out", str(out), "--key", KEY)
    printed = capsys.readouterr().out
    assert "messages/s" in printed and "peak RSS" in printed and "no original PII" in printed
    text = out.read_text()
    assert "Maria" not in text and "3/4" in text
    for name in ("release.leaks.json", "release.utility.json", "release.summary.json", "release.mapping.jsonl"):
        assert (tmp_path / name).exists()
    call_command("deidentify", str(src), "--out", str(tmp_path / "tags.jsonl"), "--mode", "tag",
                 "--detector", "rules", "--no-mapping")
    assert "<EMAIL>" in (tmp_path / "tags.jsonl").read_text()
    assert not (tmp_path / "tags.mapping.jsonl").exists()
    assert "residual risk: No audit sample to estimate from" in capsys.readouterr().out
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps(SMALL_CORPUS[0]) + "\n", encoding="utf-8")
    call_command("deidentify", str(src), "--out", str(tmp_path / "audited.jsonl"), "--mode", "tag",
                 "--detector", "rules", "--gold", str(gold))
    printed = capsys.readouterr().out
    assert "residual risk: " in printed and " in 4 reviewed messages (" in printed
    assert json.loads((tmp_path / "audited.summary.json").read_text())["residual_risk"]["available"]


@pytest.mark.django_db
def test_release_with_llm_surrogates_and_offline_fallback(corpus, members, built, settings):
    from tests.fake_openai import FakeOpenAI, ok

    reply = {"surrogates": [{"original": "Maria", "label": "NAME", "surrogate": "Lucia"},
                            {"original": "maria.lopez@example.com", "label": "EMAIL", "surrogate": "not an email"}]}
    with FakeOpenAI(lambda request: ok(reply)) as server:
        settings.OPENAI_BASE_URL = server.base_url
        settings.OPENAI_API_KEY = "k"
        export = built(release_services.release_start, project=corpus, user=members["admin"], use_llm=True)
    assert export.status == "succeeded", export.error
    methods = {m["original"]: (m["method"], m["surrogate"]) for m in _read_jsonl(private_dir(export) / "mapping.jsonl")}
    assert methods["Maria"] == ("llm", "Lucia")
    assert methods["maria.lopez@example.com"][0] == "offline"  # refused three times, then offline
    assert "Hi Lucia! Ready for fractions?" in (export_dir(export) / "release.jsonl").read_text()
    assert export.publishable and export.manifest["strategy"]["strategy"].startswith("surrogate@3+llm:")


# --- one read path: releases and gold exports read the same gold ------------------------------


@pytest.mark.django_db
def test_release_and_gold_export_read_the_same_merged_gold(study, members, built):
    """Finished items not merged yet become gold before a release reads it, as before a gold export:
    both are built from the same gold (a release used to skip the merge and ship 'Maria')."""
    from annotator.models import AdjudicationDecision
    from annotator.services.adjudication import gold_merge_ready
    from tests.annotator.helpers import msg

    gold_merge_ready(project=study, message_ids=[msg(study, "d1", 1).pk])  # some gold, d1#0 still pending
    release = built(release_services.release_start, project=study, user=members["admin"], complete_only=False)
    assert release.status == "succeeded", release.error
    assert AdjudicationDecision.objects.filter(message=msg(study, "d1", 0)).exists()
    assert "Hi Maria!" not in (export_dir(release) / "release.jsonl").read_text(encoding="utf-8")
    gold = built(export_services.gold_export_start, project=study, user=members["admin"])
    assert release.manifest["evidence"]["reviewed_messages"] == gold.manifest["messages"] == 2


@pytest.mark.django_db
def test_release_streams_in_batches_with_the_same_bytes(corpus, members, built, monkeypatch):
    """Dialogues are read a batch at a time (here one per batch) straight into the de-identifier:
    the same release, and no copy of the corpus left beside it."""
    from annotator.selectors import dialogues

    whole = built(release_services.release_start, project=corpus, user=members["admin"])
    monkeypatch.setattr(dialogues, "BATCH_DIALOGUES", 1)
    batched = built(release_services.release_start, project=corpus, user=members["admin"])
    for name in ("release.jsonl", "leaks.json", "utility.json"):
        assert (export_dir(batched) / name).read_bytes() == (export_dir(whole) / name).read_bytes()
    assert sorted(p.name for p in private_dir(batched).iterdir()) == ["candidates.jsonl", "leaks.private.json",
                                                                       "mapping.jsonl"]
