"""Blindness is enforced on the server: a leak scan over every URL an annotator can reach.

The URL list is not written by hand: it comes from ``get_resolver()``, so a page added by any
area later is scanned too. Each pattern's parameters are filled with the annotator's own ids (and,
for integer ids, with every id of the project that could be meant); every GET is followed through
its redirects, every workspace action is also POSTed, and each response is scanned for what only
the model knows: run and detector names, model versions, scores, predicted offsets and spans.
"""

from __future__ import annotations

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from annotator.models import (
    Annotation,
    Assignment,
    AssignmentPlan,
    Message,
    MessageUncertainty,
    Prediction,
)
from tests.annotator.helpers import (
    RUN_DETECTOR,
    RUN_MODEL,
    RUN_PRESET,
    SCORES,
    post_action,
)

pytestmark = pytest.mark.django_db

MARGINS = (0.0713, 0.1817, 0.2921, 0.3129, 0.4231, 0.5337)  # tell-tale uncertainty margins


def url_patterns(resolver=None, prefix="", namespace=""):
    """(name, converters) for every named pattern, includes walked."""
    resolver = resolver or get_resolver()
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            ns = f"{namespace}{p.namespace}:" if p.namespace else namespace
            yield from url_patterns(p, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern) and p.name:
            route = prefix + str(p.pattern)
            params = re.findall(r"<(?:(\w+):)?(\w+)>", route) + [("re", g) for g in re.findall(r"\(\?P<(\w+)>", route)]
            yield namespace + p.name, [name for _, name in params]


def candidate_kwargs(params, *, project, assignment, ints):
    """Every way to fill ``params`` with ids the annotator could try."""
    fixed = {"slug": project.slug, "public_id": assignment.public_id}
    free = [p for p in params if p not in fixed]
    combos = [{}]
    for p in free:
        values = ints if p.endswith("id") or p in ("pk", "n", "index") else ["csv", "json", "jsonl", "x", "1"]
        combos = [{**c, p: v} for c in combos for v in values]
    return [{**{k: v for k, v in fixed.items() if k in params}, **c} for c in combos]


def reachable_urls(project, assignment, ints):
    urls = set()
    for name, params in url_patterns():
        for kwargs in candidate_kwargs(params, project=project, assignment=assignment, ints=ints):
            try:
                urls.add((name, reverse(name, kwargs=kwargs)))
            except Exception:  # a converter refused the value: not a reachable URL
                continue
    return sorted(urls)


def forbidden_strings(project) -> list[str]:
    out = [RUN_DETECTOR, RUN_MODEL, RUN_PRESET, "suggestion", "data-suggestion", "Model suggestions"]
    for score in SCORES:
        out += [str(score), f"{score:.2f}", f"{score * 100:.1f}"]
    for p in Prediction.objects.filter(message__project=project):
        out.append(f'data-start="{p.start}" data-end="{p.end}"')
        out.append(f'"prediction": {p.pk}')
        out.append(f'name="prediction" value="{p.pk}"')
    for margin in MessageUncertainty.objects.filter(run__project=project).values_list("margin", flat=True):
        out += [str(margin), f"{margin:.3f}"]
    return out


def scan(body: str, forbidden: list[str], where: str) -> None:
    lowered = body.lower()
    for needle in forbidden:
        assert needle.lower() not in lowered, f"{where} leaks {needle!r}"


def scan_everything(client, project, assignment, *, forbidden):
    first = Prediction.objects.filter(message=assignment.message).first() or Prediction.objects.first()
    ints = sorted({1, first.pk, first.run_id, assignment.message_id, assignment.message.dialogue_id,
                   *AssignmentPlan.objects.values_list("pk", flat=True)})
    urls = reachable_urls(project, assignment, ints)
    assert any(name == "workspace-item" for name, _ in urls)
    assert len(urls) > 20
    for name, url in urls:
        for headers in ({}, {"HTTP_HX_REQUEST": "true"}):
            response = client.get(url, follow=True, **headers)
            scan(response.content.decode(errors="replace"), forbidden, f"GET {url} ({name})")
            scan(str(response.headers), forbidden, f"GET {url} headers")
    return urls


