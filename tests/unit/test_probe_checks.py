"""The matching rules of probe checks, on hand-made answers, and the probe file's
validation."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ops.eval.probes_checks import Answer, Skill, beliefs, chosen_skill, evaluate
from ops.eval.probes_data import parse
from ops.eval.probes_model import Check, InvalidProbeFile

PROBES = Path(__file__).parents[1] / "data" / "probes.json"


def check(kind: str, **fields: Any) -> Check:
    tuples: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}
    return Check(kind=kind, index=0, **tuples)


EPISODIC = "[2025-03-04] (episodic) On 4 March 2025, Priya said she works at Halcyon Labs."


def test_current_fact_passes_with_the_new_value_and_the_old_one_only_as_a_record() -> None:
    c = check("current_fact", user="p", query="where?", expect_any=["Brightline"],
              stale=["works at halcyon"])  # fmt: skip
    answer = Answer(
        text=f"## Relevant memories\n{EPISODIC}\n[2025-05-22] (identity) Priya works at "
        "BRIGHTLINE.",
        current=("Priya works at Brightline.",),
    )
    assert evaluate(c, answer).passed


def test_on_beliefs_a_check_passes_only_on_the_users_facts_not_on_a_record() -> None:
    c = check("current_fact", user="p", query="where?", expect_any=["halcyon"])
    answer = Answer(text=f"## Relevant memories\n{EPISODIC}", current=("Priya likes tea.",))
    assert evaluate(c, answer).passed
    assert not evaluate(c, beliefs(answer)).passed
    believed = Answer(text=EPISODIC, current=("Priya works at Halcyon Labs.",))
    assert evaluate(c, beliefs(believed)).passed


def test_current_fact_fails_when_a_stale_value_is_presented_as_current() -> None:
    c = check("current_fact", user="p", query="where?", expect_any=["brightline"],
              stale=["works at halcyon"])  # fmt: skip
    answer = Answer(
        text="Priya works at Brightline. Priya works at Halcyon Labs.",
        current=("Priya works at Brightline.", "Priya works at Halcyon Labs."),
    )
    outcome = evaluate(c, answer)
    assert not outcome.passed
    assert "works at halcyon" in outcome.reason
    assert outcome.returned == "Priya works at Halcyon Labs."


def test_current_fact_fails_without_any_expected_string() -> None:
    c = check("current_fact", user="p", query="where?", expect_any=["brightline", "bright line"])
    assert not evaluate(c, Answer(text="Priya likes tea.", current=("Priya likes tea.",))).passed


def test_matching_reads_typographic_apostrophes_as_plain_ones() -> None:
    c = check("resolved_date", user="p", query="when?", expect_any=["dad's surgery"])
    assert evaluate(
        c, Answer(text="Rachel\u2019s DAD\u2019S SURGERY was on 25 December 2025.")
    ).passed


def test_attribution_needs_the_fact_among_the_users_own_facts() -> None:
    c = check("attribution", user="dev", query="allergic?", expect_any=["dogs"])
    record = "(episodic) Mia said: dev is allergic to cats. Dev replied: it's dogs"
    assert not evaluate(c, Answer(text=record, current=())).passed
    assert evaluate(c, Answer(text=record, current=("Dev is allergic to dogs.",))).passed


def test_attribution_fails_on_a_wrong_claim_presented_as_the_users_fact() -> None:
    c = check("attribution", user="dev", query="allergic?", expect_any=["dogs"],
              must_not_contain=["allergic to cats"])  # fmt: skip
    answer = Answer(current=("Dev is allergic to dogs.", "Dev is allergic to cats."))
    outcome = evaluate(c, answer)
    assert not outcome.passed and "allergic to cats" in outcome.reason


def test_attribution_not_for_looks_in_the_named_users_facts() -> None:
    c = check("attribution", user="tariq", query="job?", expect_any=["spotify"],
              not_for={"jess": ("spotify",)})  # fmt: skip
    current = ("Tariq works at Spotify.",)
    clean = Answer(current=current, facts={"jess": ("Jess lives in Leeds.",)})
    assert evaluate(c, clean).passed
    filed_wrong = Answer(current=current, facts={"jess": ("Jess's friend got a job at Spotify.",)})
    outcome = evaluate(c, filed_wrong)
    assert not outcome.passed and "jess" in outcome.reason


@pytest.mark.parametrize(("facts", "passed"), [(0, False), (1, True), (2, True), (3, False)])
def test_no_duplicates_counts_current_facts_on_the_topic(facts: int, passed: bool) -> None:
    c = check("no_duplicates", user="aiko", topic_any=["peanut", "groundnut"], max_current=2)
    statements = [f"Aiko is allergic to peanuts ({n})." for n in range(facts)]
    answer = Answer(facts={"aiko": (*statements, "Aiko likes hiking.")})
    assert evaluate(c, answer).passed is passed


def test_no_duplicates_counts_only_the_users_facts() -> None:
    c = check("no_duplicates", user="aiko", topic_any=["peanut"], max_current=1)
    assert not evaluate(c, Answer(facts={"tom": ("Tom hates peanuts.",)})).passed


def test_abstain_fails_on_a_fabrication_anywhere_in_the_bundle() -> None:
    c = check("abstain", user="cora", query="dog's name?", must_not_contain=["dog named miso"])
    assert evaluate(c, Answer(text="Cora's cat is named Miso.")).passed
    outcome = evaluate(c, Answer(text="(episodic) Cora has a DOG NAMED MISO."))
    assert not outcome.passed and "dog named miso" in outcome.reason


def test_isolation_fails_on_a_leak_in_the_bundle_or_the_users_scope() -> None:
    c = check("isolation", user="maya", query="health?", must_not_contain=["diabetes"],
              leak_from="joel")  # fmt: skip
    assert evaluate(c, Answer(text="Maya has anxiety.", scope=("Maya has anxiety.",))).passed
    in_scope = Answer(text="Maya has anxiety.", scope=("Joel has type 2 diabetes.",))
    assert not evaluate(c, in_scope).passed
    assert not evaluate(c, Answer(text="Joel has type 2 diabetes.")).passed


def skill(id_: int, key: str, goal: str, *steps: str) -> Skill:
    """A skill whose steps are tool calls (as the API returns them), or text with spaces."""
    texts = tuple(s if " " in s else json.dumps({"tool": s, "args": {}}) for s in steps)
    return Skill(id=id_, key=key, goal=goal, steps=texts, applies_to=(), evidence_count=1)


BOOKING = skill(
    2, "book-table", "book a table for 2 at an italian place", "resy_search", "resy_book"
)
WEATHER = skill(1, "check-weather", "check the weather in portland", "geocode", "weather_lookup")


def test_skill_checks_the_skill_that_shares_most_words_with_the_query() -> None:
    assert chosen_skill("how do I book a restaurant table?", [WEATHER, BOOKING]) == BOOKING
    c = check("skill", agent="bot", query="how do I book a table?", expect_any=["resy_book"],
              expect_all=["resy_search"], avoid_any=["opentable"])  # fmt: skip
    assert evaluate(c, Answer(skills=(WEATHER, BOOKING))).passed
    assert not evaluate(c, Answer(skills=(WEATHER,))).passed
    assert not evaluate(c, Answer()).passed


def test_skill_fails_when_a_step_uses_what_failed_but_not_for_a_warning() -> None:
    c = check("skill", agent="bot", query="book a table", expect_any=["resy_book"],
              avoid_any=["opentable"])  # fmt: skip
    used = skill(3, "book-table", "book a table", "opentable_search", "resy_book")
    outcome = evaluate(c, Answer(skills=(used,)))
    assert not outcome.passed and "opentable" in outcome.reason
    warning = "don't use opentable_search: 403 in Poland"
    warned = skill(3, "book-table", "book a table", warning, "resy_book")
    assert evaluate(c, Answer(skills=(warned,))).passed


def test_skill_needs_every_expect_all() -> None:
    c = check("skill", agent="bot", query="book a table", expect_any=["resy_book"],
              expect_all=["resy_search", "resy_pay"], avoid_any=["opentable"])  # fmt: skip
    outcome = evaluate(c, Answer(skills=(BOOKING,)))
    assert not outcome.passed and "resy_pay" in outcome.reason


# ------------------------------------------------------------------------------ the file


def probe_file() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(PROBES.read_text("utf-8"))
    return raw


def test_the_projects_probe_file_is_valid_and_covers_every_category() -> None:
    probes = parse(probe_file())
    categories = {c.category for c in probes.cases}
    assert len(categories) == 8
    assert all(sum(c.category == k for c in probes.cases) >= 8 for k in categories)
    assert probes.tenant == "probes"


@pytest.mark.parametrize(
    ("edit", "case", "field"),
    [
        (lambda c: c["checks"][0].pop("expect_any"), "ku-001", "checks.0.expect_any"),
        (lambda c: c["sessions"][1]["events"][0].update(at="2025-05-22T21:40:00"), "ku-001",
         "sessions.1.events.0.at"),
        (lambda c: c["sessions"][0]["events"][1].update(actor="ku01-priya"), "ku-001",
         "sessions.0.events.1.actor"),
        (lambda c: c["checks"][0].update(evidence=["nope"]), "ku-001", "checks.0.evidence"),
        (lambda c: c["checks"][0].update(kind="vibes"), "ku-001", "checks.0.kind"),
        (lambda c: c["checks"][0].update(colour="red"), "ku-001", "checks.0.colour"),
        (lambda c: c.update(category="duplicates"), "ku-001", "category"),
        (lambda c: c.update(sessions=c["sessions"][:1]), "ku-001", "sessions"),
    ],
)  # fmt: skip
def test_a_malformed_case_is_refused_naming_the_case_and_field(
    edit: Any, case: str, field: str
) -> None:
    raw = probe_file()
    edit(next(c for c in raw["cases"] if c["id"] == case))
    with pytest.raises(InvalidProbeFile) as caught:
        parse(raw)
    assert (caught.value.case, caught.value.field) == (case, field)
    assert f"case {case}: {field}: " in str(caught.value)


def test_an_abstain_check_needs_a_current_fact_beside_it() -> None:
    raw = probe_file()
    ab = next(c for c in raw["cases"] if c["id"] == "ab-002")
    ab["checks"] = [c for c in ab["checks"] if c["kind"] != "current_fact"]
    with pytest.raises(InvalidProbeFile, match="needs a current_fact"):
        parse(raw)


def test_ids_are_unique_across_the_file() -> None:
    raw = probe_file()
    twin = copy.deepcopy(raw["cases"][0])
    twin["id"] = "ku-099"
    raw["cases"].append(twin)
    with pytest.raises(InvalidProbeFile) as caught:
        parse(raw)
    assert caught.value.case == "ku-099" and caught.value.field.startswith("users.")
