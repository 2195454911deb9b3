"""``probmut train --framework torch`` end to end: a run writes what a Keras run writes
(records, populations, manifest, settings, ``.pt`` models), every mode trains with it,
``evaluate`` scores its saved models again, the report's next step repeats the framework,
``--dry-run`` and ``--list-operators`` speak torch, and what cannot work is refused in
one line. Tiny runs: the ``mlp`` architecture, one epoch, three instances."""

import json
import shlex

import numpy as np
import pytest

from probmut.io.populations import read_instances

from . import torch_or_skip

pytestmark = pytest.mark.filterwarnings("ignore:.* instances per population")
MUTATIONS = ["delete_training_data:30", "NAI", "remove_layer", "duplicate_layer",
             "change_activation_function:tanh"]


def _train(cli, out, *options):
    return cli("train", "--framework", "torch", "--architecture", "mlp", "--epochs", "1",
               "--out", out, "--quiet", *options)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """One stacked torch run with a data, a model-level, and layer mutants (training and
    model level), its models saved."""
    from tests.conftest import CLI

    torch_or_skip()
    out = tmp_path_factory.mktemp("torch") / "run"
    argv = [a for m in MUTATIONS for a in ("--mutation", m)]
    ran = _train(CLI, out, "--instances", "3", "--save-models", "--json", *argv)
    assert ran.code == 0, ran.err
    return out, json.loads(ran.out)


def test_a_torch_run_writes_what_a_keras_run_writes(run):
    out, summary = run
    settings = json.loads((out / ".work" / "settings.json").read_text())
    assert (settings["trainer"], settings["code"], settings["architecture"]) == \
        ("torch", None, "mlp")
    assert settings["stack"] == 25  # --stack auto
    populations = ["healthy", "delete_training_data_30", "neuron_activation_inverse_0.01",
                   "remove_layer_3", "duplicate_layer_2", "change_activation_function_tanh"]
    assert [p["file"].rsplit("/", 1)[1] for p in summary["results"]] == \
        [f"{p}.csv" for p in populations]
    for population in populations:
        records = read_instances(out / f"{population}.csv")
        assert [r.status for r in records] == ["ok"] * 3, [r.error for r in records]
        assert (out / f"{population}.outcomes.npz").is_file()
        assert sorted(p.name for p in (out / "models" / population).iterdir()) == \
            ["00000.pt", "00001.pt", "00002.pt"]
    manifest = (out / "manifest.toml").read_text()
    assert 'description = "mlp (torch) on digits, 3 instances, 1 epochs' in manifest
    assert "[models.run.mutations.neuron_activation_inverse]\npaired = true" in manifest


def test_evaluate_scores_the_saved_state_dicts_as_the_run_did(run, cli, tmp_path):
    """Each .pt file loaded into its population's model (a layer removed, duplicated, an
    activation changed, as its mutation did) gives the accuracy the run recorded."""
    out, _ = run
    manifest = tmp_path / "again" / "manifest.toml"
    cli.ok("evaluate", out / "models", "--dataset", "digits", "--framework", "torch",
           "--architecture", "mlp", "--write-manifest", manifest, "--quiet")
    for csv in out.glob("*.csv"):
        trained = [r.accuracy for r in read_instances(csv)]
        assert [r.accuracy for r in read_instances(manifest.parent / csv.name)] == trained
        with np.load(csv.with_name(f"{csv.stem}.outcomes.npz")) as a, \
                np.load(manifest.parent / f"{csv.stem}.outcomes.npz") as b:
            assert np.array_equal(a["correct"], b["correct"])


def test_evaluate_of_a_state_dict_names_what_it_needs(run, cli, tmp_path):
    out, _ = run
    model = out / "models" / "healthy" / "00000.pt"
    cli.refused("evaluate", model, "--dataset", "digits", "--out", tmp_path / "h.csv",
                says="a torch model's state dict; give --framework torch")
    cli.refused("evaluate", out / "models", "--dataset", "digits", "--out", tmp_path / "h.csv",
                says="it holds torch models, .pt: give --framework torch")
    cli.refused("evaluate", model, "--dataset", "digits", "--framework", "torch",
                "--out", tmp_path / "h.csv", says="give the --architecture it is the state of")
    bad = cli("evaluate", model, "--dataset", "digits", "--framework", "torch",
              "--architecture", "digits_cnn", "--out", tmp_path / "h.csv")
    assert bad.code == 1 and "not the state of digits_cnn's model (missing: 0.weight" in bad.err
    assert read_instances(tmp_path / "h.csv")[0].status == "crashed"


