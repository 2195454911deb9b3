"""Training throughput and statistics of stacked training against one-at-a-time training.

Side by side in one run on this machine, every mode a fresh ``probmut train`` process
(wall time includes TensorFlow's start-up, as a user sees it):

* ``baseline``: ``--stack 1 --jobs 2``, one instance at a time with ``model.fit`` in two
  worker processes (the trainer before ``--stack``);
* ``stacked``: ``--jobs 2`` with the automatic stack size (two stacks at a time), run
  before and after the one-at-a-time run, which is compared with their mean.

Both train the same healthy digits_cnn population (default 40 instances, 15 epochs);
the accuracies are compared (two-sample Kolmogorov-Smirnov, Levene, means with their
standard errors). Each way also trains delete_training_data at a clear and a null
magnitude (``--mutant-instances`` each) and the bagged-posterior decisions
(``probmut posterior --sample 8``) are compared. Then DeepCrime's MNIST model on
synthetic MNIST-shaped data (60000 + 10000 random 28 x 28 images with labels from a
fixed random linear rule, made here), a few instances for ``--mnist-epochs`` epochs,
one at a time and as one stack of all of them (``--stack N``: ``auto`` trains this
model one at a time, its steps being too large for stacking to pay): the speedup of
stacking it, whatever it is. Run from the repository root::

    python scripts/benchmarks/bench_train.py
    python scripts/benchmarks/bench_train.py --json
    python scripts/benchmarks/bench_train.py --instances 10 --mutant-instances 0 --mnist-instances 0
    python scripts/benchmarks/bench_train.py --instances 10 --save-overhead
    python scripts/benchmarks/bench_train.py --paper-size --json   # 200 instances each way

``--save-overhead`` measures only what ``--save-models`` costs, in one process without
start-up noise (see :func:`save_overhead`); ``--crossover`` only the per-step times
alone and stacked behind ``--stack auto``'s threshold (see :func:`crossover`)::

    python scripts/benchmarks/bench_train.py --crossover
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from scipy import stats

REPO = Path(__file__).resolve().parents[2]
MAGNITUDES = "0,50"  # null (nothing deleted) and clear (half the training set deleted)


def _train(out: Path, *args) -> float:
    command = [sys.executable, "-m", "probmut", "train", "--jobs", "2", "--out", str(out),
               "--quiet", *map(str, args)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    start = time.perf_counter()
    subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def _accuracies(path: Path) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", skiprows=1, usecols=1, ndmin=1)


def _decisions(out: Path, sample: int) -> dict[str, bool]:
    command = [sys.executable, "-m", "probmut", "posterior", "--manifest",
               str(out / "manifest.toml"), "--model", out.name, "--mutation",
               "delete_training_data", "--no-plot", "--sample", str(sample), "--json"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(command, cwd=REPO, env=env, check=True, capture_output=True,
                            text=True)
    return {p["name"]: p["killed"] for p in json.loads(result.stdout)["results"][1:]}


def _synthetic_mnist(path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.integers(0, 256, size=(70000, 28, 28), dtype=np.uint8)
    rule = rng.normal(size=(784, 10))
    y = np.argmax((x.reshape(70000, -1) / 255.0 - 0.5) @ rule, axis=1)
    np.savez(path, x_train=x[:60000], y_train=y[:60000], x_test=x[60000:], y_test=y[60000:])


def _ways(tmp: Path, name: str, instances: int, *args, stacked: str = "auto") -> dict:
    """Both ways, the one-at-a-time run bracketed by two stacked runs (stacked, one at a
    time, stacked): a machine that speeds up or slows down during the minutes of the
    one-at-a-time run moves the two stacked runs apart instead of tilting the ratio,
    which compares the one-at-a-time seconds with the stacked runs' mean. The two
    stacked runs are the same command, so they must give the same file."""
    row, stacked_seconds = {}, []
    for way, stack, out in (("stacked", stacked, "stacked_first"), ("baseline", "1", "baseline"),
                            ("stacked", stacked, "stacked")):
        seconds = _train(tmp / f"{name}_{out}", "--instances", instances, "--stack", stack, *args)
        if way == "stacked":
            stacked_seconds.append(round(seconds, 2))
            seconds = float(np.mean(stacked_seconds))
        row[way] = {"seconds": round(seconds, 2),
                    "instances_per_min": round(instances / seconds * 60, 2)}
    row["stacked"]["runs_seconds"] = stacked_seconds
    row["stacked"]["runs_identical"] = ((tmp / f"{name}_stacked_first" / "healthy.csv").read_bytes()
                                        == (tmp / f"{name}_stacked" / "healthy.csv").read_bytes())
    row["speedup"] = round(row["baseline"]["seconds"] / row["stacked"]["seconds"], 2)
    return row


def bench(args) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        digits = ["--dataset", "digits", "--architecture", "digits_cnn"]
        # untimed: the first command after a while reads TensorFlow's libraries from disk
        # (seconds more); whichever way ran first would pay for it
        _train(tmp / "warm_up", "--instances", 2, "--epochs", 1, *digits)
        if args.epochs:
            digits += ["--epochs", args.epochs]
        result = {"cpus": os.cpu_count(), "load_average_start": os.getloadavg()}
        healthy = _ways(tmp, "digits", args.instances, *digits)
        base = _accuracies(tmp / "digits_baseline" / "healthy.csv")
        stacked = _accuracies(tmp / "digits_stacked" / "healthy.csv")
        se = np.hypot(base.std(ddof=1) / np.sqrt(base.size),
                      stacked.std(ddof=1) / np.sqrt(stacked.size))
        result |= {
            "case": "paper size" if args.paper_size else "default",
            "instances": args.instances,
            "baseline_instances_per_min": healthy["baseline"]["instances_per_min"],
            "stacked_instances_per_min": healthy["stacked"]["instances_per_min"],
            "speedup": healthy["speedup"], "digits": healthy,
            "baseline_mean": round(base.mean(), 5), "stacked_mean": round(stacked.mean(), 5),
            "baseline_sd": round(base.std(ddof=1), 5), "stacked_sd": round(stacked.std(ddof=1), 5),
            "mean_difference_in_se": round(abs(base.mean() - stacked.mean()) / se, 2),
            "ks_p": float(stats.ks_2samp(base, stacked).pvalue),
            "levene_p": float(stats.levene(base, stacked).pvalue)}
        if args.mutant_instances:
            mutants = {}
            for way, stack in (("baseline", "1"), ("stacked", "auto")):
                out = tmp / f"kill_{way}"
                seconds = _train(out, "--instances", args.mutant_instances, "--stack", stack,
                                 "--mutation", f"delete_training_data:{MAGNITUDES}", *digits)
                killed = _decisions(out, min(8, args.mutant_instances // 2))
                mutants[way] = {"seconds": round(seconds, 2), "killed": killed}
            mutants["same_decisions"] = (mutants["baseline"]["killed"]
                                         == mutants["stacked"]["killed"])
            result["delete_training_data"] = mutants
        if args.mnist_instances:
            data = tmp / "synthetic_mnist.npz"
            _synthetic_mnist(data)
            result["deepcrime_mnist"] = {
                "instances": args.mnist_instances, "epochs": args.mnist_epochs,
                **_ways(tmp, "mnist", args.mnist_instances, "--data", data, "--architecture",
                        "deepcrime_mnist", "--epochs", args.mnist_epochs,
                        stacked=str(args.mnist_instances))}  # auto trains it one at a time
        result["load_average_end"] = os.getloadavg()
    return result


def save_overhead(instances: int, epochs: int | None) -> dict:
    """The cost of --save-models: each digits_cnn instance is trained and recorded twice
    in this process (one at a time), with and without its model (.keras bytes made as in
    a worker, written as the driver writes them), the order alternating; the same seeds,
    so the same work but for the saving."""
    from probmut.train.datasets import load_dataset
    from probmut.train.finished import save_record
    from probmut.train.instance import train_instance
    from probmut.train.models import MODELS
    from probmut.train.tf_setup import configure_tensorflow
    from probmut.train.work import Assignment, RunSettings

    configure_tensorflow(1)
    data = load_dataset("digits")
    config = MODELS["digits_cnn"].config
    settings = RunSettings("digits", "digits_cnn", config.replace(epochs=epochs or config.epochs))
    train_instance(Assignment(settings, "healthy", 0), dataset=data)  # warm-up
    seconds = {False: [], True: []}
    with tempfile.TemporaryDirectory() as tmp:
        for instance in range(instances):
            for save in ((False, True) if instance % 2 else (True, False)):
                start = time.perf_counter()
                assignment = Assignment(settings, "healthy", instance, save_model=save)
                result = train_instance(assignment, dataset=data)
                save_record(Path(tmp) / str(save), result)
                seconds[save].append(time.perf_counter() - start)
    ratios = sorted(b / a for a, b in zip(seconds[False], seconds[True], strict=True))
    return {"instances": instances, "seconds_without": round(sum(seconds[False]), 2),
            "seconds_with": round(sum(seconds[True]), 2),
            "ratio_total": round(sum(seconds[True]) / sum(seconds[False]), 3),
            "ratio_median": round(float(ratios[len(ratios) // 2]), 3)}


CROSSOVER = [("digits_cnn", 8, 32), ("digits_cnn", 8, 128), ("digits_cnn", 8, 256),
             ("deepcrime_mnist", 28, 16)]  # (model, image side, batch size)


def _seconds_alone(spec, dims, config, x, y, epochs: int) -> float:
    """Training time of one model alone with ``model.fit`` (build excluded)."""
    import keras

    from probmut.train import fitting, models

    keras.backend.clear_session()
    keras.utils.set_random_seed(0)
    model = models.build_model(spec, dims, config)
    start = time.perf_counter()
    fitting.fit(model, x, y, dims, "classification", config.replace(epochs=epochs))
    return time.perf_counter() - start


def _seconds_stacked(spec, dims, config, x, y, members: int, epochs: int) -> float:
    """Training time of a stack of ``members`` on the same data (build excluded)."""
    from probmut.train import stack

    seeds = list(range(members))
    trained = stack.StackedModel(*stack.starting_weights(spec, dims, config, seeds), seeds)
    orders = [stack.data_order(seed, len(y), epochs) for seed in seeds]
    start = time.perf_counter()
    stack.fit_stack(trained, [x] * members, [y] * members, 10, config.replace(epochs=epochs),
                    orders)
    return time.perf_counter() - start


def crossover(members: int = 8, steps: int = 40) -> list[dict]:
    """Per instance and training step, one thread, in this process: a model trained
    alone (``model.fit``) against a stack of ``members``, at growing step sizes (the
    measurement behind ``--stack auto``'s threshold, ``stack.CPU_STEP_FLOPS``). Random
    inputs; times are differences between 4 epochs and 1, so tracing and start-up
    cancel."""
    from probmut.train import models, stack
    from probmut.train.datasets import ModelDims
    from probmut.train.tf_setup import configure_tensorflow

    configure_tensorflow(1)
    rows = []
    for name, side, batch in CROSSOVER:
        dims = ModelDims(input_shape=(side, side, 1), n_outputs=10)
        rng = np.random.default_rng(0)
        x = rng.random((batch * steps, side, side, 1), dtype=np.float32)
        y = rng.integers(0, 10, batch * steps)
        spec = models.resolve_model(name, dims)
        config = spec.config.replace(batch_size=batch)
        data = (spec, dims, config, x, y)
        one = (_seconds_alone(*data, 4) - _seconds_alone(*data, 1)) / (3 * steps)
        many = ((_seconds_stacked(*data, members, 4) - _seconds_stacked(*data, members, 1))
                / (3 * steps * members))
        probe = models.build_model(spec, dims, config)
        rows.append({"model": name, "batch": batch,
                     "step_mflop": round(stack.step_flops(probe, batch) / 1e6),
                     "alone_ms": round(one * 1000, 2), "stacked_ms": round(many * 1000, 2),
                     "stacked_speedup": round(one / many, 2)})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=40, help="healthy digits_cnn (40)")
    parser.add_argument("--epochs", type=int, help="default: digits_cnn's own (15)")
    parser.add_argument("--mutant-instances", type=int, default=20,
                        help="instances per delete_training_data population (20; 0 skips)")
    parser.add_argument("--mnist-instances", type=int, default=4,
                        help="deepcrime_mnist instances each way (4; 0 skips)")
    parser.add_argument("--mnist-epochs", type=int, default=1, help="deepcrime_mnist epochs (1)")
    parser.add_argument("--save-overhead", action="store_true",
                        help="only measure what --save-models costs (--instances instances)")
    parser.add_argument("--crossover", action="store_true",
                        help="only measure per-step times alone and stacked at growing step "
                             "sizes (the threshold of --stack auto)")
    parser.add_argument("--paper-size", action="store_true",
                        help="the paper's population size: 200 healthy digits_cnn instances "
                             "each way, no mutants, no deepcrime_mnist (issue 34's 10x target)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    if args.paper_size:
        args.instances, args.mutant_instances, args.mnist_instances = 200, 0, 0
    if args.crossover:
        rows = crossover()
        print(json.dumps(rows, indent=2) if args.json else "\n".join(
            f"{r['model']:16} batch {r['batch']:4} {r['step_mflop']:6} MFLOP/step: alone "
            f"{r['alone_ms']:6.2f} ms, stacked {r['stacked_ms']:6.2f} ms per instance-step "
            f"({r['stacked_speedup']:.2f}x)" for r in rows))
        return 0
    if args.save_overhead:
        row = save_overhead(args.instances, args.epochs)
        print(json.dumps(row, indent=2) if args.json else
              f"--save-models: {row['instances']} digits_cnn instances trained twice in one "
              f"process, {row['seconds_without']} s without and {row['seconds_with']} s with "
              f"their models: {row['ratio_total']:.3f}x in total, {row['ratio_median']:.3f}x "
              "per instance (median); the target is at most 1.10x")
        return 0
    result = bench(args)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{os.cpu_count()} CPUs, load average {result['load_average_start'][0]:.1f} at the "
          f"start, {result['load_average_end'][0]:.1f} at the end")
    rows = [(f"digits_cnn, {args.instances} healthy", result["digits"])]
    if "deepcrime_mnist" in result:
        r = result["deepcrime_mnist"]
        rows.append((f"deepcrime_mnist, {r['instances']} x {r['epochs']} epoch", r))
    print(f"{'population':32} {'one at a time':>14} {'stacked':>10} {'speedup':>8}  (inst/min)")
    for label, r in rows:
        print(f"{label:32} {r['baseline']['instances_per_min']:14.1f} "
              f"{r['stacked']['instances_per_min']:10.1f} {r['speedup']:7.2f}x  (stacked runs "
              f"{' and '.join(f'{t} s' for t in r['stacked']['runs_seconds'])})")
    print(f"accuracy one at a time: mean {result['baseline_mean']:.4f} "
          f"sd {result['baseline_sd']:.4f}; "
          f"stacked: mean {result['stacked_mean']:.4f} sd {result['stacked_sd']:.4f}")
    print(f"means differ by {result['mean_difference_in_se']} standard errors; "
          f"KS p = {result['ks_p']:.3f}, Levene p = {result['levene_p']:.3f}")
    if "delete_training_data" in result:
        m = result["delete_training_data"]
        print(f"delete_training_data killed (bagged posterior, --sample 8): one at a time "
              f"{m['baseline']['killed']}, stacked {m['stacked']['killed']}: "
              f"{'same' if m['same_decisions'] else 'DIFFERENT'} decisions")
    return 0


if __name__ == "__main__":
    sys.exit(main())
