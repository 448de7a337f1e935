"""High-precision patterns for contact data and identifiers that leave the maths alone.

EMAIL, URL (personal pages and profiles, not the resources tutors share), PHONE (validated with
``phonenumbers``), USERNAME (handles and "my username is …"), ID_NUMBER (digit strings with a
cue word), and, gated by cues (see :mod:`pipeline.detectors.rules_personal`), DATE_OF_BIRTH,
AGE and street addresses (LOCATION). A short reply to a question ("What's your student ID?" → "its 3356") counts as cued. Every number-like candidate passes :func:`pipeline.maths.in_math_context`, so
"9351 / 7", "divide 4815162342 by 2", "3:45", "$4.50" and "pick a number 1234567890" never fire.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import phonenumbers

from pipeline.detectors.base import BaseDetector, ConfigError
from pipeline.detectors.rules_personal import find_addresses, find_ages, find_birthdays
from pipeline.filters.maths import inside_expression
from pipeline.maths import MATH_WORDS, in_math_context
from pipeline.registry import register
from pipeline.types import Detection, Dialogue, Span


def _words(block: str) -> frozenset[str]:
    return frozenset(block.split())


RULE_LABELS: tuple[str, ...] = (
    "EMAIL", "URL", "PHONE", "USERNAME", "ID_NUMBER", "DATE_OF_BIRTH", "AGE", "LOCATION",
)  # fmt: skip

# sites tutors point students at: a link to them identifies nobody unless it has a user path
GENERIC_DOMAINS: frozenset[str] = _words(
    """
    google.com docs.google.com drive.google.com classroom.google.com forms.gle youtube.com
    youtu.be wikipedia.org khanacademy.org desmos.com geogebra.org mathsisfun.com mathisfun.com
    ixl.com quizlet.com kahoot.it kahoot.com zoom.us wolframalpha.com symbolab.com mathway.com
    coolmathgames.com prodigygame.com brainpop.com edpuzzle.com nearpod.com padlet.com
    microsoft.com office.com bing.com yahoo.com apple.com amazon.com pbs.org pbskids.org
    nasa.gov ck12.org illustrativemathematics.org mathplayground.com splashlearn.com
    brilliant.org chegg.com photomath.com openai.com chatgpt.com github.com example.com
    example.org upchieve.org
    """
)

# hosts where any path names a person
SOCIAL_DOMAINS: frozenset[str] = _words(
    """
    facebook.com fb.com instagram.com twitter.com x.com tiktok.com snapchat.com linkedin.com
    github.com gitlab.com reddit.com twitch.tv discord.gg discord.com pinterest.com tumblr.com
    medium.com substack.com roblox.com steamcommunity.com soundcloud.com spotify.com vimeo.com
    threads.net bsky.app mastodon.social linktr.ee venmo.com cash.app paypal.me patreon.com
    """
)
PERSONAL_HOST_SUFFIXES: tuple[str, ...] = (
    "github.io", "wordpress.com", "blogspot.com", "wixsite.com", "weebly.com", "carrd.co",
    "neocities.org", "substack.com", "tumblr.com", "squarespace.com",
)  # fmt: skip

_TLDS = (
    r"com|org|net|edu|gov|io|me|ly|co|us|uk|ca|au|in|de|fr|es|it|nl|app|dev|tv|gg|info|biz|"
    r"xyz|site|online|blog|page|link|social|art|ai|so|to|cc|be"
)
_EMAIL_RE = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9][A-Za-z0-9._%+-]{0,63}@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}\b"
    r"|(?<![\w.])[A-Za-z0-9][\w.+-]{1,63}\s*[\[(]\s*at\s*[\])]\s*[\w-]+(?:\s*[\[(]\s*dot\s*[\])]\s*[A-Za-z]{2,6})+\b"
    r"|(?<![\w.])[A-Za-z0-9][\w.+-]{0,63}(?:\s+dot\s+[\w+-]+)*\s+at\s+[\w-]+"
    r"\s+dot\s+(?:com|org|net|edu)\b",
    re.IGNORECASE,
)
_URL_RE = re.compile(
    r"\b(?:https?://|www\.)[^\s<>\"'()\[\]{}]+"
    rf"|(?<![\w@.-])(?:[a-z0-9][a-z0-9-]*\.)+(?:{_TLDS})\b(?:/[^\s<>\"'()\[\]{{}}]*)?",
    re.IGNORECASE,
)
_USER_PATH_RE = re.compile(
    r"/(?:@|~)[\w.-]+|/(?:u|user|users|profile|profiles|people|member|members|in|channel|c|"
    r"student|students|author|authors|pub)/[\w.%-]+|[?&](?:id|uid|user|userid|username|u|profile)=",
    re.IGNORECASE,
)
_HANDLE_RE = re.compile(r"(?<![\w@./])@([A-Za-z0-9_](?:[A-Za-z0-9_.]{0,28}[A-Za-z0-9_])?)(?![\w@])")
_USERNAME_CUE_RE = re.compile(
    r"\b(?:(?:my|his|her|their|your)\s+)?(?:(?:user|usr|uesr|usre|uer)\s?name|user\s?id|login|"
    r"my\s+user|"
    r"screen\s?name|"
    r"gamer\s?tag|ign|roblox\s+(?:name|username|user)|minecraft\s+(?:name|username)|"
    r"discord(?:\s+(?:name|tag|username))?|insta(?:gram)?(?:\s+(?:name|handle))?|"
    r"snap(?:chat)?(?:\s+(?:name|username))?|tiktok(?:\s+(?:name|handle))?|"
    r"twitter(?:\s+handle)?|handle|xbox(?:\s+name)?|psn(?:\s+name)?|steam(?:\s+name)?)"
    r"(?:\s+(?:is|was))?\s*(?::|=|-|is)?\s*@?([A-Za-z0-9_][A-Za-z0-9_.\-#]{1,31})",
    re.IGNORECASE,
)
_STRONG_USERNAME_CUE = re.compile(
    r"(?:user|usr|uesr|usre|uer)\s?name|user\s?id|login|screen\s?name|gamer\s?tag|\bign\b|"
    r"my\s+user\b",
    re.IGNORECASE,
)
_NOT_A_HANDLE = _words(
    """is was the a an my your his her their our it this that and or but not no yes to of in on
    at for with so if then what which i me you he she they we are be been here there ok okay
    please thanks thank name names same different too also just really very"""
)
_ID_WORDS = (
    r"(?:student|school|library|employee|member(?:ship)?|bus|lunch|locker|login|account|acct|"
    r"bank|routing|passport|case|roll|registration|driver'?s?|insurance|medicaid|medicare|tax)"
    r"\s*(?:id|i\.d\.|number|nubmer|numbr|no\.?|num|#|code|card|pass|pin)"
    r"(?:\s*(?:number|nubmer|numbr|no\.?|num|#))?"
    r"|library\s+card|bus\s+pass|lunch\s+pin|\bid\b|\bi\.d\.|\bssn\b|social\s+security|"
    r"licen[cs]e|badge|passport|account\s+(?:number|no|#)|card\s+(?:number|no|#)"
)
_ID_BEFORE_RE = re.compile(
    rf"(?:{_ID_WORDS})\s*(?:number|no\.?|num|#)?\s*(?:is|was|:|=|-|#)?\s*(?:is\s+)?[:#]?\s*$",
    re.IGNORECASE,
)
_ID_AFTER_RE = re.compile(
    rf"^\s*(?:is|was|=|thats|that's|that\s+is)?\s*(?:my|his|her|their|the|our)?\s*(?:\w+'?s?\s+)?"
    rf"(?:{_ID_WORDS})",
    re.IGNORECASE,
)
_ID_TOKEN_RE = re.compile(
    r"(?<![\w@./:$-])(?:[A-Za-z]{1,3}-?\d{3,12}[A-Za-z]?|\d{3,4}(?:[ -]\d{3,4}){1,3}|\d{4,14})"
    r"(?![\w@/$%]|[.,]\d|:\d)"
)
_ID_QUESTION_RE = re.compile(
    r"\b(?:student|school|library|login|member)\s*(?:id|#|number|card)|\bid\b|\bi\.d\.|"
    r"library\s+card|bus\s+pass|lunch\s+(?:pin|number|code)",
    re.IGNORECASE,
)
_USER_QUESTION_RE = re.compile(
    r"user\s?name|log\s?in\s+with|login\s+name|gamer\s?tag|screen\s?name|\bhandle\b",
    re.IGNORECASE,
)
_PHONE_QUESTION_RE = re.compile(
    r"\b(?:phone|cell|mobile|text|call|reach|reschedule|contact)\b|"
    r"\b(?:your|a|what|which)\s+(?:\w+\s+)?(?:number|numbr|#)\s+(?:\w+\s+)?(?:can|should|to|for|we|i)\b",
    re.IGNORECASE,
)
_REPLY_LEAD = (
    r"^\s*(?:(?:yeah|yes|yep|ok|okay|sure|um+|uh+)\W+)?"
    r"(?:(?:it'?s|its|it\s+is|mine\s+is|that'?s|my\s+\w+(?:\s+\w+)?\s+is|id|login|user(?:name)?)"
    r"\s*[:#]?\s*)?"
)
_REPLY_HANDLE_RE = re.compile(_REPLY_LEAD + r"@?([A-Za-z][\w.\-]{2,31})\b", re.IGNORECASE)
_REPLY_ID_RE = re.compile(_REPLY_LEAD + r"[#:]?\s*(" + _ID_TOKEN_RE.pattern + r")", re.IGNORECASE)
_GAME_SITES = (
    r"roblox|minecraft|discord|twitch|steam|psn|xbox|fortnite|insta(?:gram)?|snap(?:chat)?|tiktok|"
    r"youtube|scratch|twitter|reddit|github|epic|switch"
)
_USERNAME_AFTER_RE = re.compile(
    r"(?<![\w@.])@?([A-Za-z0-9_][A-Za-z0-9_.\-]{1,31})\s+(?:is|thats|that's|=)\s+(?:my|his|her|our)\s+"
    rf"(?:(?:{_GAME_SITES}|[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?)\s*)?"
    rf"(?:user\s?name|user|login|gamer\s?tag|tag|handle|name|account|ign|"
    rf"{_GAME_SITES})\b",
    re.IGNORECASE,
)
_USERNAME_SITE_RE = re.compile(
    rf"\b(?:my|his|her|add\s+me\s+on|follow\s+me\s+on|find\s+me\s+on)\s+(?:{_GAME_SITES})"
    r"(?:\s+(?:name|username|user|tag|handle|account|id))?\s*(?:is|:|=|!|-)*\s*:?\s*"
    r"@?([A-Za-z0-9_][A-Za-z0-9_.\-]{1,31})",
    re.IGNORECASE,
)
_PHONE_CUE_RE = re.compile(
    r"\b(?:phone|cell|cellphone|mobile|call(?:\s+me)?|text(?:\s+me)?|txt|sms|whats\s?app|tel|fax|"
    r"reach\s+me|contact|dial|ring\s+me|(?:my|his|her|your|mom'?s|dad'?s|mum'?s)\s+(?:\w+\s+)?"
    r"(?:number|num|no\.?|#))\b",
    re.IGNORECASE,
)
_SSN_RE = re.compile(r"(?<![\d-])\d{3}-\d{2}-\d{4}(?![\d-])")


def _host_path(url: str) -> tuple[str, str]:
    rest = re.sub(r"^(?:https?://)?", "", url, flags=re.IGNORECASE)
    host, _, path = rest.partition("/")
    host = host.lower().split(":")[0].removeprefix("www.")
    return host, ("/" + path) if path else ""


def _on(host: str, domains: frozenset[str]) -> bool:
    parts = host.split(".")
    return any(".".join(parts[i:]) in domains for i in range(len(parts) - 1))


_DIGIT_RE = re.compile(r"\d")


def _digits(s: str) -> int:
    return len(_DIGIT_RE.findall(s))


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while end > start and text[end - 1] in ".,;:!?)]}'\"":
        end -= 1
    return start, end


class RulesDetector(BaseDetector):
    """Pattern rules for EMAIL, URL, PHONE, USERNAME and ID_NUMBER that never fire on maths."""

    name = "rules"
    version = "1.0.0"
    defaults: Mapping[str, Any] = {
        "labels": list(RULE_LABELS),
        "region": "US",  # phonenumbers default region for numbers without a country code
        "math_filter": True,  # drop number-like candidates in maths context (off only to ablate)
        "unknown_domains": True,  # flag links to unknown sites (likely personal), not just profiles
        "generic_domains": [],  # extra resource sites never flagged without a user path
        "min_id_digits": 4,
    }

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        labels = self.config["labels"]
        if isinstance(labels, str) or not set(labels) <= set(RULE_LABELS):
            raise ConfigError(f"rules: 'labels' must be a subset of {', '.join(RULE_LABELS)}")
        if not isinstance(self.config["region"], str) or len(self.config["region"]) != 2:
            raise ConfigError("rules: 'region' must be a two-letter region code such as 'US'")
        self._generic = GENERIC_DOMAINS | {d.lower() for d in self.config["generic_domains"]}
        finders: dict[str, Callable[[str, str], Iterator[Span]]] = {
            "EMAIL": self._emails,
            "URL": self._urls,
            "PHONE": self._phones,
            "USERNAME": self._usernames,
            "ID_NUMBER": self._ids,
            "DATE_OF_BIRTH": self._birthdays,
            "AGE": self._ages,
            "LOCATION": self._addresses,
        }
        self._finders = [finders[label] for label in RULE_LABELS if label in labels]

    # -- public ---------------------------------------------------------------------------------

    def detect(self, dialogue: Dialogue) -> list[Detection]:
        out = []
        prev = ""
        for m in dialogue.messages:
            out.append(Detection(dialogue.id, m.index, tuple(self.find(m.text, prev=prev))))
            prev = m.text
        return out

    @property
    def filters(self) -> tuple[str, ...]:
        return ("maths.context", "maths.operand") if self.config["math_filter"] else ()

    def find(self, text: str, *, prev: str = "") -> list[Span]:
        """Non-overlapping spans of one text (the longest, most specific rule wins).

        ``prev`` is the message before it: a short reply to "What's your student ID?" or "What
        name do you log in with?" is read as the answer.
        """
        spans = [span for finder in self._finders for span in finder(text, prev)]
        if len(spans) < 2:
            return spans
        chosen: list[Span] = []
        for span in sorted(spans, key=lambda s: (-(s.end - s.start), -s.score, s.start)):
            if not any(span.overlaps(c) for c in chosen):
                chosen.append(span)
        return sorted(chosen)

    # -- finders --------------------------------------------------------------------------------

    def _span(self, start: int, end: int, label: str, score: float, rule: str) -> Span:
        return Span(start, end, label, score, f"rules:{rule}")

    def _is_maths(self, text: str, start: int, end: int) -> bool:
        return bool(self.config["math_filter"]) and in_math_context(text, start, end)

    def _emails(self, text: str, prev: str = "") -> Iterator[Span]:
        if "@" not in text and " at " not in text.lower() and "(at)" not in text.lower():
            return
        for m in _EMAIL_RE.finditer(text):
            yield self._span(m.start(), m.end(), "EMAIL", 0.99, "email")

    def _urls(self, text: str, prev: str = "") -> Iterator[Span]:
        if "." not in text:
            return
        for m in _URL_RE.finditer(text):
            start, end = _trim(text, m.start(), m.end())
            if end < len(text) and text[end] == "@" or start > 0 and text[start - 1] == "@":
                continue  # the domain of an e-mail address
            kind = url_kind(text[start:end], self._generic, self.config["unknown_domains"])
            if kind:
                yield self._span(start, end, "URL", _URL_SCORES[kind], f"url_{kind}")

    def _phones(self, text: str, prev: str = "") -> Iterator[Span]:
        if _digits(text) < 7:
            return
        region = self.config["region"].upper()
        leniency = phonenumbers.Leniency.POSSIBLE
        for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=leniency):
            start, end = m.start, m.end
            raw = m.raw_string
            nd = _digits(raw)
            formatted = bool(
                raw.lstrip().startswith("+")
                or re.search(r"\(\d{2,4}\)", raw)
                or re.fullmatch(r"\d{3}[\s.-]\d{3}[\s.-]\d{4}(?:\s*(?:x|ext\.?)\s*\d+)?", raw)
                or re.fullmatch(r"\d{3}-\d{4}", raw)
            )
            cue = bool(_PHONE_CUE_RE.search(text[max(0, start - 32) : start])) or bool(
                re.match(
                    r"\s*(?:is|was|'s)?\s*(?:my|his|her|our)\s+(?:cell|phone|number)", text[end:]
                )
            )
            valid = phonenumbers.is_valid_number(m.number)
            if (
                not cue
                and "?" in prev
                and len(text.split()) <= 8
                and _PHONE_QUESTION_RE.search(prev)
                and not in_math_context(prev, 0, len(prev))
            ):
                cue = nd >= 10 and not self._is_maths(text, start, end)
            if nd < 7 or not (formatted or cue):
                continue  # a bare digit string needs a cue: maths is full of them
            if not cue and self._is_maths(text, start, end):
                continue
            if cue and self.config["math_filter"] and inside_expression(text, start, end):
                continue
            score = 0.95 if (valid or cue) else 0.8
            yield self._span(start, end, "PHONE", score, "phone")

    def _usernames(self, text: str, prev: str = "") -> Iterator[Span]:
        if "@" in text:
            for m in _HANDLE_RE.finditer(text):
                handle = m.group(1)
                if not re.search(r"[A-Za-z]", handle):
                    continue  # "@5" is "at 5"
                yield self._span(m.start(), m.end(), "USERNAME", 0.9, "handle")
        for pattern, rule in (
            (_USERNAME_CUE_RE, "username_cue"),
            (_USERNAME_SITE_RE, "username_site"),
            (_USERNAME_AFTER_RE, "username_after"),
        ):
            for m in pattern.finditer(text):
                token = m.group(1).rstrip(".-#")
                if not _plausible_handle(token):
                    continue
                cue = m.group(0)[: m.start(1) - m.start()]
                strong = rule != "username_cue" or bool(_STRONG_USERNAME_CUE.search(cue))
                said = rule != "username_cue" or re.search(r"(?:is|:|=)\s*@?$", cue.rstrip())
                if not (strong and said or _handle_like(token)):
                    continue
                start = m.start(1) - (1 if m.start(1) and text[m.start(1) - 1] == "@" else 0)
                yield self._span(start, m.start(1) + len(token), "USERNAME", 0.85, rule)
        if prev and _USER_QUESTION_RE.search(prev) and len(text.split()) <= 8:
            m = _REPLY_HANDLE_RE.match(text)
            if m:
                token = m.group(1).rstrip(".-")
                if _plausible_handle(token) and (_handle_like(token) or len(text.split()) <= 2):
                    start = m.start(1) - (1 if m.start(1) and text[m.start(1) - 1] == "@" else 0)
                    end = m.start(1) + len(token)
                    yield self._span(start, end, "USERNAME", 0.8, "username_reply")

    def _ids(self, text: str, prev: str = "") -> Iterator[Span]:
        min_digits = self.config["min_id_digits"]
        if _digits(text) < min_digits:
            return
        reply = bool(prev and _ID_QUESTION_RE.search(prev)) and len(text.split()) <= 12
        for m in _ID_TOKEN_RE.finditer(text):
            start, end = m.span()
            if _digits(m.group()) < min_digits:
                continue
            before = text[max(0, start - 40) : start]
            cue = bool(_ID_BEFORE_RE.search(before)) or bool(
                _ID_AFTER_RE.match(text[end : end + 40])
            )
            if not cue and reply:
                lead = _REPLY_ID_RE.match(text)
                cue = bool(lead and lead.start(1) == start)
            if not cue:
                continue
            if self.config["math_filter"] and inside_expression(text, start, end):
                continue
            yield self._span(start, end, "ID_NUMBER", 0.97, "id_cue" if not reply else "id_reply")
        for m in _SSN_RE.finditer(text):
            if not self._is_maths(text, m.start(), m.end()):
                yield self._span(m.start(), m.end(), "ID_NUMBER", 0.8, "ssn_shape")

    def _birthdays(self, text: str, prev: str = "") -> Iterator[Span]:
        if not _DIGIT_RE.search(text) and not _MONTH_HINT_RE.search(text):
            return
        for start, end, score, rule in find_birthdays(text, prev):
            yield self._span(start, end, "DATE_OF_BIRTH", score, rule)

    def _addresses(self, text: str, prev: str = "") -> Iterator[Span]:
        for start, end, score, rule in find_addresses(text, prev):
            yield self._span(start, end, "LOCATION", score, rule)

    def _ages(self, text: str, prev: str = "") -> Iterator[Span]:
        for start, end, score, rule in find_ages(text, prev):
            yield self._span(start, end, "AGE", score, rule)


_MONTH_HINT_RE = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)", re.IGNORECASE)


_URL_SCORES = {"profile": 0.95, "social": 0.95, "personal_host": 0.9, "unknown_site": 0.7}


def url_kind(
    url: str, generic: frozenset[str] = GENERIC_DOMAINS, unknown_domains: bool = True
) -> str:
    """Why ``url`` identifies someone: ``"profile"`` (a user path), ``"social"`` (a social site
    with a path), ``"personal_host"`` (github.io, wordpress…), ``"unknown_site"`` (a site that is
    not a known resource), or ``""`` for a link that identifies nobody (khanacademy.org)."""
    host, path = _host_path(url)
    if not host or "." not in host or re.fullmatch(r"[\d.]+", host):
        return ""
    if _USER_PATH_RE.search(path):
        return "profile"
    if _on(host, SOCIAL_DOMAINS):
        return "social" if path.strip("/") else ""
    if host.endswith(PERSONAL_HOST_SUFFIXES) and host.count(".") >= 2:
        return "personal_host"
    if unknown_domains and not _on(host, generic):
        return "unknown_site"
    return ""


def is_personal_url(url: str) -> bool:
    return bool(url_kind(url))


def has_id_cue(text: str, start: int, end: int, prev: str = "") -> bool:
    """Is the number at ``start..end`` introduced as an identifier ("student id 4815", "A29 is my
    school id", or a short reply to "What's your student ID?") and not part of a maths
    expression? Shared with the tuned Presidio preset."""
    if inside_expression(text, start, end):
        return False
    if _ID_BEFORE_RE.search(text[max(0, start - 40) : start]) or _ID_AFTER_RE.match(
        text[end : end + 40]
    ):
        return True
    return bool(prev and _ID_QUESTION_RE.search(prev)) and len(text.split()) <= 12


def _handle_like(token: str) -> bool:
    return bool(re.search(r"[\d_.]|[a-z][A-Z]", token))


def _plausible_handle(token: str) -> bool:
    low = token.lower()
    return len(token) >= 3 and low not in _NOT_A_HANDLE and low not in MATH_WORDS


@register("rules", "Maths-safe patterns for e-mail, URL, phone, username and ID numbers.")
def build_rules(config: Mapping[str, Any]) -> RulesDetector:
    return RulesDetector(config)
