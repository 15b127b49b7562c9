"""Consolidation: the maintenance jobs that keep memory current without losing history.

Pure policies (:mod:`consolidation.supersede`, :mod:`consolidation.merge`,
:mod:`consolidation.decay`, :mod:`consolidation.digest`) over plain entry states
(:mod:`consolidation.model`); thin DB glue that walks owners and writes changes set-based
with one history row per changed entry (:mod:`consolidation.owners`,
:mod:`consolidation.store`, :mod:`consolidation.digest_job`); the jobs by name
(:mod:`consolidation.jobs`) and their runs — advisory-locked, exactly once per schedule
window (:mod:`consolidation.runs`).
"""

from consolidation.decay import RetentionPolicy, plan_caps, plan_decay, retention_score
from consolidation.digest import DigestPolicy, plan_digests, plan_topics
from consolidation.entry_jobs import supersede_at_build
from consolidation.history import EntryNotFound, EntryRecord, entry_record
from consolidation.jobs import JOBS, ConsolidationConfig, JobScope, UnknownJob, get_job
from consolidation.merge import plan_merge
from consolidation.model import Archive, Change, EntryState, Merge, Supersede, apply
from consolidation.owners import Walk
from consolidation.runs import (
    ALL_TENANTS,
    RunOutcome,
    Window,
    lock_key,
    point_window,
    recent_runs,
    run_job,
    window_for,
)
from consolidation.supersede import plan_supersede

__all__ = [
    "ALL_TENANTS",
    "JOBS",
    "Archive",
    "Change",
    "ConsolidationConfig",
    "DigestPolicy",
    "EntryNotFound",
    "EntryRecord",
    "EntryState",
    "JobScope",
    "Merge",
    "RetentionPolicy",
    "RunOutcome",
    "Supersede",
    "UnknownJob",
    "Walk",
    "Window",
    "apply",
    "entry_record",
    "get_job",
    "lock_key",
    "plan_caps",
    "plan_decay",
    "plan_digests",
    "plan_merge",
    "plan_supersede",
    "plan_topics",
    "point_window",
    "recent_runs",
    "retention_score",
    "run_job",
    "supersede_at_build",
    "window_for",
]
