"""The digest job: each owner's facts gathered by topic (the policy: :mod:`consolidation.digest`).

Owner by owner, a page at a time (a full pass: every owner with facts; an incremental one:
the owners whose facts or digests anyone but this job changed since its checkpoint,
consolidation's other jobs included). A page is read without locks and planned; the new
digests are embedded outside any transaction (a remote embedder may take its time); then,
in one transaction with the owners' facts and digests locked, each owner's plan is made
again and written only if it is still the same — digests archived, new ones inserted with
their ``collects`` links and an ``ADD`` history row each. An owner whose facts changed
meanwhile is left for the next run (the change is past this run's horizon).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any

from psycopg.types.json import Jsonb

from consolidation.digest import DigestDraft, DigestPlan, DigestPolicy, plan_digests
from consolidation.model import Archive, EntryState
from consolidation.owners import Walk, limit_waits, owner_pages, tenants_to_visit
from consolidation.store import Owner, lock_entries, owner_arrays, write_changes
from ledger.db import Conn, announce_entry_changes, pg_array, tenant_scope
from ledger.sqlfile import load_queries
from observations.changes import change_horizon, checkpoint, save_checkpoint
from observations.embed import Embedder, entry_text
from observations.embed_models import reading_embedder, writing_embedder
from observations.entry import ACTIVE, DELETED, DIGEST, FACT_KINDS
from observations.history import HistoryRow, write_history

Q = load_queries("consolidation")
ACTOR = "consolidation:digest"
SOURCE_ACTORS = "source_actor_ids"  # the authors of an entry's source events (the builder's)
_KINDS = (*FACT_KINDS, DIGEST)


def run_digests(
    conn: Conn,
    tenant_id: str | None,
    *,
    now: datetime,
    full: bool,
    walk: Walk,
    policy: DigestPolicy,
    embedder: Embedder,
) -> dict[str, int]:
    """One pass over one tenant or all; the stats summed over tenants."""
    totals: Counter[str] = Counter(
        {"tenants": 0, "owners": 0, "facts_read": 0, "written": 0, "archived": 0,
         "owners_changed_meanwhile": 0}
    )  # fmt: skip
    horizon = change_horizon(conn)
    # every change but its own: a merge or a supersession changes an owner's facts
    visit = tenants_to_visit(conn, ACTOR, tenant_id, full=full, horizon=horizon, all_actors=True)
    for tenant in visit:
        position = checkpoint(conn, tenant, ACTOR)
        if full or horizon > position:
            for page in _pages(conn, tenant, position, horizon, full, walk):
                totals.update(_run_page(conn, tenant, page, now, walk, policy, embedder))
        save_checkpoint(conn, tenant, ACTOR, horizon, now=now)
        totals["tenants"] += 1
    return dict(totals)


def _pages(
    conn: Conn, tenant: str, position: int, horizon: int, full: bool, walk: Walk
) -> Iterator[list[Owner]]:
    params: dict[str, Any] = {"tenant_id": tenant, "kinds": list(_KINDS), "skip_kinds": []}
    if full:
        query, params = Q["owners_with_kinds"], {**params, "kinds": list(FACT_KINDS)}
    else:
        query = Q["owners_changed_by_others"]
        params = {**params, "after": position, "upto": horizon, "actor": ACTOR}
    for page in owner_pages(conn, "consolidation_digest_owners", query, params, walk):
        yield sorted(page)


def _run_page(
    conn: Conn,
    tenant: str,
    owners: list[Owner],
    now: datetime,
    walk: Walk,
    policy: DigestPolicy,
    embedder: Embedder,
) -> Counter[str]:
    stats: Counter[str] = Counter(owners=len(owners))
    with tenant_scope(conn, tenant):
        reading = reading_embedder(conn, embedder)
        plans, _ = _plans(conn, tenant, owners, policy, reading.model, lock=False, stats=stats)
    drafts = [d for p in plans.values() for d in p.write]
    if not any(plans.values()):
        return stats
    vectors: Any = reading.embed([_text(d, reading.model) for d in drafts]) if drafts else []
    with tenant_scope(conn, tenant):
        limit_waits(conn, walk)
        writing = writing_embedder(conn, embedder)
        if writing.model != reading.model and drafts:  # a re-embed switched models meanwhile
            vectors = writing.embed([_text(d, writing.model) for d in drafts])
        again, digests = _plans(conn, tenant, owners, policy, writing.model, lock=True)
        same = {o for o in plans if _said(again.get(o)) == _said(plans[o])}
        stats["owners_changed_meanwhile"] += len(plans) - len(same)
        keep = [(d, v) for d, v in zip(drafts, vectors, strict=True) if d.owner in same]
        archive = [digests[i] for o in sorted(same) for i in plans[o].archive]
        stats["archived"] += _archive(conn, tenant, archive, now)
        stats["written"] += _insert(conn, tenant, keep, writing.model, now)
    return stats


def _plans(
    conn: Conn,
    tenant: str,
    owners: Sequence[Owner],
    policy: DigestPolicy,
    model: str,
    *,
    lock: bool,
    stats: Counter[str] | None = None,
) -> tuple[dict[Owner, DigestPlan], dict[int, EntryState]]:
    """Each owner's plan, from its facts (locked with ``lock``) with a vector of ``model``
    (the read model) and its digests; and the digests' states by id."""
    entries = lock_entries(
        conn, tenant, owners, statuses=(ACTIVE, DELETED), kinds=_KINDS, vectors=True, lock=lock
    )
    facts: dict[Owner, list[EntryState]] = defaultdict(list)
    for e in entries:
        if e.kind != DIGEST:
            facts[e.owner].append(e)
    states = {e.id: e for e in entries if e.kind == DIGEST}
    digests: dict[Owner, dict[int, tuple[str, tuple[int, ...]]]] = defaultdict(dict)
    params = {"tenant_id": tenant, **owner_arrays(owners)}
    for row in conn.execute(Q["owner_digests"], params).fetchall():
        owner = (row["owner_type"], row["owner_id"])
        digests[owner][int(row["id"])] = (row["status"], tuple(int(i) for i in row["facts"]))
    if stats is not None:
        stats["facts_read"] += sum(len(f) for f in facts.values())
    plans = {}
    for owner in owners:
        plan = plan_digests(facts.get(owner, []), digests.get(owner, {}), policy, model)
        if plan:
            plans[owner] = plan
    return plans, states


