"""Kylin 5's `tables` endpoints."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["tables"])
