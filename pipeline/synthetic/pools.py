"""Value pools and PII formatters: who the people in a generated dialogue are and how they write.

Faker is slow per call (tens of microseconds), so a seeded Faker instance fills pools of names,
streets and cities once per seed (cached); every dialogue then draws from the pools with its own
``random.Random``. Formatters turn a person into the many surface forms real chat uses: e-mail
addresses, phone numbers in a dozen formats, gamer tags, profile links, student ids, birthdays.
"""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from pipeline.synthetic.render import Seg, lit, pii

# (locale, weight): mostly US English, with the name diversity of US classrooms and beyond.
LOCALES: tuple[tuple[str, int], ...] = (
    ("en_US", 46),
    ("es_MX", 14),
    ("en_IN", 7),
    ("en_GB", 4),
    ("fr_FR", 3),
    ("pt_BR", 3),
    ("it_IT", 2),
    ("de_DE", 2),
    ("pl_PL", 2),
    ("yo_NG", 4),
    ("en_NG", 2),
    ("zu_ZA", 1),
    ("ga_IE", 1),
    ("nl_NL", 1),
    ("tw_GH", 1),
)

# Romanised East and South-East Asian names, which Faker's Latin-script locales lack.
_ASIAN_FIRST_F = ("Mei", "Hana", "Linh", "Yuna", "Ji-woo", "Xiaoling", "Anh", "Mai", "Sakura", "Yuki", "Minji", "Thao")
_ASIAN_FIRST_M = ("Wei", "Jin", "Minh", "Hiroshi", "Kenji", "Jun", "Tuan", "Hao", "Min-jun", "Bao", "Ravi", "Kai")
_ASIAN_LAST = ("Chen", "Nguyen", "Kim", "Park", "Tran", "Wang", "Liu", "Zhang", "Huang", "Le", "Pham",
               "Yamamoto", "Tanaka", "Sato", "Lee", "Choi", "Wu", "Lin", "Zhou", "Vo", "Hoang", "Takahashi")

# Real places a participant could plausibly live in (common knowledge, not taken from any data set).
CITIES = (
    "Austin", "Houston", "San Antonio", "Dallas", "El Paso", "Phoenix", "Tucson", "Denver", "Boulder",
    "Chicago", "Evanston", "Detroit", "Cleveland", "Columbus", "Cincinnati", "Pittsburgh", "Philadelphia",
    "Baltimore", "Richmond", "Raleigh", "Charlotte", "Atlanta", "Savannah", "Orlando", "Tampa", "Miami",
    "Jacksonville", "Nashville", "Memphis", "Louisville", "Indianapolis", "Milwaukee", "Madison",
    "Minneapolis", "St. Paul", "Des Moines", "Omaha", "Kansas City", "St. Louis", "Tulsa",
    "Oklahoma City", "Albuquerque", "Santa Fe", "Las Vegas", "Reno", "Salt Lake City", "Boise",
    "Seattle", "Tacoma", "Spokane", "Portland", "Eugene", "Sacramento", "Fresno", "Oakland",
    "San Jose", "San Diego", "Los Angeles", "Long Beach", "Anaheim", "Riverside", "Bakersfield",
    "Boston", "Worcester", "Providence", "Hartford", "New Haven", "Newark", "Jersey City", "Buffalo",
    "Rochester", "Syracuse", "Albany", "Yonkers", "Burlington", "Portland", "Anchorage", "Honolulu",
    "New Orleans", "Baton Rouge", "Little Rock", "Birmingham", "Jackson", "Charleston", "Columbia",
    "Knoxville", "Lexington", "Toledo", "Akron", "Grand Rapids", "Lansing", "Fort Worth", "Arlington",
    "Plano", "Laredo", "Corpus Christi", "Brownsville", "Toronto", "Vancouver", "Manchester", "Leeds",
    "Dublin", "Lagos", "Nairobi", "Monterrey", "Guadalajara", "Manila", "Mumbai", "Pune",
)
NEIGHBOURHOODS = (
    "the Bronx", "Brooklyn", "Queens", "Harlem", "Flushing", "Astoria", "Hyde Park", "Pilsen",
    "Logan Square", "Little Village", "Echo Park", "Boyle Heights", "Koreatown", "Mission District",
    "Little Havana", "Wynwood", "Fishtown", "South Philly", "Dorchester", "Roxbury", "Jamaica Plain",
    "East Austin", "Montrose", "the Heights", "Five Points", "Capitol Hill", "Ballard", "Northside",
    "Southside", "West End", "Oak Cliff", "Midtown", "Old Town", "Highland Park", "Cherry Creek",
    "Germantown", "Overtown", "Washington Heights", "Inwood", "Bushwick",
)
NEIGHBOURHOOD_ARTICLE = "the "