def test_a_blind_annotator_sees_nothing_of_the_model_anywhere(client, members, ws_project, planned, run):
    planned("blind")
    for margin, m in zip(MARGINS, Message.objects.filter(project=ws_project).order_by("pk"), strict=False):
        MessageUncertainty.objects.create(run=run, message=m, margin=margin)  # what "least sure" plans rank by
    me = members["annotator"]
    mine = Assignment.objects.filter(annotator=me).order_by("order")
    assert {a.condition for a in mine} == {"blind"}
    client.force_login(me)
    forbidden = forbidden_strings(ws_project)
    first = mine.first()
    urls = scan_everything(client, ws_project, first, forbidden=forbidden)

    # Every action of every item, including the ones that name a prediction id directly.
    predictions = list(Prediction.objects.values_list("pk", flat=True))
    for a in mine:
        for pid in predictions:
            for action in ("suggestion-accept", "suggestion-reject"):
                r = post_action(client, a, action, prediction=pid)
                assert r.status_code == 404
                scan(r.content.decode(), forbidden, f"POST {action}")
            r = post_action(client, a, "suggestion-relabel", prediction=pid, label="NAME")
            assert r.status_code == 404
        text = a.message.text
        r = post_action(client, a, "span-add", start=0, end=len(text), label="OTHER_IDENTIFIER", exact="on")
        assert r.status_code == 200
        scan(r.content.decode().replace(f'data-start="0" data-end="{len(text)}"', ""), forbidden, "span-add")
        for action, data in [("undo", {}), ("no-pii", {"value": "on"}), ("flag", {"uncertain": "on", "comment": "hm"}),
                             ("submit", {})]:
            r = post_action(client, a, action, **data)
            scan(r.content.decode(), forbidden, f"POST {action}")
    assert not Annotation.objects.filter(prediction__isnull=False).exists()
    # After the work is done, the pages are scanned again (the queue list, the done page, ...).
    scan_everything(client, ws_project, first, forbidden=forbidden)
    assert urls


def test_randomized_mode_keeps_blind_items_blind(client, members, ws_project, planned, run):
    planned("randomized")
    me = members["annotator"]
    mine = list(Assignment.objects.filter(annotator=me).order_by("order"))
    # one condition per dialogue (d1: 4 messages, d2: 2), both conditions present
    per_dialogue = {(a.message.dialogue_id, a.condition) for a in mine}
    assert sorted(c for _, c in per_dialogue) == ["aware", "blind"]
    client.force_login(me)
    for a in mine:
        url = reverse("workspace-item", kwargs={"slug": "test", "public_id": a.public_id})
        body = client.get(url).content.decode() + client.get(url, HTTP_HX_REQUEST="true").content.decode()
        preds = Prediction.objects.filter(message=a.message)
        if a.condition == "blind":
            scan(body, [RUN_DETECTOR, RUN_MODEL, "suggestion"] + [f'data-suggestion="{p.pk}"' for p in preds],
                 f"blind item {a.message}")
        else:
            for p in preds:
                assert f'data-suggestion="{p.pk}"' in body
            scan(body, [RUN_DETECTOR, RUN_MODEL, RUN_PRESET, str(SCORES[0]), str(SCORES[1])], "aware item")


def test_aware_pages_show_suggestions_but_no_run_metadata(client, members, ws_project, planned, run):
    planned("aware")
    client.force_login(members["annotator"])
    first = Assignment.objects.filter(annotator=members["annotator"]).order_by("order").first()
    body = client.get(reverse("workspace-item", kwargs={"slug": "test", "public_id": first.public_id})).content.decode()
    assert "data-suggestion" in body
    scan(body, [RUN_DETECTOR, RUN_MODEL, RUN_PRESET, *map(str, SCORES)], "aware item")


def test_a_leak_would_be_caught(client, members, ws_project, planned, run):
    """The scan itself works: the aware page of the same item trips it."""
    planned("aware")
    client.force_login(members["annotator"])
    first = Assignment.objects.filter(annotator=members["annotator"]).order_by("order").first()
    with pytest.raises(AssertionError, match="leaks"):
        scan_everything(client, ws_project, first, forbidden=forbidden_strings(ws_project))
