"""``memledger eval locomo``: the LoCoMo conversations through the whole pipeline.

Each conversation is ingested into its own tenant with its real dates, every session is
built, and the consolidation jobs that rework entries on a schedule run (supersede, merge,
digest). The build is measured against the benchmark's reference facts: entries per
session, the share of entries whose provenance names real events with the external ids
it gives (of the entry's own session, unless it gathers several), and the share of
reference facts whose source turn is in some entry's provenance.

Then every scored question is asked through the retrieval gateway, scoped to its
conversation's tenant, and evidence recall is computed from the provenance of what came
back: in the top 5 and top 10 results, and within a context bundle of 1,000 tokens. The
baseline, computed in the same run, is BM25 over the raw turns (each written as
"[date] speaker: text [image: caption]"), top 5, top 10 and as many whole turns as fit in
the same budget.

Statement quality: every active fact entry (the eight fact kinds: not episodic records,
summaries or agent experiences) goes through the statement checks
(:mod:`observations.extract.statement_checks`), and the report counts the entries failing
each (the target is none); and of the memories and summaries each question's bundle
shows, the share that are fact entries and the share that are digests of facts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from consolidation.jobs import ConsolidationConfig, JobScope, get_job
from ledger.db import Conn, tenant_scope
from ledger.events import iter_chunks
from ledger.store import append, list_sessions, sweep_idle
from observations.builder import BuildConfig, build_session
from observations.embed import Embedder
from observations.entry import DIGEST
from observations.extract.base import FACT_KINDS
from observations.extract.statement_checks import CHECKS, Statement, statement_failures
from ops.eval.locomo_data import SCORED_CATEGORIES, Conversation, Question, events, turn_text
from ops.eval.locomo_facts import Fact, FactFigures, fact_figures
from retrieval.bm25 import BM25
from retrieval.bundle import ContextBundle
from retrieval.context import ContextRequest, build_context, bundle_provenance
from retrieval.search import Scope, SearchSettings, external_ids, search
from retrieval.tokens import TokenCounter

METHODS = ("memledger@5", "memledger@10", "memledger@bundle", "bm25@5", "bm25@10", "bm25@bundle")
BUNDLE_TOKENS = 1000
# what a deployment's schedule does to a conversation's entries once built (decay and caps
# go by the entries' age on the wall clock, which a replayed transcript does not have)
ENTRY_JOBS = ("supersede", "merge", "digest")


@dataclass(frozen=True, slots=True)
class BuildFigures:
    sessions: int
    entries: int
    valid_provenance: int  # entries whose every source event is in their own session
    reference_facts: int
    covered_facts: int  # reference facts whose source turns appear in some provenance
    kinds: dict[str, int] = field(default_factory=dict)
    fact_entries: int = 0  # active entries of the fact kinds
    check_failures: dict[str, int] = field(default_factory=dict)  # check → failing facts
    believed: FactFigures = field(default_factory=FactFigures)  # against the references

    @property
    def entries_per_session(self) -> float:
        return self.entries / max(self.sessions, 1)


def tenant_of(conversation: Conversation) -> str:
    return f"locomo-{conversation.sample_id}"


def ingest_and_build(
    conn: Conn,
    conversation: Conversation,
    config: BuildConfig,
    *,
    now: datetime,
    consolidation: ConsolidationConfig | None = None,
    on_session: Callable[[], None] = lambda: None,
) -> BuildFigures:
    """Append the conversation's turns, close its sessions and build each one; then run
    the consolidation jobs that rework entries on a schedule (:data:`ENTRY_JOBS`), when
    given their configuration."""
    tenant = tenant_of(conversation)
    for batch in iter_chunks(events(conversation), 500):
        with conn.transaction():
            append(conn, tenant, batch, now=now)
    with conn.transaction():
        sweep_idle(conn, now=now + timedelta(days=1), tenant_id=tenant)
    for session in list_sessions(conn, tenant, limit=10_000):
        with conn.transaction():
            build_session(conn, tenant, session["id"], config, now=now)
        on_session()
    if consolidation is not None:
        scope = JobScope(now=now, tenant_id=tenant)
        for job in ENTRY_JOBS:
            with conn.transaction():
                get_job(job)(conn, consolidation, scope)
    return measure_build(conn, conversation, config.embedder)


def measure_build(conn: Conn, conversation: Conversation, embedder: Embedder) -> BuildFigures:
    tenant = tenant_of(conversation)
    with tenant_scope(conn, tenant):
        sessions = conn.execute(
            "SELECT count(*) AS n FROM memory_sessions WHERE tenant_id = %s", [tenant]
        ).fetchone()
        entries = conn.execute(
            "SELECT id, kind, owner_id, confidence, source_session_id, source_event_ids,"
            " source_external_ids, canonical_statement, fields"
            " FROM memory_entries WHERE tenant_id = %s AND status = 'active'",
            [tenant],
        ).fetchall()
        stored = conn.execute(
            "SELECT id, session_id, external_id FROM memory_session_events WHERE tenant_id = %s",
            [tenant],
        ).fetchall()
    where = {e["id"]: (e["session_id"], e["external_id"]) for e in stored}
    valid = sum(_valid(entry, where) for entry in entries)
    covered_turns = {x for entry in entries for x in entry["source_external_ids"]}
    facts = conversation.reference_facts
    kinds = Counter(entry["kind"] for entry in entries)
    fact_entries = [e for e in entries if e["kind"] in FACT_KINDS]
    return BuildFigures(
        sessions=int(sessions["n"]) if sessions else 0,
        entries=len(entries),
        valid_provenance=valid,
        reference_facts=len(facts),
        covered_facts=sum(any(d in covered_turns for d in f.dia_ids) for f in facts),
        kinds=dict(kinds),
        fact_entries=len(fact_entries),
        check_failures=check_failures(fact_entries, conversation.speakers),
        believed=fact_figures(facts, [_fact(e) for e in fact_entries], embedder),
    )


def _fact(entry: dict[str, Any]) -> Fact:
    ids = tuple(entry["source_external_ids"])
    return Fact(entry["canonical_statement"], entry["owner_id"], ids)


def check_failures(entries: list[dict[str, Any]], names: tuple[str, ...]) -> dict[str, int]:
    """How many of the fact entries fail each statement check."""
    statements = [
        Statement(e["canonical_statement"], _text((e["fields"] or {}).get("object")), names)
        for e in entries
    ]
    failed = dict.fromkeys(CHECKS, 0)
    for checks in statement_failures(statements):
        for check in checks:
            failed[check] += 1
    return failed


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _valid(entry: dict[str, Any], where: dict[int, tuple[int, str]]) -> bool:
    """Whether every event the entry names is stored with the external id it gives, and
    its session (none for a digest) holds one of them (a merge keeps the provenance of
    the duplicates it absorbed, from their sessions)."""
    ids = entry["source_event_ids"]
    if not ids or len(ids) != len(entry["source_external_ids"]):
        return False
    pairs = list(zip(ids, entry["source_external_ids"], strict=True))
    if not all(i in where and where[i][1] == x for i, x in pairs):
        return False
    session = entry["source_session_id"]
    return session is None or any(where[i][0] == session for i, _ in pairs)


def total(figures: list[BuildFigures]) -> BuildFigures:
    kinds: dict[str, int] = {}
    failed = dict.fromkeys(CHECKS, 0)
    for f in figures:
        for kind, n in f.kinds.items():
            kinds[kind] = kinds.get(kind, 0) + n
        for check, n in f.check_failures.items():
            failed[check] += n
    return BuildFigures(
        sum(f.sessions for f in figures),
        sum(f.entries for f in figures),
        sum(f.valid_provenance for f in figures),
        sum(f.reference_facts for f in figures),
        sum(f.covered_facts for f in figures),
        kinds,
        sum(f.fact_entries for f in figures),
        failed,
        sum((f.believed for f in figures), FactFigures()),
    )


@dataclass(frozen=True, slots=True)
class Answer:
    category: int
    recall: dict[str, float]  # method → share of the evidence turns found
    shown: int = 0  # memories and summaries in the bundle
    facts_shown: int = 0  # of them, fact entries
    digests_shown: int = 0  # and digests (each gathers facts)


def ask(
    conn: Conn,
    conversation: Conversation,
    *,
    embedder: Embedder,
    counter: TokenCounter,
    settings: SearchSettings,
    on_question: Callable[[], None] = lambda: None,
) -> list[Answer]:
    """Every scored question through the gateway and through the BM25 baseline."""
    turns = list(conversation.turns)
    texts = [turn_text(t) for t in turns]
    bm25 = BM25(texts)
    scope = Scope(tenant_of(conversation))
    now = conversation.asked_at
    answers = []
    for q in conversation.questions:
        top = search(
            conn, scope, q.question, embedder=embedder, now=now, limit=10, settings=settings
        )
        request = ContextRequest(scope=scope, query=q.question, budget_tokens=BUNDLE_TOKENS)
        bundle = build_context(
            conn, request, embedder=embedder, counter=counter, now=now, settings=settings
        )
        in_bundle = {x for p in bundle_provenance(bundle) for x in p.external_ids}
        ranked = [turns[i].dia_id for i, _ in bm25.top(q.question, len(turns))]
        found = {
            "memledger@5": external_ids(top[:5]),
            "memledger@10": external_ids(top),
            "memledger@bundle": in_bundle,
            "bm25@5": set(ranked[:5]),
            "bm25@10": set(ranked[:10]),
            "bm25@bundle": _fit(
                ranked, {t.dia_id: x for t, x in zip(turns, texts, strict=True)}, counter
            ),
        }
        answers.append(_answer(q, found, bundle))
        on_question()
    return answers


def _answer(question: Question, found: dict[str, set[str]], bundle: ContextBundle) -> Answer:
    recall = {m: _recall(question, ids) for m, ids in found.items()}
    shown = len(bundle.memories) + len(bundle.summaries)
    facts = sum(item.kind in FACT_KINDS for item in bundle.memories)
    digests = sum(item.kind == DIGEST for item in bundle.memories)
    return Answer(question.category, recall, shown, facts, digests)


def _recall(question: Question, found: set[str]) -> float:
    return sum(d in found for d in question.evidence) / len(question.evidence)


def _fit(ranked: list[str], text: dict[str, str], counter: TokenCounter) -> set[str]:
    """The best-ranked whole turns that fit in the bundle budget, one per line."""
    taken, spent = set(), 0
    for dia_id in ranked:
        cost = counter(text[dia_id])
        if spent + cost <= BUNDLE_TOKENS:
            taken.add(dia_id)
            spent += cost
    return taken


def quality_text(built: BuildFigures, answers: list[Answer]) -> str:
    """The statement checks' failures among active facts, and the shares of facts and of
    digests of facts in what the bundles showed."""
    failed = ", ".join(f"{check} {n}" for check, n in built.check_failures.items())
    shown = sum(a.shown for a in answers)
    facts = sum(a.facts_shown for a in answers)
    digests = sum(a.digests_shown for a in answers)
    b = built.believed
    return (
        f"  believed facts against the reference observations: fact recall "
        f"{b.covered}/{b.references} ({b.recall:.3f}), precision proxy "
        f"{b.matching}/{b.facts} ({b.precision:.3f})\n"
        f"  fact entries failing each statement check (of {built.fact_entries}): {failed}\n"
        f"  among what the bundles show: fact entries {facts}/{shown} "
        f"({facts / max(shown, 1):.1%}), digests of facts {digests} ({digests / max(shown, 1):.1%})"
    )


def recall_table(answers: list[Answer]) -> dict[str, dict[str, float]]:
    """Mean recall per method, for each category and overall (with the question count)."""
    groups = {
        SCORED_CATEGORIES[c]: [a for a in answers if a.category == c] for c in SCORED_CATEGORIES
    }
    groups["overall"] = answers
    return {
        name: {
            "questions": len(group),
            **{m: sum(a.recall[m] for a in group) / len(group) for m in METHODS},
        }
        for name, group in groups.items()
        if group
    }
