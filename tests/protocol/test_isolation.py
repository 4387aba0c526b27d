"""pi_protocol imports attrs and cattrs only (checked in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import json, sys
before = set(sys.modules)
import pi_protocol
new = sorted({m.split('.')[0] for m in set(sys.modules) - before})
print(json.dumps(new))
"""


def test_pi_protocol_imports_only_attrs_and_cattrs() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], check=True, capture_output=True, text=True)
    loaded = set(json.loads(out.stdout))
    third_party = {m for m in loaded if m not in sys.stdlib_module_names and not m.startswith("_")}
    assert "pi_protocol" in third_party
    # cattrs itself pulls in typing_extensions / exceptiongroup on some Pythons.
    assert third_party - {"pi_protocol", "attr", "attrs", "cattrs", "typing_extensions", "exceptiongroup"} == set()
    assert {"pygls", "lsprotocol", "orjson", "httpx", "pi_sessiond"}.isdisjoint(loaded)
