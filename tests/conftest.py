"""Shared fixtures and helpers: the bundled paper data (raw_data/: the populations, the
paper's saved kill rates and one of its Monte-Carlo error inputs), the rest of the paper's
data where a test needs it (beside the project, or where $PROBMUT_REFERENCE points; absent
from a fresh clone, so those tests skip, saying so), and the synthetic data that a module's
library tests and its command's tests (tests/cli/) both build."""

import json
import math
import os
import signal
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pytest

from probmut.bagging import PosteriorSettings
from probmut.io.manifest import Manifest, write_manifest
from probmut.io.populations import read_population
from probmut.io.records import InstanceRecord
from probmut.population import pair

ROOT = Path(__file__).resolve().parent.parent


def interruptible():
    """``preexec_fn`` of a command a test stops with SIGINT: Ctrl-C as a terminal delivers
    it (a shell's background job, or a test runner, may hand children SIGINT ignored)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


#: The modules and docs folders (tests/test_docs.py's classes) that take minutes,
#: heaviest first (measured with --durations on the full suite). They are collected
#: before the rest, so that the two workers of the README's ``pytest -n 2 --dist
#: loadscope`` start them first and the run does not end with one of them running alone
#: while the other worker idles (longest job first).
HEAVY_FIRST = ("tests/train/test_run.py", "tests/test_docs.py::TestFolder_symptoms",
               "tests/test_docs.py::TestFolder_training", "tests/test_replicate.py",
               "tests/test_recommend.py", "tests/test_docs.py::TestFolder_bayes",
               "tests/test_docs.py::TestFolder_studies",
               "tests/test_docs.py::TestFolder_recommend",
               "tests/train/test_operator_targets.py", "tests/train/test_instance.py",
               "tests/train/test_stack.py", "tests/train/torch/test_cli.py",
               "tests/test_docs.py::TestFolder_score")


def _heaviness(item) -> int:
    """The rank in HEAVY_FIRST of the module or class ``item`` belongs to."""
    return next((i for i, scope in enumerate(HEAVY_FIRST)
                 if item.nodeid.startswith(scope + "::")), len(HEAVY_FIRST))


def pytest_collection_modifyitems(config, items):
    """The scopes of HEAVY_FIRST first, in that order; the rest in collection order."""
    items.sort(key=_heaviness)


@pytest.fixture
def default_recursion_limit():
    """Python's default recursion limit, which the command line runs with, for the test:
    some libraries a test process may have imported raise it (pytensor: 3000), and a
    hostile file nested 2000 deep then parses instead of failing as it does for users."""
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    yield
    sys.setrecursionlimit(limit)


RAW = ROOT / "raw_data"
REFERENCE = Path(os.environ.get("PROBMUT_REFERENCE",
                                ROOT.parent / "shared" / "reference" / "pmt"))


@pytest.fixture(scope="session")
def manifest():
    return Manifest.load(RAW / "manifest.toml")


@pytest.fixture(scope="session")
def mnist_campaign():
    """The bundled MNIST data's campaign, without verdicts."""
    from probmut.campaign import summarize_campaign

    return summarize_campaign(model="mnist", verdicts=False)


@pytest.fixture(scope="session")
def mnist_dc():
    """The campaign of DeepCrime's own MNIST populations (bundled), without verdicts."""
    from probmut.campaign import summarize_campaign

    return summarize_campaign(model="mnist_dc", verdicts=False)


@pytest.fixture(scope="session")
def mnist_delete(manifest):
    """MNIST delete_training_data: (healthy, [mutants]) with magnitudes as names."""
    mutation = manifest.mutation("mnist", "delete_training_data")
    healthy = read_population(mutation.healthy, name="healthy")
    mutants = [read_population(f, name=m) for m, f in zip(mutation.magnitudes, mutation.files,
                                                                  strict=True)]
    return healthy, mutants


