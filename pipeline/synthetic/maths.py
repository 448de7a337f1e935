"""Maths talk full of things that look like PII and are not.

Each problem generator returns a :class:`Problem`: an optional anchor (the word problem), its
characters, a slot context whose number slots are tagged with their trap kind, and the scripted
turns of working through it. Word-problem characters are NAME segments tagged
``problem_character``: under the ``strict`` policy they are not PII, under ``recall_first`` they are.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction

from pipeline.synthetic.pools import MONTHS, Pools
from pipeline.synthetic.render import Seg, lit, pii

Line = tuple[str, str]  # (role "T" | "S", template)

TRAP_KINDS = (
    "problem_character", "fraction", "equation", "long_number", "calculation", "time", "problem_date",
    "money", "measurement", "year", "pick_number", "percent", "problem_age", "coordinate",
    "number_list", "famous_name", "plain_course", "session_date", "session_time", "section_number",
    "placeholder", "grade_level", "name_like_word", "problem_place",
    # classroom transcripts (pipeline.synthetic.classroom)
    "filler", "endearment", "maths_word", "reference", "initial", "asr", "modal_may",
    # hard-negative turns of tutoring sessions (pipeline.synthetic.generator.hard_negative_turns)
    "typo",
)


@dataclass
class Problem:
    kind: str
    anchor: str | None  # template rendered into the dialogue's anchor text
    ctx: dict[str, list[Seg]]
    lines: list[Line]
    characters: list[str] = field(default_factory=list)


def t(text: object, kind: str) -> list[Seg]:
    return [lit(str(text), kind)]


def num(n: int, fmt: str = "{}") -> list[Seg]:
    """A number in a calculation: ``long_number`` from four digits up, ``calculation`` below."""
    return t(fmt.format(n), "long_number" if abs(n) >= 1000 else "calculation")


def _char(name: str) -> list[Seg]:
    return [pii(name, "NAME", "problem_character")]


def _group(n: int) -> str:
    return f"{n:,}"


def _frac(f: Fraction) -> str:
    return f"{f.numerator}/{f.denominator}" if f.denominator != 1 else str(f.numerator)


ITEMS = ("apples", "stickers", "marbles", "cookies", "pencils", "baseball cards", "cupcakes", "books",
         "seashells", "crayons", "tickets", "oranges", "beads", "stamps", "trading cards", "balloons")


def share_items(rng: random.Random, names: list[str]) -> Problem:
    a, b = names[:2]
    n = rng.randint(12, 90)
    k = rng.randint(2, n - 3)
    ctx = {"A": _char(a), "B": _char(b), "n": t(n, "calculation"), "k": t(k, "calculation"),
           "r": t(n - k, "calculation"), "wrong": t(n + k, "calculation"), "items": [lit(rng.choice(ITEMS))]}
    anchor = "{A} has {n} {items}. {A} gives {k} of them to {B}. How many {items} does {A} have left?"
    lines = [
        ("T", "{=Let's read the problem together|Let's look at this one|Here's the problem}: if {A} has {n} {items} and gives {k} to {B}, how many are left?"),
        ("S", "{=do we|do i|should i} {=subtract|add|minus}?"),
        ("T", "{=Think about it|Good question}: is {A} getting more {items} or fewer?"),
        ("S", "{=fewer|less} {=bc|because} {A} gives {=some|them} to {B}"),
        ("T", "{=Right|Exactly}. So what is {n} - {k}?"),
        ("S", "{=is it |}{wrong}{=?|}"),
        ("T", "{=Not quite|Close}. {n} minus {k}, not plus."),
        ("S", "{=oh |oh wait |}{r}"),
        ("T", "{=Yes|Correct}! So {A} has {r} {items} left{=.| and {B} has {k}.}"),
    ]
    return Problem("share_items", anchor, ctx, lines, [a, b])


def fraction_add(rng: random.Random, names: list[str]) -> Problem:
    a, b = names[:2]
    d1, d2 = rng.choice(((4, 8), (3, 6), (2, 5), (3, 4), (6, 12), (5, 10), (2, 3), (4, 6), (3, 5), (8, 4)))
    while True:
        n1, n2 = rng.randint(1, d1 - 1), rng.randint(1, d2 - 1)
        total = Fraction(n1, d1) + Fraction(n2, d2)
        if total.denominator != 1:
            break
    lcd = d1 * d2 // _gcd(d1, d2)
    e1, e2 = f"{n1 * (lcd // d1)}/{lcd}", f"{n2 * (lcd // d2)}/{lcd}"
    ctx = {"A": _char(a), "B": _char(b), "f1": t(f"{n1}/{d1}", "fraction"), "f2": t(f"{n2}/{d2}", "fraction"),
           "lcd": t(lcd, "calculation"), "e1": t(e1, "fraction"), "e2": t(e2, "fraction"),
           "sum": t(_frac(total), "fraction"), "wrong": t(f"{n1 + n2}/{d1 + d2}", "fraction"),
           "thing": [lit(rng.choice(("pizza", "pie", "cake", "chocolate bar", "lasagna", "garden")))]}
    anchor = "{A} ate {f1} of a {thing} and {B} ate {f2} of the same {thing}. How much of the {thing} did they eat altogether?"
    lines = [
        ("T", "{A} ate {f1} of the {thing} and {B} ate {f2}. How much did they eat {=together|in all}?"),
        ("S", "{wrong}"),
        ("T", "{=Hmm|Careful}, can we add the denominators? What's a common denominator for {f1} and {f2}?"),
        ("S", "{=is it |}{lcd}"),
        ("T", "{=Yes|Good}! So {f1} = {e1} and {f2} = {e2}. Now add them."),
        ("S", "{sum}{=| ?|!}"),
        ("T", "{=Exactly|That's it}, {A} and {B} ate {sum} of the {thing}."),
    ]
    return Problem("fraction_add", anchor, ctx, lines, [a, b])


def _gcd(x: int, y: int) -> int:
    while y:
        x, y = y, x % y
    return x


def long_division(rng: random.Random, names: list[str]) -> Problem:
    d = rng.choice((2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 25))
    digits = rng.randint(6, 10)
    big = rng.randint(10 ** (digits - 1), 10**digits - 1)
    big -= big % d
    q = big // d
    small_d = rng.randint(1000, 9999)
    small = rng.choice((3, 7, 9, 11, 13))
    ctx = {"big": t(big, "long_number"), "d": t(d, "calculation"), "q": num(q),
           "bigc": t(_group(big), "long_number"), "sd": t(small_d, "long_number"), "sm": t(small, "calculation"),
           "sq": num(small_d // small), "sr": t(small_d % small, "calculation"),
           "expr": t(f"{small_d} / {small}", "long_number")}
    lines = [
        ("T", "{=Let's warm up|Warm-up question|First one}: divide {big} by {d}."),
        ("S", "{=thats|that's} a {=big|long|huge} number{= lol|}"),
        ("T", "{=It is|Yes}! Start from the left, one digit at a time. How many times does {d} go into the first digits?"),
        ("S", "{=i got |I got |is it |}{q}"),
        ("T", "{=Great|Correct}, {big} ÷ {d} = {q}. {=Now|Next} try {expr}."),
        ("S", "{sq} remainder {sr}"),
        ("T", "{=Yes|Perfect}: {sd} = {sm} × {sq} + {sr}."),
    ]
    return Problem("long_division", None, ctx, lines)


def multiply(rng: random.Random, names: list[str]) -> Problem:
    a, b = rng.choice(((1024, 768), (1920, 1080), (256, 256), (365, 24), (1440, 7))) if rng.random() < 0.3 else (
        rng.randint(100, 9999), rng.randint(12, 999))
    op = rng.choice(("*", "x", "×", "times"))
    ctx = {"a": num(a), "b": num(b), "p": num(a * b), "pc": num(a * b, "{:,}"),
           "expr": t(f"{a} {op} {b}", "long_number" if a >= 1000 else "calculation"),
           "part": num(a * (b % 10)), "wrong": num(a * b + rng.choice((-10, 10, 100, -100)))}
    lines = [
        ("T", "What is {expr}?"),
        ("S", "{=can i use a calculator|do i have to do it by hand|ugh}{=?|}"),
        ("T", "Let's do it by hand first. Multiply {a} by the ones digit of {b} first."),
        ("S", "{part}"),
        ("T", "{=Good|Nice}. Now keep going and add the partial products."),
        ("S", "{=i got |}{wrong}"),
        ("T", "Close! Check your carrying{=.|, the answer is a little different.}"),
        ("S", "{=oh |}{pc}"),
        ("T", "{=Yes|Correct}, {expr} = {p}."),
    ]
    return Problem("multiply", None, ctx, lines)


def linear_equation(rng: random.Random, names: list[str]) -> Problem:
    a, x, b = rng.randint(2, 12), rng.randint(-9, 15), rng.randint(1, 40)
    c = a * x + b
    var = rng.choice(("x", "x", "y", "n", "m"))
    ctx = {"eq": t(f"{a}{var} + {b} = {c}", "equation"), "step": t(f"{a}{var} = {c - b}", "equation"),
           "sol": t(f"{var} = {x}", "equation"), "b": t(b, "calculation"), "a": t(a, "calculation"),
           "x": t(x, "calculation"), "check": t(f"{a}({x}) + {b} = {c}", "equation"),
           "slope": t(f"y = {a}x + {b}", "equation")}
    lines = [
        ("T", "{=Let's solve|Solve|Next one, solve} {eq}."),
        ("S", "{=um |}{=do i|should i} {=subtract|divide} first{=?|}"),
        ("T", "{=Yes|Right}, subtract {b} from both sides. What do you get?"),
        ("S", "{step}"),
        ("T", "{=Good|Great}! Now divide both sides by {a}."),
        ("S", "{sol}"),
        ("T", "{=Let's check|Check it}: {check}. {=It works|Correct}!"),
        ("T", "{=This is the same idea as|Later we'll graph} {slope}."),
    ]
    return Problem("linear_equation", None, ctx, lines)


def elapsed_time(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    h1, m1 = rng.randint(1, 10), rng.choice((0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55))
    dur = rng.choice((35, 45, 50, 75, 85, 95, 110, 125, 140))
    h2, m2 = h1 + (m1 + dur) // 60, (m1 + dur) % 60
    ctx = {"A": _char(a), "t1": t(f"{h1}:{m1:02d}", "time"), "t2": t(f"{h2}:{m2:02d}", "time"),
           "dur": t(dur, "calculation"), "hrs": t(f"{dur // 60} hour{'s' if dur >= 120 else ''} and {dur % 60} minutes", "time"),
           "what": [lit(rng.choice(("bus", "train", "soccer practice", "movie", "piano lesson", "road trip")))],
           "ampm": [lit(rng.choice(("", " p.m.", " pm", " am")))]}
    anchor = "{A:poss} {what} starts at {t1}{ampm} and ends at {t2}{ampm}. How long does it last?"
    lines = [
        ("T", "{A:poss} {what} starts at {t1} and ends at {t2}. How long is that?"),
        ("S", "{=is it |}{hrs}"),
        ("T", "{=Yes|Correct}! How many minutes is that in total?"),
        ("S", "{dur}{= minutes| min|}"),
        ("T", "{=Great|Nice}. {=Counting on from|Start at} {t1}, {=jump to the next hour first|add the minutes}."),
    ]
    return Problem("elapsed_time", anchor, ctx, lines, [a])


def calendar_days(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    m = rng.randint(1, 12)
    d1 = rng.randint(1, 12)
    d2 = d1 + rng.randint(5, 16)
    month = MONTHS[m - 1]
    y = rng.randint(1990, 2030)
    ctx = {"A": _char(a), "D1": t(f"{month} {d1}", "problem_date"), "D2": t(f"{month} {d2}", "problem_date"),
           "n": t(d2 - d1, "calculation"), "n1": t(d2 - d1 + 1, "calculation"),
           "N1": t(f"{m}/{d1}/{y}", "problem_date"), "N2": t(f"{m}/{d2}/{y}", "problem_date"),
           "task": [lit(rng.choice(("reading a book", "a science project", "saving money", "practicing piano", "a puzzle")))]}
    anchor = "{A} started {task} on {D1} and finished on {D2}. How many days did it take?"
    lines = [
        ("T", "{A} started {task} on {D1} and finished on {D2}. How many days is that?"),
        ("S", "{n}"),
        ("T", "{=Good|Okay}. If we count both {D1} and {D2}, how many days?"),
        ("S", "{=oh |}{n1}"),
        ("T", "{=Right|Yes}. On a calendar that's {N1} to {N2}."),
    ]
    return Problem("calendar_days", anchor, ctx, lines, [a])


def money_change(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    q = rng.randint(2, 9)
    cents = rng.choice((25, 50, 75, 99, 15, 35, 49))
    price = rng.randint(1, 12) * 100 + cents  # at most 9 x $12.99 < $200
    bill = next(b for b in (2000, 5000, 10000, 20000) if b > q * price)
    total, change = q * price, bill - q * price
    money = lambda c: f"${c // 100}.{c % 100:02d}"  # noqa: E731
    ctx = {"A": _char(a), "q": t(q, "calculation"), "price": t(money(price), "money"), "bill": t(f"${bill // 100}", "money"),
           "total": t(money(total), "money"), "change": t(money(change), "money"),
           "thing": [lit(rng.choice(("notebooks", "movie tickets", "tacos", "comic books", "bags of chips", "bracelets")))],
           "cents": t(f"{cents} cents", "money")}
    anchor = "{A} buys {q} {thing} for {price} each and pays with a {bill} bill. How much change does {A} get?"
    lines = [
        ("T", "{A} buys {q} {thing} at {price} each and pays with {bill}. What's the total first?"),
        ("S", "{total}"),
        ("T", "{=Yes|Good}. Now how much change from {bill}?"),
        ("S", "{=is it |}{change}{=?|}"),
        ("T", "{=Correct|Exactly}! {=Remember|Tip}: line up the decimal points."),
    ]
    return Problem("money_change", anchor, ctx, lines, [a])


def rectangle_area(rng: random.Random, names: list[str]) -> Problem:
    unit = rng.choice(("cm", "m", "in", "ft", "meters", "inches", "feet", "yd"))
    length, w = rng.randint(3, 48), rng.randint(2, 30)
    ctx = {"l": t(f"{length} {unit}", "measurement"), "w": t(f"{w} {unit}", "measurement"),
           "area": t(f"{length * w} square {unit}" if rng.random() < 0.5 else f"{length * w} {unit}²", "measurement"),
           "per": t(f"{2 * (length + w)} {unit}", "measurement"), "expr": t(f"{length} x {w}", "calculation"),
           "ans": t(length * w, "calculation"), "wrong": t(f"{length + w} {unit}", "measurement"),
           "thing": [lit(rng.choice(("patio", "garden", "rug", "poster", "classroom floor", "pool cover")))]}
    anchor = "A rectangular {thing} is {l} long and {w} wide. What is its area?"
    lines = [
        ("T", "The {thing} is {l} by {w}. Use the area formula."),
        ("S", "{wrong}"),
        ("T", "{=That's the|Hmm, that looks like} adding. Area is length times width: {expr}."),
        ("S", "{ans}"),
        ("T", "{=Right|Yes}, the area is {area}. And the perimeter would be {per}."),
    ]
    return Problem("rectangle_area", anchor, ctx, lines)


def population_years(rng: random.Random, names: list[str]) -> Problem:
    y1 = rng.randint(1950, 2005)
    y2 = y1 + rng.randint(5, 30)
    p1 = rng.randint(1200, 98000)
    p2 = p1 + rng.randint(300, 40000)
    ctx = {"y1": t(y1, "year"), "y2": t(y2, "year"), "p1": t(_group(p1), "long_number"), "p2": t(_group(p2), "long_number"),
           "diff": num(p2 - p1, "{:,}"), "yrs": t(y2 - y1, "calculation"), "raw": num(p2 - p1)}
    anchor = "In {y1} a town had {p1} people. In {y2} it had {p2}. By how much did it grow?"
    lines = [
        ("T", "In {y1} the town had {p1} people and in {y2} it had {p2}. How much did it grow?"),
        ("S", "{raw}"),
        ("T", "{=Yes|Correct}, {diff} people in {yrs} years."),
        ("S", "{=how do|how would} we {=get|find} it per year{=?|}"),
        ("T", "{=Good thinking|Great question}! Divide {diff} by {yrs}."),
    ]
    return Problem("population_years", anchor, ctx, lines)


def place_value(rng: random.Random, names: list[str]) -> Problem:
    n = rng.choice((1234567890, 9876543210, 4815162342, 3141592653, 1029384756)) if rng.random() < 0.5 else rng.randint(10**7, 10**10)
    digits = str(n)
    pos = rng.randint(1, min(6, len(digits) - 1))
    place = ("ones", "tens", "hundreds", "thousands", "ten thousands", "hundred thousands", "millions")[pos]
    ctx = {"n": t(n, "pick_number"), "nc": t(_group(n), "pick_number"), "digit": t(digits[-1 - pos], "calculation"),
           "place": [lit(place)], "round": num(round(n, -3), "{:,}"),
           "len": t(len(digits), "calculation")}
    lines = [
        ("T", "{=Pick a number|Let's use a big number}, {=like|say} {n}."),
        ("S", "{=ok |}{n}"),
        ("T", "Which digit is in the {place} place of {nc}?"),
        ("S", "{digit}"),
        ("T", "{=Yes|Right}! How many digits does it have?"),
        ("S", "{len}"),
        ("T", "{=Good|Nice}. Rounded to the nearest thousand it is {round}."),
    ]
    return Problem("place_value", None, ctx, lines)


def percent_of(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    p = rng.choice((10, 15, 20, 25, 30, 40, 50, 75))
    base = rng.choice((40, 60, 80, 120, 200, 240, 360, 500, 1200))
    ctx = {"A": _char(a), "p": t(f"{p}%", "percent"), "base": t(f"${base}", "money"),
           "dec": t(p / 100, "calculation"), "ans": t(f"${base * p // 100}", "money"),
           "sale": t(f"${base - base * p // 100}", "money")}
    anchor = "{A} wants a jacket that costs {base}. It is {p} off. How much does {A} save?"
    lines = [
        ("T", "The jacket {A} wants costs {base} and it's {p} off. How much does {A} save?"),
        ("S", "{=idk how to do percents|what do i multiply by|is it {ans}}"),
        ("T", "{p} is the same as {dec}. Multiply {base} by {dec}."),
        ("S", "{ans}"),
        ("T", "{=Exactly|Yes}! So the sale price is {sale}."),
    ]
    return Problem("percent_of", anchor, ctx, lines, [a])


def ages_problem(rng: random.Random, names: list[str]) -> Problem:
    a, b = names[:2]
    x, d = rng.randint(5, 16), rng.randint(2, 9)
    ctx = {"A": _char(a), "B": _char(b), "x": t(x, "problem_age"), "d": t(d, "calculation"),
           "y": t(x + d, "problem_age"), "sum": t(2 * x + d, "calculation"),
           "rel": [lit(rng.choice(("older", "older")))]}
    anchor = "{A} is {x} years old. {B} is {d} years {rel} than {A}. How old is {B}? What is the sum of their ages?"
    lines = [
        ("T", "{A} is {x} years old and {B} is {d} years {rel}. How old is {B}?"),
        ("S", "{y}"),
        ("T", "{=Good|Right}! And {=the sum of their ages|their ages added together}?"),
        ("S", "{=um |}{sum}"),
        ("T", "{=Perfect|Correct}: {x} + {y} = {sum}."),
    ]
    return Problem("ages_problem", anchor, ctx, lines, [a, b])


def mean_median(rng: random.Random, names: list[str]) -> Problem:
    k = rng.choice((4, 5, 6))
    vals = sorted(rng.randint(5, 99) for _ in range(k))
    total = sum(vals)
    ctx = {"vals": t(", ".join(map(str, vals)), "number_list"), "total": t(total, "calculation"),
           "k": t(k, "calculation"), "mean": t(round(total / k, 2), "calculation"),
           "median": t(vals[k // 2] if k % 2 else (vals[k // 2 - 1] + vals[k // 2]) / 2, "calculation")}
    lines = [
        ("T", "Find the mean of these {=scores|numbers|test scores}: {vals}."),
        ("S", "{=add them up|add them} {=first|}?"),
        ("T", "Yes, add them and divide by {k}."),
        ("S", "{total} / {k} = {mean}"),
        ("T", "{=Great|Nice}! And the median?"),
        ("S", "{median}"),
    ]
    return Problem("mean_median", None, ctx, lines)


def slope_points(rng: random.Random, names: list[str]) -> Problem:
    x1, y1 = rng.randint(-5, 5), rng.randint(-5, 9)
    m = rng.randint(-4, 5) or 2
    x2 = x1 + rng.randint(1, 6)
    y2 = y1 + m * (x2 - x1)
    b = y1 - m * x1
    ctx = {"p1": t(f"({x1}, {y1})", "coordinate"), "p2": t(f"({x2}, {y2})", "coordinate"),
           "rise": t(f"{y2} - {y1}", "calculation"), "run": t(f"{x2} - {x1}", "calculation"),
           "m": t(m, "calculation"), "line": t(f"y = {m}x + {b}" if b >= 0 else f"y = {m}x - {-b}", "equation")}
    lines = [
        ("T", "Find the slope of the line through {p1} and {p2}."),
        ("S", "{=rise over run?|is it y2 - y1 over x2 - x1}"),
        ("T", "{=Yes|Right}: ({rise}) / ({run}). What do you get?"),
        ("S", "{m}"),
        ("T", "{=Correct|Great}, so the line is {line}."),
    ]
    return Problem("slope_points", None, ctx, lines)


def famous_theorem(rng: random.Random, names: list[str]) -> Problem:
    a, b = rng.choice(((3, 4), (5, 12), (6, 8), (8, 15), (9, 12)))
    c = int((a * a + b * b) ** 0.5)
    who = rng.choice(("Pythagoras", "Pythagoras", "Euclid"))
    ctx = {"who": t(who, "famous_name"), "f": t("a^2 + b^2 = c^2", "equation"), "a": t(a, "calculation"),
           "b": t(b, "calculation"), "c": t(c, "calculation"), "sq": t(f"{a * a} + {b * b} = {c * c}", "equation"),
           "fib": t("1, 1, 2, 3, 5, 8, 13, 21", "number_list"), "fibo": t("Fibonacci", "famous_name")}
    lines = [
        ("T", "Have you heard of {who}? {=The theorem says|Remember} {f}."),
        ("S", "{=kinda|yeah|no}{=?|}"),
        ("T", "If the legs are {a} and {b}, what's the hypotenuse?"),
        ("S", "{=is it |}{c}"),
        ("T", "{=Yes|Correct}: {sq}."),
        ("T", "{=Fun fact|Bonus}: the {fibo} numbers {fib} show up in nature too."),
    ]
    return Problem("famous_theorem", None, ctx, lines)


def speed_distance(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    h = rng.choice((2, 3, 4, 1.5, 2.5))
    v = rng.choice((40, 45, 50, 55, 60, 65))
    unit = rng.choice(("miles", "km", "kilometers"))
    ctx = {"A": _char(a), "d": t(f"{int(v * h) if v * h == int(v * h) else v * h} {unit}", "measurement"),
           "h": t(f"{h} hours", "measurement"), "v": t(f"{v} {unit} per hour", "measurement"),
           "vn": t(v, "calculation")}
    anchor = "{A} drives {d} in {h}. What is the average speed?"
    lines = [
        ("T", "{A} {=drives|rides|travels} {d} in {h}. What's the speed?"),
        ("S", "{=divide?|distance over time}"),
        ("T", "{=Yes|Exactly}. So?"),
        ("S", "{vn}"),
        ("T", "{=Right|Yes}, {v}."),
    ]
    return Problem("speed_distance", anchor, ctx, lines, [a])


PLACES = ("Austin", "Dallas", "Chicago", "Denver", "Boston", "Miami", "Phoenix", "Seattle", "Atlanta",
          "Houston", "Orlando", "Portland", "San Diego", "Nashville", "Memphis", "Tulsa", "Omaha", "Reno")


def road_trip(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    p1, p2 = rng.sample(PLACES, 2)
    miles = rng.randint(120, 980)
    mpg = rng.choice((20, 24, 25, 28, 30, 32))
    ctx = {"A": _char(a), "P1": t(p1, "problem_place"), "P2": t(p2, "problem_place"),
           "d": t(f"{miles} miles", "measurement"), "mpg": t(f"{mpg} miles per gallon", "measurement"),
           "gal": t(round(miles / mpg, 1), "calculation"), "miles": t(miles, "calculation"), "mpgn": t(mpg, "calculation")}
    anchor = "{A:poss} family drives from {P1} to {P2}, which is {d}. Their car gets {mpg}. How many gallons do they need?"
    lines = [
        ("T", "{A:poss} family drives {d} from {P1} to {P2}. Their car gets {mpg}. How much gas?"),
        ("S", "{=multiply?|divide?|do we divide {miles} by {mpgn}}"),
        ("T", "{=Right|Yes}, divide {miles} by {mpgn}."),
        ("S", "{gal}"),
        ("T", "{=About|So about} {gal} gallons. {=Nice estimating|Good}!"),
    ]
    return Problem("road_trip", anchor, ctx, lines, [a])


def born_in_year(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    y = rng.randint(1985, 2016)
    later = y + rng.randint(9, 40)
    m, d = rng.randint(1, 12), rng.randint(1, 28)
    ctx = {"A": _char(a), "y": t(y, "problem_date"), "later": t(later, "year"), "age": t(later - y, "problem_age"),
           "bday": t(f"{MONTHS[m - 1]} {d}", "problem_date"), "bdayn": t(f"{m}/{d}/{y}", "problem_date")}
    anchor = "{A} was born on {bday}, {y}. How old will {A} be on {A:poss} birthday in {later}?"
    lines = [
        ("T", "{A} was born on {bdayn}. How old will {A} be on {A:poss} birthday in {later}?"),
        ("S", "{=subtract?|{later} - {y}}"),
        ("T", "{=Yes|Exactly}, {later} minus {y}."),
        ("S", "{age}"),
        ("T", "{=Right|Correct}, {A} turns {age} on {bday}, {later}."),
    ]
    return Problem("born_in_year", anchor, ctx, lines, [a])


def divide_fractions(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    n1, d1 = rng.choice(((3, 4), (2, 3), (5, 6), (7, 8), (1, 2), (4, 5)))
    n2, d2 = rng.choice(((1, 2), (1, 3), (1, 4), (1, 8), (2, 3), (3, 4)))
    q = Fraction(n1, d1) / Fraction(n2, d2)
    whole, rem = divmod(q.numerator, q.denominator)
    mixed = f"{whole} {rem}/{q.denominator}" if whole and rem else _frac(q)
    ctx = {"A": _char(a), "f1": t(f"{n1}/{d1}", "fraction"), "f2": t(f"{n2}/{d2}", "fraction"),
           "flip": t(f"{d2}/{n2}", "fraction"), "prod": t(f"{n1 * d2}/{d1 * n2}", "fraction"),
           "mixed": t(mixed, "fraction"), "unit": [lit(rng.choice(("cup", "pound", "yard", "liter")))]}
    anchor = "{A} has {f1} of a {unit} of trail mix and puts {f2} {unit} in each bag. How many bags can {A} fill?"
    lines = [
        ("T", "{A} has {f1} {unit} of trail mix and each bag gets {f2} {unit}. How many bags?"),
        ("S", "{=do we divide|is it {f1} divided by {f2}}{=?|}"),
        ("T", "Yes! Remember: keep, change, flip. So {f1} ÷ {f2} becomes {f1} × {flip}, which is {prod}. "
              "{=Can you simplify that?|What is that as a mixed number?}"),
        ("S", "{mixed}"),
        ("T", "{=Great|Perfect}, {A} can fill {mixed} bags."),
    ]
    return Problem("divide_fractions", anchor, ctx, lines, [a])


def probability(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    r, b = rng.randint(2, 9), rng.randint(2, 9)
    colour1, colour2 = rng.sample(("red", "blue", "green", "yellow", "purple"), 2)
    total = r + b
    ctx = {"A": _char(a), "r": t(r, "calculation"), "b": t(b, "calculation"), "tot": t(total, "calculation"),
           "p": t(f"{r}/{total}", "fraction"), "pct": t(f"{round(100 * r / total)}%", "percent"),
           "c1": [lit(colour1)], "c2": [lit(colour2)]}
    anchor = "{A:poss} bag has {r} {c1} marbles and {b} {c2} marbles. What is the probability of picking a {c1} one?"
    lines = [
        ("T", "{A:poss} bag has {r} {c1} and {b} {c2} marbles. What's the chance of a {c1} one?"),
        ("S", "{={r} out of {tot}|{p}|{r}/{b}}"),
        ("T", "{=Careful|Think}: how many marbles are there in total?"),
        ("S", "{tot}"),
        ("T", "{=Right|Yes}! So it's {p}, about {pct}."),
    ]
    return Problem("probability", anchor, ctx, lines, [a])


def order_of_operations(rng: random.Random, names: list[str]) -> Problem:
    x, y, z, w = rng.randint(2, 9), rng.randint(2, 9), rng.randint(2, 6), rng.randint(1, 5)
    value = x + y * (z - w) if z > w else x + y * (w - z)
    expr = f"{x} + {y} × ({z} - {w})" if z > w else f"{x} + {y} × ({w} - {z})"
    wrong = (x + y) * abs(z - w)
    ctx = {"expr": t(expr, "equation"), "val": t(value, "calculation"),
           "wrong": t(wrong if wrong != value else value + y, "calculation"), "pow": t(rng.choice(("2^10 = 1024", "3^4 = 81", "10^6 = 1,000,000", "5^3 = 125")), "equation")}
    lines = [
        ("T", "What is {expr}?"),
        ("S", "{wrong}"),
        ("T", "{=Remember|Don't forget} PEMDAS: parentheses first, then multiply, then add."),
        ("S", "{=oh |oh so |}{val}"),
        ("T", "{=Yes|Correct}! {=And exponents come before multiplying|Quick exponent check}: {pow}."),
    ]
    return Problem("order_of_operations", None, ctx, lines)


def daily_schedule(rng: random.Random, names: list[str]) -> Problem:
    a = names[0]
    h, m = rng.randint(5, 7), rng.choice((0, 10, 15, 20, 30, 40, 45, 50))
    mins = rng.choice((35, 50, 65, 80, 95))
    eh, em = h + (m + mins) // 60, (m + mins) % 60
    ctx = {"A": _char(a), "t1": t(f"{h}:{m:02d} a.m.", "time"), "t2": t(f"{eh}:{em:02d}", "time"),
           "mins": t(f"{mins} minutes", "time"), "n": t(mins, "calculation")}
    anchor = "{A} wakes up at {t1} and gets to school {mins} later. What time does {A} get to school?"
    lines = [
        ("T", "{A} wakes up at {t1} and needs {mins} to get to school. When does {A} arrive?"),
        ("S", "{=is it |}{t2}"),
        ("T", "{=Correct|Yes}! How did you add the {n} minutes?"),
        ("S", "{=i counted up to the hour first|i added 60 then took some away|idk i just did it}"),
    ]
    return Problem("daily_schedule", anchor, ctx, lines, [a])


def volume_box(rng: random.Random, names: list[str]) -> Problem:
    unit = rng.choice(("in", "cm", "ft"))
    x, y, z = rng.randint(2, 15), rng.randint(2, 12), rng.randint(2, 10)
    ctx = {"dims": t(f"{x} {unit} × {y} {unit} × {z} {unit}", "measurement"), "v": t(f"{x * y * z} cubic {unit}", "measurement"),
           "base": t(x * y, "calculation"), "z": t(z, "calculation"), "vn": t(x * y * z, "calculation")}
    lines = [
        ("T", "A box is {dims}. What's its volume?"),
        ("S", "{=multiply all of them?|length times width times height}"),
        ("T", "{=Yes|Right}. The base is {base}, times {z}."),
        ("S", "{vn}"),
        ("T", "{=Perfect|Great}: {v}."),
    ]
    return Problem("volume_box", None, ctx, lines)


def temperature_change(rng: random.Random, names: list[str]) -> Problem:
    lo, hi = rng.randint(-15, 5), rng.randint(6, 40)
    scale = rng.choice(("°F", "°C", " degrees"))
    ctx = {"lo": t(f"{lo}{scale}", "measurement"), "hi": t(f"{hi}{scale}", "measurement"),
           "diff": t(hi - lo, "calculation"), "expr": t(f"{hi} - ({lo}) = {hi - lo}", "equation"),
           "wrong": t(hi + lo, "calculation")}
    lines = [
        ("T", "In the morning it was {lo} and by noon it was {hi}. How much did it rise?"),
        ("S", "{wrong}"),
        ("T", "Subtracting a negative is like adding: {expr}."),
        ("S", "{=oh ok|ohh} {diff}"),
    ]
    return Problem("temperature_change", None, ctx, lines)


PROBLEMS: tuple[Callable[[random.Random, list[str]], Problem], ...] = (
    share_items, fraction_add, long_division, multiply, linear_equation, elapsed_time, calendar_days,
    money_change, rectangle_area, population_years, place_value, percent_of, ages_problem, mean_median,
    slope_points, famous_theorem, speed_distance, road_trip, born_in_year, divide_fractions, probability,
    order_of_operations, daily_schedule, volume_box, temperature_change,
)


def problem_names(pools: Pools, rng: random.Random, exclude: set[str], k: int = 2) -> list[str]:
    """Textbook character names, distinct from everyone taking part in the dialogue."""
    out: list[str] = []
    while len(out) < k:
        name = rng.choice(pools.problem_names)
        if name not in exclude and name not in out:
            out.append(name)
    return out
