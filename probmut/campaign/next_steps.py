"""What a campaign leaves to do: the unsettled or unanalysed mutants with the instances
that would settle them and the ``probmut train`` command that trains them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from probmut.results import Result

#: The outcomes a next step is for, in the order the summary counts them.
LEFT_TO_DO = ("not settled", "not analysed")
#: Instances per population a ``--until-settled`` run adds each round (train's default).
ROUND = 10


@dataclass(frozen=True)
class NextStep:
    """One mutant whose verdict is not settled (or that was not analysed): its instances
    per side now, and ``needed``, the instances per side that would settle its verdict
    (:func:`probmut.recommend.recommend`'s; for a mutant not analysed, its run's target or
    the sample size k, what its first verdict needs); None when no size within reach
    would (``why`` says so)."""

    name: str
    mutation: str
    magnitude: str
    outcome: str
    instances: int
    needed: int | None
    why: str

    def to_dict(self) -> dict:
        return {"name": self.name, "outcome": self.outcome, "instances": self.instances,
                "needed": self.needed, "why": self.why}


@dataclass(frozen=True)
class NextSteps(Result):
    """The campaign's unsettled and unanalysed mutants with the instances that would settle
    them, and ``command``: the ``probmut train ... --until-settled`` command that trains
    them on (in the run's folder, with the settings its run recorded), or None with
    ``no_command`` saying why (populations not trained by probmut train, say)."""

    steps: tuple[NextStep, ...]
    command: str | None
    no_command: str | None = None

    def rows(self) -> list[dict]:
        return [s.to_dict() for s in self.steps]

    def to_dict(self) -> dict:
        return {"steps": self.rows(), "command": self.command, "no_command": self.no_command}

    def __str__(self) -> str:
        if not self.steps:
            return "next steps: none (every analysed mutant's verdict is settled)"
        outcomes = [s.outcome for s in self.steps]
        lines = ["next steps: " + ", ".join(f"{outcomes.count(o)} {o}" for o in LEFT_TO_DO
                                            if o in outcomes)]
        lines += [f"  {s.name}: {s.outcome}, {s.instances} instances per side; {s.why}"
                  for s in self.steps]
        lines.append(f"  {self.command}" if self.command else f"  {self.no_command}")
        return "\n".join(lines)


def next_steps_of(campaign) -> NextSteps:
    """The next steps of a :class:`~probmut.campaign.Campaign` (its method ``next_steps``)."""
    k = campaign.settings.sample
    steps = []
    for m in campaign.mutants:
        if m.flags or m.outcome not in LEFT_TO_DO:
            continue
        if m.outcome == "not settled":
            from probmut.recommend import NEEDED_UP_TO

            needed = m.verdict["needed"]
            why = (f"about {needed} per side would settle it" if needed is not None else
                   f"no population of up to {NEEDED_UP_TO} per side would settle it (see "
                   "its verdict): report its posterior mean and interval instead")
        elif m.status == "failed":
            needed, why = None, "every instance failed: more of them would fail too (see its symptoms)"
        else:
            needed = max(k, m.count.target or 0)
            why = {"missing": "no file yet", "empty": "no instance yet",
                   "too few": f"fewer usable instances than k = {k}"}.get(m.status, m.status)
            why += (f": {needed} per side, its run's target" if needed > k else
                    f": its first verdict needs k = {k} per side")
        steps.append(NextStep(m.name, m.mutation, m.magnitude, m.outcome,
                              m.count.instances, needed, why))
    command, no_command = _settle_command(campaign, [s for s in steps if s.needed])
    return NextSteps(tuple(steps), command, no_command)


def _settle_command(campaign, steps) -> tuple[str | None, str | None]:
    """``probmut train`` into the run's folder, until settled, for these mutants, with the
    settings the run recorded (its ``.work/settings.json``); or why there is none."""
    import shlex

    run = campaign.run_settings
    if run is None:
        return None, ("no command: these populations were not trained by probmut train in "
                      "this folder (no .work/settings.json); train the instances with the "
                      "tool that made them, then report again")
    if not steps:
        return None, "nothing to train: no population within reach settles them"
    folder = Path(campaign.manifest).parent
    config = run.get("config", {})
    words = ["probmut", "train", "--out", shown_path(folder),
             f"--{run['data']['option']}", run["dataset"],
             "--architecture", run["architecture"], "--seed", str(run["seed"]),
             "--epochs", str(config["epochs"]), "--batch-size", str(config["batch_size"])]
    for option, key in (("--learning-rate", "learning_rate"), ("--patience", "patience")):
        if config.get(key) is not None:
            words += [option, str(config[key])]
    if campaign.model != folder.resolve().name:
        words += ["--name", campaign.model]
    magnitudes: dict[str, list[str]] = {}
    for step in steps:
        magnitudes.setdefault(step.mutation, []).append(step.magnitude)
    for mutation, chosen in magnitudes.items():
        words += ["--mutation", f"{mutation}:{','.join(chosen)}"]
    most = max(max(s.needed for s in steps), max(s.instances for s in steps) + ROUND)
    words += ["--until-settled", "--max-instances", str(-(-most // ROUND) * ROUND),
              "--sample", str(campaign.settings.sample)]
    return shlex.join(words), None


def shown_path(path) -> str:
    """A path as the reader would type it: relative to the current folder when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