def real_draws(manifest, count: int, seed: int, healthy_pairs: bool = False):
    """``count`` random 20-vs-20 draws of the bundled populations (rows of two arrays):
    healthy against each mnist/movie/lenet mutant in turn, and against itself too with
    ``healthy_pairs`` (where p spreads over [0, 1])."""
    rng = np.random.default_rng(seed)
    pairs = []
    for mutation in manifest.mutations():
        if mutation.model.endswith("_dc"):
            continue
        healthy = read_population(mutation.healthy).values
        if healthy_pairs:
            pairs.append((healthy, healthy))
        pairs += [(healthy, read_population(path).values) for path in mutation.files]
    xs, ys = [], []
    for t in range(count):
        h, m = pairs[t % len(pairs)]
        xs.append(rng.choice(h, 20, replace=False))
        ys.append(rng.choice(m, 20, replace=False))
    return np.array(xs), np.array(ys)


def real_paired_draws(manifest, count: int, seed: int, sample: int = 20):
    """``count`` random paired draws of ``sample`` instance ids from the bundled model-level
    mutations (mnist and lenet weights_fuzzing and neurons_freezing, every magnitude in
    turn), paired by instance id: rows of healthy and mutant accuracies of the same ids."""
    rng = np.random.default_rng(seed)
    pairs = []
    for model in ("mnist", "lenet"):
        for name in ("weights_fuzzing", "neurons_freezing"):
            mutation = manifest.mutation(model, name)
            healthy = read_population(mutation.healthy)
            pairs += [pair(healthy, read_population(path)) for path in mutation.files]
    xs, ys = [], []
    for t in range(count):
        h, m = pairs[t % len(pairs)]
        ids = rng.choice(len(h), sample, replace=False)
        xs.append(h.values[ids])
        ys.append(m.values[ids])
    return np.array(xs), np.array(ys)


#: The paper's saved kill rates (bundled: raw_data/README.md).
KILL_RATES = RAW / "kill_rates"
#: The paper's MCE kill rates of mnist change_label 3.12 (100 repetitions of 200 resamples;
#: the one file of the paper's rep_mce/ that is bundled).
MCE_LABEL_312 = RAW / "rep_mce" / "mnist" / "mnist_change_label_3.12_200_pop_size.npy"


def paper_file(relative: str, why: str) -> Path:
    """A file of the paper's data that the project does not bundle (``relative`` to the
    reference folder); the test is skipped, saying ``why`` it needs it, when it is absent
    (a fresh clone)."""
    path = REFERENCE / relative
    if not path.exists():
        pytest.skip(f"{why}: needs the paper's {relative}, not bundled (raw_data/README.md); "
                    f"not found in {REFERENCE} (set PROBMUT_REFERENCE)")
    return path


# --- synthetic data shared by a module's tests and its command's tests (tests/cli/) -------


def normal_accuracies(seed=0, n=30, shift=0.002):
    """Healthy and mutant accuracies, normal around 0.99 (sd 0.001), the mutant ``shift``
    lower: ``n`` of each."""
    rng = np.random.default_rng(seed)
    return rng.normal(0.99, 0.001, n), rng.normal(0.99 - shift, 0.001, n)


def write_outcomes(path, correct, labels, ids=None):
    """An outcomes file in the trainer's layout (keys instance, correct, n_inputs, labels)."""
    correct = np.asarray(correct, dtype=bool)
    ids = np.arange(correct.shape[0]) if ids is None else ids
    np.savez_compressed(path, instance=np.asarray(ids, dtype=np.int64),
                        correct=np.packbits(correct, axis=1),
                        n_inputs=np.int64(correct.shape[1]),
                        labels=np.asarray(labels, dtype=np.int64))
    return str(path)