@pytest.mark.parametrize("content, says", [
    (b"not a pickle", "not a state dict saved by torch.save(module.state_dict())\n"),
    ("module", "saved by torch.save(module.state_dict()): it pickles a torch.nn.modules"),
    ([1, 2], "holds a list, not a state dict")])
def test_evaluate_of_a_file_that_is_no_state_dict_says_what_it_holds(cli, tmp_path, content,
                                                                      says):
    """A .pt file torch's weights-only load refuses is a crashed instance with one line
    (torch's own refusal is many lines about weights_only), naming a pickled module."""
    torch = torch_or_skip()
    path = tmp_path / "model.pt"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        torch.save(torch.nn.Linear(2, 2) if content == "module" else content, path)
    bad = cli("evaluate", path, "--dataset", "digits", "--framework", "torch",
              "--architecture", "mlp", "--out", tmp_path / "h.csv")
    assert bad.code == 1 and says in bad.err, bad.err
    assert read_instances(tmp_path / "h.csv")[0].status == "crashed"


def test_the_report_trains_on_with_the_torch_trainer(run, cli):
    """The next step's command (:func:`settle_command`, from the run's recorded settings)
    repeats --framework torch and parses; a resume with Keras is refused, naming the
    trainer."""
    from probmut.bagging import PosteriorSettings
    from probmut.campaign import summarize_campaign
    from probmut.campaign.next_steps import NextStep, settle_command
    from probmut.cli import build_parser

    out, _ = run
    campaign = summarize_campaign(out / "manifest.toml", verdicts=False,
                                  settings=PosteriorSettings(sample=3, bootstraps=10,
                                                             trials=10))
    step = NextStep("neuron_activation_inverse_0.01", "neuron_activation_inverse", "0.01",
                    "not settled", 3, 13, "")
    command = settle_command(campaign, [step])
    assert "--architecture mlp --framework torch" in command
    args = build_parser().parse_args(shlex.split(command)[1:])
    assert (args.framework, args.architecture) == ("torch", "mlp")
    cli.refused("train", "--architecture", "mlp", "--epochs", "1", "--instances", "3",
                "--out", out, says="trainer torch before, keras now")


@pytest.mark.parametrize("options, ends", [
    (["--until-settled", "--round", "2", "--max-instances", "4", "--sample", "2",
      "--mutation", "delete_training_data:80"], "delete_training_data_80"),
    (["--until-score", "0.6", "--round", "2", "--max-instances", "4", "--sample", "2",
      "--mutation", "delete_training_data:80", "--mutation", "GF"], "gaussian_fuzzing"),
    (["--search", "delete_training_data:5,80", "--resolution", "40", "--instances", "3"],
     "delete_training_data_80"),
], ids=["until-settled", "until-score", "search"])
def test_every_mode_trains_with_the_torch_trainer(cli, tmp_path, options, ends):
    torch_or_skip()
    out = tmp_path / "run"
    ran = _train(cli, out, "--stack", "1", *options)
    assert ran.code == 0, ran.err
    assert json.loads((out / ".work" / "settings.json").read_text())["trainer"] == "torch"
    assert any(p.name.startswith(ends) for p in out.glob("*.csv"))
    assert (out / "rounds.json").is_file() == ("--search" not in options)


def test_the_dry_run_and_the_operator_list_speak_torch(cli):
    torch_or_skip()
    text = cli.ok("train", "--framework", "torch", "--dry-run", "--mutation", "LD",
                  "--mutation", "change_activation_function:tanh")
    assert text.splitlines()[:4] == [
        "dry run of digits_cnn (torch), seed 42: nothing is trained; counts are those of "
        "instance 0",
        "layer_deactivation_1 (model level): legal", "  target: layer 1 1 (ReLU)",
        "  layer 1 1: ReLU -> none"]
    found = cli.json("train", "--framework", "torch", "--dry-run", "--mutation", "NEB")
    (mutation,) = found["mutations"]
    assert mutation["legal"] and [layer["of"] for layer in mutation["changes"]["layers"]] == \
        [16, 32, 64]
    illegal = cli("train", "--framework", "torch", "--dry-run", "--mutation", "add_bias")
    assert illegal.code == 2 and "add_bias: the model has no hidden layer" in illegal.err
    listed = cli.json("train", "--list-operators", "--framework", "torch")
    assert all(row["torch"] for row in listed) and len(listed) == 39
    assert "torch" not in cli.json("train", "--list-operators")[0]


