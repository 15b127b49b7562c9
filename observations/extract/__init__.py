"""Extractors: what a closed session becomes before quality gates."""

from observations.extract.base import (
    AGENT_EXPERIENCE,
    EPISODIC,
    FACT_KINDS,
    KINDS,
    SESSION_SUMMARY,
    Extracted,
    Extraction,
    Extractor,
    SessionEvent,
    SessionInput,
)
from observations.extract.heuristic import HeuristicExtractor

__all__ = [
    "AGENT_EXPERIENCE",
    "EPISODIC",
    "FACT_KINDS",
    "KINDS",
    "SESSION_SUMMARY",
    "Extracted",
    "Extraction",
    "Extractor",
    "HeuristicExtractor",
    "SessionEvent",
    "SessionInput",
]
