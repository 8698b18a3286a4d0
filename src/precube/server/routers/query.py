"""Kylin 5's `query` endpoints."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["query"])
