"""Soak scripts: full-size runs by hand, smoke versions in the normal test run."""
