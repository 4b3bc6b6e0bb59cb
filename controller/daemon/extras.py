"""Optional dependencies (the pyproject extras): one sentence naming the extra to install."""
from __future__ import annotations

import importlib


def missing(module: str, extra: str) -> str | None:
    """None when ``module`` imports; else what is missing and how to install it."""
    try:
        importlib.import_module(module)
    except ImportError:
        return f"needs {module}, which is not installed: pip install 'bipd[{extra}]'"
    return None