SCHOOL_KINDS = (
    "Elementary", "Elementary School", "Middle School", "Middle", "High School", "High",
    "Academy", "Charter School", "Prep", "K-8", "Junior High", "STEM Academy", "Magnet School",
    "Intermediate School", "Preparatory Academy",
)
SCHOOL_STEMS = (
    "Lincoln", "Washington", "Jefferson", "Roosevelt", "Kennedy", "Franklin", "Madison", "Jackson",
    "Oak Ridge", "Maple Grove", "Cedar Hill", "Riverside", "Lakeview", "Westview", "Eastside",
    "North Hills", "Sunnyvale", "Pine Crest", "Willow Creek", "Hillcrest", "Valley View",
    "Cesar Chavez", "Rosa Parks", "Martin Luther King Jr.", "Thurgood Marshall", "Sojourner Truth",
    "Frederick Douglass", "Harriet Tubman", "Sally Ride", "Ellen Ochoa", "Booker T. Washington",
    "Benito Juarez", "Dolores Huerta", "Walt Whitman", "Mark Twain", "Emerson", "Thoreau",
)
EMAIL_DOMAINS = (
    "gmail.com", "gmail.com", "gmail.com", "yahoo.com", "outlook.com", "hotmail.com", "icloud.com",
    "aol.com", "protonmail.com", "live.com",
)
COURSE_SUBJECTS = (
    "Algebra", "Algebra", "Geometry", "Math", "MATH", "Pre-Algebra", "Calculus", "Calc", "Statistics",
    "Stats", "Precalculus", "Pre-Calc", "Trigonometry", "MTH", "Integrated Math", "Discrete Math",
)
COURSE_NUMBERS = (
    "1", "2", "101", "102", "110", "115", "120", "121", "150", "200", "201", "210", "220", "241",
    "250", "300", "301", "310", "1A", "1B", "2A", "2B", "7", "8", "I", "II", "1010", "1310",
)
COURSE_NO_NUMBER = (
    "algebra class", "geometry class", "math class", "my algebra class", "pre-algebra", "stats class",
    "calculus", "geometry", "honors math", "AP stats", "the algebra unit", "math lab",
)

GAMER_WORDS = (
    "shadow", "dark", "wolf", "dragon", "ninja", "pixel", "blaze", "frost", "storm", "viper",
    "ghost", "nova", "cyber", "turbo", "lucky", "savage", "mystic", "cosmic", "epic", "sneaky",
    "panda", "tiger", "falcon", "rogue", "sniper", "bunny", "cookie", "mango", "llama", "potato",
)
GAMER_SUFFIX = ("", "", "", "YT", "TTV", "gg", "xo", "_", "pro", "king", "queen", "official")
PLATFORMS = (
    "roblox", "Roblox", "minecraft", "Minecraft", "discord", "Discord", "fortnite", "Fortnite",
    "xbox", "Xbox", "PSN", "steam", "Steam", "insta", "Instagram", "IG", "snap", "Snapchat",
    "tiktok", "TikTok", "twitch", "Khan Academy", "scratch", "Scratch",
)

