"""Surrogates that keep a format: e-mails, URLs, usernames, phones, ids, courses, ages, dates.

Digits are replaced digit for digit and letter runs by a name-like word of the same length (or, in
ids, letter for letter), so "maria.lopez2009@gmail.com" becomes "sofia.garcia4817@gmail.com"
(the name parts reuse the scope's name surrogates), "(555) 201-3344" keeps its punctuation, and
"ST-48213" stays two letters, a hyphen and five digits. Public providers (gmail.com, youtube.com)
are kept because they identify nobody.
"""

from __future__ import annotations

import datetime as dt
import random
import re

from pipeline.surrogates import pools
from pipeline.surrogates.context import GenContext, SurrogateFailure
from pipeline.surrogates.keyed import apply_case, case_pattern, shape_copy
from pipeline.surrogates.names import gender_of

_RUN_RE = re.compile(r"[^\W\d_]+|\d+|[\W_]+")


_CAMEL_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[^\W\d_]+")
HANDLE_WORDS = frozenset(
    [
        "students",
        "student",
        "staff",
        "mail",
        "email",
        "school",
        "schools",
        "k12",
        "edu",
        "my",
        "the",
        "official",
        "real",
        "its",
        "im",
        "iam",
    ]
)


def _word_of_length(rng: random.Random, n: int) -> str:
    """A name-like word of exactly ``n`` letters (two joined words when no single one fits)."""
    buckets = pools.words_by_length()
    if buckets.get(n):
        return rng.choice(buckets[n])
    splits = [k for k in range(3, n - 2) if buckets.get(k) and buckets.get(n - k)]
    if splits:
        k = rng.choice(splits)
        return rng.choice(buckets[k]) + rng.choice(buckets[n - k])
    return shape_copy("a" * n, rng)


def _joined_names(ctx: GenContext, run: str) -> str | None:
    """ "marybalogun" → "joannnielsen" when both halves are names this scope already maps."""
    low = run.casefold()
    for i in range(1, len(low)):
        head, tail = low[:i], low[i:]
        first = ctx.mapped_part("name", head) if i > 1 else None
        last = ctx.mapped_part("name", tail) if len(tail) > 1 else None
        if first and last:
            return (first + last).lower()
        if i == 1 and last:  # "jthompson": an initial and a surname
            return (
                ctx.part("initial", head, lambda r: chr(ord("a") + r.randrange(26))).lower()
                + last.lower()
            )
    return None


def _letters(ctx: GenContext, run: str) -> str:
    """A letter run: the scope's name surrogate when the run is a mapped name, else a same-length word."""
    pattern = case_pattern(run)
    if pattern == "mixed" or re.search(r"[a-z][A-Z]", run):  # "xXWolfBunnyXx", "RobertTheWolf"
        pieces = _CAMEL_RE.findall(run)
        if len(pieces) > 1 and "".join(pieces) == run:
            return "".join(_letters(ctx, p) for p in pieces)
    mapped = ctx.mapped_part("name", run)
    if mapped is None and len(run) >= 3 and run.casefold() in pools.gender_table():
        g = gender_of(run)
        mapped = ctx.part(
            "name", run, lambda r: r.choice(pools.first_names()[g if g in "mf" else r.choice("mf")])
        )
    if mapped is None and len(run) >= 5:
        mapped = _joined_names(ctx, run)
    if mapped is None:
        mapped = ctx.part("word", run, lambda r: _word_of_length(r, len(run)))
    return apply_case(mapped, pattern if pattern != "mixed" else "lower")


def _handle(ctx: GenContext, text: str, *, keep_words: frozenset[str] = HANDLE_WORDS) -> str:
    out = []
    for m in _RUN_RE.finditer(text):
        run = m.group()
        if run.isdigit():
            out.append(ctx.part("digits", run, lambda r, run=run: shape_copy(run, r)))
        elif run[0].isalpha() and run.casefold() not in keep_words:
            out.append(_letters(ctx, run))
        else:
            out.append(run)
    return "".join(out)


