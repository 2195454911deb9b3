"""``probmut evaluate``: score saved models (.keras, legacy .h5; torch's .pt state dicts
with ``--framework torch``) into population files (see docs/training.md, "Scoring models
trained elsewhere", and docs/torch.md).

Registering the subcommand imports nothing heavy; TensorFlow (torch, for ``.pt`` files)
is imported by the handler.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from probmut.cli.args import (
    add_data_arguments,
    add_quiet_argument,
    data_options,
    integer,
    writable_file,
)
from probmut.errors import ProbmutError
from probmut.results import counted, dumps, listing
from probmut.train.options import FRAMEWORKS
from probmut.train.tasks import TASKS

EXAMPLE = """examples:
  probmut evaluate runs/digits/models/healthy --dataset digits --out rescored/healthy.csv
  probmut evaluate trained_models/ --dataset mnist --write-manifest dc/manifest.toml
  probmut evaluate runs/t/models --dataset digits --framework torch --architecture digits_cnn \
                   --write-manifest rescored/manifest.toml
"""


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "evaluate", help="score saved models (.keras, .h5; torch .pt) into population files",
        description="Score each model file (one instance) on a test set and write a "
                    "population CSV with per-input outcomes and symptom columns; or, with "
                    "--write-manifest, a population per group of DeepCrime-style files "
                    "({model}_original_{i}.h5, {model}_{operator}_mutated0_MP_{magnitude}_{i}"
                    ".h5) or of probmut's models/{population}/{i}.keras, and a manifest.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("models", nargs="+", metavar="MODEL",
                   help="model files, or directories searched for .keras and .h5 files (torch: "
                        ".pt)")
    p.add_argument("--framework", choices=FRAMEWORKS, default="keras",
                   help="torch: the files are .pt state dicts of probmut train --framework "
                        "torch, loaded into the --architecture (a mutant's file, in "
                        "models/POPULATION/, into the architecture as its mutation changed "
                        "it) (default: keras)")
    p.add_argument("--architecture", metavar="ARCHITECTURE",
                   help="with --framework torch: the network the state dicts are of, a bundled "
                        "one (digits_cnn, mlp, deepcrime_mnist) or module:function")
    add_data_arguments(p, required=True, default="its test set is scored")
    p.add_argument("--task", choices=tuple(TASKS),
                   default="classification",
                   help="how an input is scored, as probmut train scores the model's task "
                        "(the others need --data FILE.npz) (default: classification)")
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", type=Path, metavar="OUT",
                        help="one population: its CSV file (outcomes written beside it)")
    target.add_argument("--write-manifest", type=Path, metavar="MANIFEST.toml",
                        help="group the files into populations, write them and a manifest "
                             "beside MANIFEST.toml")
    p.add_argument("--name", help="model name in the manifest (default: DeepCrime's model "
                                  "name, else the manifest's folder name)")
    p.add_argument("--jobs", type=integer(1, 4096), default=1,
                   help="worker processes scoring models at once; 1: in this process "
                        "(default: 1)")
    p.add_argument("--threads", type=integer(1, 4096), default=1,
                   help="TensorFlow (torch) threads per job")
    add_quiet_argument(p)
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=handle)


def _framework(args):
    """How each file is scored: ``(evaluate, its arguments, the workers' set-up)``, the
    framework's modules required (one line if not installed)."""
    from probmut.train import tf_setup

    if args.framework == "keras":
        if args.architecture is not None:
            raise ProbmutError("the architecture is for torch state dicts (--framework torch); "
                               "a .keras or .h5 file holds its own", option="architecture")
        tf_setup.require("tensorflow", "train", "probmut evaluate")
        from probmut.train.evaluate import evaluate_file

        return evaluate_file, (), tf_setup.configure_tensorflow
    from probmut.train.torch.process import configure_torch, require_torch

    require_torch("probmut evaluate --framework torch")
    if args.architecture is None:
        raise ProbmutError("a .pt file holds a torch model's weights, not its network: give "
                           "the --architecture it is the state of", option="architecture")
    if args.task != "classification":
        raise ProbmutError("torch models are classifiers here", option="task")
    from probmut.train.torch.saved import evaluate_state

    return evaluate_state, (args.architecture,), configure_torch


def handle(args) -> int:
    from probmut.train import backends, tf_setup

    evaluate, arguments, setup = _framework(args)
    from probmut.train.datasets import check_data_arguments, load_dataset, source_of
    from probmut.train.evaluate import evaluate_population, group_models, instance_ids, model_files

    files = model_files(args.models, args.framework)
    options = data_options(args)
    source = source_of(options.pop("dataset"), options.pop("data"))
    if args.framework == "keras" or check_data_arguments(
            source, image_size=args.image_size, test_split=args.test_split).keras:
        tf_setup.configure_tensorflow(args.threads)  # before Keras loads a data set or a model
    setup(args.threads)
    dataset = load_dataset(source, task=args.task, **options)
    if args.out is not None:  # the population CSV and its outcomes file beside it
        writable_file(args.out, "population file", "out")
        writable_file(args.out.with_name(f"{args.out.stem}.outcomes.npz"), "outcomes file", "out")
    else:
        writable_file(args.write_manifest, "manifest", "write_manifest")
    if args.out is not None:
        plan = [(args.out, files, instance_ids(files), None)]
        model = None
    else:
        model, groups = group_models(files)
        if ("healthy", None) not in groups:
            raise ProbmutError("no healthy models among the files ({model}_original_{i}.h5 or "
                               "models/healthy/{i}.keras); a manifest needs them")
        folder = args.write_manifest.parent
        plan = []
        healthy_first = lambda group: (group[0][1] is not None, group[0])  # noqa: E731
        for (operator, magnitude), members in sorted(groups.items(), key=healthy_first):
            population = "healthy" if magnitude is None else f"{operator}_{magnitude}"
            plan.append((folder / f"{population}.csv", [p for _, p in members],
                         [i for i, _ in members], (operator, magnitude)))
    backend = backends.make_backend(jobs=args.jobs, threads=args.threads, setup=setup)
    backend.share(dataset=dataset)
    written = []
    with backend:
        for out, population_files, ids, _ in plan:
            written.append(evaluate_population(population_files, ids, out, backend, dataset,
                                               progress=not args.quiet,
                                               label=f"evaluate {out.stem}", evaluate=evaluate,
                                               arguments=arguments))
    document = written[0].to_dict() if args.out is not None else listing(
        [w.to_dict() for w in written], manifest=str(args.write_manifest))
    if args.write_manifest is not None:
        _write_manifest(args, model, dataset, [key for *_, key in plan])
    if args.json:
        print(dumps(document))
    else:
        for w in written:
            print(w)
        if args.write_manifest is not None:
            print(f"manifest: {args.write_manifest}")
    failures = [f for w in written for f in w.failures]
    if failures:
        print(f"{counted(len(failures), 'model')} failed (recorded in the population files):",
              *failures[:5], sep="\n  ", file=sys.stderr)
        return 1
    return 0


def _write_manifest(args, model, dataset, keys) -> None:
    from probmut.io.manifest import add_to_manifest
    from probmut.train.operators import OPERATORS

    name = args.name or model or args.write_manifest.resolve().parent.name
    mutants = [(operator, magnitude, operator in OPERATORS and OPERATORS[operator].paired)
               for operator, magnitude in keys if magnitude is not None]
    add_to_manifest(args.write_manifest, name, "healthy.csv",
                    f"saved models scored on {dataset.name} (probmut evaluate)", mutants,
                    written_by="probmut evaluate")
