"""Settings as they may be shown: secrets replaced by ``***`` (``pi/getSettings``, the ``pi/beforeCompact`` hook).

Contract of :func:`redact_settings`: a copy of the unstructured settings in
which every ``headers`` object (``summarizer.headers``, a model's headers)
has the values of key-like names (``authorization``, ``x-api-key``,
``*token*``, ``*key*``, ``*secret*``, cookies, passwords:
:data:`pi_protocol.settings.SENSITIVE_HEADER`) replaced, and every string
under a key that names a secret itself (``apiKey``, ``token``, ``secret``,
``password``…) too. ``apiKeyEnv`` is a variable's *name* and stays visible.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pi_protocol.settings import REDACTED, redact_headers

_SECRET_KEY = re.compile(r"^(api[-_]?key|key|token|access[-_]?token|secret|client[-_]?secret|password|authorization)$",
                         re.IGNORECASE)


def redact_settings(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every secret it holds replaced by ``***`` (see the module docstring)."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key == "headers" and isinstance(value, Mapping):
            out[key] = redact_headers(value)
        elif isinstance(value, Mapping):
            out[key] = redact_settings(value)
        elif isinstance(value, str) and _SECRET_KEY.match(key):
            out[key] = REDACTED
        else:
            out[key] = value
    return out
