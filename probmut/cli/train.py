"""``probmut train``: train healthy and mutant populations (see docs/training.md).

Registering the subcommand imports nothing heavy; TensorFlow is imported by the handler.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from probmut.cli.args import DEFAULT_SEED, seed_value
from probmut.errors import ProbmutError

EXAMPLE = """example:
  probmut train --dataset digits --model digits_cnn --instances 20 \\
                --mutation delete_training_data:3.1,9.29,30.93 --out runs/digits
  probmut train ... --mutation weights_fuzzing:0.05_1@3 --mutation change_activation_function:elu

magnitudes are VALUE[@TARGET]: a percent (3.1), a Keras name (elu), RATIO_SCALE (0.05_1),
@LAYER for a layer index (default: first fitting hidden layer), @all for change_label.
"""


def register(subparsers) -> None:
    from probmut.train.datasets import DATASETS, DOWNLOAD_TIMEOUT
    from probmut.train.models import MODELS
    from probmut.train.operators import OPERATORS

    p = subparsers.add_parser(
        "train", help="train healthy and mutant populations (needs the train extra)",
        description="Train N instances of a model, healthy and under each mutation "
                    "magnitude; resumable: re-run the same command to continue.",
        epilog=EXAMPLE + "operators: " + ", ".join(OPERATORS),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    data = p.add_mutually_exclusive_group()
    data.add_argument("--dataset", default="digits", choices=DATASETS,
                      help="digits (scikit-learn's, offline; the default) or a Keras data set, "
                           "read from the Keras cache or downloaded into it on first use")
    data.add_argument("--data", metavar="FILE.npz|DIR",
                      help="your own data: an .npz with x_train, y_train, x_test, y_test, or an "
                           "image folder (DIR/train/CLASS/ and DIR/test/CLASS/, or DIR/CLASS/ "
                           "with --test-split)")
    p.add_argument("--image-size", metavar="HxW",
                   help="image folder: resize every image to HxW (default: the first image's)")
    p.add_argument("--test-split", type=float, metavar="SHARE",
                   help="image folder of class folders: hold out SHARE of each class for testing")
    p.add_argument("--validation-split", type=float, metavar="SHARE",
                   help="hold out SHARE of each training class as a validation set (default: "
                        "none; needed by early stopping and change_patience)")
    p.add_argument("--download-timeout", type=float, default=DOWNLOAD_TIMEOUT, metavar="SECONDS",
                   help=f"give up a Keras download that has not started after SECONDS "
                        f"(default {DOWNLOAD_TIMEOUT:g})")
    p.add_argument("--model", default="digits_cnn",
                   help=f"{', '.join(MODELS)}, or module:function returning a Keras model "
                        "(default: digits_cnn)")
    p.add_argument("--instances", type=int, default=20, help="instances per population (20)")
    p.add_argument("--mutation", action="append", default=[], metavar="OP:MAG1,MAG2",
                   help="a mutation and its magnitudes; repeatable")
    p.add_argument("--out", required=True, type=Path, help="output directory")
    p.add_argument("--name", help="model name in the manifest (default: --out's name)")
    p.add_argument("--seed", type=seed_value, default=DEFAULT_SEED,
                   help=f"base seed of every instance's seed (default: {DEFAULT_SEED})")
    p.add_argument("--epochs", type=int, help="override the model's epochs")
    p.add_argument("--batch-size", type=int, help="override the model's batch size")
    p.add_argument("--learning-rate", type=float, help="override the model's learning rate")
    p.add_argument("--format", choices=["tidy", "deepcrime"], default="tidy",
                   help="deepcrime: also write DeepCrime's ;-separated files")
    p.add_argument("--stack", default="auto", metavar="K|auto",
                   help="train K instances of a population at once as one model (default "
                        "auto: 20, fewer for large models; 1: one at a time with model.fit)")
    p.add_argument("--jobs", type=int, default=1,
                   help="units (stacks, or single instances) trained at once (local)")
    p.add_argument("--threads", type=int, default=1,
                   help="TensorFlow threads per instance (default 1; the same --threads gives "
                        "the same files whatever --jobs or --backend)")
    p.add_argument("--backend", choices=["local", "ray"], default="local")
    p.add_argument("--address", help="Ray cluster address (default: start a local Ray)")
    p.add_argument("--cpus-per-task", type=float,
                   help="Ray CPUs per task (default: --threads)")
    p.add_argument("--gpus-per-task", type=float, default=0, help="Ray GPUs per task (0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(func=handle)


def _positive(value, flag):
    if value is not None and value < 1:
        raise ProbmutError(f"{flag} must be at least 1, got {value}")


def _require(module: str, extra: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise ProbmutError(f"probmut train needs {module}, which is not installed: "
                           f"pip install 'probmut[{extra}]'")


def _stack(text: str) -> int | None:
    """``--stack``: a size of at least 1, or None for auto."""
    if text == "auto":
        return None
    try:
        value = int(text)
    except ValueError:
        raise ProbmutError(f"--stack must be auto or a whole number, got {text!r}") from None
    _positive(value, "--stack")
    return value


def _stack_size(requested, probe, config, dataset, mutations) -> int:
    """The run's stack size: ``requested``, or the automatic choice for ``probe``."""
    if requested is not None:
        return requested
    from probmut.train.stack import auto_stack_size, gpu_budget, member_bytes

    private = dataset.x_train.nbytes if any(m.operator.level == "data" for m in mutations) else 0
    size = member_bytes(probe, config.batch_size, private)
    budget = gpu_budget()
    return auto_stack_size(size) if budget is None else auto_stack_size(size, budget)


