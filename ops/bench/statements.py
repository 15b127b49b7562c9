"""Realistic synthetic text for the retrieval benchmark: self-contained statements about
people (places, work, family, food, sport, pets, plans, dates) and natural questions about
them, both drawn from the same vocabulary by a seeded RNG.

Questions are written the way a user asks ("Where does Maya work?"), never as a pool
statement, so a query is near some statements without repeating any of them.
"""

from __future__ import annotations

import random
from collections.abc import Callable

_FIRST = (
    "Maya", "Liam", "Sofia", "Noah", "Aisha", "Lucas", "Elena", "Omar", "Hannah", "Mateo",
    "Priya", "Jonas", "Chloe", "Kenji", "Fatima", "Daniel", "Ines", "Tomás", "Yuki", "Grace",
    "Ravi", "Clara", "Felix", "Amara", "Oscar", "Leila", "Hugo", "Nadia", "Samuel", "Zoe",
    "Arjun", "Mila", "Victor", "Sara", "Ethan", "Lena", "Diego", "Anya", "Caleb", "Rosa",
)  # fmt: skip
_LAST = (
    "Patel", "Novak", "Garcia", "Kim", "Okafor", "Berg", "Rossi", "Tanaka", "Silva", "Dubois",
    "Müller", "Haddad", "Larsen", "Costa", "Ivanova", "Mensah", "Walsh", "Sato", "Reyes", "Ahmed",
)  # fmt: skip
_CITIES = (
    "Lisbon", "Berlin", "Toronto", "Osaka", "Nairobi", "Madrid", "Seattle", "Melbourne",
    "Prague", "Austin", "Dublin", "Oslo", "Bogotá", "Montreal", "Edinburgh", "Vienna", "Lagos",
    "Porto", "Kyoto", "Denver", "Helsinki", "Marseille", "Boston", "Cape Town", "Munich",
)  # fmt: skip
_COUNTRIES = (
    "Japan", "Portugal", "Peru", "Iceland", "Vietnam", "Morocco", "Norway", "Mexico", "Greece",
    "Kenya", "New Zealand", "Italy", "Chile", "Thailand", "Scotland", "Canada", "Georgia",
)  # fmt: skip
_FOODS = (
    "ramen", "paella", "sourdough pizza", "green curry", "tacos al pastor", "mushroom risotto",
    "falafel wraps", "lasagna", "pho", "dumplings", "shakshuka", "grilled sardines", "pad thai",
    "lentil soup", "sushi", "banana bread", "jollof rice", "pierogi", "bibimbap", "moussaka",
)  # fmt: skip
_DRINKS = ("oat milk lattes", "green tea", "espresso", "chai", "cold brew", "black coffee",
           "matcha", "hot chocolate", "rooibos tea", "flat whites")  # fmt: skip
_SPORTS = ("tennis", "basketball", "badminton", "volleyball", "squash", "football", "padel",
           "table tennis", "ultimate frisbee", "golf", "chess", "climbing")  # fmt: skip
_PETS = ("dog", "cat", "rabbit", "parrot", "tortoise", "hamster", "beagle", "kitten")
_PET_NAMES = ("Biscuit", "Luna", "Pepper", "Milo", "Nala", "Otis", "Mochi", "Ziggy", "Olive",
              "Rocket", "Juniper", "Waffles")  # fmt: skip
_JOBS = (
    "nurse", "data engineer", "architect", "chef", "physiotherapist", "high school teacher",
    "product designer", "lawyer", "pharmacist", "electrician", "journalist", "pilot",
    "veterinarian", "accountant", "software developer", "photographer", "paramedic",
)  # fmt: skip
_COMPANIES = ("a logistics startup", "the city hospital", "a design agency", "a solar company",
              "the public library", "a bakery chain", "a bank", "a games studio",
              "a biotech lab", "the local newspaper", "an airline", "a law firm")  # fmt: skip
_LANGUAGES = ("Japanese", "Spanish", "Portuguese", "German", "Korean", "Italian", "Swahili",
              "French", "Mandarin", "Greek", "Arabic", "Dutch")  # fmt: skip
_INSTRUMENTS = ("piano", "guitar", "violin", "drums", "cello", "saxophone", "ukulele", "flute")
_BOOKS = ("Project Hail Mary", "The Midnight Library", "Sapiens", "Educated", "Circe",
          "The Overstory", "Atomic Habits", "Piranesi", "Dune", "Klara and the Sun")  # fmt: skip
_HOBBIES = ("pottery", "birdwatching", "trail running", "baking sourdough", "watercolour painting",
            "rock climbing", "gardening", "salsa dancing", "film photography", "woodworking",
            "knitting", "open water swimming", "board games", "kayaking")  # fmt: skip
_RELATIONS = ("sister", "brother", "mother", "father", "cousin", "best friend", "partner",
              "grandmother", "uncle", "roommate")  # fmt: skip
_EVENTS = ("marathon", "half marathon", "triathlon", "cycling race", "chess tournament",
           "10k run", "swimming gala", "climbing competition")  # fmt: skip
_ALLERGENS = ("peanuts", "shellfish", "gluten", "lactose", "cats", "pollen", "sesame")
_GOALS = ("run a marathon", "learn to sail", "buy a flat", "finish a novel", "visit Antarctica",
          "get a pilot licence", "start a podcast", "learn to code", "save for a house",
          "hike the Camino de Santiago", "open a bakery", "get promoted")  # fmt: skip
_MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
           "September", "October", "November", "December")  # fmt: skip
_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")

Phrase = Callable[[random.Random], str]


def _name(r: random.Random) -> str:
    return f"{r.choice(_FIRST)} {r.choice(_LAST)}"


