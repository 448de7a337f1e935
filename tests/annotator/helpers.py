"""Plain helpers of the app tests (not fixtures): find a message, label it, post a workspace action.

Import them by name (``from tests.annotator.helpers import msg``); the fixtures that use them
live in ``tests/annotator/conftest.py``.
"""

from __future__ import annotations

from annotator.models import Annotation, Assignment, Message, Project

# Strings that only the model knows: none may ever reach a blind annotator (the ``run`` fixture).
RUN_DETECTOR = "zzleakydetector"
RUN_MODEL = "leakmodel-v9-secret"
RUN_PRESET = "leakpreset"
SCORES = (0.8765, 0.4321, 0.1234, 0.5678)

Status = Assignment.Status


def msg(project: Project, dialogue: str, position: int) -> Message:
    return Message.objects.get(project=project, dialogue__external_id=dialogue, position=position)


def label(user, message: Message, spans, *, condition="blind", status=Status.DONE, seconds=12.0):
    """A finished assignment of ``message`` to ``user`` with ``spans`` as (start, end, label)."""
    a = Assignment.objects.create(project=message.project, annotator=user, message=message,
                                  condition=condition, status=status, active_seconds=seconds)
    for start, end, lab in spans:
        Annotation.objects.create(assignment=a, condition=condition, start=start, end=end, label=lab)
    return a


def post_action(client, a: Assignment, name: str, *, version=None, htmx=True, **data):
    from django.urls import reverse

    a.refresh_from_db()
    url = reverse(f"workspace-{name}", kwargs={"slug": a.project.slug, "public_id": a.public_id})
    payload = {"version": a.version if version is None else version, **data}
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(url, payload, **headers)


def s3_objects(client, prefix: str) -> dict[str, bytes]:
    """The objects under ``prefix`` in the ``s3`` fixture's bucket, by name below the prefix."""
    listed = client.list_objects_v2(Bucket=client.bucket, Prefix=prefix).get("Contents", [])
    return {o["Key"][len(prefix):]: client.get_object(Bucket=client.bucket, Key=o["Key"])["Body"].read()
            for o in listed}


def label_rows(taxonomy, *, delete=(), initial: int | None = None) -> dict:
    """The settings form's label rows (the taxonomy formset, prefix ``labels``) as a browser posts
    them: one row per entry of ``taxonomy``, rows whose index is in ``delete`` ticked for deletion."""
    data = {"labels-TOTAL_FORMS": str(len(taxonomy)),
            "labels-INITIAL_FORMS": str(len(taxonomy) if initial is None else initial),
            "labels-MIN_NUM_FORMS": "0", "labels-MAX_NUM_FORMS": "1000"}
    for i, entry in enumerate(taxonomy):
        for field in ("label", "description", "color"):
            data[f"labels-{i}-{field}"] = entry.get(field, "")
        if i in delete:
            data[f"labels-{i}-DELETE"] = "on"
    return data


def field_rows(policy=None) -> dict:
    """The release-fields part of the project form as the page offers it (prefix ``fields``; the
    default policy unless ``policy``), for tests that post the whole form."""
    from annotator.forms.projects import ReleaseFieldsForm
    from pipeline.surrogates.fields import FieldPolicy

    form = ReleaseFieldsForm(policy=policy or FieldPolicy())
    return {form[name].html_name: form[name].value() for name in form.fields if form[name].value() not in (None, False)}


def original_ids(export) -> dict[str, str]:
    """A release's ids -> the dialogues' own ids, from its private mapping table (a release keys
    its ids by default: opaque, the originals in the mapping)."""
    import json

    from annotator.services.exports import private_dir

    rows = (json.loads(line) for line in (private_dir(export) / "mapping.jsonl").read_text(encoding="utf-8").splitlines())
    return {r["surrogate"]: r["original"] for r in rows if r["label"] == "DIALOGUE_ID"}


LAPTOP = {"width": 1280, "height": 720}  # the screen the workspace and adjudication must fit


def in_view(page, selector: str, viewport: dict = LAPTOP) -> dict:
    """The bounding box of ``selector``'s first match, asserted whole inside the window (no
    scrolling needed to reach it)."""
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    assert box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"], (selector, box)
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"], (selector, box)
    return box
