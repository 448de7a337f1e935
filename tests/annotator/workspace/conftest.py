"""Fixtures of the workspace tests: one item of a plan in a given condition.

The run, the project and the plans they come from are shared with other areas and live in
``tests/annotator/conftest.py``.
"""

from __future__ import annotations

import pytest

from annotator.models import Assignment
from tests.annotator.helpers import msg


def _item(project, members, condition, dialogue="d1", position=0, who="annotator") -> Assignment:
    a = Assignment.objects.get(annotator=members[who], message=msg(project, dialogue, position))
    if a.condition != condition:
        Assignment.objects.filter(pk=a.pk).update(condition=condition)
        a.refresh_from_db()
    return a


@pytest.fixture
def aware_item(ws_project, members, planned):
    planned("aware")
    return _item(ws_project, members, "aware")


@pytest.fixture
def blind_item(ws_project, members, planned):
    planned("blind")
    return _item(ws_project, members, "blind")
