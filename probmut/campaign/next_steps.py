"""What a campaign leaves to do: the unsettled or unanalysed mutants with the instances
that would settle them and the ``probmut train`` command that trains them."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from probmut.results import Result

#: The outcomes a next step is for, in the order the summary counts them.
LEFT_TO_DO = ("not settled", "not analysed")
#: The step of the instances the command asks for (train's default round).
ROUND = 10
#: Why a campaign has no next-steps command when its folder holds no run of probmut train.
NOT_A_RUN = ("no command: these populations were not trained by probmut train in this "
             "folder (no .work/settings.json); train the instances with the tool that made "
             "them, then report again")


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
    them, and ``command``: the ``probmut train`` command that trains them on (into the
    run's folder, by its absolute path, with the settings its run recorded), to run from
    ``run_from`` (None: from any folder; a folder where the run's ``--data`` path is
    relative to it), or None with ``no_command`` saying why
    (populations not trained by probmut train, say); ``note``: where to run it when
    that cannot be known."""

    steps: tuple[NextStep, ...]
    command: str | None
    no_command: str | None = None
    run_from: str | None = None
    note: str | None = None

    def rows(self) -> list[dict]:
        return [s.to_dict() for s in self.steps]

    def groups(self) -> list[tuple[NextStep, ...]]:
        """The steps with the same outcome, instances, need and reason together (13
        mutants that no population within reach settles are one group), in order."""
        found: dict[tuple, list[NextStep]] = {}
        for s in self.steps:
            found.setdefault((s.outcome, s.instances, s.needed, s.why), []).append(s)
        return [tuple(group) for group in found.values()]

    @property
    def shell(self) -> str | None:
        """The command as a shell runs it from anywhere: ``cd FOLDER && COMMAND`` where
        it must run from a folder."""
        if self.command is None or self.run_from is None:
            return self.command
        return f"cd {shlex.quote(self.run_from)} && {self.command}"

    def to_dict(self) -> dict:
        return {"steps": self.rows(), "command": self.command, "run_from": self.run_from,
                "note": self.note, "no_command": self.no_command}

    def __str__(self) -> str:
        if not self.steps:
            return "next steps: none (every analysed mutant's verdict is settled)"
        outcomes = [s.outcome for s in self.steps]
        lines = ["next steps: " + ", ".join(f"{outcomes.count(o)} {o}" for o in LEFT_TO_DO
                                            if o in outcomes)]
        for group in self.groups():
            s = group[0]
            who = s.name if len(group) == 1 else (
                f"{len(group)} mutants ({', '.join(g.name for g in group)})")
            lines.append(f"  {who}: {s.outcome}, {s.instances} instances per side; {s.why}")
        lines.append(f"  {self.shell}" if self.command else f"  {self.no_command}")
        if self.note:
            lines.append(f"  ({self.note})")
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
            needed, why = None, ("every instance failed: more of them would fail too (see "
                                 "its symptoms)")
        else:
            needed = max(k, m.count.target or 0)
            why = {"missing": "no file yet", "empty": "no instance yet",
                   "too few": f"fewer usable instances than k = {k}"}.get(m.status, m.status)
            why += (f": {needed} per side, its run's target" if needed > k else
                    f": its first verdict needs k = {k} per side")
        steps.append(NextStep(m.name, m.mutation, m.magnitude, m.outcome,
                              m.count.instances, needed, why))
    wanted = [s for s in steps if s.needed]
    if campaign.run_settings is None:
        return NextSteps(tuple(steps), None, campaign.run_note or NOT_A_RUN)
    if not wanted:
        return NextSteps(tuple(steps), None,
                         "nothing to train: no population within reach settles them")
    run_from, note = _run_from(campaign)
    return NextSteps(tuple(steps), settle_command(campaign, wanted), run_from=run_from,
                     note=note)


