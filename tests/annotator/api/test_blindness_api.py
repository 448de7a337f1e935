"""Blindness holds over the API: a blind annotator's token, sent to every API URL that could be
built with ids it might guess, gets nothing of the model (runs, predictions, scores, margins)."""

from __future__ import annotations

import pytest

from annotator.models import Assignment, Message, MessageUncertainty, Prediction
from tests.annotator.api.conftest import bearer
from tests.annotator.security.test_blindness import MARGINS, forbidden_strings, reachable_urls, scan

pytestmark = pytest.mark.django_db


def test_a_blind_annotators_token_reaches_nothing_of_the_model(members, ws_project, planned, run):
    planned("blind")
    for margin, m in zip(MARGINS, Message.objects.filter(project=ws_project).order_by("pk"), strict=False):
        MessageUncertainty.objects.create(run=run, message=m, margin=margin)
    client = bearer(members["annotator"])
    mine = Assignment.objects.filter(annotator=members["annotator"]).order_by("order").first()
    first = Prediction.objects.first()
    ints = sorted({1, first.pk, run.pk, mine.message_id, mine.message.dialogue_id})
    urls = [(name, url) for name, url in reachable_urls(ws_project, mine, ints) if name.startswith("api:")]
    assert len(urls) > 15 and any(name == "api:api-run" for name, _ in urls)
    forbidden = forbidden_strings(ws_project)
    answered = set()
    for name, url in urls:
        response = client.get(url)
        answered.add(response.status_code)
        if name not in ("api:openapi-json", "api:openapi-view"):  # the schema names fields, not data
            scan(response.content.decode(errors="replace"), forbidden, f"GET {url} ({name})")
        scan(str(response.headers), forbidden, f"GET {url} headers")
    assert answered <= {200, 403, 404, 405}
    assert client.get("/api/v1/projects/").json()["items"] == [{"slug": "test", "name": "Test project",
                                                               "role": "annotator"}]