@pytest.mark.parametrize("argv, says", [
    (["--framework", "torch", "--trainer", "m:f"], "(torch) is that of probmut's own trainer"),
    (["--framework", "torch", "--command", "python x.py"], "(torch) is that of probmut's own"),
    (["--framework", "torch", "--architecture", "gaze_lenet"],
     "unknown torch architecture 'gaze_lenet' (it is a Keras architecture only)"),
    (["--framework", "torch", "--architecture", "nosuch:model"],
     "nosuch:model: cannot import model from nosuch"),
    (["--framework", "torch", "--mutation", "change_activation_function:sparsemax"],
     "sparsemax"),
])
def test_what_the_torch_trainer_cannot_do_is_refused_in_one_line(cli, tmp_path, argv, says):
    torch_or_skip()
    cli.refused("train", *argv, "--out", tmp_path / "run", says=says)
    assert not (tmp_path / "run").exists()


def test_without_torch_the_install_is_named(cli, tmp_path, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else find_spec(name, *a))
    for argv in (["train", "--framework", "torch", "--out", tmp_path / "run"],
                 ["train", "--framework", "torch", "--dry-run", "--mutation", "GF"],
                 ["train", "--framework", "torch", "--list-operators"],
                 ["evaluate", tmp_path, "--framework", "torch", "--architecture", "mlp",
                  "--dataset", "digits", "--out", tmp_path / "h.csv"]):
        cli.refused(*argv, says="torch, which is not installed: pip install 'probmut[torch]'")


def test_coverage_of_torch_models_is_refused_in_one_line(run, cli):
    out, _ = run
    cli.refused("coverage", out, says="coverage is computed on Keras models only")
    cli.refused("coverage", out / "models" / "healthy", "--dataset", "digits",
                says="torch models (.pt state dicts)")


def _whole(out, mutations, **execution):
    """A run of the ``mlp`` with ``mutations``, 6 instances of 4 epochs, in this process
    (``out``'s name is the manifest's model name: compared runs share it)."""
    from probmut.train import train_populations
    from probmut.train.options import ExecutionOptions, Instances, TrainingOptions

    return train_populations(out, mutations, mode=Instances(count=6), architecture="mlp",
                             framework="torch", training=TrainingOptions(epochs=4),
                             execution=ExecutionOptions(progress=False, **execution))


@pytest.mark.slow
def test_a_torch_run_killed_or_interrupted_resumes_to_the_files_of_a_whole_run(tmp_path):
    """SIGKILL after two instances, Ctrl-C after two more, then the same command: the
    instances done are kept, and the files are those of a run never stopped."""
    import sys

    from ..commands import kill_interrupt_resume
    from ..test_run import assert_same_but_seconds

    torch_or_skip()
    out = tmp_path / "run"
    mutations = ["delete_training_data:50", "NAI"]
    argv = [sys.executable, "-m", "probmut", "train", "--framework", "torch", "--architecture",
            "mlp", "--instances", "6", "--epochs", "4", "--stack", "1", "--out", str(out),
            "--quiet", *[a for m in mutations for a in ("--mutation", m)]]

    def records():
        return [p for p in (out / ".work").rglob("0*.npz") if "weights" not in p.parts]

    assert kill_interrupt_resume(argv, records) < 18
    whole = tmp_path / "whole" / "run"
    _whole(whole, mutations, stack=1)
    names = sorted(p.name for p in whole.iterdir() if p.is_file())
    assert names == sorted(p.name for p in out.iterdir() if p.is_file())
    for name in names:
        assert_same_but_seconds(whole / name, out / name)


@pytest.mark.slow
def test_the_ray_backend_trains_a_torch_run_as_the_local_one(tmp_path):
    """Stacks and a model-level mutant on Ray's workers: the files of the local run."""
    ray = pytest.importorskip("ray")
    from ..commands import REPO
    from ..test_run import assert_same_but_seconds

    torch_or_skip()
    mutations = ["delete_training_data:50", "NAI"]
    _whole(tmp_path / "local" / "run", mutations)
    ray.init(address="local", num_cpus=2, include_dashboard=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        _whole(tmp_path / "ray" / "run", mutations, backend="ray")
    finally:
        ray.shutdown()
    local = tmp_path / "local" / "run"
    names = sorted(p.name for p in local.iterdir() if p.is_file())
    assert names == sorted(p.name for p in (tmp_path / "ray" / "run").iterdir() if p.is_file())
    for name in names:
        assert_same_but_seconds(local / name, tmp_path / "ray" / "run" / name)