NUMBER_WORDS = {
    5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten", 11: "eleven", 12: "twelve",
    13: "thirteen", 14: "fourteen", 15: "fifteen", 16: "sixteen", 17: "seventeen", 18: "eighteen",
    35: "thirty-five", 38: "thirty-eight", 40: "forty", 42: "forty-two", 45: "forty-five",
}
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September",
          "October", "November", "December")
MONTH_ABBR = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sept", "Oct", "Nov", "Dec")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def ascii_fold(text: str) -> str:
    return unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")


def _usable_name(name: str) -> bool:
    core = name.replace("-", "").replace("'", "").replace(" ", "")
    inner_caps = [i for i, c in enumerate(name) if i and c.isupper() and name[i - 1] not in " -'"]
    if any(not (name[:i].endswith(("Mc", "Mac", "De", "Di", "La", "Le"))) for i in inner_caps):
        return False  # "SimphiweyiNkosi": two names run together
    return (
        core.isalpha()
        and len(name.lower()) == len(name)
        and 2 <= len(name) <= 16
        and all(ord(c) < 0x250 for c in core)  # Latin scripts only: chat is typed on US keyboards
    )


@dataclass(frozen=True, slots=True)
class Pools:
    """Names and places drawn from a seeded Faker once per seed."""

    first_f: tuple[tuple[str, ...], ...]  # per locale
    first_m: tuple[tuple[str, ...], ...]
    last: tuple[tuple[str, ...], ...]
    locale_weights: tuple[int, ...]
    streets: tuple[str, ...]
    fake_cities: tuple[str, ...]
    school_stems: tuple[str, ...]
    problem_names: tuple[str, ...]  # textbook word-problem characters (first names)


@lru_cache(maxsize=8)
def build_pools(seed: int = 0) -> Pools:
    from faker import Faker  # imported lazily: only the generator needs it

    first_f, first_m, last, weights = [], [], [], []
    for k, (locale, weight) in enumerate(LOCALES):
        fake = Faker(locale)
        fake.seed_instance(seed * 7919 + k)
        n = 40 + weight * 6
        ff = sorted({x for x in (fake.first_name_female() for _ in range(n)) if _usable_name(x)})
        fm = sorted({x for x in (fake.first_name_male() for _ in range(n)) if _usable_name(x)})
        ll = sorted({x for x in (fake.last_name() for _ in range(n)) if _usable_name(x)})
        if not (ff and fm and ll):
            continue
        first_f.append(tuple(ff))
        first_m.append(tuple(fm))
        last.append(tuple(ll))
        weights.append(weight)
    first_f.append(_ASIAN_FIRST_F)
    first_m.append(_ASIAN_FIRST_M)
    last.append(_ASIAN_LAST)
    weights.append(5)
    us = Faker("en_US")
    us.seed_instance(seed)
    streets = tuple(sorted({us.street_name() for _ in range(300)}))
    fake_cities = tuple(sorted({us.city() for _ in range(60)}))
    school_stems = tuple(sorted({us.last_name() for _ in range(60)} | set(SCHOOL_STEMS)))
    problem = sorted({x for f in (first_f[0], first_m[0], first_f[1], first_m[1], first_f[2], first_m[2],
                                  _ASIAN_FIRST_F, _ASIAN_FIRST_M) for x in f if " " not in x})
    return Pools(
        first_f=tuple(first_f),
        first_m=tuple(first_m),
        last=tuple(last),
        locale_weights=tuple(weights),
        streets=streets,
        fake_cities=fake_cities,
        school_stems=school_stems,
        problem_names=tuple(problem),
    )


