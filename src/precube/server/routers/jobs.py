"""Kylin 5's `jobs` endpoints."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["jobs"])