def _host(ctx: GenContext, host: str) -> str:
    if host.casefold() in pools.PUBLIC_EMAIL_DOMAINS | pools.PUBLIC_HOSTS:
        return host
    labels = host.split(".")
    if len(labels) == 1:
        return _handle(ctx, host)
    keep = {"www", "edu", "k12", "org", "net", "com", "gov", "mail", "us", "uk", "ac", "co"}
    return ".".join(
        lab if (i == len(labels) - 1 or lab.casefold() in keep) else _handle(ctx, lab)
        for i, lab in enumerate(labels)
    )


def email_surrogate(original: str, ctx: GenContext) -> str:
    text = original.strip()
    if "@" not in text:
        return username_surrogate(text, ctx)
    local, _, domain = text.rpartition("@")
    return f"{_handle(ctx, local)}@{_host(ctx, domain)}"


_URL_RE = re.compile(
    r"^(?P<scheme>[a-z][a-z0-9+.-]*://)?(?P<host>[^/?#\s]+)(?P<rest>.*)$", re.IGNORECASE
)


def url_surrogate(original: str, ctx: GenContext) -> str:
    text = original.strip()
    m = _URL_RE.match(text)
    if not m or "." not in m.group("host"):
        return _handle(ctx, text, keep_words=pools.URL_PATH_WORDS | HANDLE_WORDS)
    host = m.group("host")
    prefix = ""
    if host.casefold().startswith("www."):
        prefix, host = host[:4], host[4:]
    rest = _handle(ctx, m.group("rest"), keep_words=pools.URL_PATH_WORDS | HANDLE_WORDS)
    return f"{m.group('scheme') or ''}{prefix}{_host(ctx, host)}{rest}"


def username_surrogate(original: str, ctx: GenContext) -> str:
    return _handle(ctx, original.strip())


def phone_surrogate(original: str, ctx: GenContext) -> str:
    text = original.strip()
    rng = ctx.rng("phone", text)
    keep = 0
    m = re.match(r"^\+\d{1,3}|^1(?=[\s.-])", text)
    if m:  # a country code identifies nobody
        keep = m.end()
    out = list(text[:keep])
    fresh_group = True
    for ch in text[keep:]:
        if ch.isdigit():
            out.append(str(rng.randrange(2, 10) if fresh_group else rng.randrange(10)))
            fresh_group = False
        else:
            out.append(ch)
            fresh_group = not ch.isalnum()
    return "".join(out)


def id_surrogate(original: str, ctx: GenContext) -> str:
    return shape_copy(original.strip(), ctx.rng("id", original))


_ROMAN = {"i": "III", "ii": "V", "iii": "I", "iv": "VI", "v": "III", "vi": "IV"}
_ROMAN_RE = re.compile(r"\b(?:i{1,3}|iv|vi?)$", re.IGNORECASE)
COURSE_NAMES = (
    "Algebra",
    "Geometry",
    "Pre-Algebra",
    "Precalculus",
    "Calculus",
    "Statistics",
    "Trigonometry",
    "Integrated Math",
    "Math Foundations",
    "Discrete Math",
    "Probability",
    "Number Theory",
)


def course_surrogate(original: str, ctx: GenContext) -> str:
    """ "Algebra 300" → "Algebra 417", "Calc 8" → "Calc 27", "Algebra II" → "Algebra V".

    The subject stays; the identifying number changes shape for shape (a one- or two-character
    number grows by a digit, so it still moves two edits).
    """
    text = original.strip()
    rng = ctx.rng("course", text)

    def number(m: re.Match[str]) -> str:
        token = m.group()
        new = shape_copy(token, rng)
        if token[0] in "123456789" and new[0] == "0":  # "101" → "529", not "029"
            new = str(rng.randrange(1, 10)) + new[1:]
        return new + str(rng.randrange(10)) if len(token) <= 2 and token.isdigit() else new

    if any(c.isdigit() for c in text):
        return re.sub(r"\w*\d\w*", number, text)
    m = _ROMAN_RE.search(text)
    if m and m.start() > 0:
        return text[: m.start()] + apply_case(_ROMAN[m.group().casefold()], case_pattern(m.group()))
    return apply_case(rng.choice(COURSE_NAMES), case_pattern(text))


