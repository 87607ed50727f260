"""Where every benchmark writes its figures: ``bench/results/<name>.{json,md}``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def publish(name: str, report: dict[str, Any], markdown: str, *, quick: bool) -> None:
    """Print the table; write both files unless ``quick`` (a smoke run keeps the committed
    figures)."""
    print(markdown)
    if quick:
        return
    RESULTS_DIR.mkdir(exist_ok=True)
    (RESULTS_DIR / f"{name}.json").write_text(json.dumps(report, indent=2) + "\n")
    (RESULTS_DIR / f"{name}.md").write_text(markdown)
