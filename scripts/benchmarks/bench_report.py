"""Benchmark: ``probmut report --model mnist`` (30 mutants, their verdicts and figures),
this checkout against an earlier one, side by side.

Each round runs the earlier checkout's command and this one's, one after the other, in
fresh processes (start-up included), alternating which goes first, so that a machine
whose load drifts slows both; the ratio is taken per round and its median reported.
Before timing, each side runs once untimed (numba compiles or loads its kernels next to
its own source). Both write the page and print the JSON summary; the script checks that
they give the same numbers (mutation score and interval, counts, every mutant's
posterior, decision, verdict, P(killed) and instances needed), and that this
checkout's page is the same, byte for byte but the date, drawn by one process and by
several (``--jobs 1`` against the default).

The timed rounds keep no cache (``--no-cache``, where the checkout has it; the code
before the report's cache keeps none): each computes every verdict. Apart, the script
times this checkout's report written again with its cache of the verdicts' blocks
(``--cache``, filled by one untimed run: what a user meets rewriting the page after a
change that leaves the populations as they were), checks that it gives the same page,
and says whether that rerun met the target.

The earlier checkout is a git revision of this repository (default: the code before
issue 41's report work; ``--baseline 3f92dcd``: the code before the start-up and drawing
changes of 2026-11-27), written to a temporary folder, or a folder with a checkout.
Issue 41's target is this checkout's median wall time under :data:`TARGET` seconds on
an idle 2-core machine: the script says whether it was met and with what load average
(a loaded machine slows both sides alike, so the ratio holds, but not the seconds).

    python scripts/benchmarks/bench_report.py                      # 3 rounds
    python scripts/benchmarks/bench_report.py --rounds 5 --baseline 7148a09 --json
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The last commit before the report's second round (issue 41).
BEFORE = "7148a09"
#: Issue 41's target for this command on an idle 2-core machine, in seconds of wall time.
TARGET = 8.0


def checkout(revision: str, folder: Path) -> Path:
    """``revision`` of this repository written to ``folder`` (git archive)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", revision],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
        tar.extractall(folder, filter="data")
    return folder


#: The options for a report that computes every verdict (code before the report's cache
#: keeps none and has no such option: :func:`cold`).
COLD = ("--no-cache",)


def cold(source: Path) -> tuple[str, ...]:
    """The options of ``source``'s report that compute every verdict: :data:`COLD` where
    its command has them (a baseline with the cache would otherwise read its verdicts
    from the cache its first run left beside the page)."""
    command = source / "probmut" / "cli" / "report.py"
    return COLD if command.is_file() and COLD[0] in command.read_text() else ()


def run(source: Path, out: Path, *extra: str) -> tuple[float, float, dict]:
    """``probmut report --model mnist --json`` with ``source`` first on the path: wall
    seconds, CPU seconds of the process and its children, and the printed document."""
    env = os.environ | {"PYTHONPATH": str(source)}
    command = [sys.executable, "-m", "probmut", "report", "--model", "mnist", "--out",
               str(out), "--quiet", "--json", *extra]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, cwd=out.parent, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{source}: probmut report failed:\n{done.stderr}")
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return seconds, cpu, json.loads(done.stdout)


def numbers(document: dict) -> dict:
    """What both pages show, from a report's JSON document."""
    score = document["mutation_score"]
    found = {"score": [score[k] for k in ("mean", "ci_low", "ci_high", "decided")],
             "counts": document["counts"]}
    for m in document["mutants"]:
        p, v = m["posterior"], m["verdict"] or {}
        found[m["name"]] = [p["mean"], p["ci_low"], p["ci_high"], p["ratio"], m["decision"],
                            v.get("verdict"), v.get("p_killed"), v.get("needed")]
    return found


