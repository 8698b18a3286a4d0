"""Kylin 5's `index_plans` endpoints."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["index_plans"])