def _said(plan: DigestPlan | None) -> object:
    """What a plan would write, for comparing two plans of one owner."""
    if plan is None:
        return None
    return ([(d.ids, d.statement) for d in plan.write], plan.archive)


def _text(draft: DigestDraft, model: str) -> str:
    return entry_text(
        draft.statement,
        model=model,
        owner_id=draft.owner_id,
        valid_from=draft.valid_from,
        kind=DIGEST,
        fields=_fields(draft),
    )


def _fields(draft: DigestDraft) -> dict[str, Any]:
    """How many facts, the owner's name, and the union of the facts' authors and
    participants: what scopes an entry and what forgetting a user deletes it by."""
    names = {f.fields.get("owner_name") for f in draft.facts} - {None}
    fields: dict[str, Any] = {"facts": len(draft.facts)}
    if len(names) == 1:
        fields["owner_name"] = names.pop()
    for key in (SOURCE_ACTORS, "participant_ids"):
        found = {a for f in draft.facts for a in f.fields.get(key) or ()}
        if found:
            fields[key] = sorted(found)
    return fields


def _archive(conn: Conn, tenant: str, digests: Sequence[EntryState], now: datetime) -> int:
    changes = [Archive(d.id, 0.0, "its facts make no topic of their own now") for d in digests]
    return write_changes(conn, tenant, digests, changes, now=now, actor=ACTOR).archived


def _insert(
    conn: Conn, tenant: str, drafts: Sequence[tuple[DigestDraft, Any]], model: str, now: datetime
) -> int:
    if not drafts:
        return 0
    base = {"tenant_id": tenant, "now": now}
    provenance = [d.provenance for d, _ in drafts]
    announce_entry_changes(conn)
    rows = conn.execute(
        Q["insert_digests"],
        {
            **base,
            "embedding_model": model,
            "owner_type": [d.owner_type for d, _ in drafts],
            "owner_id": [d.owner_id for d, _ in drafts],
            "key": [d.key for d, _ in drafts],
            "statement": [d.statement for d, _ in drafts],
            "fields": [Jsonb(_fields(d)) for d, _ in drafts],
            "embedding": [v for _, v in drafts],
            "confidence": [d.confidence for d, _ in drafts],
            "importance": [d.importance for d, _ in drafts],
            "valid_from": [d.valid_from for d, _ in drafts],
            "source_event_ids": [pg_array(e) for e, _ in provenance],
            "source_external_ids": [Jsonb(list(x)) for _, x in provenance],
        },
    ).fetchall()
    ids = [int(r["id"]) for r in rows]
    links = [(i, f) for i, (d, _) in zip(ids, drafts, strict=True) for f in d.ids]
    conn.execute(
        Q["insert_entry_links"],
        {
            **base,
            "src_id": [i for i, _ in links],
            "relation": ["collects"] * len(links),
            "dst_id": [f for _, f in links],
        },
    )
    history = [
        HistoryRow(i, "ADD", None, d.statement, None, ACTIVE, f"collects entries {_ids(d)}")
        for i, (d, _) in zip(ids, drafts, strict=True)
    ]
    write_history(conn, base, history, ACTOR)
    return len(ids)


def _ids(draft: DigestDraft) -> str:
    return ", ".join(map(str, draft.ids))