def _date(r: random.Random) -> str:
    return f"{r.randint(1, 28)} {r.choice(_MONTHS)} {r.randint(2019, 2025)}"


def _when(r: random.Random) -> str:
    return f"{r.choice(_MONTHS)} {r.randint(2019, 2025)}"


_STATEMENTS: tuple[Phrase, ...] = (
    lambda r: f"{_name(r)} moved to {r.choice(_CITIES)} in {_when(r)}.",
    lambda r: f"{_name(r)} loves {r.choice(_FOODS)} and cooks it every {r.choice(_DAYS)}.",
    lambda r: (
        f"{_name(r)}'s {r.choice(_RELATIONS)} {r.choice(_FIRST)} works as a "
        f"{r.choice(_JOBS)} in {r.choice(_CITIES)}."
    ),
    lambda r: (
        f"{_name(r)} plays {r.choice(_SPORTS)} with {r.choice(_FIRST)} every "
        f"{r.choice(_DAYS)} evening."
    ),
    lambda r: f"{_name(r)} prefers {r.choice(_DRINKS)} over {r.choice(_DRINKS)} in the morning.",
    lambda r: (
        f"{_name(r)} is training for a {r.choice(_EVENTS)} in {r.choice(_CITIES)} in {_when(r)}."
    ),
    lambda r: f"{_name(r)} adopted a {r.choice(_PETS)} named {r.choice(_PET_NAMES)} in {_when(r)}.",
    lambda r: f"{_name(r)} is allergic to {r.choice(_ALLERGENS)} and asks about it at restaurants.",
    lambda r: (
        f"{_name(r)} travelled to {r.choice(_COUNTRIES)} with their "
        f"{r.choice(_RELATIONS)} on {_date(r)}."
    ),
    lambda r: (
        f"{_name(r)} started learning {r.choice(_LANGUAGES)} before a trip to "
        f"{r.choice(_COUNTRIES)}."
    ),
    lambda r: (
        f"{_name(r)} has worked at {r.choice(_COMPANIES)} as a {r.choice(_JOBS)} "
        f"since {r.randint(2010, 2024)}."
    ),
    lambda r: f"{_name(r)} wants to {r.choice(_GOALS)} before the end of {r.randint(2024, 2027)}.",
    lambda r: f"{_name(r)} read {r.choice(_BOOKS)} and recommended it to {r.choice(_FIRST)}.",
    lambda r: f"{_name(r)} took up {r.choice(_HOBBIES)} after moving to {r.choice(_CITIES)}.",
    lambda r: f"{_name(r)} has played the {r.choice(_INSTRUMENTS)} for {r.randint(2, 25)} years.",
    lambda r: (
        f"{_name(r)} celebrated their birthday on {_date(r)} with a {r.choice(_FOODS)} dinner."
    ),
    lambda r: (
        f"{_name(r)} went to a {r.choice(_SPORTS)} match in {r.choice(_CITIES)} "
        f"with their {r.choice(_RELATIONS)} on {_date(r)}."
    ),
)

_QUESTIONS: tuple[Phrase, ...] = (
    lambda r: f"Where did {r.choice(_FIRST)} move to?",
    lambda r: f"When did {r.choice(_FIRST)} move to {r.choice(_CITIES)}?",
    lambda r: f"What food does {r.choice(_FIRST)} like to cook?",
    lambda r: f"What does {r.choice(_FIRST)}'s {r.choice(_RELATIONS)} do for a living?",
    lambda r: f"Who does {r.choice(_FIRST)} play {r.choice(_SPORTS)} with?",
    lambda r: f"What does {r.choice(_FIRST)} usually drink in the morning?",
    lambda r: f"What race is {r.choice(_FIRST)} training for?",
    lambda r: f"What is the name of {r.choice(_FIRST)}'s {r.choice(_PETS)}?",
    lambda r: f"Does {r.choice(_FIRST)} have any food allergies?",
    lambda r: f"Which countries has {r.choice(_FIRST)} been to with family?",
    lambda r: f"Why is {r.choice(_FIRST)} learning {r.choice(_LANGUAGES)}?",
    lambda r: f"Where does {r.choice(_FIRST)} work these days?",
    lambda r: f"What does {r.choice(_FIRST)} hope to achieve by {r.randint(2024, 2027)}?",
    lambda r: f"Which book did {r.choice(_FIRST)} recommend to a friend?",
    lambda r: f"What hobby did {r.choice(_FIRST)} pick up in {r.choice(_CITIES)}?",
    lambda r: f"How long has {r.choice(_FIRST)} been playing the {r.choice(_INSTRUMENTS)}?",
    lambda r: f"How did {r.choice(_FIRST)} celebrate their birthday last {r.choice(_MONTHS)}?",
    lambda r: f"Who in the family likes {r.choice(_FOODS)}?",
    lambda r: f"Who lives in {r.choice(_CITIES)} now?",
    lambda r: f"Any plans for a trip to {r.choice(_COUNTRIES)} in {r.choice(_MONTHS)}?",
)


def statements(n: int, *, seed: int) -> list[str]:
    """``n`` distinct statements, the same for the same seed."""
    return _distinct(_STATEMENTS, n, seed)


def questions(n: int, *, seed: int) -> list[str]:
    """``n`` distinct natural questions, the same for the same seed."""
    return _distinct(_QUESTIONS, n, seed)


def _distinct(phrases: tuple[Phrase, ...], n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    seen: dict[str, None] = {}
    for _ in range(200 * n):
        if len(seen) == n:
            return list(seen)
        seen.setdefault(rng.choice(phrases)(rng), None)
    raise ValueError(f"cannot make {n} distinct phrases from the templates")
