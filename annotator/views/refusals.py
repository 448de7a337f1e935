"""How a refused htmx action answers: the message in the body (text/plain, UTF-8) and in the
``X-Blindspot-Error`` header that ``static/js/blindspot.js`` turns into a toast.

HTTP headers travel as latin-1, so a message with curly quotes or a name such as “Jośko” cannot
go into one as it is (it used to arrive as ``?``). The header therefore carries the message as a
JSON string with ``\\u`` escapes, plain ASCII, which the scripts parse back (``blindspotHeaderText``).
"""

from __future__ import annotations

import json

from django.http import HttpResponse

ERROR_HEADER = "X-Blindspot-Error"


def header_text(message: str) -> str:
    """``message`` as an ASCII header value: a JSON string, every non-ASCII character escaped."""
    return json.dumps(message, ensure_ascii=True)


def refusal(message: str, status: int) -> HttpResponse:
    """The answer to a refused htmx request: ``status``, and ``message`` in the body and the header."""
    response = HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")
    response[ERROR_HEADER] = header_text(message)
    return response