def synthetic_outcomes(rng, n_healthy=30, n_mutant=30, n_inputs=400, n_classes=10):
    """Per-input outcomes (labels, healthy, broken, same): healthy instances right 95% of
    the time; the mutant loses class 3 and half of the inputs of class 7; a second,
    healthy-like mutant changes nothing."""
    labels = np.arange(n_inputs) % n_classes
    healthy = rng.random((n_healthy, n_inputs)) < 0.95
    broken = rng.random((n_mutant, n_inputs)) < 0.95
    broken[:, labels == 3] = rng.random((n_mutant, (labels == 3).sum())) < 0.1
    half7 = np.flatnonzero(labels == 7)[::2]
    broken[:, half7] = rng.random((n_mutant, half7.size)) < 0.3
    same = rng.random((n_mutant, n_inputs)) < 0.95
    return labels, healthy, broken, same


def healthy_records(n=20, seed=0):
    """Symptom records of ``n`` instances that trained normally."""
    rng = np.random.default_rng(seed)
    return [InstanceRecord(i, float(rng.normal(0.95, 0.01)), seed=i,
                           seconds=float(rng.normal(10, 0.5)), loss_history=(1.0, 0.3),
                           initial_loss=2.3, constant=False) for i in range(n)]


def failing_records(n, status, ok=0, seed=1):
    """Symptom records of ``n`` instances, all but the last ``ok`` ended with ``status``."""
    rng = np.random.default_rng(seed)
    bad = [InstanceRecord(i, math.nan if status != "diverged" else 0.1, status=status,
                          error="ValueError: x" if status == "crashed" else "")
           for i in range(n - ok)]
    return bad + [InstanceRecord(i, float(rng.normal(0.95, 0.01)), seconds=10.0)
                  for i in range(n - ok, n)]


def replicate_files(out, parts):
    """The files ``probmut replicate`` writes into ``out`` for these parts."""
    from probmut.paper import SAMPLE_SIZE_CONFIGS

    manifest = Manifest.load()
    files = []
    if "figure3" in parts:
        files += [out / m / f"{m}_{name}.png" for m in ("mnist", "movie_recomm", "lenet")
                  for name in manifest.mutation_names(m)] + [out / "ratio_table.csv"]
    if "deepcrime" in parts:
        files.append(out / "deepcrime_table.csv")
    if "motivating" in parts:
        files += [out / "motivating_table.csv", out / "motivating.png"]
    if "sample-size" in parts:
        for model, mutation, magnitudes in SAMPLE_SIZE_CONFIGS:
            files.append(out / model / f"{model}_{mutation}_sample_size.png")
            files += [out / "sample_size" / f"{model}_{mutation}_{m}.csv" for m in magnitudes]
    return files


def check_replicate_files(files):
    """Every file is there: PNGs valid and not tiny, tables not empty."""
    import pandas as pd
    from PIL import Image

    for path in files:
        assert path.exists(), path
        if path.suffix == ".png":
            with Image.open(path) as image:
                image.verify()
                assert image.format == "PNG" and min(image.size) > 200
        else:
            assert len(pd.read_csv(path)) > 0


#: The test inputs' labels of the synthetic run (``write_run``).
RUN_LABELS = np.arange(120) % 6
#: Mean accuracy of each mutant population of the synthetic run.
_RUN_MEANS = {"delete_training_data_10": 0.90, "delete_training_data_30": 0.86,
              "delete_training_data_50": 0.78, "neurons_freezing_0.1": 0.85,
              "data_shuffle_10": 0.90}