def generic_surrogate(original: str, ctx: GenContext) -> str:
    return _handle(ctx, original.strip())


# --- ages ------------------------------------------------------------------------------------

AGE_BANDS = ((0, 4), (5, 10), (11, 13), (14, 18), (19, 25), (26, 45), (46, 64), (65, 99))


def age_band(age: int) -> tuple[int, int]:
    for lo, hi in AGE_BANDS:
        if lo <= age <= hi:
            return lo, hi
    return (100, 110)


def _number_word(n: int) -> str:
    if n < 20:
        return pools.NUMBER_WORDS[n]
    tens, ones = divmod(n, 10)
    return pools.TENS_WORDS[tens] + (f"-{pools.NUMBER_WORDS[ones]}" if ones else "")


WORD_NUMBERS = {_number_word(n): n for n in range(100)}
_AGE_WORD_RE = re.compile(
    r"\b(" + "|".join(sorted((re.escape(w) for w in WORD_NUMBERS), key=len, reverse=True)) + r")\b",
    re.IGNORECASE,
)


def age_surrogate(original: str, ctx: GenContext) -> str:
    """Another age in the same band ("12" → "9", "twelve" → "nine"); words around it are kept."""
    text = original.strip()
    m = re.search(r"\d{1,3}", text)
    spelled = False
    if m is None:
        m = _AGE_WORD_RE.search(text)
        spelled = True
        if m is None:
            raise SurrogateFailure("no age in the span")
        age = WORD_NUMBERS[m.group().casefold().replace(" ", "-")]
    else:
        age = int(m.group())
    lo, hi = age_band(age)
    choices = [a for a in range(lo, hi + 1) if a != age]
    if not choices:
        raise SurrogateFailure("age band has one value")
    new = ctx.rng("age", age).choice(choices)
    rep = apply_case(_number_word(new), case_pattern(m.group())) if spelled else str(new)
    return text[: m.start()] + rep + text[m.end() :]


# --- dates -----------------------------------------------------------------------------------

_MONTH_RE = r"(?P<month>jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)(?P<dot>\.?)"
_ORD = r"(?P<ord>st|nd|rd|th)?"
_DATE_PATTERNS = (
    ("iso", re.compile(r"^(?P<y>\d{4})(?P<s>[-/.])(?P<m>\d{1,2})(?P=s)(?P<d>\d{1,2})$")),
    ("num", re.compile(r"^(?P<a>\d{1,2})(?P<s>[/.-])(?P<b>\d{1,2})(?:(?P=s)(?P<y>\d{2}|\d{4}))?$")),
    (
        "md",
        re.compile(
            rf"^{_MONTH_RE}\s+(?P<d>\d{{1,2}}){_ORD}(?P<ys>,?\s+(?P<y>\d{{4}}))?$", re.IGNORECASE
        ),
    ),
    (
        "dm",
        re.compile(
            rf"^(?P<the>the\s+)?(?P<d>\d{{1,2}}){_ORD}\s+(?P<of>of\s+)?{_MONTH_RE}(?P<ys>,?\s+(?P<y>\d{{4}}))?$",
            re.IGNORECASE,
        ),
    ),
    ("my", re.compile(rf"^{_MONTH_RE}(?P<ys>,?\s+(?P<y>\d{{4}}))$", re.IGNORECASE)),
    ("y", re.compile(r"^(?P<y>(?:19|20)\d{2})$")),
)
_MONTH_INDEX = {m[:3].casefold(): i + 1 for i, m in enumerate(pools.MONTHS)}


