"""Shared by the examples: the server address and key, and some synthetic predictions."""

from __future__ import annotations

import argparse
import os

import numpy as np


def parse_args(doc: str) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc)
    ap.add_argument(
        "--url",
        default=os.environ.get("AGORA_URL", "http://127.0.0.1:8000"),
        help="server (default $AGORA_URL or http://127.0.0.1:8000)",
    )
    ap.add_argument(
        "--api-key",
        default=os.environ.get("AGORA_API_KEY"),
        help="API key with scopes read,write (default $AGORA_API_KEY)",
    )
    return ap.parse_args()


def synthetic(n_items: int, n_agents: int, n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Agents of varying quality: log-probabilities (n_items, n_agents, n_classes) and true labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n_items)
    quality = np.linspace(0.5, 3.0, n_agents)  # how strongly each agent leans towards the truth
    logits = rng.normal(size=(n_items, n_agents, n_classes))
    logits[np.arange(n_items), :, y] += quality
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return lp, y