def write_run(folder: Path, sizes: dict, *, targets=None, rounds=None, crashed=()) -> Path:
    """A run directory as probmut train leaves it: tidy population CSVs with symptom
    records, per-input outcomes, a manifest with the data's provenance and flags (and
    ``targets``, ``rounds.json`` when given). ``sizes``: instances per population stem
    (missing stems: no file yet); ``crashed``: stems whose first instance crashed."""
    from probmut.train.run import write_population

    rng = np.random.default_rng(0)
    healthy_rows = []
    for stem in ["healthy", *_RUN_MEANS]:
        if stem not in sizes:
            continue
        records, rows = [], []
        for i in range(sizes[stem]):
            if stem in crashed and i == 0:
                records.append(InstanceRecord(i, math.nan, seed=i, status="crashed",
                                              error="ValueError: boom"))
                rows.append(None)
                continue
            if stem == "neurons_freezing_0.1":  # derived from healthy instance i
                correct = healthy_rows[i] & (rng.random(RUN_LABELS.size) < 0.94)
            else:
                mean = 0.90 if stem == "healthy" else _RUN_MEANS[stem]
                correct = rng.random(RUN_LABELS.size) < rng.normal(mean, 0.01)
            records.append(InstanceRecord(i, float(correct.mean()), seed=i,
                                          seconds=1.0 + 0.1 * i, loss_history=(1.0, 0.5)))
            rows.append(correct)
        if stem == "healthy":
            healthy_rows = rows
        write_population(folder / f"{stem}.csv", records, rows, RUN_LABELS)
    mutations = {
        "delete_training_data": {"paired": False, "pattern": "delete_training_data_{magnitude}.csv",
                                 "magnitudes": ["10", "30", "50"]},
        "neurons_freezing": {"paired": True, "pattern": "neurons_freezing_{magnitude}.csv",
                             "magnitudes": ["0.1"]},
        "data_shuffle": {"paired": False, "pattern": "data_shuffle_{magnitude}.csv",
                         "magnitudes": ["10"], "flags": {"10": ["equivalent"]}}}
    model = {"healthy": "healthy.csv", "description": "a synthetic run",
             "data": {"name": "synthetic", "test": int(RUN_LABELS.size),
                      "files": {"data.npz": "ab12"}},
             "mutations": mutations}
    if targets:
        model["targets"] = {f"{stem}.csv": n for stem, n in targets.items()}
    write_manifest(folder / "manifest.toml", {"models": {"syn": model}}, "a synthetic run")
    if rounds:
        (folder / "rounds.json").write_text(json.dumps({"rounds": rounds, "final": {}}))
    return folder


#: Every population of the synthetic run, 12 instances each.
FULL_RUN = dict.fromkeys(["healthy", *_RUN_MEANS], 12)


def interrupted_run(folder: Path) -> Path:
    """A synthetic run stopped by Ctrl-C: its manifest records every population's target
    (12), delete_training_data_50 holds only its header (0 of 12, as the trainer leaves
    a population none of whose instances finished), neurons_freezing_0.1 has no file yet,
    and the first instance of delete_training_data_30 crashed."""
    sizes = FULL_RUN | {"delete_training_data_50": 0}
    del sizes["neurons_freezing_0.1"]
    return write_run(folder, sizes, targets=dict.fromkeys(FULL_RUN, 12),
                     crashed=("delete_training_data_30",))


#: Analysis settings small enough for the synthetic run's 12 instances: samples of k = 5,
#: 30 resamples of 30 kill tests.
FAST = PosteriorSettings(bootstraps=30, trials=30, sample=5)


@pytest.fixture(scope="session")
def synthetic(tmp_path_factory):
    """A complete synthetic run (``FULL_RUN``, the first instance of
    delete_training_data_30 crashed) and its campaign (with verdicts, ``FAST``): the
    campaign's tests and the report's read it."""
    from probmut.campaign import summarize_campaign

    folder = write_run(tmp_path_factory.mktemp("run"), FULL_RUN,
                       crashed=("delete_training_data_30",))
    return folder, summarize_campaign(folder / "manifest.toml", settings=FAST, seed=3)


#: What probmut train records of a run (.work/settings.json).
RUN_SETTINGS = {"dataset": "digits", "architecture": "digits_cnn", "seed": 7, "stack": 1,
                "config": {"epochs": 3, "batch_size": 16, "learning_rate": 0.01,
                           "patience": None}, "data": {"name": "digits", "option": "dataset"}}


