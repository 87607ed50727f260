"""What every benchmark records about the machine it ran on."""

from __future__ import annotations

import os
import platform
from typing import Any


def machine_info() -> dict[str, Any]:
    return {
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
        # Other work on the machine moves every figure; the load says how quiet it was.
        "load_average_1m": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
    }


def package_version(name: str) -> str:
    """The installed version of ``name``; ``eve`` is the distribution eve installs as."""
    from importlib.metadata import version

    from eve._version import DISTRIBUTION

    return version(DISTRIBUTION if name == "eve" else name)