@dataclass(frozen=True, slots=True)
class Person:
    first: str
    last: str
    gender: str  # "f" | "m"

    @property
    def full(self) -> str:
        return f"{self.first} {self.last}"

    def title(self, rng: random.Random, *, adult: bool = True) -> str:
        """A courtesy title; ``adult=False`` leaves out "Dr." and "Coach" (for students)."""
        if self.gender == "f":
            return rng.choice(("Ms.", "Ms.", "Mrs.", "Miss", "Ms", "Mrs", "ms.", "miss") + (("Dr.",) if adult else ()))
        return rng.choice(("Mr.", "Mr.", "Mr", "mr.", "mr") + (("Dr.", "Coach") if adult else ()))


def make_person(pools: Pools, rng: random.Random, *, exclude: set[str] = frozenset()) -> Person:
    for _ in range(20):
        k = rng.choices(range(len(pools.locale_weights)), weights=pools.locale_weights)[0]
        gender = rng.choice("fm")
        first = rng.choice(pools.first_f[k] if gender == "f" else pools.first_m[k])
        # surnames mostly from the same locale, sometimes not (families are mixed)
        kl = k if rng.random() < 0.8 else rng.choices(range(len(pools.locale_weights)), weights=pools.locale_weights)[0]
        last = rng.choice(pools.last[kl])
        if first not in exclude and last not in exclude and first != last:
            return Person(first, last, gender)
    return Person(first, last, gender)


# --------------------------------------------------------------------------------------------
# name forms -> segments (titles and punctuation stay outside the span)

def name_first(p: Person) -> list[Seg]:
    return [pii(p.first, "NAME")]


def name_full(p: Person) -> list[Seg]:
    return [pii(p.full, "NAME")]


def name_titled(p: Person, rng: random.Random) -> list[Seg]:
    return [lit(p.title(rng) + " "), pii(p.last, "NAME")]


def name_address_student(p: Person, rng: random.Random) -> list[Seg]:
    """How a tutor addresses a student: mostly the first name, sometimes lower-case or in full."""
    r = rng.random()
    if r < 0.68:
        return [pii(p.first, "NAME")]
    if r < 0.9:
        return [pii(p.first.lower(), "NAME")]
    if r < 0.96:
        return [pii(p.full, "NAME")]
    return [pii(p.first.upper(), "NAME")] if len(p.first.upper()) == len(p.first) else [pii(p.first, "NAME")]


def name_address_tutor(p: Person, rng: random.Random) -> list[Seg]:
    """How a student addresses a tutor: "Mr. Chen", "ms lopez", "David", "mr chen", "ms lopes"."""
    r = rng.random()
    if r < 0.55:
        segs = name_titled(p, rng)
        if rng.random() < 0.3:
            segs = [(t.lower(), lab, tag) for t, lab, tag in segs]
    elif r < 0.85:
        segs = [pii(p.first, "NAME")]
    else:
        segs = [pii(p.first.lower(), "NAME")]
    if rng.random() < 0.06:  # students misspell their tutor's name; it is still the name
        title, (name, label, tag) = segs[:-1], segs[-1]
        segs = [*title, (misspell_name(name, rng), label, tag)]
    return segs


def misspell_name(name: str, rng: random.Random) -> str:
    if len(name) < 4 or " " in name:
        return name
    i = rng.randrange(1, len(name) - 1)
    if rng.random() < 0.5:
        return name[:i] + name[i + 1 :]  # drop a letter
    return name[:i] + name[i] + name[i:]  # double a letter


# --------------------------------------------------------------------------------------------
# contact details and identifiers

def _slug(text: str) -> str:
    return "".join(c for c in ascii_fold(text).lower() if c.isalnum())


def email(p: Person, rng: random.Random, school_domain: str | None = None) -> str:
    f, last = _slug(p.first) or "student", _slug(p.last) or "x"
    yy = rng.randint(0, 99)
    local = rng.choice((
        f"{f}.{last}", f"{f}{last}", f"{f[0]}{last}", f"{f}_{last}", f"{f}{last}{yy:02d}",
        f"{f}.{last}{rng.randint(1, 999)}", f"{f}{rng.randint(2005, 2016)}", f"{last}.{f}",
        f"{f}_{rng.choice(GAMER_WORDS)}", f"{rng.choice(GAMER_WORDS)}{f}{yy}", f"{f[0]}.{last}",
    ))
    if school_domain and rng.random() < 0.3:
        return f"{local}@{school_domain}"
    return f"{local}@{rng.choice(EMAIL_DOMAINS)}"


