"""Kylin 5's `projects` endpoints."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["projects"])
