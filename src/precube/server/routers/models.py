"""Kylin 5's `models` endpoints."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["models"])
