"""What a training run is asked for, in groups: its data, the architecture's training
settings it overrides, how it executes, and its mode (a number of instances, a search,
rounds until each verdict is settled, or rounds until the mutation score is).
:func:`~probmut.train.train_populations` takes one object of each group.

Examples
--------
>>> UntilSettled(max_instances=100).analysis.criterion.kind
'deepcrime'
>>> TrainingOptions(epochs=2).overrides()
{'epochs': 2}
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

from probmut.bagging import PosteriorSettings
from probmut.train.datasets.download import DOWNLOAD_TIMEOUT

#: The most instances per population that training in rounds trains (``--max-instances``).
MAX_INSTANCES = 200
#: The width of the score's 95% interval that ``--until-score`` trains for (±0.05).
WIDTH = 0.10
#: How a search decides that a magnitude is killed: the bagged posterior's ratio, or
#: DeepCrime's single test on the whole populations.
DECISIONS = ("posterior", "deepcrime")


@dataclass(frozen=True, kw_only=True)
class DataOptions:
    """The data: a named data set (``DATASETS``; default digits) or ``data``, a file
    ``FILE.npz`` or an image folder (:mod:`probmut.train.datasets`), with ``image_size``,
    ``test_split``, ``validation_split`` (default: the bundled architecture's published
    one, ``gaze_lenet`` 0.1, else none) and ``download_timeout`` (seconds)."""

    dataset: str | None = None
    data: str | os.PathLike | None = None
    image_size: str | None = None
    test_split: float | None = None
    validation_split: float | None = None
    download_timeout: float = DOWNLOAD_TIMEOUT


@dataclass(frozen=True, kw_only=True)
class TrainingOptions:
    """The architecture's training settings this run overrides (None: its own);
    ``patience`` stops early, with a validation split."""

    epochs: int | None = None
    batch_size: int | None = None
    learning_rate: float | None = None
    patience: int | None = None

    def overrides(self) -> dict:
        """The settings given, by name."""
        return {key: value for key, value in dataclasses.asdict(self).items()
                if value is not None}


@dataclass(frozen=True, kw_only=True)
class ExecutionOptions:
    """Where and how the instances train.

    ``jobs``, ``threads``: worker processes training at once (local backend) and
    TensorFlow threads per instance (the same ``threads`` gives the same files whatever
    ``jobs``); ``backend``, ``address``, ``cpus_per_task``, ``gpus_per_task``: ``"local"``
    or ``"ray"`` (:func:`probmut.train.backends.make_backend`); ``stack``: instances of a
    population trained at once as one model (None: ``--stack auto``; a resumed run keeps
    its size); ``timeout``: stop an instance's training after so many seconds (one at a
    time); ``retry_failed``: train crashed and timed-out instances again; ``progress``:
    progress bars on stderr.
    """

    jobs: int = 1
    threads: int = 1
    backend: str = "local"
    address: str | None = None
    cpus_per_task: float | None = None
    gpus_per_task: float = 0
    stack: int | None = None
    timeout: float | None = None
    retry_failed: bool = False
    progress: bool = True


@dataclass(frozen=True, kw_only=True)
class Instances:
    """Train ``count`` instances per population; ``max_error_rate``: DeepMutation's
    quality control (:mod:`probmut.train.flags`)."""

    count: int = 20
    max_error_rate: float | None = None


@dataclass(frozen=True, kw_only=True)
class Search:
    """Bisect ``magnitudes`` (``OPERATOR:WEAK,STRONG``) for the smallest killed magnitude,
    to ``resolution`` (default 1/16 of the range), each magnitude trained to ``instances``
    and killed per ``decision`` (``"posterior"`` or ``"deepcrime"``)."""

    magnitudes: str
    resolution: float | None = None
    decision: str = "posterior"
    instances: int = 20


@dataclass(frozen=True, kw_only=True)
class UntilSettled:
    """Train in rounds of ``round_size`` until each mutant's verdict is settled, at most
    ``max_instances`` per population; the verdicts are those of
    :func:`probmut.recommend.recommend` with ``analysis`` (its ``sample`` k, bootstraps,
    trials and kill criterion) and ``certainty`` (default
    :data:`probmut.sequential.CERTAINTY`: at most ``1 - certainty`` of such runs end with a
    wrong settled verdict, for any true effect)."""

    round_size: int = 10
    max_instances: int = MAX_INSTANCES
    certainty: float | None = None
    analysis: PosteriorSettings = field(default_factory=PosteriorSettings)


@dataclass(frozen=True, kw_only=True)
class UntilScore:
    """Train in rounds (plans of ``round_size`` steps, at most ``max_instances`` per
    population) the populations that weigh most on the mutation score's interval, until
    it is at most ``width`` wide (:mod:`probmut.train.until_score`), the score analysed
    with ``analysis``."""

    width: float = WIDTH
    round_size: int = 10
    max_instances: int = MAX_INSTANCES
    analysis: PosteriorSettings = field(default_factory=PosteriorSettings)


#: The modes of a run.
MODES = (Instances, Search, UntilSettled, UntilScore)
