"""What a training run is asked for, in groups: its data, the training settings it
overrides, how it executes, and its mode (a number of instances, a search, rounds until
each verdict is settled, or rounds until the mutation score is).
:func:`~probmut.train.train_populations` takes one object of each group.

A mode is a :class:`Mode`: it names its counts (checked positive before anything loads),
checks the mutations it is given, and trains a run's
:class:`~probmut.train.run.Job` (its driver, imported when it trains). Adding a mode is
one class here and its driver; the run's seed (``job.settings.seed``) reaches every
random decision of every mode.

Examples
--------
>>> UntilSettled(max_instances=100).analysis.criterion.kind
'deepcrime'
>>> TrainingOptions(epochs=2).overrides()
{'epochs': 2}
>>> UntilScore(round_size=5).counts()
{'round_size': 5, 'max_instances': 200, 'sample': 20}
"""

from __future__ import annotations

import dataclasses
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from probmut.bagging import PosteriorSettings
from probmut.errors import ProbmutError
from probmut.train.datasets.download import DOWNLOAD_TIMEOUT

#: The most instances per population that training in rounds trains (``--max-instances``).
MAX_INSTANCES = 200
#: The width of the score's 95% interval that ``--until-score`` trains for (±0.05).
WIDTH = 0.10
#: How a search decides that a magnitude is killed: the bagged posterior's ratio, or
#: DeepCrime's single test on the whole populations.
DECISIONS = ("posterior", "deepcrime")
#: The frameworks of probmut's own trainers (``--framework``): Keras, the default, and
#: PyTorch (:mod:`probmut.train.torch`).
FRAMEWORKS = ("keras", "torch")


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


class Mode(ABC):
    """How a run trains its populations (see the module notes): :meth:`counts`, :meth:`check`
    and :meth:`train`."""

    @abstractmethod
    def counts(self) -> dict[str, int]:
        """The counts that must be positive, by the name of their setting."""

    def check(self, mutations: list) -> None:  # noqa: B027 (a hook: none refused by default)
        """Refuse, in one line, mutations or settings this mode cannot train with (by
        default none).

        Raises
        ------
        ProbmutError
            Naming the setting at fault.
        """

    @abstractmethod
    def train(self, job, mutations: list):
        """Train ``job`` (:class:`~probmut.train.run.Job`) with the bound ``mutations``;
        the run's :class:`~probmut.train.run.RunReport`."""


@dataclass(frozen=True, kw_only=True)
class Instances(Mode):
    """Train ``count`` instances per population; ``max_error_rate``: DeepMutation's
    quality control (:mod:`probmut.train.flags`)."""

    count: int = 20
    max_error_rate: float | None = None

    def counts(self) -> dict[str, int]:
        return {"instances": self.count}

    def train(self, job, mutations: list):
        return job.train(mutations, self.count, max_error_rate=self.max_error_rate,
                         warn_small=True)


@dataclass(frozen=True, kw_only=True)
class Search(Mode):
    """Bisect ``magnitudes`` (``OPERATOR:WEAK,STRONG``) for the smallest killed magnitude,
    to ``resolution`` (default 1/16 of the range), each magnitude trained to ``instances``
    and killed per ``decision`` (``"posterior"`` or ``"deepcrime"``)."""

    magnitudes: str
    resolution: float | None = None
    decision: str = "posterior"
    instances: int = 20

    def counts(self) -> dict[str, int]:
        return {"instances": self.instances}

    def check(self, mutations: list) -> None:
        from probmut.train.search import parse_search

        if mutations:
            raise ProbmutError("a search trains its own magnitudes; give no mutations",
                               option="mutation")
        if self.decision not in DECISIONS:
            raise ProbmutError(f"unknown decision {self.decision!r}; use one of "
                               f"{', '.join(DECISIONS)}", option="decision")
        parse_search(self.magnitudes)
        if self.resolution is not None and not self.resolution > 0:
            raise ProbmutError(f"the resolution must be positive, got {self.resolution}",
                               option="resolution")

    def train(self, job, mutations: list):
        from probmut.train.search import run_search

        return run_search(job, self)


@dataclass(frozen=True, kw_only=True)
class _Rounds(Mode):
    """Training in rounds of ``round_size``, at most ``max_instances`` per population,
    judged with ``analysis``."""

    round_size: int = 10
    max_instances: int = MAX_INSTANCES
    analysis: PosteriorSettings = field(default_factory=PosteriorSettings)

    def counts(self) -> dict[str, int]:
        return {"round_size": self.round_size, "max_instances": self.max_instances,
                "sample": self.analysis.sample}

    def check(self, mutations: list) -> None:
        settled = isinstance(self, UntilSettled)
        if not mutations:
            rounds = "until settled" if settled else "until the score is settled"
            raise ProbmutError(f"training {rounds} needs at least one mutation",
                               option="until_settled" if settled else "until_score")
        if self.analysis.sample > self.max_instances:
            raise ProbmutError(f"the sample size k = {self.analysis.sample} is more than the "
                               f"maximum of {self.max_instances} instances: "
                               + ("no verdict could be reached" if settled else
                                  "no score could be read"), option="sample")


@dataclass(frozen=True, kw_only=True)
class UntilSettled(_Rounds):
    """Train in rounds of ``round_size`` until each mutant's verdict is settled, at most
    ``max_instances`` per population; the verdicts are those of
    :func:`probmut.recommend.recommend` with ``analysis`` (its ``sample`` k, bootstraps,
    trials and kill criterion) and ``certainty`` (default
    :data:`probmut.sequential.CERTAINTY`: at most ``1 - certainty`` of such runs end with a
    wrong settled verdict, for any true effect)."""

    certainty: float | None = None

    def check(self, mutations: list) -> None:
        """As every run in rounds, and a plan of looks coarse enough to integrate, said
        before anything trains (a finer one would fail at the first verdict)."""
        from probmut.sequential import MAX_PLAN_WORK, plan_work
        from probmut.train.rounds import planned_looks

        super().check(mutations)
        looks = planned_looks(self.round_size, self.max_instances, self.analysis.sample)
        if plan_work(looks) > MAX_PLAN_WORK:
            raise ProbmutError(f"--round {self.round_size} up to --max-instances "
                               f"{self.max_instances} plans {len(looks):,} looks, too many for "
                               "the verdicts' thresholds to be computed; train in larger rounds "
                               "(e.g. --round 10) or up to fewer instances", option="round_size")

    def train(self, job, mutations: list):
        from probmut.train.rounds import train_until_settled

        return train_until_settled(job, mutations, self)


@dataclass(frozen=True, kw_only=True)
class UntilScore(_Rounds):
    """Train in rounds (plans of ``round_size`` steps, at most ``max_instances`` per
    population) the populations that weigh most on the mutation score's interval, until
    it is at most ``width`` wide (:mod:`probmut.train.until_score`), the score analysed
    with ``analysis``."""

    width: float = WIDTH

    def check(self, mutations: list) -> None:
        if not 0 < self.width < 1:
            raise ProbmutError(f"the width of the score's interval must be in (0, 1), got "
                               f"{self.width}", option="until_score")
        super().check(mutations)

    def train(self, job, mutations: list):
        from probmut.train.until_score import train_until_score

        return train_until_score(job, mutations, self)


#: The modes of a run.
MODES = (Instances, Search, UntilSettled, UntilScore)
