"""Every model's JSON field refuses NaN and infinity when the row is written:
PostgreSQL's JSON has neither, and a NaN once turned every re-decision into a 500."""

from __future__ import annotations

import math

import pytest
from django.apps import apps
from django.db import models, transaction

from annotator.models import AuditEvent
from annotator.models.fields import FiniteJSONEncoder


def test_every_json_field_uses_the_finite_encoder():
    plain = [f"{m.__name__}.{f.name}" for m in apps.get_app_config("annotator").get_models()
             for f in m._meta.get_fields() if isinstance(f, models.JSONField) and f.encoder is not FiniteJSONEncoder]
    assert plain == []


@pytest.mark.django_db
@pytest.mark.postgres
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_a_non_finite_number_is_refused_with_where_it_was(require_postgres, bad):
    with pytest.raises(ValueError, match=r"NaN or infinity \(at model_favour\.rate\)"), transaction.atomic():
        AuditEvent.objects.create(action="x", details={"model_favour": {"disputed": 0, "rate": bad}})
    assert not AuditEvent.objects.exists()


@pytest.mark.django_db
@pytest.mark.postgres
def test_finite_values_and_none_are_stored(require_postgres):
    ev = AuditEvent.objects.create(action="x", details={"rate": None, "f": 0.5, "l": [1, {"x": 2.0}]})
    ev.refresh_from_db()
    assert ev.details == {"rate": None, "f": 0.5, "l": [1, {"x": 2.0}]}
