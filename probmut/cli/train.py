"""``probmut train``: train healthy and mutant populations (see docs/training.md).

The command parses its arguments and prints; :func:`probmut.train.train_populations`
does the rest. Registering the subcommand imports nothing heavy, and neither do
``--list-operators``, a dry run of data-level mutations or the checks of the arguments:
TensorFlow is imported where an instance trains or Keras is needed
(:mod:`probmut.train.trainer`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from probmut.bagging import PosteriorSettings
from probmut.cli.args import (
    add_data_arguments,
    add_quiet_argument,
    data_options,
    flag,
    integer,
    number,
    seed_value,
)
from probmut.errors import ProbmutError
from probmut.killtest import KINDS, KillCriterion
from probmut.results import counted
from probmut.seeds import DEFAULT_SEED
from probmut.train.options import (
    DECISIONS,
    FRAMEWORKS,
    DataOptions,
    ExecutionOptions,
    Instances,
    Search,
    TrainingOptions,
    UntilScore,
    UntilSettled,
)

EXAMPLE = """example:
  probmut train --dataset digits --architecture digits_cnn --instances 20 \\
                --mutation delete_training_data:3.1,9.29,30.93 --out runs/digits
  probmut train ... --mutation weights_fuzzing:0.05_1@3 --mutation change_activation_function:elu
  probmut train --list-operators          every operator, its magnitude and default target
  probmut train --framework torch --architecture digits_cnn --mutation GF --out runs/t
                                          the same run with PyTorch (the torch extra)

  probmut train --architecture deepcrime_mnist --mutation neurons_freezing:0.05 --dry-run
                                          what a mutation changes, nothing trained

