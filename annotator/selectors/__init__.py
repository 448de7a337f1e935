"""Reads by area (projects, workspace, assignments, adjudication, reports, exports, releases),
named like services/ and views/; the pagination every list shares lives here."""

from __future__ import annotations

from django.core.paginator import InvalidPage, Paginator
from django.http import Http404


def page_of(qs, page: int, per_page: int = 50, *, keys_first: bool = False) -> tuple[list, int]:
    """One page of an ordered queryset and the total. A page past the end, however large, is a
    404 (as Django's ``ListView`` answers), never an offset the database cannot hold (a 500).

    ``keys_first`` reads the page's primary keys past the offset first (an index-only scan where an
    index serves the order), then only those rows with their joins: a page deep in a list of
    corpus size then never joins every row before it."""
    paginator = Paginator(qs, per_page)
    try:
        rows = paginator.page(max(1, page)).object_list
    except InvalidPage:
        raise Http404("No such page.") from None
    if keys_first:
        keys = list(rows.values_list("pk", flat=True))
        found = qs.filter(pk__in=keys).in_bulk() if keys else {}
        return [found[k] for k in keys if k in found], paginator.count
    return list(rows), paginator.count
