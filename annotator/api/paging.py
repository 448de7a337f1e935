"""Pagination of the API's lists: ``?limit=&offset=``, answered with the count and the next page."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Generic, TypeVar

from ninja import Schema
from pydantic import Field

T = TypeVar("T")
MAX_LIMIT = 200
# Far past any list's end, and offset + limit still fits the database's integers (an offset of
# 2**63 was a 500, "bigint out of range").
MAX_OFFSET = 2**31 - 1


class Page(Schema):
    limit: int = Field(50, ge=1, le=MAX_LIMIT)
    offset: int = Field(0, ge=0, le=MAX_OFFSET)


class Paged(Schema, Generic[T]):
    count: int
    limit: int
    offset: int
    next: str | None = Field(description="The URL of the next page, or null on the last.")
    items: list[T]


def paged(request, page: Page, rows, to_json: Callable[[Any], dict]) -> dict:
    """One page of ``rows`` (a queryset or a list), each item as ``to_json`` gives it."""
    count = rows.count() if hasattr(rows, "count") and not isinstance(rows, list) else len(rows)
    items = [to_json(r) for r in rows[page.offset:page.offset + page.limit]]
    following = page.offset + page.limit
    nxt = None
    if following < count:
        query = request.GET.copy()
        query["offset"], query["limit"] = str(following), str(page.limit)
        nxt = f"{request.path}?{query.urlencode()}"
    return {"count": count, "limit": page.limit, "offset": page.offset, "next": nxt, "items": items}
