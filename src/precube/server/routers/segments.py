"""Kylin 5's `segments` endpoints."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["segments"])