def handle(args) -> int:
    """Validate everything (data, model, mutations) before the first instance trains."""
    stack = _stack(args.stack)
    for flag in ("instances", "jobs", "threads", "epochs", "batch_size"):
        _positive(getattr(args, flag), "--" + flag.replace("_", "-"))
    if args.learning_rate is not None and not args.learning_rate > 0:
        raise ProbmutError(f"--learning-rate must be positive, got {args.learning_rate}")
    if args.backend == "local" and args.address:
        raise ProbmutError("--address is for --backend ray")
    if not args.download_timeout > 0:
        raise ProbmutError(f"--download-timeout must be positive, got {args.download_timeout}")
    from probmut.train.datasets import DATASETS, check_data_arguments

    source = args.dataset
    if args.data is not None:  # a path, even one spelled like a data set's name
        source = os.path.join(".", args.data) if args.data in DATASETS else args.data
    data_options = {"image_size": args.image_size, "test_split": args.test_split,
                    "validation_split": args.validation_split}
    check_data_arguments(source, **data_options)
    _require("tensorflow", "train")
    _require("sklearn", "train")
    if args.backend == "ray":
        _require("ray", "ray")
    from probmut.train import backends
    from probmut.train.operators import parse_mutations

    mutations = [m for text in args.mutation for m in parse_mutations(text)]
    stems = [m.stem for m in mutations]
    if len(set(stems)) != len(stems):
        raise ProbmutError(f"a mutation magnitude is given twice: {stems}")
    if args.backend == "local" and args.jobs * args.threads > backends.cpu_count():
        print(f"probmut train: warning: --jobs {args.jobs} x --threads {args.threads} exceeds "
              f"the {backends.cpu_count()} CPUs here; instances will compete for cores",
              file=sys.stderr)
    backends.configure_tensorflow(args.threads)  # before TensorFlow does anything here

    from probmut.train.datasets import load_dataset
    from probmut.train.instance import RunSettings
    from probmut.train.models import build_model, resolve_model
    from probmut.train.operators import bind
    from probmut.train.run import run_populations

    dataset = load_dataset(source, **data_options, download_timeout=args.download_timeout)
    spec = resolve_model(args.model, dataset.input_shape, dataset.n_classes)
    overrides = {"epochs": args.epochs, "batch_size": args.batch_size,
                 "learning_rate": args.learning_rate}
    config = spec.config.replace(**{k: v for k, v in overrides.items() if v is not None})
    probe = build_model(spec, dataset.input_shape, dataset.n_classes, config)
    mutations = [bind(m, probe) for m in mutations]
    for m in mutations:  # building each mutated model checks the names against Keras
        if m.operator.level == "training":
            build_model(spec, dataset.input_shape, dataset.n_classes,
                        m.operator.apply(config, m.params))
    settings = RunSettings(dataset=source, model=args.model, config=config, seed=args.seed,
                           stack=_stack_size(stack, probe, config, dataset, mutations))
    name = args.name or args.out.resolve().name
    shared = {"dataset": dataset}
    if args.backend == "ray":
        backend = backends.RayBackend(args.address, args.cpus_per_task or args.threads,
                                      args.gpus_per_task, args.threads, shared)
    elif args.jobs > 1:
        backend = backends.LocalPool(args.jobs, args.threads, shared)
    else:
        backend = backends.Serial(args.threads, shared)
    with backend:
        report = run_populations(settings, mutations, args.instances, args.out, backend,
                                 dataset, name=name, deepcrime=args.format == "deepcrime",
                                 progress=not args.no_progress)
    rate = report.trained / report.seconds * 60 if report.seconds else 0.0
    print(f"trained {report.trained} instances in {report.seconds:.1f} s "
          f"({rate:.1f}/min); {report.resumed} were already done")
    for stem, n in report.counts.items():
        print(f"  {args.out / (stem + '.csv')}: {n} instances")
    print(f"  manifest: {args.out / 'manifest.toml'} (model {name!r})")
    if report.failures:
        print(f"{len(report.failures)} instances failed (re-run to retry them):",
              *report.failures[:5], sep="\n  ", file=sys.stderr)
        return 1
    return 0