def same_page(a: Path, b: Path) -> bool:
    """Two pages of this checkout equal but for the minute they were made."""
    def masked(path):
        return re.sub(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC", "DATE", path.read_text())

    return masked(a) == masked(b)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=BEFORE,
                        help=f"a git revision or a checkout's folder (default {BEFORE})")
    parser.add_argument("--rounds", type=int, default=3, help="timed rounds (3)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as top:
        top = Path(top)
        before = Path(args.baseline)
        if not before.is_dir():
            before = checkout(args.baseline, top / "before")
        sides = {"before": before, "now": ROOT}
        options = {side: cold(source) for side, source in sides.items()}
        pages = {side: top / f"{side}.html" for side in sides}
        documents = {side: run(source, pages[side], *options[side])[2]
                     for side, source in sides.items()}
        times = {side: [] for side in sides}
        for round_ in range(args.rounds):
            order = list(sides) if round_ % 2 == 0 else list(sides)[::-1]
            for side in order:
                pages[side].unlink(missing_ok=True)
                seconds, cpu, documents[side] = run(sides[side], pages[side], *options[side])
                times[side].append((seconds, cpu))
        serial = top / "now-one-process.html"
        run(ROOT, serial, "--jobs", "1", *COLD)
        equal = numbers(documents["before"]) == numbers(documents["now"])
        identical = same_page(pages["now"], serial)
        cached, cache = top / "now-cached.html", ("--cache", str(top / "cache"))
        run(ROOT, cached, *cache)  # fills the cache
        again = [run(ROOT, cached, *cache)[:2] for _ in range(args.rounds)]
        identical_again = same_page(pages["now"], cached)
    ratios = [b[0] / n[0] for b, n in zip(times["before"], times["now"], strict=True)]
    result = {"baseline": args.baseline, "rounds": args.rounds,
              "before_seconds": [t[0] for t in times["before"]],
              "now_seconds": [t[0] for t in times["now"]],
              "before_cpu_seconds": [t[1] for t in times["before"]],
              "now_cpu_seconds": [t[1] for t in times["now"]],
              "ratio_median": statistics.median(ratios), "ratios": ratios,
              "target_seconds": TARGET,
              "under_target": statistics.median(t[0] for t in times["now"]) < TARGET,
              "load_average": os.getloadavg(), "cpus": os.cpu_count(),
              "same_numbers": equal, "same_page_one_or_more_processes": identical,
              "again_seconds": [t[0] for t in again], "again_cpu_seconds": [t[1] for t in again],
              "again_under_target": statistics.median(t[0] for t in again) < TARGET,
              "same_page_again": identical_again}
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        for side in sides:
            walls = [t[0] for t in times[side]]
            cpus = [t[1] for t in times[side]]
            print(f"{side:<7} wall {statistics.median(walls):6.1f} s (median of "
                  f"{', '.join(f'{w:.1f}' for w in walls)}), CPU {statistics.median(cpus):.1f} s")
        print(f"speed-up {result['ratio_median']:.2f}x (median of the rounds' ratios "
              f"{', '.join(f'{r:.2f}' for r in ratios)}); load average "
              f"{', '.join(f'{x:.1f}' for x in result['load_average'])} on {os.cpu_count()} CPUs")
        print(f"target: under {TARGET:g} s on an idle machine: "
              f"{'met' if result['under_target'] else 'not met'} at this load")
        walls, cpus = [t[0] for t in again], [t[1] for t in again]
        print(f"written again with its cache: wall {statistics.median(walls):.1f} s (median of "
              f"{', '.join(f'{w:.1f}' for w in walls)}), CPU {statistics.median(cpus):.1f} s; "
              f"under {TARGET:g} s: {'yes' if result['again_under_target'] else 'no'}; "
              f"the same page: {'yes' if identical_again else 'NO'}")
        print(f"same numbers on both pages: {'yes' if equal else 'NO'}; this checkout's page "
              f"drawn by one process and by several: {'identical' if identical else 'DIFFERENT'}")
    return 0 if equal and identical and identical_again else 1


if __name__ == "__main__":
    sys.exit(main())
