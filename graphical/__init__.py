"""Gaussian graphical models: structure learning and parameter learning (seed 001, chapters 6-9)."""
