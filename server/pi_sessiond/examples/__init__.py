"""Example Pi session data: a deterministic generator and one bundled demo session.

``generator`` writes realistic Pi session files (every shape and entry type we
support) from a seed; ``data/example.jsonl`` is its ``example`` shape, produced by
the command in the generator's docstring and checked against it by the tests.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path


def example_path() -> Path:
    """Filesystem path of the bundled demo session (``data/example.jsonl``)."""
    ref = resources.files(__package__) / "data" / "example.jsonl"
    return Path(str(ref))
