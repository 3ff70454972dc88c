"""/v1/markets (wired once the markets library lands)."""

from fastapi import APIRouter

router = APIRouter(prefix="/v1/markets", tags=["markets"])
