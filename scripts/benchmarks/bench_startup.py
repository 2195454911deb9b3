"""How fast `probmut train` starts: wall seconds of `--list-operators`, a dry run, a
refused mutation, and from the command to the first instance's training step, with one
job and with two. Each command runs in a fresh process; with ``--baseline DIR`` (another
checkout of probmut) each run of this checkout alternates with one of DIR's, and the
JSON holds both and their ratio per pair, so that a drift of the machine's load cuts both.

The first training step is the first call of the training loop (``fitting.fit`` or the
stack's ``fit_stack``), seen in any process of the run through a ``sitecustomize``
module this script writes into a temporary folder; the run is stopped there.

    python scripts/benchmarks/bench_startup.py --runs 5 --baseline ../main-before --json
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Where the training loop is, in this checkout and in older ones (stack.py before the
#: stack package).
LOOPS = ["probmut.train.fitting:fit", "probmut.train.models:fit",  # its home in older checkouts
         "probmut.train.stack.training:fit_stack", "probmut.train.stack:fit_stack"]
HOOK = '''
import os, sys
if os.environ.get("BENCH_FIRST_STEP"):
    import importlib.abc, importlib.machinery, time
    targets = {}
    for item in os.environ["BENCH_LOOPS"].split(","):
        module, _, name = item.partition(":")
        targets.setdefault(module, []).append(name)

    def stop_at_first_step(module):
        for name in targets.get(module.__name__, ()):
            def first_step(*args, **kwargs):
                with open(os.environ["BENCH_FIRST_STEP"], "a") as handle:
                    handle.write(f"{time.time()}\\n")
                os.killpg(os.getpgid(0), 9)
            setattr(module, name, first_step)

    class Loader(importlib.abc.Loader):
        def __init__(self, inner):
            self.inner = inner
        def create_module(self, spec):
            return self.inner.create_module(spec)
        def exec_module(self, module):
            self.inner.exec_module(module)
            stop_at_first_step(module)

    class Finder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name not in targets:
                return None
            spec = importlib.machinery.PathFinder.find_spec(name, path)
            if spec is not None:
                spec.loader = Loader(spec.loader)
            return spec

    sys.meta_path.insert(0, Finder())
'''
COMMANDS = {
    "list_operators": ["--list-operators"],
    "dry_run_data_level": ["--mutation", "delete_training_data:10", "--dry-run"],
    "dry_run_model_level": ["--mutation", "neurons_freezing:0.05", "--dry-run"],
    "refused_data_level": ["--mutation", "delete_training_data:100", "--out", "{out}"],
    "first_step_jobs_1": ["--instances", "20", "--out", "{out}", "--quiet"],
    "first_step_jobs_2": ["--instances", "20", "--jobs", "2", "--out", "{out}", "--quiet"],
}


def _seconds(checkout: Path, args: list[str], scratch: Path) -> float:
    """Wall seconds of one `probmut train ARGS` with ``checkout`` first on the path; for
    the first-step commands, until the first training step."""
    out = scratch / "run"
    shutil.rmtree(out, ignore_errors=True)
    mark = scratch / "first_step"
    mark.unlink(missing_ok=True)
    first_step = args[0] == "--instances"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(scratch), str(checkout)])}
    if first_step:
        env.update(BENCH_FIRST_STEP=str(mark), BENCH_LOOPS=",".join(LOOPS))
    command = [sys.executable, "-m", "probmut", "train", *(a.format(out=out) for a in args)]
    start = time.time()
    subprocess.run(command, env=env, cwd=scratch, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, start_new_session=True, timeout=1800)
    if first_step:
        if not mark.exists():
            raise RuntimeError(f"{checkout}: {' '.join(args)} never reached a training step")
        return float(mark.read_text().split()[0]) - start
    return time.time() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each command (5)")
    parser.add_argument("--baseline", type=Path, help="another probmut checkout to compare")
    parser.add_argument("--only", choices=list(COMMANDS), action="append",
                        help="measure only these commands (repeatable)")
    parser.add_argument("--json", action="store_true", help="print one JSON document")
    args = parser.parse_args()
    sides = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    result = {"runs": args.runs, "load_average_start": os.getloadavg(), "commands": {}}
    with tempfile.TemporaryDirectory(prefix="probmut-startup-") as folder:
        scratch = Path(folder)
        (scratch / "sitecustomize.py").write_text(HOOK)
        for name in args.only or COMMANDS:
            times = {side: [] for side in sides}
            for _ in range(args.runs):  # this, baseline, this, baseline, ...
                for side, checkout in sides.items():
                    times[side].append(_seconds(checkout, COMMANDS[name], scratch))
            entry = {f"{side}_median_s": round(statistics.median(t), 3)
                     for side, t in times.items()}
            if args.baseline:
                ratios = [a / b for a, b in zip(times["this"], times["baseline"], strict=True)]
                entry["ratio_median"] = round(statistics.median(ratios), 3)
            result["commands"][name] = entry
            if not args.json:
                print(name, entry, flush=True)
    result["load_average_end"] = os.getloadavg()
    if args.json:
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
