"""Token-accuracy benchmark: Pi's chars/4, cl100k and the calibrated estimator.

    .venv/bin/python bench/bench_tokens.py [SESSION.jsonl] [--json OUT]

Default session: ``../shared/fixtures/pi/before-compaction.jsonl`` next to the
repo. Ground truth is the session's own usage: for consecutive usable assistant
messages of one model, ``prompt(A_j) - prompt(A_i)`` (prompt = input + cacheRead
+ cacheWrite) is the real size of the messages ``A_i .. A_j-1``; the sampling
rules are those of ``pi_sessiond.estimators.calibrated``. The samples are split
in order: the calibrated estimator is fitted on the first half, and every
estimator is evaluated on the second half:

* median |estimate - real| / real over the turns (per-turn growth error), and
* (sum of estimates - sum of real growth) / sum of real growth (total, signed).
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pi_sessiond.estimators import cl100k
from pi_sessiond.estimators.calibrated import Sample, collect_samples, fit_samples, load_messages

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SESSION = ROOT.parent / "shared" / "fixtures" / "pi" / "before-compaction.jsonl"
TARGETS = {"calibrated": "median <= 10%, total within +-5%"}

Segment = list[dict[str, Any]]


def segment(stream: Sequence[dict[str, Any] | None], sample: Sample) -> Segment:
    """The messages whose real size ``sample.real`` is."""
    return [m for m in stream[sample.start : sample.end] if m is not None]


def score(samples: Sequence[Sample], estimate: Callable[[Sample], float]) -> dict[str, float]:
    """Median absolute per-turn error and signed total error, both in percent."""
    errors = [abs(estimate(s) - s.real) / s.real * 100 for s in samples if s.real > 0]
    real = sum(s.real for s in samples)
    total = sum(estimate(s) for s in samples)
    return {"median_abs_pct": statistics.median(errors), "total_pct": (total - real) / real * 100}


def run(path: Path) -> dict[str, Any]:
    """Every number of the table, as a JSON-ready dict."""
    stream = load_messages(path)
    samples = collect_samples(stream)
    if len(samples) < 4:
        raise SystemExit(f"{path}: only {len(samples)} usable turn pairs; need at least 4")
    half = len(samples) // 2
    train, test = samples[:half], samples[half:]
    calibration = fit_samples(train, train[0].key)
    estimators: dict[str, Callable[[Sample], float]] = {
        "pi": lambda s: s.estimated,
        "cl100k": lambda s: sum(cl100k.count_message_tokens(m) for m in segment(stream, s)),
        "calibrated": lambda s: calibration.estimate(segment(stream, s)),
    }
    rows = {name: score(test, fn) for name, fn in estimators.items()}
    rows["pi (all pairs)"] = score(samples, estimators["pi"])
    return {
        "session": str(path),
        "pairs": len(samples),
        "train_pairs": len(train),
        "test_pairs": len(test),
        "keys": sorted({s.key for s in samples}),
        "cl100k_available": cl100k.available(),
        "calibration": {"ratio": calibration.ratio, "overhead": calibration.overhead,
                        "samples": calibration.samples, "key": calibration.key},
        "rows": rows,
    }


def table(result: dict[str, Any]) -> str:
    """The Markdown table of ``run``'s result."""
    lines = [
        "| estimator | evaluated on | per-turn growth, median abs error | total growth error | target |",
        "|---|---|---:|---:|---|",
    ]
    for name, row in result["rows"].items():
        scope = "all pairs" if "all" in name else f"second half ({result['test_pairs']} pairs)"
        lines.append(
            f"| {name.replace(' (all pairs)', '')} | {scope} | {row['median_abs_pct']:.1f}% "
            f"| {row['total_pct']:+.1f}% | {TARGETS.get(name, '')} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Print the command, the calibration and the table; optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", nargs="?", type=Path, default=DEFAULT_SESSION)
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)
    result = run(args.session)
    shown = sys.argv if argv is None else ["bench/bench_tokens.py", *argv]
    print(f"$ .venv/bin/python {shlex.join(shown)}")
    cal = result["calibration"]
    print(f"# {result['session']}: {result['pairs']} turn pairs, keys {', '.join(result['keys'])}; "
          f"cl100k available: {result['cl100k_available']}")
    print(f"# calibrated fit on the first {result['train_pairs']} pairs: ratio {cal['ratio']:.4f}, "
          f"overhead {cal['overhead']:.2f} tokens/message ({cal['key']})")
    print()
    print(table(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
