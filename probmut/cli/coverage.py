"""``probmut coverage``: importance-driven coverage (DeepImportance) of the test set on a
population's saved healthy models, its baselines, and coverage against killing.

Registering the subcommand imports nothing heavy; TensorFlow is imported by the handler.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from probmut.cli.args import (
    add_data_arguments,
    add_plot_arguments,
    add_quiet_argument,
    add_strict_argument,
    comma_list,
    data_options,
    figure_path,
    integer,
    number,
    seed_value,
)
from probmut.cli.emit import emit_with_figure
from probmut.coverage import KILLING
from probmut.errors import ProbmutError
from probmut.seeds import DEFAULT_SEED

EXAMPLE = """examples:
  probmut coverage runs/digits                       # a run trained with --save-models
  probmut coverage runs/digits --against runs/digits --neurons 6,8 --subsets 200
  probmut coverage models/*.keras --dataset digits --layer 4
"""


def _neurons(text: str) -> tuple[int, ...]:
    values = tuple(comma_list(int, "numbers of neurons like 6,8,10")(text))
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"numbers of neurons must be at least 1, got {text!r}")
    return values


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "coverage", help="importance-driven coverage (DeepImportance) and whether it predicts "
                         "killing",
        description="IDC of the test set on each healthy instance (LRP epsilon-rule "
                    "relevance over the training inputs, the m most relevant neurons of a "
                    "layer, k-means clusters chosen by silhouette) with NC, KMNC and TKNC; "
                    "with --against, Kendall's tau between coverage and killing over random "
                    "test subsets (see docs/coverage.md).",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("source", nargs="+", metavar="RUN_DIR|MODEL",
                   help="a run directory trained with --save-models (its models/healthy), or "
                        "model files / directories of the healthy instances")
    add_data_arguments(p, default="default: the run's own, from its settings")
    p.add_argument("--layer", type=int,
                   help="index of the layer analysed (default: the penultimate, i.e. the last "
                        "hidden layer with weights)")
    p.add_argument("--neurons", type=_neurons, default=(6, 8, 10, 12), metavar="M1,M2",
                   help="numbers of important neurons; the first one is reported as 'idc' and "
                        "used against killing (default: 6,8,10,12)")
    p.add_argument("--epsilon", type=number(0, math.inf, low_open=True), default=0.01,
                   help="LRP epsilon (default: 0.01)")
    p.add_argument("--max-clusters", type=integer(2, 100), default=4,
                   help="k-means tries k = 2 .. this, chosen by silhouette (default: 4)")
    p.add_argument("--nc-threshold", type=number(0, 1), default=0.75,
                   help="NC threshold (default: 0.75)")
    p.add_argument("--kmnc-sections", type=integer(1), default=1000,
                   help="KMNC sections (default: 1000)")
    p.add_argument("--top-k", type=integer(1), default=3,
                   help="TKNC: top k neurons per layer (default: 3)")
    against = p.add_argument_group("coverage against killing")
    against.add_argument("--against", metavar="RUN_DIR",
                         help="a run with mutant populations and per-input outcomes on the same "
                              "test set (no retraining)")
    against.add_argument("--subsets", type=integer(10), default=200,
                         help="random test subsets (default: 200)")
    against.add_argument("--subset-size", type=integer(2),
                         help="inputs per subset (default: a tenth of the test set, at least 10)")
    against.add_argument("--killing", choices=KILLING, default="probability",
                         help="mean kill probability of the mutants or DeepMutation's "
                              "mutation score (default: probability)")
    p.add_argument("--sanity", type=integer(0), default=0, metavar="DRAWS",
                   help="DeepImportance's RQ1 check: silence the important neurons and DRAWS "
                        "random sets of as many neurons, compare the output drops (default: 0, "
                        "off)")
    p.add_argument("--seed", type=seed_value, default=DEFAULT_SEED,
                   help=f"seed of k-means, subsets, bootstrap (default: {DEFAULT_SEED})")
    add_plot_arguments(p, "figures/coverage/NAME.png")
    add_quiet_argument(p)
    add_strict_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=handle)


def _refuse_torch(sources) -> None:
    """Coverage reads a Keras model's layers (activations, relevance propagation): a run
    of torch models, or ``.pt`` files, are refused in one line saying so."""
    from probmut.io.workdir import read_settings

    for source in map(Path, sources):
        run = (source / "manifest.toml").exists()
        found = source / "models" / "healthy" if run else source
        torch_files = found.suffix == ".pt" or (found.is_dir() and next(
            found.rglob("*.pt"), None) is not None)
        if torch_files or run and (read_settings(source) or {}).get("trainer") == "torch":
            raise ProbmutError(f"{source}: torch models (.pt state dicts): importance-"
                               "driven coverage is computed on Keras models only (its "
                               "relevance propagation and activations read Keras layers); "
                               "--against RUN reads only a run's outcomes and takes a torch "
                               "run")


def _source(args):
    """Model files and the data source from the sources (a run directory or models)."""
    from probmut.train.datasets import source_of
    from probmut.train.evaluate import model_files

    given = source_of(args.dataset, args.data, default=None)
    if len(args.source) == 1 and (Path(args.source[0]) / "manifest.toml").exists():
        run = Path(args.source[0])
        models = run / "models" / "healthy"
        if not models.is_dir():
            raise ProbmutError(f"{run} has no saved models (models/healthy); train it with "
                               "--save-models, or give model files")
        from probmut.io.manifest import population_target
        from probmut.io.populations import read_instances

        healthy = run / "healthy.csv"
        if healthy.exists() or population_target(healthy):  # a run that stopped early is named
            read_instances(healthy, args.strict)
        dataset = given
        if dataset is None:
            from probmut.io.workdir import read_settings

            settings = read_settings(run)
            if settings is None:
                raise ProbmutError(f"{run}: no .work/settings.json to tell the dataset; give "
                                   "--dataset or --data")
            dataset = settings["dataset"]
        return model_files([models]), dataset, run.resolve().name
    missing = [source for source in args.source if not Path(source).exists()]
    if missing:
        raise ProbmutError(f"{missing[0]}: no such file or directory")
    if given is None:
        raise ProbmutError("model files need --dataset or --data (the test set to cover)")
    return model_files(args.source), given, "models"


def _against(run: str, strict: bool):
    """The healthy outcomes and ``(outcomes, paired)`` of each mutant population of a run;
    populations whose every instance failed are left out with a warning. ``strict``: a
    population short of the run's target is an error, not a warning."""
    import warnings

    from probmut.inputs import Outcomes
    from probmut.io.manifest import Manifest
    from probmut.io.records import AllFailedError, FailedInstanceWarning

    path = Path(run)
    manifest = Manifest.load(path / "manifest.toml" if path.is_dir() else path)
    model = manifest.model_names()[0]
    outcomes = lambda csv: Outcomes.load(csv.with_name(f"{csv.stem}.outcomes.npz"),  # noqa: E731
                                         strict=strict)
    mutants = []
    for mutation in manifest.mutations(model):
        for csv in mutation.files:
            try:
                mutants.append((outcomes(csv), mutation.paired))
            except AllFailedError:
                warnings.warn(f"{csv.stem}: every instance failed; left out of the killing",
                              FailedInstanceWarning, stacklevel=2)
    return outcomes(manifest.healthy(model)), mutants


def handle(args) -> int:
    from probmut.train import tf_setup

    _refuse_torch(args.source)
    tf_setup.require("tensorflow", "train", "probmut coverage")
    files, source, label = _source(args)
    against = _against(args.against, args.strict) if args.against else None
    from probmut.train.datasets import load_dataset
    from probmut.train.relevance import measure_coverage

    tf_setup.configure_tensorflow(1)
    options = {key: value for key, value in data_options(args).items()
               if key not in ("dataset", "data")}
    dataset = load_dataset(source, **options)
    study = measure_coverage(files, dataset, layer=args.layer, neurons=args.neurons,
                             epsilon=args.epsilon, max_clusters=args.max_clusters,
                             nc_threshold=args.nc_threshold, sections=args.kmnc_sections,
                             top_k=args.top_k, seed=args.seed, sanity_draws=args.sanity,
                             progress=not args.quiet)
    if against is not None:
        import dataclasses

        from probmut.coverage import coverage_vs_killing

        healthy, mutants = against
        if healthy.labels.tolist() != dataset.y_test.tolist():
            raise ProbmutError(f"{args.against}: its outcomes are not on {dataset.name}'s test set "
                               f"({healthy.n_inputs} inputs against {len(dataset.y_test)})")
        correlation = coverage_vs_killing(study.instances, args.neurons[0], healthy, mutants,
                                          subsets=args.subsets, subset_size=args.subset_size,
                                          killing=args.killing, seed=args.seed)
        study = dataclasses.replace(study, correlation=correlation)
    figure = figure_path(args, "coverage", f"{label}.png")
    if figure:
        from probmut.plots import plot_coverage, save

        save(plot_coverage(study, title=f"coverage: {label}"), figure)
    emit_with_figure(args, study.to_dict(), str(study), figure)
    return 0