def _ordinal(day: int) -> str:
    if 10 <= day % 100 <= 20:
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def _month_name(month: int, like: str, dot: str) -> str:
    full = pools.MONTHS[month - 1]
    name = full[:3] if (len(like) == 3 or dot) and like.casefold() != "may" else full
    if len(like) == 4 and like.casefold() == "sept":
        name = full[:4] if month == 9 else full[:3]
    return apply_case(name, case_pattern(like))


def _pad(value: int, like: str) -> str:
    return str(value).zfill(len(like)) if like.startswith("0") else str(value)


def _safe_date(y: int, m: int, d: int) -> dt.date:
    if not 1 <= m <= 12:
        raise ValueError("month")
    return dt.date(y, m, d)


def shift_date(text: str, days: int) -> str | None:
    """``text`` shifted by ``days`` in its own format, or ``None`` when it is not a date we read."""
    text = text.strip()
    delta = dt.timedelta(days=days)
    for kind, rx in _DATE_PATTERNS:
        m = rx.match(text)
        if not m:
            continue
        g = m.groupdict()
        try:
            if kind == "iso":
                new = _safe_date(int(g["y"]), int(g["m"]), int(g["d"])) + delta
                s = g["s"]
                return f"{new.year}{s}{_pad(new.month, g['m'])}{s}{_pad(new.day, g['d'])}"
            if kind == "num":
                a, b = int(g["a"]), int(g["b"])
                year = g["y"]
                y = (
                    2000
                    if year is None
                    else (
                        int(year) + (2000 if int(year) < 50 else 1900)
                        if len(year) == 2
                        else int(year)
                    )
                )
                day_first = a > 12
                mon, day = (b, a) if day_first else (a, b)
                new = _safe_date(y if year else 2000, mon, day) + delta
                first, second = (new.day, new.month) if day_first else (new.month, new.day)
                out = f"{_pad(first, g['a'])}{g['s']}{_pad(second, g['b'])}"
                if year:
                    out += g["s"] + (str(new.year)[-2:] if len(year) == 2 else str(new.year))
                return out
            if kind in ("md", "dm"):
                mon = _MONTH_INDEX[g["month"][:3].casefold()]
                y = int(g["y"]) if g.get("y") else 2000
                new = _safe_date(y, mon, int(g["d"])) + delta
                month = _month_name(new.month, g["month"], g["dot"]) + g["dot"]
                day = _pad(new.day, g["d"]) + (_ordinal(new.day) if g["ord"] else "")
                if g["ord"] and g["ord"].isupper():
                    day = day.upper()
                ys = ""
                if g.get("y"):
                    ys = g["ys"][: -len(g["y"])] + str(new.year)
                if kind == "md":
                    return f"{month} {day}{ys}"
                return f"{g['the'] or ''}{day} {g['of'] or ''}{month}{ys}"
            if kind == "my":
                mon = _MONTH_INDEX[g["month"][:3].casefold()]
                new = _safe_date(int(g["y"]), mon, 15) + delta
                return f"{_month_name(new.month, g['month'], g['dot'])}{g['dot']}{g['ys'][: -len(g['y'])]}{new.year}"
            if kind == "y":
                new = _safe_date(int(g["y"]), 7, 1) + delta
                return str(new.year)
        except (ValueError, OverflowError):
            return None
    return None


def date_surrogate(original: str, ctx: GenContext) -> str:
    """The dialogue's one date offset applied in the original's format; other texts change shape-for-shape."""
    offset = ctx.date_offset
    shifted = shift_date(original, offset) if offset else None
    if shifted is not None:
        return shifted
    rng = ctx.rng("date", original)
    month_re = re.compile(_MONTH_RE, re.IGNORECASE)
    text = month_re.sub(
        lambda m: (
            _month_name(rng.randrange(1, 13), m.group("month"), m.group("dot")) + m.group("dot")
        ),
        original.strip(),
    )
    return re.sub(r"\d", lambda m: str(rng.randrange(10)), text)
