"""markets package."""
