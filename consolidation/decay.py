"""Decay and caps: which active entries leave the current memory (archived, never deleted).

The **retention score** of an entry is its strength — importance, confidence and use —
halved every ``half_life_days`` it stays idle past ``decay_after_days``:

    idle      = days since max(recorded_at, last_accessed_at)
    strength  = 0.4·importance + 0.3·confidence + 0.3·min(1, ln(1 + accesses) / ln(11))
    score     = strength · 0.5 ^ (max(0, idle − decay_after_days) / half_life_days)

**Decay** archives an active entry when it has been idle longer than ``decay_after_days``,
was used fewer than ``min_accesses`` times, and its score fell below ``threshold``. Kinds
that do not fade with disuse are exempt: the profile kinds (a name, an allergy, a
preference leave only by being superseded — the profile shows them without counting an
access), agent experiences (the evidence of skill proposals) and digests (one leaves with
the facts it gathers).

**Caps** keep at most ``max_active_per_owner`` active entries per owner: beyond it, the
lowest come first — entries of exempt kinds after all others, then by score, then least
recently used, then oldest id.

Both are fixed points: archived entries are no longer active, so a second run finds
nothing more (at the same ``now``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from consolidation.model import Archive, EntryState
from observations.entry import ACTIVE, AGENT_EXPERIENCE, DIGEST, PROFILE_KINDS

DECAY_EXEMPT = frozenset(PROFILE_KINDS | {AGENT_EXPERIENCE, DIGEST})
_DAY = 86400.0


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    decay_after_days: float = 90
    min_accesses: int = 2
    half_life_days: float = 30
    threshold: float = 0.25
    max_active_per_owner: int = 1000
    exempt_kinds: frozenset[str] = field(default=DECAY_EXEMPT)

    def idle_cutoff(self, now: datetime) -> datetime:
        """Entries last used before this may decay (the SQL prefilter of candidates)."""
        return now - timedelta(days=self.decay_after_days)


def last_used(entry: EntryState) -> datetime:
    if entry.last_accessed_at is None:
        return entry.recorded_at
    return max(entry.recorded_at, entry.last_accessed_at)


def idle_days(entry: EntryState, now: datetime) -> float:
    return max(0.0, (now - last_used(entry)).total_seconds() / _DAY)


def retention_score(entry: EntryState, now: datetime, policy: RetentionPolicy) -> float:
    use = min(1.0, math.log1p(max(entry.access_count, 0)) / math.log(11))
    strength = 0.4 * entry.importance + 0.3 * entry.confidence + 0.3 * use
    overdue = max(0.0, idle_days(entry, now) - policy.decay_after_days)
    return strength * 0.5 ** (overdue / policy.half_life_days)


def decays(entry: EntryState, now: datetime, policy: RetentionPolicy) -> bool:
    return (
        entry.status == ACTIVE
        and entry.kind not in policy.exempt_kinds
        and entry.access_count < policy.min_accesses
        and idle_days(entry, now) > policy.decay_after_days
        and retention_score(entry, now, policy) < policy.threshold
    )


def plan_decay(
    entries: Iterable[EntryState], *, now: datetime, policy: RetentionPolicy
) -> list[Archive]:
    """An :class:`Archive` for every entry that decayed, in id order."""
    out = []
    for entry in sorted(entries, key=lambda e: e.id):
        if decays(entry, now, policy):
            score = retention_score(entry, now, policy)
            out.append(
                Archive(
                    entry.id,
                    score,
                    f"decay: retention score {score:.3f} < {policy.threshold:g} "
                    f"(idle {idle_days(entry, now):.0f} days, {entry.access_count} accesses)",
                )
            )
    return out


def plan_caps(
    entries: Iterable[EntryState], *, now: datetime, policy: RetentionPolicy
) -> list[Archive]:
    """Archives that bring every owner down to ``max_active_per_owner`` active entries."""
    owners: dict[tuple[str, str], list[EntryState]] = defaultdict(list)
    for entry in entries:
        if entry.status == ACTIVE:
            owners[entry.owner].append(entry)
    cap = policy.max_active_per_owner
    out: list[Archive] = []
    for owner in sorted(owners):
        active = owners[owner]
        if len(active) <= cap:
            continue

        def order(e: EntryState) -> tuple[bool, float, datetime, int]:
            protected = e.kind in policy.exempt_kinds
            return (protected, retention_score(e, now, policy), last_used(e), e.id)

        for entry in sorted(active, key=order)[: len(active) - cap]:
            score = retention_score(entry, now, policy)
            out.append(
                Archive(
                    entry.id,
                    score,
                    f"cap: {len(active)} active entries > {cap} for this owner; "
                    f"retention score {score:.3f} among the lowest",
                )
            )
    return sorted(out, key=lambda a: a.id)
