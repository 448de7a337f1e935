"""Model fields shared by every area."""

from __future__ import annotations

import json
import math

from django.db import models


def _non_finite_path(value, path: str = "") -> str | None:
    """Where in ``value`` a NaN or an infinity sits (``model_favour.rate``), for the error."""
    if isinstance(value, float) and not math.isfinite(value):
        return path or "(the value itself)"
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list | tuple) else ()
    for key, item in items:
        found = _non_finite_path(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


class FiniteJSONEncoder(json.JSONEncoder):
    """JSON as PostgreSQL reads it: no NaN, no infinity (``allow_nan=False``), on every database."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "allow_nan": False})


class JSONField(models.JSONField):
    """Django's JSONField that refuses NaN and infinity before the row is written, saying where
    they were, instead of PostgreSQL's "Token NaN is invalid" (a 500 far from the computation that
    produced them, and a broken transaction). Write ``None`` for a figure that has no value. Every
    model uses it (tests/annotator/test_json_fields.py checks that none uses the plain one)."""

    def __init__(self, *args, encoder=None, **kwargs):
        super().__init__(*args, encoder=encoder or FiniteJSONEncoder, **kwargs)

    def get_db_prep_value(self, value, connection, prepared=False):
        where = _non_finite_path(value)
        if where is not None:
            raise ValueError(f"{self.model.__name__}.{self.name} cannot hold NaN or infinity (at {where}); "
                             "write None instead.")
        return super().get_db_prep_value(value, connection, prepared)

    def deconstruct(self):
        name, path, args, kwargs = super().deconstruct()
        if kwargs.get("encoder") is FiniteJSONEncoder:
            del kwargs["encoder"]
        return name, path, args, kwargs