def write_settings(folder: Path, settings: dict) -> None:
    """Record ``settings`` as a run's ``.work/settings.json``, as probmut train does."""
    (folder / ".work").mkdir(exist_ok=True)
    (folder / ".work" / "settings.json").write_text(json.dumps(settings))


class Ran(NamedTuple):
    """What one ``probmut`` command did: its exit code and what it printed."""

    code: int
    out: str
    err: str


class Cli:
    """The one way the tests run the command line in this process (:func:`probmut.cli.main`,
    its output captured); a test that needs a process of its own (a signal, what a fresh
    interpreter imports) starts ``python -m probmut`` itself."""

    def __call__(self, *argv) -> Ran:
        """``probmut ARGV``: its exit code and what it printed."""
        import contextlib
        import io

        from probmut.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([str(a) for a in argv])
        return Ran(code, out.getvalue(), err.getvalue())

    def ok(self, *argv) -> str:
        """What ``probmut ARGV`` prints; it must succeed."""
        return self.run(*argv).out

    def run(self, *argv) -> Ran:
        """``probmut ARGV``, which must succeed: what it printed on both streams."""
        ran = self(*argv)
        assert ran.code == 0, ran.err
        return ran

    def json(self, *argv):
        """The JSON document of ``probmut ARGV --json``; it must succeed."""
        return json.loads(self.ok(*argv, "--json"))

    def refused(self, *argv, says: str = "") -> str:
        """The command exits 2 and prints one line, ``probmut CMD: error: ...`` containing
        ``says``, on stderr (no traceback, no note or progress before it) and nothing on
        stdout; returns that line. (A refusal after other output: ``cli(*argv)``.)"""
        code, out, err = self(*argv)
        lines = err.strip().splitlines()
        assert code == 2 and out == "" and len(lines) == 1, (code, out, err)
        assert lines[0].startswith("probmut") and ": error: " in lines[0], err
        assert says in lines[0], lines[0]
        return lines[0]


#: The command line, for module fixtures (tests take the ``cli`` fixture).
CLI = Cli()


@pytest.fixture
def cli() -> Cli:
    """Run ``probmut`` commands: ``cli(*argv)``, ``cli.run``, ``cli.ok``, ``cli.json``,
    ``cli.refused``."""
    return CLI


def report_json(folder, out, *options) -> dict:
    """``probmut report FOLDER --out OUT --json`` with ``options``: its document."""
    return CLI.json("report", folder, *options, "--out", out, "--quiet")


class _FullDisk:
    """See :func:`full_disk`."""

    def __init__(self):
        self.parts, self.refused = [], []

    def __call__(self, part: str) -> None:
        """From now on the disk is full for the files whose path holds ``part``."""
        self.parts.append(part)

    def free(self) -> None:
        """Space is freed: every file can be written again."""
        self.parts.clear()


@pytest.fixture
def full_disk(monkeypatch):
    """``full_disk(PART)``: from then on the disk is full for every file probmut writes
    whose path holds ``PART`` (``full_disk.free()`` ends it): its temporary file is
    opened on ``/dev/full``, so writing fails with the kernel's own ENOSPC (issue 44).
    ``full_disk.refused`` lists the files refused."""
    import probmut.io.atomic as atomic

    real, disk = atomic._temporary, _FullDisk()

    def temporary(path, suffix):
        fd, name = real(path, suffix)
        if any(part in str(path) for part in disk.parts):
            os.close(fd)
            disk.refused.append(Path(path))
            return os.open("/dev/full", os.O_WRONLY), name
        return fd, name

    monkeypatch.setattr(atomic, "_temporary", temporary)
    return disk


def damage_file(path, case):
    """Damage a file as a disk or a killed writer can: ``truncated``, ``emptied`` or one
    ``bit flip`` in the middle."""
    data = path.read_bytes()
    if case == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif case == "emptied":
        path.write_bytes(b"")
    elif case == "bit flip":
        middle = len(data) // 2
        path.write_bytes(data[:middle] + bytes([data[middle] ^ 0x01]) + data[middle + 1:])