def settle_command(campaign, steps) -> str:
    """``probmut train`` into the run's folder (its absolute path), until settled, for
    these mutants, with the settings the run recorded (its ``.work/settings.json``): the
    one place the command is built."""
    run = campaign.run_settings
    folder = Path(campaign.manifest).parent.resolve()
    config = run.get("config", {})
    user_code = {"function": "--trainer", "command": "--command"}.get(run.get("trainer"))
    trainer = [user_code, run["code"]] if user_code else ["--architecture", run["architecture"]]
    if run.get("trainer") == "torch":  # keras, the default, is not named
        trainer += ["--framework", "torch"]
    words = ["probmut", "train", "--out", str(folder),
             f"--{run['data']['option']}", run["dataset"], *trainer, "--seed", str(run["seed"])]
    for option, key in (("--epochs", "epochs"), ("--batch-size", "batch_size"),
                        ("--learning-rate", "learning_rate"), ("--patience", "patience")):
        if config.get(key) is not None:
            words += [option, str(config[key])]
    if run.get("threads", 1) != 1:  # a resume must keep them (results depend on them)
        words += ["--threads", str(run["threads"])]
    if campaign.model != folder.name:
        words += ["--name", campaign.model]
    magnitudes: dict[str, list[str]] = {}
    for step in steps:
        magnitudes.setdefault(step.mutation, []).append(step.magnitude)
    for mutation, chosen in magnitudes.items():
        words += ["--mutation", f"{mutation}:{','.join(chosen)}"]
    most = max(max(s.needed for s in steps), max(s.instances for s in steps) + ROUND)
    # probmut 0.2.0 recorded no plan: trained in rounds where it left its rounds.json
    plan = run.get("rounds", {} if campaign.rounds_file else None)
    return shlex.join(words + _how_many(plan, most, campaign.settings.sample))


def _how_many(plan: dict | None, most: int, sample: int) -> list[str]:
    """How the command trains on to ``most`` instances per side: a run of a number of
    instances with ``--instances`` (train refuses to go on in rounds from it); a run in
    rounds as it was trained, its options repeated (train refuses others) with a larger
    ``--max-instances`` (its rounds go on to it); a run in rounds of probmut 0.2.0, which
    recorded no plan (``{}``), until settled.

    >>> _how_many(None, 43, 20)
    ['--instances', '50']
    >>> from probmut.bagging import PosteriorSettings
    >>> from probmut.train.rounds import rounds_plan
    >>> plan = rounds_plan("--until-settled", PosteriorSettings(sample=5), round=4,
    ...                    max_instances=40, certainty=0.95)
    >>> _how_many(plan, 43, 5)  # doctest: +NORMALIZE_WHITESPACE
    ['--until-settled', '--round', '4', '--certainty', '0.95', '--sample', '5',
     '--max-instances', '44']
    """
    if plan is None:
        return ["--instances", str(-(-most // ROUND) * ROUND)]
    if "mode" not in plan:
        return ["--until-settled", "--max-instances", str(-(-most // ROUND) * ROUND),
                "--sample", str(sample)]
    step = plan["round"]
    words = [plan["mode"]] + ([str(plan["until_score"])] if "until_score" in plan else [])
    words += ["--round", str(step)]
    if "certainty" in plan:
        words += ["--certainty", f"{plan['certainty']:g}"]
    analysis = plan["analysis"]
    words += ["--sample", str(analysis["sample"])]
    kind = analysis["criterion"]["kind"]
    for flag, value, default in (("--criterion", kind, "deepcrime"),
                                 ("--bootstraps", analysis["bootstraps"], 100),
                                 ("--trials", analysis["trials"], 100)):
        if value != default:
            words += [flag, str(value)]
    cap = max(-(-most // step) * step, plan["max_instances"] + step)
    return words + ["--max-instances", str(cap)]


def _run_from(campaign) -> tuple[str | None, str | None]:
    """Where the settle command runs from (None: anywhere; its ``--out`` is absolute),
    and a note when that cannot be known. A run whose ``--data`` was a relative path
    resumes only with that path, as given (train refuses other settings), so from the
    folder it is relative to: the first of the current folder and the run's folder and
    those above it where it is found. A run of a user's training code finds it from the
    folder the run started in, which the run does not record: a note says so."""
    run = campaign.run_settings
    data = Path(run["dataset"])
    if run.get("trainer") in ("function", "command"):  # found from where the run started
        return None, ("run it from the folder the run was started in: its training code "
                      "(--trainer's module, --command's program) is found from there")
    if run["data"]["option"] != "data" or data.is_absolute():
        return None, None
    folder = Path(campaign.manifest).parent.resolve()
    for candidate in (Path.cwd().resolve(), folder, *folder.parents):
        if (candidate / data).exists():
            return str(candidate), None
    return None, (f"run it from the folder the run was started in: its --data {data} is "
                  "relative to it, and was not found from here or above the run's folder")


def shown_path(path) -> str:
    """A path as the reader would type it: relative to the current folder when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
