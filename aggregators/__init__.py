"""aggregators package."""
