"""Read models over memory entries: ``user_profile`` and ``skill_proposal``.

Pure folds (:mod:`materializers.profile`, :mod:`materializers.skills`), applied by a
checkpointed consumer over the entry history (:mod:`materializers.runner`), read and
reviewed through :mod:`materializers.api`.
"""

from materializers.api import (
    InvalidReview,
    InvalidSkillStatus,
    SkillNotFound,
    SkillProposal,
    get_profile,
    list_skills,
    profile_users,
    review_skill,
)
from materializers.facts import EntryFact
from materializers.profile import Conflict, ProfileRow, fold_profile, profile_rows
from materializers.runner import ProjectStats, UnknownReadModel, checkpoint, project, rebuild
from materializers.skills import SkillPolicy, SkillRow, fold_skill, reconcile_skill, skill_rows
from observations.changes import announce_entry_changes, change_horizon

__all__ = [
    "Conflict",
    "EntryFact",
    "InvalidReview",
    "InvalidSkillStatus",
    "ProfileRow",
    "ProjectStats",
    "SkillNotFound",
    "SkillPolicy",
    "SkillProposal",
    "SkillRow",
    "UnknownReadModel",
    "announce_entry_changes",
    "change_horizon",
    "checkpoint",
    "fold_profile",
    "fold_skill",
    "get_profile",
    "list_skills",
    "profile_rows",
    "profile_users",
    "project",
    "rebuild",
    "reconcile_skill",
    "review_skill",
    "skill_rows",
]
