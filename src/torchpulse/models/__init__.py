"""Model definitions built from code (no downloaded weights)."""