def school_domain(school: str, rng: random.Random) -> str:
    words = [w for w in _slug_words(school) if w]
    initials = "".join(w[0] for w in words)[:5] or "school"
    return rng.choice((
        f"students.{initials}.org", f"{initials}.k12.{rng.choice(('tx', 'ca', 'ny', 'il', 'fl', 'oh'))}.us",
        f"{words[0]}school.org" if words else "school.org", f"{initials}schools.net",
    ))


def _slug_words(text: str) -> list[str]:
    return [_slug(w) for w in text.split()]


def phone(rng: random.Random) -> str:
    area = rng.randint(201, 989)
    if area % 100 == 11:
        area += 1
    ex = rng.randint(200, 989)
    line = rng.randint(0, 9999)
    r = rng.random()
    if r < 0.88:
        fmt = rng.choice((
            "({a}) {e}-{l}", "({a}) {e}-{l}", "{a}-{e}-{l}", "{a}-{e}-{l}", "{a}.{e}.{l}", "{a}{e}{l}",
            "+1 {a} {e} {l}", "{a} {e} {l}", "1-{a}-{e}-{l}", "+1 ({a}) {e}-{l}", "+1-{a}-{e}-{l}",
            "({a}){e}-{l}", "{a} {e}-{l}", "+1{a}{e}{l}",
        ))
        return fmt.format(a=area, e=ex, l=f"{line:04d}")
    if r < 0.93:
        return f"07{rng.randint(100, 999)} {rng.randint(100000, 999999)}"  # UK mobile
    if r < 0.97:
        return f"+52 {rng.randint(10, 99)} {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}"
    return f"+91 {rng.randint(70000, 99999)} {rng.randint(10000, 99999)}"


def username(p: Person, rng: random.Random) -> str:
    f = _slug(p.first) or "kid"
    w1, w2 = rng.choice(GAMER_WORDS), rng.choice(GAMER_WORDS)
    n = rng.randint(1, 9999)
    return rng.choice((
        f"xX{w1.capitalize()}{w2.capitalize()}Xx", f"{f}{n}", f"{w1}_{w2}{rng.randint(1, 99)}",
        f"{w1.capitalize()}{w2.capitalize()}{rng.choice(GAMER_SUFFIX)}", f"{f}_{w1}", f"{f}.{_slug(p.last)}",
        f"{w1}{f}{rng.randint(10, 99)}", f"the_real_{f}", f"{f}{_slug(p.last)[:1]}{rng.randint(2008, 2015)}",
        f"{w1.upper()}_{w2.upper()}", f"{f}_{rng.choice(GAMER_SUFFIX) or 'xo'}", f"{w1}{n}",
        f"{f.capitalize()}The{w2.capitalize()}", f"lil{f}{rng.randint(1, 99)}",
    ))


def url(p: Person, user: str, rng: random.Random) -> str:
    f, last = _slug(p.first) or "me", _slug(p.last) or "x"
    return rng.choice((
        f"https://www.instagram.com/{user}", f"instagram.com/{user}", f"tiktok.com/@{user}",
        f"https://www.youtube.com/@{user}", f"youtube.com/c/{user}", f"https://scratch.mit.edu/users/{user}",
        f"www.{f}{last}.com", f"{f}{last}.github.io", f"https://{f}-{last}.github.io/portfolio",
        f"https://www.linkedin.com/in/{f}-{last}-{rng.randint(10, 999)}", f"twitch.tv/{user}",
        f"https://sites.google.com/view/{f}{last}", f"{f}{last}.wixsite.com/mysite",
        f"https://replit.com/@{user}", f"github.com/{user}", f"https://www.facebook.com/{f}.{last}.{rng.randint(1, 99)}",
    ))


