"""Argument groups every analysis subcommand shares, and how they become inputs.

Populations come as files (``HEALTHY MUTANT [MUTANT ...]``) or through a manifest
(``--model mnist --mutation delete_training_data [--magnitudes 3.1,9.29]``); the kill
criterion, the bagged-posterior settings, seeds, threads and output flags read the same
in every command.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from probmut.bagging import FITS, INTERVALS
from probmut.errors import ProbmutError
from probmut.io.atomic import writable_directory, writable_file  # noqa: F401 (the commands' checks)
from probmut.io.manifest import Manifest, repeated_magnitudes
from probmut.io.populations import read_population
from probmut.killtest import CRITERIA, DIRECTIONS, KINDS, KillCriterion
from probmut.population import Population, pair
from probmut.seeds import DEFAULT_SEED
from probmut.validation import MAX_COUNT, integer_problem, number_problem

#: Where ``replicate`` writes the paper's figures and tables (committed in the repository).
PLOT_DIR = Path("plot_results")
#: Where the other commands draw by default, so they never overwrite the paper's figures.
FIGURE_DIR = Path("figures")
#: Where the studies keep their completed chunks, and the report its verdicts' blocks.
DEFAULT_CACHE = Path(".probmut_cache")


# --- option values: checked when parsed, so a bad value is one line and exit 2 ------------

def integer(minimum: int = 1, maximum: int = MAX_COUNT):
    """argparse type: an integer in [minimum, maximum].

    >>> integer(2)("20"), integer(0)("0")
    (20, 0)
    """
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        problem = integer_problem(value, minimum, maximum)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value
    parse.__name__ = "integer"
    return parse


def number(low: float, high: float, *, low_open: bool = False, high_open: bool = False):
    """argparse type: a finite number in the interval from ``low`` to ``high``.

    >>> number(0, 1, low_open=True, high_open=True)("0.05")
    0.05
    """
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
        problem = number_problem(value, low, high, low_open=low_open, high_open=high_open)
        if problem:
            raise argparse.ArgumentTypeError(problem)
        return value
    parse.__name__ = "number"
    return parse


def flag(option: str) -> str:
    """The command-line flag of a setting: ``sample`` -> ``--sample``."""
    return "--" + option.replace("_", "-")


def refuse_given(args, options, reason: str) -> None:
    """Refuse the options among ``options`` (their dests) that were given on the command
    line (``args.given``, recorded by :class:`probmut.cli.main.Parser`) but cannot apply:
    ``reason`` says why, after "cannot apply".

    >>> refuse_given(argparse.Namespace(given={"sample"}), ["bootstraps", "sample"],
    ...              "to saved kill rates")
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: --sample cannot apply to saved kill rates
    """
    given = [option for option in options if option in getattr(args, "given", ())]
    if given:
        raise ProbmutError(f"{', '.join(map(flag, given))} cannot apply {reason}")


def comma_list(convert=str, what: str = "values"):
    """argparse type: a comma-separated list (``25,50,100``), each item converted; an
    empty list or an empty item (``''``, ``10,,20``) is refused. Every option that takes a
    list reads it with this.

    >>> comma_list(int, "sizes")(" 25, 50")
    [25, 50]
    >>> comma_list(int, "sizes")("10,,20")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected comma-separated sizes, got '10,,20' (an empty item)
    """
    def parse(text: str) -> list:
        items = [item.strip() for item in text.split(",")]
        if "" in items:
            raise argparse.ArgumentTypeError(f"expected comma-separated {what}, got {text!r} "
                                             "(an empty item)")
        try:
            return [convert(item) for item in items]
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated {what}, got {text!r}") from None
    parse.__name__ = "list"
    return parse


#: A seed: any non-negative integer (NumPy's SeedSequence takes arbitrarily large ones).
seed_value = integer(0, 2**128)


@dataclass
class Inputs:
    """Populations resolved from the command line."""

    healthy: Population
    mutants: list[Population]
    paired: bool
    model: str | None = None
    mutation: str | None = None

    @property
    def label(self) -> str:
        if self.model:
            return f"{self.model}_{self.mutation}" if self.mutation else self.model
        return "_".join(m.name for m in self.mutants[:3]) or self.healthy.name

    @property
    def populations(self) -> list[Population]:
        return [self.healthy, *self.mutants]

    def pairs(self) -> list[tuple[Population, Population]]:
        """(healthy, mutant) for each mutant, aligned by instance id when paired."""
        if self.paired:
            return [pair(self.healthy, mutant) for mutant in self.mutants]
        return [(self.healthy, mutant) for mutant in self.mutants]

    def require(self, count: int, what: str, option: str | None = None) -> None:
        """Every population holds at least ``count`` instances; ``what`` says why."""
        for population in self.populations:
            if len(population) < count:
                raise ProbmutError(f"{population.where}: {len(population)} instance(s), fewer "
                                   f"than {what}", option=option)


def add_population_arguments(parser: argparse.ArgumentParser, many_mutants: bool = True):
    """``HEALTHY MUTANT...`` files, or ``--model/--mutation`` through a manifest."""
    parser.add_argument("files", nargs="*", metavar="HEALTHY MUTANT",
                        help="population files: the healthy one, then "
                             + ("one or more mutants" if many_mutants else "the mutant")
                             + " (DeepCrime CSV or tidy CSV 'instance,accuracy')")
    group = parser.add_argument_group("populations by name (from a manifest)")
    group.add_argument("--model", help="model name in the manifest, e.g. mnist")
    group.add_argument("--mutation", help="mutation name, e.g. delete_training_data")
    group.add_argument("--magnitudes", type=comma_list(str, "magnitudes"),
                       help="comma-separated subset of magnitudes (default: all)")
    group.add_argument("--manifest", help="manifest TOML (default: bundled raw_data/manifest.toml "
                                          "or $PROBMUT_MANIFEST)")
    parser.add_argument("--paired", action="store_true",
                        help="model-level mutation: mutant i derived from healthy i (pairs by "
                             "instance id; implied by the manifest for such mutations)")
    add_strict_argument(parser)


def add_strict_argument(parser: argparse.ArgumentParser):
    """``--strict``: what is otherwise dropped or warned about in the populations read is
    an error."""
    parser.add_argument("--strict", action="store_true",
                        help="a missing accuracy, a failed instance, or a population short of "
                             "the instances its run aims at (a run that stopped early) is an "
                             "error instead of a warning (a strict reading)")


def _decimals(text: str) -> int | str:
    if text.strip().lower() == "none":
        return "none"
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number of decimals or 'none', got {text!r}") from None


#: What ``--paper`` sets, by command family; explicit flags always win over it.
PAPER_HELP_CRITERION = ("the paper's kill rule: p rounded to 3 decimals, alpha 0.05, two-sided "
                        "|d| >= 0.5; an option given explicitly wins over it")
PAPER_HELP_POSTERIOR = ("the paper's choices: its kill rule (p rounded to 3 decimals, alpha 0.05, "
                        "|d| >= 0.5), least-squares Beta fit (curve_fit, grid 0.001), interval "
                        "mean +- 1.96 sd; options given explicitly win over it")
PAPER_HELP_MCE = ("the paper's MCE code: its kill rule (p rounded to 3 decimals, |d| >= 0.5), "
                  "least-squares Beta fit on the 0.01 grid, its jackknife; options given "
                  "explicitly win over it")


def _criterion_help() -> tuple[str, str]:
    # --criterion and --effect help, from the registry of kill criteria.
    tests = "; ".join(f"{c.name}: {c.description}" for c in CRITERIA.values())
    by_effect: dict[tuple, list[str]] = {}
    for c in CRITERIA.values():
        key = (c.effect, c.bounds, tuple(c.thresholds.values()))
        by_effect.setdefault(key, []).append(c.name)
    effects = "; ".join(
        f"{effect} for {'/'.join(names)}"
        + (f" in [{low:g}, {high:g}]" if high != float("inf") else "")
        + f" ({'/'.join(f'{v:g}' for v in values)})"
        for (effect, (low, high), values), names in by_effect.items())
    return (f"the test. {tests} (default: {KINDS[0]})",
            f"effect-size threshold: a number or small/medium/large; {effects} "
            "(default: medium)")


def add_criterion_arguments(parser: argparse.ArgumentParser,
                            paper_help: str = PAPER_HELP_CRITERION):
    criterion_help, effect_help = _criterion_help()
    group = parser.add_argument_group("kill criterion")
    group.add_argument("--criterion", choices=KINDS, default=KINDS[0], help=criterion_help)
    group.add_argument("--alpha", type=number(0, 1, low_open=True, high_open=True),
                       default=None, help="significance threshold (default: 0.05)")
    group.add_argument("--effect", default=None, metavar="SIZE", help=effect_help)
    group.add_argument("--direction", choices=DIRECTIONS, default=None,
                       help="two-sided |d| (the paper), mutant-worse (DeepCrime, classifiers) "
                            "or mutant-better (DeepCrime, regression) (default: two-sided)")
    group.add_argument("--round-p", type=_decimals, default=None, metavar="DECIMALS",
                       help="round p to DECIMALS before comparing, as DeepCrime reads it from "
                            "statsmodels' summary (3); 'none' compares the exact p "
                            "(default: none)")
    group.add_argument("--paper", action="store_true", help=paper_help)


class RenamedOption(argparse.Action):
    """An option's name of an earlier release, hidden from ``--help``: it sets the new
    option's value and prints one warning line naming the new option (CHANGELOG.md,
    *Renamed*), so that scripts written for that release still run."""

    def __init__(self, option_strings, dest, *, new: str, **kwargs):
        self.new = new
        super().__init__(option_strings, dest, help=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"probmut: warning: {option_string} is deprecated: it is {self.new}",
              file=sys.stderr)
        setattr(namespace, self.dest, values)


def add_run_arguments(parser: argparse.ArgumentParser, json_help: str = "print one JSON document",
                      seed_default: str | None = None, jobs_alias: bool = True,
                      threads_help: str = "threads for the Monte-Carlo engine"):
    """``--seed``, ``--threads``, ``--json``, ``--quiet``; ``seed_default`` says what a seed
    not given is (the option's default is then None), else it is :data:`DEFAULT_SEED`;
    ``threads_help`` what the threads run.
    ``--jobs``, its name in probmut 0.2.0, is accepted with a warning unless
    ``jobs_alias`` is false (a command whose ``--jobs`` counts processes)."""
    parser.add_argument("--seed", type=seed_value,
                        default=DEFAULT_SEED if seed_default is None else None,
                        help="random seed, a non-negative integer; same seed, same numbers "
                             f"(default: {seed_default or DEFAULT_SEED})")
    parser.add_argument("--threads", type=integer(1, 4096), default=None,
                        help=f"{threads_help}; results do not depend on them (default: all "
                             "cores)")
    if jobs_alias:
        parser.add_argument("--jobs", type=integer(1, 4096), dest="threads",
                            action=RenamedOption, new="--threads")
    parser.add_argument("--json", action="store_true", help=json_help)
    add_quiet_argument(parser)


def add_quiet_argument(parser: argparse.ArgumentParser):
    """``--quiet``: no progress display; warnings, errors and messages still show."""
    parser.add_argument("--quiet", action="store_true",
                        help="no progress lines on stderr (warnings and errors still show)")


def criterion_from(args) -> KillCriterion:
    """The kill criterion: ``--paper``'s (or the default) with every explicit flag on top."""
    from probmut import paper

    base = paper.criterion(args.criterion) if args.paper else KillCriterion(kind=args.criterion)
    given = {"alpha": args.alpha, "effect": args.effect, "direction": args.direction,
             "round_p": None if args.round_p == "none" else args.round_p}
    explicit = {key: value for key, value in given.items()
                if value is not None or (key == "round_p" and args.round_p == "none")}
    return replace(base, **explicit)


def resolve_inputs(args, need_mutants: bool = True) -> Inputs:
    """Read the populations named on the command line (files or manifest)."""
    if args.model:
        if args.files:
            raise ProbmutError("give either population files or --model/--mutation, not both")
        manifest = Manifest.load(args.manifest)
        healthy = read_population(manifest.healthy(args.model), name="healthy",
                                  strict=args.strict, manifest=manifest)
        if not args.mutation:
            if need_mutants:
                raise ProbmutError(f"--model {args.model} needs --mutation (one of "
                                   f"{', '.join(manifest.mutation_names(args.model))})")
            return Inputs(healthy, [], args.paired, args.model)
        mutation = manifest.mutation(args.model, args.mutation)
        if not args.magnitudes:
            mutation.require_magnitudes()
        elif (repeated := repeated_magnitudes(args.magnitudes)) is not None:
            raise ProbmutError(f"magnitude {repeated}; give each magnitude once",
                               option="magnitudes")
        chosen = args.magnitudes or mutation.magnitudes
        mutants = [read_population(mutation.file_for(m), name=m, strict=args.strict,
                                   manifest=manifest) for m in chosen]
        return Inputs(healthy, mutants, args.paired or mutation.paired, args.model, args.mutation)
    if args.mutation or args.magnitudes:
        raise ProbmutError("--mutation and --magnitudes need --model")
    if not args.files:
        raise ProbmutError("give the population files (HEALTHY MUTANT ...) or --model/--mutation")
    if need_mutants and len(args.files) < 2:
        raise ProbmutError("give a healthy population file and at least one mutant file")
    refuse_repeated_files(args.files)
    healthy, *mutants = [read_population(f, strict=args.strict) for f in args.files]
    return Inputs(healthy, mutants, args.paired)


def refuse_repeated_files(files) -> None:
    """Each population file once (the same file under two names included): a mutant
    given twice would be counted twice.

    >>> refuse_repeated_files(["h.csv", "m.csv", "./m.csv"])
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: m.csv and ./m.csv are the same file; give each population file once
    """
    seen: dict[str, str] = {}
    for name in files:
        path = os.path.realpath(name)  # a symlink loop too (reading it names it as one)
        if path in seen:
            twice = (f"{name} is given twice" if seen[path] == name else
                     f"{seen[path]} and {name} are the same file")
            raise ProbmutError(f"{twice}; give each population file once")
        seen[path] = name


def add_plot_arguments(parser: argparse.ArgumentParser, default: str):
    parser.add_argument("--plot", metavar="FILE",
                        help=f"figure file; its suffix is the format (default: {default})")
    parser.add_argument("--no-plot", action="store_true", help="do not draw the figure")


def figure_path(args, folder: str, name: str) -> Path | None:
    """Where to draw: ``--plot FILE``, else ``figures/FOLDER/NAME``; None with --no-plot.

    The file's format (its suffix) and its folder are checked now, before any computation.
    """
    if args.no_plot:
        if args.plot:
            raise ProbmutError("give either --plot FILE or --no-plot, not both", option="plot")
        return None
    path = Path(args.plot) if args.plot else FIGURE_DIR / folder / name
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    formats = FigureCanvasAgg.get_supported_filetypes()
    suffix = path.suffix.lstrip(".").lower()
    if suffix not in formats:
        raise ProbmutError(f"{path}: unknown figure format {suffix or '(no suffix)'!r}; use one "
                           f"of {', '.join(sorted(formats))}", option="plot")
    return writable_file(path, "figure", "plot")


def add_data_arguments(parser: argparse.ArgumentParser, *, required: bool = False,
                       default: str = "default: digits"):
    """The data set of the commands that load one (train, evaluate, coverage): ``--dataset
    NAME`` or ``--data FILE.npz|DIR``, an image folder's ``--image-size`` and
    ``--test-split``, and ``--download-timeout``; :func:`data_options` reads them.
    ``default`` says, in the help, what is used when neither is given."""
    from probmut.train.datasets import DATASETS, DOWNLOAD_TIMEOUT

    group = parser.add_argument_group("data")
    which = group.add_mutually_exclusive_group(required=required)
    which.add_argument("--dataset", choices=DATASETS,
                       help=f"a named data set: digits (scikit-learn's, offline) or a Keras data "
                            "set, read from the Keras cache or downloaded into it on first use "
                            f"({default})")
    which.add_argument("--data", metavar="FILE.npz|DIR",
                       help="your own data: an .npz with x_train, y_train, x_test, y_test, or an "
                            "image folder (DIR/train/CLASS/ and DIR/test/CLASS/, or DIR/CLASS/ "
                            "with --test-split); gaze_lenet and recommender read other arrays "
                            "(docs/training.md)")
    group.add_argument("--image-size", metavar="HxW",
                       help="image folder: resize every image to HxW (default: the first image's)")
    group.add_argument("--test-split", type=number(0, 1, low_open=True, high_open=True),
                       metavar="SHARE",
                       help="image folder of class folders: hold out SHARE of each class for "
                            "testing")
    group.add_argument("--download-timeout", type=number(0, math.inf, low_open=True),
                       default=DOWNLOAD_TIMEOUT, metavar="SECONDS",
                       help=f"give up a Keras download that has not started after SECONDS "
                            f"(default: {DOWNLOAD_TIMEOUT:g})")


def data_options(args) -> dict:
    """The data arguments (:func:`add_data_arguments`) as the library takes them."""
    return {"dataset": args.dataset, "data": args.data, "image_size": args.image_size,
            "test_split": args.test_split, "download_timeout": args.download_timeout}


def add_posterior_arguments(parser: argparse.ArgumentParser):
    group = parser.add_argument_group("bagged posterior")
    group.add_argument("--bootstraps", type=integer(1), default=100, metavar="B",
                       help="B bootstrap resamples of each population (default: 100)")
    group.add_argument("--trials", type=integer(1), default=100, metavar="N",
                       help="N kill tests per resample (default: 100)")
    add_sample_argument(group)
    group.add_argument("--fit", choices=FITS, default=None,
                       help="Beta summary: moment matching, or least squares (the paper's) "
                            "(default: moments)")
    group.add_argument("--interval", choices=INTERVALS, default=None,
                       help="credible interval: highest-density, equal-tailed, or the paper's "
                            "mean +- 1.96 sd (default: hdi)")
    group.add_argument("--threshold", type=number(0, math.inf, low_open=True), default=1.0,
                       help="killed iff the ratio H_sound/H_mutant exceeds it (default: 1)")


def add_sample_argument(parser):
    parser.add_argument("--sample", type=integer(2), default=20, metavar="K",
                        help="k instances per side of one kill test (default: 20)")


def posterior_settings_from(args, preset: str = "posterior_settings"):
    """Bagged-posterior settings: the defaults, or ``--paper``'s preset (``preset`` names
    the function of :mod:`probmut.paper`), with every explicit flag on top."""
    from probmut import paper
    from probmut.bagging import PosteriorSettings

    base = (getattr(paper, preset)(criterion=criterion_from(args)) if args.paper
            else PosteriorSettings(criterion=criterion_from(args)))
    overrides = {"bootstraps": args.bootstraps, "trials": args.trials, "sample": args.sample,
                 "threshold": args.threshold}
    if args.fit:
        overrides["fit"] = args.fit
    if args.interval:
        overrides["interval"] = args.interval
    return replace(base, **overrides)


def manifest_magnitudes(args):
    if not (args.model and args.mutation):
        return None
    magnitudes = Manifest.load(args.manifest).mutation(args.model, args.mutation).magnitudes
    return list(args.magnitudes or magnitudes)


def add_cache_arguments(group, what: str = "chunks", default: str = str(DEFAULT_CACHE)):
    """``--cache DIR`` and ``--no-cache``: where completed work is kept, so that a rerun
    reads it instead of computing it again and an interrupted run resumes."""
    group.add_argument("--cache", help=f"directory of cached {what}: a rerun does not compute "
                                       "them again and an interrupted run resumes (default: "
                                       f"{default})")
    group.add_argument("--no-cache", action="store_true", help="do not read or write the cache")


def cache_from(args, default: Path = DEFAULT_CACHE):
    """The :class:`~probmut.io.cache.Cache` the options ask for (``--cache``, else
    ``default``; ``--no-cache``: one that stores nothing)."""
    from probmut.io.cache import Cache

    if args.no_cache:
        return Cache(None)
    return Cache(writable_directory(Path(args.cache or default), "cache", "cache"))