magnitudes are VALUE[@TARGET]: a percent (3.1), a Keras name (elu), RATIO_SCALE (0.05_1),
@LAYER for a layer index (default: the architecture's published layer, else the first fitting
hidden layer), @each for one mutant per fitting layer, @network for every weighted layer
(the default of DeepMutation's GF, WS, NEB, NAI, NS), @all or @CLASS for change_label,
@C1+C2 for the class-targeted data operators; an operator without magnitudes takes its
documented default. DeepMutation's names (DR, LE, NEB, ...) and DeepCrime's
(change_gradient_clip, change_earlystopping_patience) work too; docs/operators.md.
"""

#: How many processes or threads an option takes at most.
MAX_WORKERS = 4096


def _stack(text: str) -> int | None:
    """argparse type of ``--stack``: a size of at least 1, or None for auto.

    >>> _stack("auto"), _stack("4")
    (None, 4)
    """
    return None if text == "auto" else integer(1, MAX_WORKERS)(text)


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "train", help="train healthy and mutant populations (needs the train extra)",
        description="Train N instances of a model, healthy and under each mutation "
                    "magnitude; resumable: re-run the same command to continue.",
        epilog=EXAMPLE, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_data_arguments(p, default="default: digits")
    _add_what_trains(p)
    _add_training_settings(p)
    _add_execution(p)
    _add_search(p)
    add_quiet_argument(p)
    p.add_argument("--json", action="store_true",
                   help="print the run summary (or --list-operators, --dry-run) as one JSON "
                        "document")
    _add_rounds(p)
    p.set_defaults(func=handle, resumes=True)


def _add_what_trains(p) -> None:
    """The options that say what trains (the network, its framework or the user's code,
    the mutations) and where it goes."""
    from probmut.train.models import MODELS

    p.add_argument("--validation-split", type=number(0, 1, low_open=True, high_open=True),
                   metavar="SHARE",
                   help="hold out SHARE of each training class as a validation set (default: "
                        "gaze_lenet 0.1, as DeepCrime's lenet; none for other models; needed "
                        "by --patience, change_patience, remove_validation_set)")
    p.add_argument("--architecture", metavar="ARCHITECTURE",
                   help=f"the network trained: {', '.join(MODELS)} (torch: digits_cnn, mlp, "
                        "deepcrime_mnist), or module:function: a function (input_shape, "
                        "n_classes) returning a keras.Model (torch: a torch.nn.Module) "
                        "classifier, on the Python path (default: digits_cnn); a manifest's "
                        "model is the name the run writes (--name)")
    p.add_argument("--framework", choices=FRAMEWORKS, default="keras",
                   help="the framework probmut trains the architecture with: keras or torch "
                        "(PyTorch: the torch extra; docs/torch.md) (default: keras)")
    p.add_argument("--trainer", metavar="MODULE:FUNCTION",
                   help="train each instance with your own function instead (any framework): "
                        "FUNCTION(spec) returns {'accuracy': ...} (and 'model', its torch model, "
                        "for model-level operators); MODULE is looked up in the current folder "
                        "first (docs/training.md, Your own training code)")
    # dest "command" is the subcommand's name (probmut.cli.main)
    p.add_argument("--command", dest="program", metavar="COMMAND",
                   help="train each instance with your own program instead: COMMAND runs once "
                        "per instance, reads the spec JSON named by $PROBMUT_SPEC and writes "
                        "its result JSON to $PROBMUT_RESULT")
    p.add_argument("--instances", type=integer(1),
                   help="instances per population (default: 20)")
    p.add_argument("--mutation", action="append", default=[], metavar="MUTATION",
                   help="a mutation and its magnitudes, OPERATOR[:MAG1,MAG2,...] (default: the "
                        "operator's); repeatable")
    p.add_argument("--list-operators", action="store_true",
                   help="print every operator (its name, level, source and references' "
                        "names, its magnitude and the magnitude and target it takes when none "
                        "is given) and exit; with --json as JSON")
    p.add_argument("--dry-run", action="store_true",
                   help="train nothing: say per mutation whether it is legal (and why not), "
                        "its target and exactly what it changes (samples, settings, or "
                        "weights/units per layer for instance 0); with --json as JSON; exit "
                        "2 if a mutation is illegal")
    p.add_argument("--out", type=Path, metavar="OUT",
                   help="output directory (required to train)")
    p.add_argument("--name", help="model name in the manifest (default: --out's name)")
    p.add_argument("--seed", type=seed_value, default=DEFAULT_SEED,
                   help=f"base seed of every instance's seed (default: {DEFAULT_SEED})")


def _add_training_settings(p) -> None:
    """The training settings that override the architecture's, and the files' format."""
    p.add_argument("--epochs", type=integer(1), help="override the model's epochs")
    p.add_argument("--batch-size", type=integer(1), help="override the model's batch size")
    p.add_argument("--learning-rate", type=number(0, float("inf"), low_open=True),
                   help="override the model's learning rate")
    p.add_argument("--patience", type=integer(0),
                   help="early stopping on the validation loss after PATIENCE epochs without "
                        "improvement, for every population (needs --validation-split)")
    p.add_argument("--format", choices=["tidy", "deepcrime"], default="tidy",
                   help="deepcrime: also write DeepCrime's ;-separated files")


def _add_execution(p) -> None:
    """How the instances run (stacks, workers, backend, time limits, retries) and what is
    kept of them."""
    p.add_argument("--stack", type=_stack, default=None, metavar="K|auto",
                   help="train K instances of a population at once as one model; auto: up "
                        "to 20 for small models, 1 on a CPU for models whose training step is "
                        "large (torch: 25); 1: one at a time with model.fit (default: auto)")
    p.add_argument("--jobs", type=integer(1, MAX_WORKERS), default=1,
                   help="worker processes training at once, each a stack or one instance "
                        "(local backend); 1: in this process (default: 1)")
    p.add_argument("--threads", type=integer(1, MAX_WORKERS), default=1,
                   help="TensorFlow (torch) threads per instance; the same --threads gives the "
                        "same files whatever --jobs or --backend (default: 1)")
    p.add_argument("--backend", choices=["local", "ray"], default="local")
    p.add_argument("--address", help="Ray cluster address (default: start a local Ray)")
    p.add_argument("--cpus-per-task", type=number(0, float("inf"), low_open=True),
                   help="Ray CPUs per task (default: --threads)")
    p.add_argument("--gpus-per-task", type=number(0, float("inf")), default=0,
                   help="Ray GPUs per task (default: 0)")
    p.add_argument("--save-models", action="store_true",
                   help="keep each instance's model as OUT/models/POPULATION/ID.keras, the "
                        "id in five digits (00000.keras; torch: 00000.pt, its state_dict) "
                        "(model-level mutants after mutation)")
    p.add_argument("--timeout", type=number(0, float("inf"), low_open=True), metavar="SECONDS",
                   help="stop an instance's training after SECONDS (recorded as timed out); "
                        "instances then train one at a time (--stack 1) in worker processes, "
                        "which are killed if an instance cannot stop itself")
    p.add_argument("--retry-failed", action="store_true",
                   help="train crashed and timed-out instances again (without it they are "
                        "recorded once)")
    p.add_argument("--max-error-rate", type=number(0, 1, high_open=True), metavar="R",
                   help="DeepMutation's quality control: remove a mutant population whose "
                        "instances get wrong, on average, more than the share R of the test "
                        "inputs their original model gets right (the healthy instance each "
                        "derives from; for source-level mutants every healthy instance, "
                        "averaged); it keeps its files, is listed as removed and left out of "
                        "the manifest's magnitudes")


def _add_search(p) -> None:
    """The killable-magnitude search's options."""
    search = p.add_argument_group("killable-magnitude search (DeepCrime's binary search)")
    search.add_argument("--search", metavar="OP:LOW,HIGH",
                        help="bisect the magnitude of OP between LOW (weak) and HIGH (strong) "
                             "for the smallest killed magnitude, training only the magnitudes "
                             "it needs (instead of --mutation)")
    search.add_argument("--resolution", type=number(0, float("inf"), low_open=True),
                        help="stop when the bracket is this narrow (default: 1/16 of the range)")
    search.add_argument("--decision", choices=DECISIONS, default=None,
                        help="a magnitude is killed by the bagged posterior's ratio or by "
                             "DeepCrime's single test on the whole populations (default: "
                             f"{DECISIONS[0]})")


def _add_rounds(p) -> None:
    """The options of training in rounds, until settled or until the score is."""
    from probmut.recommend import CERTAINTY
    from probmut.train.options import MAX_INSTANCES, WIDTH

    settle = p.add_argument_group(
        "train in rounds until the decisions or the score are settled (docs/recommend.md, "
        "docs/score.md)",
        "--until-settled: after each round, the verdict of `probmut recommend` for every "
        "mutant still in training; a mutant stops when settled, the healthy population trains "
        "while any mutant does. --until-score: after each round, the mutation score's "
        "interval; the next round trains the populations that narrow it most")
    settle.add_argument("--until-settled", action="store_true",
                        help="train in rounds until each mutant's verdict is settled "
                             "(instead of --instances)")
    settle.add_argument("--until-score", type=number(0, 1, low_open=True, high_open=True),
                        nargs="?", const=WIDTH, default=None, metavar="WIDTH",
                        help="train in rounds the populations that weigh most on the mutation "
                             "score's 95%% interval until it is at most WIDTH wide or no "
                             "population below --max-instances would narrow it (instead of "
                             f"--instances; docs/score.md) (default: {WIDTH:g}, "
                             f"±{WIDTH / 2:g})")
    settle.add_argument("--round", dest="round_size", type=integer(1), default=10, metavar="N",
                        help="instances added per round to each mutant in training "
                             "(--until-settled); the step of a round's plan (--until-score) "
                             "(default: 10)")
    settle.add_argument("--max-instances", type=integer(2), default=MAX_INSTANCES, metavar="N",
                        help=f"most instances per population (default: {MAX_INSTANCES})")
    settle.add_argument("--sample", type=integer(2), default=20, metavar="K",
                        help="k instances per side in the kill tests of the verdicts and the "
                             "score; the first verdict needs K per side, the score's pilot 5K "
                             "healthy instances and 2K per mutant (default: 20)")
    settle.add_argument("--criterion", choices=KINDS, default=None,
                        help="the kill test of the verdicts' and the score's bagged posteriors "
                             f"(docs/criteria.md) (default: {KINDS[0]})")
    settle.add_argument("--bootstraps", type=integer(1), default=None, metavar="B",
                        help="B bootstrap resamples of each population in the verdicts and "
                             "the score (default: 100)")
    settle.add_argument("--trials", type=integer(1), default=None, metavar="N",
                        help="N kill tests per resample (default: 100)")
    settle.add_argument("--certainty", type=number(0.5, 1, low_open=True, high_open=True),
                        default=None, metavar="CERTAINTY",
                        help="for any true effect, at most 1 - CERTAINTY of the runs end with a "
                             "wrong settled verdict, over all the rounds "
                             f"(default: {CERTAINTY})")


def operator_table(json_output: bool, framework: str = "keras") -> str:
    """``--list-operators``: the registry as a table (two lines per operator) or JSON;
    for torch, a third line (``"torch"`` in JSON): what the operator does to a torch
    module (:data:`probmut.train.torch.operators.TORCH_OPERATORS`)."""
    from probmut.train.operators import OPERATORS

    rows = [op.describe() for op in OPERATORS.values()]
    if framework == "torch":
        from probmut.train.torch.process import require_torch

        require_torch()
        from probmut.train.torch.operators import TORCH_OPERATORS

        rows = [{**row, "torch": TORCH_OPERATORS[row["name"]].what} for row in rows]
    if json_output:
        return json.dumps(rows, indent=2)
    lines = [f"{'operator':<31}{'level':<9}{'default':<21}source",
             "  magnitude; default target; the references' names"]
    for row in rows:
        lines.append(f"{row['name']:<31}{row['level']:<9}{row['default'] or '(layer)':<21}"
                     f"{row['source']}")
        only = ("; only " + ", ".join(row["tasks"])) if len(row["tasks"]) < 3 else ""
        note = f"; {row['note']}" if row["note"] else ""
        names = f"; also {', '.join(row['aliases'])}" if row["aliases"] else ""
        lines.append(f"  {row['magnitude']}; {row['default_target']}{only}{note}{names}")
        if "torch" in row:
            lines.append(f"  torch: {row['torch']}")
    return "\n".join(lines)


def _data(args) -> DataOptions:
    return DataOptions(**data_options(args), validation_split=args.validation_split)


def _training(args) -> TrainingOptions:
    return TrainingOptions(epochs=args.epochs, batch_size=args.batch_size,
                           learning_rate=args.learning_rate, patience=args.patience)


def _mode(args):
    """The run's mode from its flags: a number of instances, a search, or rounds until
    settled or until the score is; flags of another mode are refused."""
    until = args.until_settled or args.until_score is not None
    rounds = "until settled" if args.until_settled else "until the score is settled"
    if args.until_settled and args.until_score is not None:
        raise ProbmutError("train either until each mutant's verdict is settled or until the "
                           "mutation score is, not both", option="until_score")
    if until and args.instances is not None:
        raise ProbmutError(f"train either a number of instances or {rounds}, not both",
                           option="instances")
    if until and args.search:
        raise ProbmutError(f"run either a search or training {rounds}, not both",
                           option="search")
    if args.max_error_rate is not None and (args.search or until):
        raise ProbmutError("the quality control applies to a run of a number of instances, "
                           f"not to a search or training {rounds} (whose decisions would "
                           "count removed mutants)", option="max_error_rate")
    if args.certainty is not None and not args.until_settled:
        raise ProbmutError("--certainty is for training until settled", option="certainty")
    if not args.search and (args.resolution is not None or args.decision is not None):
        raise ProbmutError("a resolution and a decision are for a search",
                           option="resolution" if args.resolution is not None else "decision")
    given = getattr(args, "given", frozenset())  # the options on the command line
    round_flags = [name for dest, name in (("round_size", "--round"),
                                           ("max_instances", "--max-instances"),
                                           ("sample", "--sample")) if dest in given]
    if round_flags and not until:
        raise ProbmutError(f"{', '.join(round_flags)}: the rounds' settings are for training "
                           "until settled or until the score is (--until-settled, "
                           "--until-score)", option=round_flags[0].removeprefix("--"))
    analysis_flags = [flag(f) for f in ("criterion", "bootstraps", "trials") if getattr(args, f)]
    if analysis_flags and not until:
        raise ProbmutError(f"{', '.join(analysis_flags)}: the verdicts' and the score's "
                           "settings are for training until settled or until the score is",
                           option=analysis_flags[0].removeprefix("--"))
    def given(**values):  # the flags given; the mode's own defaults for the rest
        return {key: value for key, value in values.items() if value is not None}

    if args.search:
        return Search(magnitudes=args.search, **given(resolution=args.resolution,
                                                      decision=args.decision,
                                                      instances=args.instances))
    if not until:
        return Instances(**given(count=args.instances, max_error_rate=args.max_error_rate))
    analysis = PosteriorSettings(sample=args.sample, **given(
        bootstraps=args.bootstraps, trials=args.trials,
        criterion=args.criterion and KillCriterion(kind=args.criterion)))
    if args.until_settled:
        return UntilSettled(round_size=args.round_size, max_instances=args.max_instances,
                            certainty=args.certainty, analysis=analysis)
    return UntilScore(width=args.until_score, round_size=args.round_size,
                      max_instances=args.max_instances, analysis=analysis)


def _dry_run(args) -> int:
    """``--dry-run``: what each mutation changes, nothing trained."""
    from probmut.train import preview_mutations

    if args.search or args.until_settled or args.until_score is not None:
        raise ProbmutError("--dry-run looks at --mutation magnitudes; leave out --search, "
                           "--until-settled and --until-score")
    if args.trainer or args.program:
        raise ProbmutError("--dry-run shows what a mutation changes in the model and data of "
                           "probmut's own trainer; leave out --trainer and --command",
                           option="trainer" if args.trainer else "command")
    report = preview_mutations(args.mutation, data=_data(args), training=_training(args),
                               architecture=args.architecture or "digits_cnn", seed=args.seed,
                               threads=args.threads, framework=args.framework)
    print(json.dumps(report.to_dict(), indent=2) if args.json else report)
    if report.illegal:
        raise ProbmutError(f"{report.illegal[0].label}: {report.illegal[0].reason}",
                           option="mutation")
    return 0


def handle(args) -> int:
    """Train, or list the operators, or dry-run the mutations; print what was done."""
    if args.list_operators:
        print(operator_table(args.json, args.framework))
        return 0
    if args.dry_run:
        return _dry_run(args)
    if args.out is None:
        raise ProbmutError("give --out DIR (where the populations go)")
    from probmut.train import train_populations

    report = train_populations(
        args.out, args.mutation, mode=_mode(args), data=_data(args), training=_training(args),
        execution=ExecutionOptions(
            jobs=args.jobs, threads=args.threads, backend=args.backend, address=args.address,
            cpus_per_task=args.cpus_per_task, gpus_per_task=args.gpus_per_task,
            stack=args.stack, timeout=args.timeout, retry_failed=args.retry_failed,
            progress=not args.quiet),
        architecture=args.architecture, trainer=args.trainer, command=args.program,
        name=args.name, seed=args.seed, save_models=args.save_models,
        write_deepcrime_csv=args.format == "deepcrime", framework=args.framework)
    print(report.to_json() if args.json else report)
    if report.diverged:
        print(f"{counted(len(report.diverged), 'instance')} diverged (recorded; see probmut "
              "symptoms): "
              + ", ".join(report.diverged[:5]) + (" ..." if len(report.diverged) > 5 else ""),
              file=sys.stderr)
    return _failed(report)


def _failed(report) -> int:
    """Say on stderr which instances failed, were recorded as failed before, or were
    lost with their Ray worker or node; 1 if any (a search decides on its failed ones)."""
    def listed(entries):
        return [*entries[:5], *(["..."] if len(entries) > 5 else [])]

    code = 0
    if report.lost:
        print(f"{counted(len(report.lost), 'instance')} not trained: the Ray worker or node "
              "running it was lost more often than Ray retries; nothing is recorded for it, "
              "run the same command again to train it:", *listed(report.lost), sep="\n  ",
              file=sys.stderr)
        code = 1
    if report.search is not None:
        return code
    if report.failures:
        print(f"{counted(len(report.failures), 'instance')} failed (recorded; --retry-failed "
              "trains them again):", *listed(report.failures), sep="\n  ", file=sys.stderr)
        code = 1
    if report.failed_before:
        print(f"{counted(len(report.failed_before), 'instance')} recorded as failed by an "
              "earlier run, not trained again (--retry-failed trains them again):",
              *listed(report.failed_before), sep="\n  ", file=sys.stderr)
        code = 1
    return code
