"""Word pools the offline surrogates draw from, read once from Faker's provider tables.

Only the static lists of Faker's ``en_*`` person, address and internet providers are used (no
``Faker()`` instance, which is slow to build): gendered first names, last names, US states, street
suffixes and free e-mail domains. Everything is built lazily on first use and cached.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from functools import cache


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


_PERSON_LOCALES = ("en_US", "en_GB", "en_CA", "en_AU", "en_IE", "en_NZ")

SCHOOL_STEMS: tuple[str, ...] = _words(
    """
    Oakridge Riverside Maplewood Hillcrest Lakeview Westfield Brookside Fairview Pinecrest
    Greenwood Ridgeview Meadowbrook Stonebridge Clearwater Highland Northwood Southgate Eastwood
    Redwood Elmwood Briarwood Foxhill Kingsley Ashford Bayside Crestview Evergreen Glenwood
    Harborview Ironwood Juniper Kensington Lakeside Millbrook Newfield Parkview Rosewood
    Timberline Woodland Yorktown Summit Heritage Liberty Horizon Pioneer Riverbend Cedarwood
    Willowbrook Sunnyside Oakmont Birchwood Aspen Sycamore Magnolia Cypress Hawthorne Sterling
    Bridgewater Chesterfield Lakewood Mountainview Brighton Carver Franklin Jefferson Madison
    Monroe Emerson Whitman Thoreau Edison Marshall Bradford Hamilton Clifton Dalton Preston
    """
)

PUBLIC_EMAIL_DOMAINS: frozenset[str] = frozenset(
    _words(
        """
    gmail.com yahoo.com hotmail.com outlook.com icloud.com aol.com protonmail.com live.com
    msn.com me.com mail.com gmx.com yandex.com zoho.com
    """
    )
)

PUBLIC_HOSTS: frozenset[str] = frozenset(
    _words(
        """
    youtube.com youtu.be facebook.com instagram.com twitter.com x.com tiktok.com github.com
    linkedin.com reddit.com twitch.tv discord.gg discord.com snapchat.com pinterest.com
    medium.com wordpress.com blogspot.com google.com docs.google.com drive.google.com
    sites.google.com khanacademy.org scratch.mit.edu tumblr.com soundcloud.com vimeo.com
    """
    )
)

URL_PATH_WORDS: frozenset[str] = frozenset(
    _words(
        """
    watch user users u channel c profile profiles in p projects project pages page blog posts
    post home index html htm php about me portfolio com www status photos videos video play
    """
    )
)


def _module(kind: str, locale: str):
    try:
        return importlib.import_module(f"faker.providers.{kind}.{locale}").Provider
    except ImportError:  # pragma: no cover - faker always ships en_US
        return None


@cache
def first_names() -> dict[str, tuple[str, ...]]:
    """``{"m": (...), "f": (...)}`` — gendered English first names (title case, ASCII)."""
    male: set[str] = set()
    female: set[str] = set()
    for loc in ("en_US", "en_GB", "en_CA"):
        prov = _module("person", loc)
        if prov is None:
            continue
        male.update(getattr(prov, "first_names_male", ()) or ())
        female.update(getattr(prov, "first_names_female", ()) or ())
    clean = lambda names: tuple(sorted(n for n in names if n.isascii() and n.isalpha()))  # noqa: E731
    return {"m": clean(male - female), "f": clean(female - male)}


@cache
def gender_table() -> dict[str, str]:
    """Lower-case first name → ``m``, ``f`` or ``u`` (given to both)."""
    table: dict[str, str] = {}
    for loc in _PERSON_LOCALES:
        prov = _module("person", loc)
        if prov is None:
            continue
        for g, attr in (("m", "first_names_male"), ("f", "first_names_female")):
            for name in getattr(prov, attr, ()) or ():
                key = name.casefold()
                table[key] = g if table.get(key, g) == g else "u"
    return table


@cache
def last_names() -> tuple[str, ...]:
    names: set[str] = set()
    for loc in ("en_US", "en_GB"):
        prov = _module("person", loc)
        if prov is not None:
            names.update(getattr(prov, "last_names", ()) or ())
    return tuple(sorted(n for n in names if n.isascii() and n.isalpha()))


@cache
def last_name_set() -> frozenset[str]:
    return frozenset(n.casefold() for n in last_names())


@cache
def states() -> tuple[tuple[str, ...], tuple[str, ...]]:
    prov = _module("address", "en_US")
    return tuple(prov.states), tuple(prov.states_abbr)


@cache
def street_suffixes() -> tuple[str, ...]:
    prov = _module("address", "en_US")
    return tuple(prov.street_suffixes)


CITY_SUFFIXES = (
    "ton",
    "ville",
    "field",
    "wood",
    "burg",
    "ford",
    "port",
    "dale",
    " Springs",
    " Heights",
)
CITY_PREFIXES = ("North", "South", "East", "West", "New", "Lake", "Port", "Fort", "Mount")


@cache
def words_by_length() -> dict[int, tuple[str, ...]]:
    """Lower-case name-like words bucketed by length, for letter-for-letter shape surrogates."""
    buckets: dict[int, set[str]] = defaultdict(set)
    pool = list(first_names()["m"]) + list(first_names()["f"]) + list(last_names())
    pool += list(SCHOOL_STEMS)
    for word in pool:
        buckets[len(word)].add(word.lower())
    return {n: tuple(sorted(ws)) for n, ws in buckets.items()}


MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
NUMBER_WORDS = (
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
)
TENS_WORDS = ("", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety")
