"""Reads by area (projects, workspace, assignments, adjudication, reports, exports, releases),
named like services/ and views/; the pagination every list shares lives here (by page number, or
by cursor for lists of corpus size)."""

from __future__ import annotations

import re

from django.core.paginator import InvalidPage, Paginator
from django.db.models import Q
from django.http import Http404


def page_of(qs, page: int, per_page: int = 50, *, keys_first: bool = False,
            count: int | None = None) -> tuple[list, int]:
    """One page of an ordered queryset and the total (``count``, when the caller knows it from a
    kept figure, instead of counting the list). A page past the end, however large, is a
    404 (as Django's ``ListView`` answers), never an offset the database cannot hold (a 500).

    ``keys_first`` reads the page's primary keys past the offset first (an index-only scan where an
    index serves the order), then only those rows with their joins: a page deep in a list of
    corpus size then never joins every row before it."""
    paginator = Paginator(qs, per_page)
    if count is not None:
        paginator.count = count  # shadows the cached property: no COUNT query
    try:
        rows = paginator.page(max(1, page)).object_list
    except InvalidPage:
        raise Http404("No such page.") from None
    if keys_first:
        keys = list(rows.values_list("pk", flat=True))
        found = qs.filter(pk__in=keys).in_bulk() if keys else {}
        return [found[k] for k in keys if k in found], paginator.count
    return list(rows), paginator.count


def first_page_only(page: int | None) -> None:
    """A list paged by cursor has no numbered pages: ``?page=1`` (a bookmark from before cursors)
    opens its first page, any other number is a 404, as a page past the end of a numbered list is
    (:func:`page_of`), so that every list answers a page it does not have the same way."""
    if (page or 1) > 1:
        raise Http404("No such page.")


BIGGEST = 2**31 - 1  # a cursor past the largest key a column holds (queue order: an integer) ends no list


def keyset_page(qs, *, after: str = "", before: str = "", per_page: int = 50, key: str = "order") -> dict:
    """One page of ``qs`` in (``key``, pk) order, after or before a cursor ("<key>-<pk>", from a
    previous page), never at an offset: a page deep in a list of corpus size reads its own rows
    from the index (``key >= k`` ... ``LIMIT``), not every row before it. The first page
    has no cursor. Returns the rows, whether there are more either side, and the cursors to them."""
    cursor = _cursor(after or before)
    if cursor is not None and before:
        k, pk = cursor
        rows = list(qs.filter(**{f"{key}__lte": k}).exclude(**{key: k, "pk__gte": pk})
                    .order_by(f"-{key}", "-pk")[:per_page + 1])
        has_prev, has_next = len(rows) > per_page, True
        rows = rows[:per_page][::-1]
    else:
        if cursor is not None:
            k, pk = cursor
            qs = qs.filter(**{f"{key}__gte": k}).exclude(**{key: k, "pk__lte": pk})
        rows = list(qs.order_by(key, "pk")[:per_page + 1])
        has_prev, has_next = cursor is not None, len(rows) > per_page
        rows = rows[:per_page]
    mark = lambda row: f"{getattr(row, key)}-{row.pk}"  # noqa: E731
    return {"rows": rows, "has_next": has_next and bool(rows), "has_prev": has_prev and bool(rows),
            "next_key": mark(rows[-1]) if rows else "", "prev_key": mark(rows[0]) if rows else ""}


def _cursor(text: str) -> tuple[int, int] | None:
    """A cursor's (key, pk), or None for none; a malformed one is a 404 like a page past the end."""
    return order_cursor(text, 2, biggest=BIGGEST)


BIGINT = 2**63 - 1  # the largest value a column of the order holds; a cursor past it is malformed


def ordered_keyset_page(qs, order: tuple[str, ...], *, after: str = "", before: str = "",
                        per_page: int = 50, rows=None) -> dict:
    """One page of ``qs`` in ``order`` (integer fields, each ascending or "-" descending, the last
    one its primary key), after or before a cursor (their values "-"-joined, from a previous page), never
    at an offset: :func:`keyset_page` for an order of several columns in mixed directions.

    A row comparison cannot follow mixed directions through one index, so the keys past the cursor
    are read as the ranges that follow it in turn: the same values up to the last column and a
    greater last one, then the same values up to the one before and a greater one there, ... and
    last a greater first column; each range is an index range in order (equalities, then one
    inequality) under ``LIMIT``, and the ranges stop as soon as the page is full. An index on
    ``order`` therefore serves every page, however deep, reading only its own rows.
    Only the order's columns are read so (no join for the planner to weigh against the index);
    the page's rows are then loaded by primary key from ``rows`` (default ``qs``), with whatever
    joins and annotations it carries."""
    cursor = order_cursor(after or before, len(order))
    backwards = cursor is not None and bool(before)
    names = [f.lstrip("-") for f in order]
    walk = [_flip(f) for f in order] if backwards else list(order)
    keys_of = qs.values_list(*names)
    limit = per_page + 1
    if cursor is None:
        keys = list(keys_of.order_by(*walk)[:limit])
    else:
        keys = []
        for i in reversed(range(len(order))):
            same = dict(zip(names[:i], cursor[:i], strict=True))
            past = Q(**{f"{names[i]}__{'lt' if walk[i].startswith('-') else 'gt'}": cursor[i]})
            keys += keys_of.filter(past, **same).order_by(*walk)[:limit - len(keys)]
            if len(keys) >= limit:
                break
    more = len(keys) > per_page
    keys = keys[:per_page]
    if backwards:
        keys.reverse()
    has_prev, has_next = (more, True) if backwards else (cursor is not None, more)
    found = (qs if rows is None else rows).order_by().in_bulk([k[-1] for k in keys]) if keys else {}
    mark = lambda key: "-".join(map(str, key))  # noqa: E731
    return {"rows": [found[k[-1]] for k in keys if k[-1] in found], "has_next": has_next and bool(keys),
            "has_prev": has_prev and bool(keys), "next_key": mark(keys[-1]) if keys else "",
            "prev_key": mark(keys[0]) if keys else ""}


def _flip(field: str) -> str:
    return field[1:] if field.startswith("-") else f"-{field}"


def order_cursor(text: str, size: int, *, biggest: int = BIGINT) -> tuple[int, ...] | None:
    """A cursor's ``size`` values, or None for none; a malformed one (another count, anything but
    ASCII digits, a value over ``biggest``, which no column holds) is a 404 like a page past the end."""
    if not text:
        return None
    if not re.fullmatch(r"[0-9]{1,19}(?:-[0-9]{1,19})*", text):
        raise Http404("No such page.")
    values = tuple(int(v) for v in text.split("-"))
    if len(values) != size or max(values) > biggest:
        raise Http404("No such page.")
    return values
