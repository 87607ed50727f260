"""Run eve's benchmarks: ``python -m bench [--quick] [--only NAME]``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence

from bench import BENCHMARKS, Benchmark


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument(
        "--quick",
        action="store_true",
        help="fewer repeats, a smoke test; results are printed, not written",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help="run only these benchmarks (as --only)",
    )
    parser.add_argument(
        "--only",
        metavar="NAME",
        action="append",
        choices=[b.name for b in BENCHMARKS],
        help="run only this benchmark (repeatable); one of: "
        + ", ".join(b.name for b in BENCHMARKS),
    )
    args = parser.parse_args(argv)
    unknown = sorted(set(args.names) - {b.name for b in BENCHMARKS})
    if unknown:
        parser.error(f"no benchmark named {', '.join(unknown)}")
    return args


def _load(benchmark: Benchmark) -> Callable[..., object]:
    module_name, _, function_name = benchmark.target.partition(":")
    function: Callable[..., object] = getattr(importlib.import_module(module_name), function_name)
    return function


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    only = [*(args.only or []), *args.names]
    selected = [b for b in BENCHMARKS if not only or b.name in only]
    for benchmark in selected:
        print(f"== {benchmark.name}: {benchmark.summary}", flush=True)
        _load(benchmark)(quick=args.quick)
    # Always 0: a missed target is a finding to report, not a broken run.
    return 0


if __name__ == "__main__":
    sys.exit(main())
