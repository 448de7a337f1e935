"""Reads by area (projects, workspace, assignments, adjudication, reports, exports, releases),
named like services/ and views/; the pagination every list shares lives here."""

from __future__ import annotations

from django.core.paginator import InvalidPage, Paginator
from django.http import Http404


def page_of(qs, page: int, per_page: int = 50) -> tuple[list, int]:
    """One page of an ordered queryset and the total. A page past the end, however large, is a
    404 (as Django's ``ListView`` answers), never an offset the database cannot hold (a 500)."""
    paginator = Paginator(qs, per_page)
    try:
        rows = paginator.page(max(1, page)).object_list
    except InvalidPage:
        raise Http404("No such page.") from None
    return list(rows), paginator.count
