"""Shared by the examples: the server address and key, and some synthetic predictions."""

from __future__ import annotations

import argparse
import os
import sys

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
    args = ap.parse_args()
    sys.excepthook = _one_line(args.url)
    return args


def _one_line(url: str):
    """An excepthook printing the server's refusal or an unreachable server as one line (exit 1)."""
    import httpx

    from app.client import AgoraError

    def hook(kind, exc, tb):
        if isinstance(exc, AgoraError):
            print(f"error: the server answered {exc}", file=sys.stderr)
        elif isinstance(exc, httpx.TransportError):
            print(f"error: cannot reach {url}: {exc or kind.__name__} (is `agora serve` running?)", file=sys.stderr)
        else:
            sys.__excepthook__(kind, exc, tb)

    return hook


def synthetic(n_items: int, n_agents: int, n_classes: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Agents of varying quality: log-probabilities (n_items, n_agents, n_classes) and true labels."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, n_classes, n_items)
    quality = np.linspace(0.5, 3.0, n_agents)  # how strongly each agent leans towards the truth
    logits = rng.normal(size=(n_items, n_agents, n_classes))
    logits[np.arange(n_items), :, y] += quality
    lp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    return lp, y
