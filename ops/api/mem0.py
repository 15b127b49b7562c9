"""Mem0-compatible routes (filled in below)."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter()