def id_number(rng: random.Random) -> str:
    return rng.choice((
        str(rng.randint(100000, 999999)), str(rng.randint(10000000, 99999999)),
        f"S{rng.randint(1000000, 9999999)}", f"ST-{rng.randint(100000, 999999)}", f"{rng.randint(2019, 2026)}{rng.randint(10000, 99999)}",
        f"{rng.randint(100, 999)}-{rng.randint(100, 999)}-{rng.randint(100, 999)}", f"A{rng.randint(10000000, 99999999)}",
        f"ID{rng.randint(100000, 999999)}", str(rng.randint(1000, 9999)), f"{rng.randint(1000, 9999)} {rng.randint(1000, 9999)} {rng.randint(1000, 9999)}",
    ))


def course(rng: random.Random) -> str:
    subject = rng.choice(COURSE_SUBJECTS)
    number = rng.choice(COURSE_NUMBERS)
    sep = "-" if subject.isupper() and rng.random() < 0.3 else " "
    return f"{subject}{sep}{number}"


def school(pools: Pools, rng: random.Random) -> str:
    r = rng.random()
    if r < 0.08:
        return f"PS {rng.randint(2, 399)}"
    if r < 0.14:
        return f"IS {rng.randint(10, 399)}"
    stem = rng.choice(pools.school_stems)
    return f"{stem} {rng.choice(SCHOOL_KINDS)}"


def city(pools: Pools, rng: random.Random) -> str:
    return rng.choice(pools.fake_cities) if rng.random() < 0.06 else rng.choice(CITIES)


def street_address(pools: Pools, rng: random.Random) -> str:
    n = rng.choice((rng.randint(1, 99), rng.randint(100, 999), rng.randint(1000, 9999), rng.randint(10000, 29999)))
    return f"{n} {rng.choice(pools.streets)}"


def age_value(rng: random.Random, lo: int = 6, hi: int = 18, words: float = 0.3) -> str:
    n = rng.randint(lo, hi)
    if n in NUMBER_WORDS and rng.random() < words:
        return NUMBER_WORDS[n]
    return str(n)


def birthday(rng: random.Random, year: int) -> str:
    m = rng.randint(1, 12)
    d = rng.randint(1, 28)
    name = MONTHS[m - 1]
    return rng.choice((
        f"{name} {d}", f"{name} {ordinal(d)}", f"{name.lower()} {d}", f"{name} {d}, {year}",
        f"{m}/{d}/{year}", f"{m:02d}/{d:02d}/{year}", f"{m}-{d}-{year % 100:02d}", f"{year}-{m:02d}-{d:02d}",
        f"{ordinal(d)} of {name}", f"{MONTH_ABBR[m - 1]} {d}", f"{MONTH_ABBR[m - 1]}. {ordinal(d)}",
        f"{m}/{d}", f"{d} {name} {year}",
    ))


def other_identifier(rng: random.Random) -> tuple[str, str]:
    """``(cue, value)`` pairs for OTHER_IDENTIFIER: lockers, plates, jerseys, badges."""
    return rng.choice((
        ("my locker number is", str(rng.randint(100, 1999))),
        ("my locker combo is", f"{rng.randint(1, 39)}-{rng.randint(1, 39)}-{rng.randint(1, 39)}"),
        ("my mom's license plate is", f"{rng.randint(1, 9)}{''.join(rng.choice('ABCDEFGHJKLMNPRSTUVWXYZ') for _ in range(3))}{rng.randint(100, 999)}"),
        ("my jersey number is", str(rng.randint(1, 99))),
        ("my gym locker is", f"{rng.choice('ABCDEFG')}{rng.randint(10, 250)}"),
        ("my wifi name at home is", f"{rng.choice(GAMER_WORDS).capitalize()}Net-{rng.randint(10, 99)}"),
    ))
