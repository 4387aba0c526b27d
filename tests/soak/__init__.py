"""Soak scripts (issue 8): full-size runs by hand, smoke versions in the normal test run."""
