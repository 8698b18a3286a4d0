"""Kylin 5's `users` endpoints."""

from __future__ import annotations

from fastapi import APIRouter

router = APIRouter(tags=["users"])
