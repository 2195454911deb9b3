"""probmut and its Keras trainer never import torch; the torch trainer never imports
TensorFlow or Keras; a run of each framework on the command line, and the report on it,
import only their own (each checked in a fresh interpreter, by ``sys.modules``)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from . import torch_or_skip

REPO = Path(__file__).resolve().parents[3]


def _modules_after(code: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code + "\nimport sys\n"
                             "print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"],
                            cwd=REPO, env=env, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return set(result.stdout.splitlines()[-1].split())


def test_probmut_and_the_keras_trainer_never_import_torch():
    loaded = _modules_after(
        "import probmut, probmut.cli.main, probmut.train.trainer, probmut.train.instance, "
        "probmut.train.run, probmut.train.dryrun, probmut.train.stack")
    assert "torch" not in loaded
    assert "probmut" in loaded


def test_a_torch_run_on_the_command_line_never_imports_tensorflow(tmp_path):
    """Every module of probmut.train.torch, then ``probmut train --framework torch`` (its
    checks, a stack, a training-level and a model-level mutant, the manifest) and the
    report on the run, in one process."""
    torch_or_skip()
    loaded = _modules_after(
        "import pkgutil, importlib, probmut.train.torch as package\n"
        "for info in pkgutil.iter_modules(package.__path__):\n"
        "    importlib.import_module(f'probmut.train.torch.{info.name}')\n"
        "from probmut.cli.main import main\n"
        f"out = {str(tmp_path / 'run')!r}\n"
        "assert main(['train', '--framework', 'torch', '--architecture', 'mlp', '--epochs', "
        "'1', '--instances', '3', '--mutation', 'NAI', '--mutation', 'change_label:20', "
        "'--mutation', 'remove_layer', '--out', out, '--quiet']) == 0\n"
        "assert main(['report', out, '--out', out + '-report', '--sample', '2', "
        "'--bootstraps', '10', '--trials', '10', '--quiet']) == 0")
    assert "torch" in loaded and not loaded & {"tensorflow", "keras", "tf_keras"}


@pytest.mark.slow
def test_a_keras_run_and_its_report_never_import_torch(tmp_path):
    loaded = _modules_after(
        "from probmut.cli.main import main\n"
        f"out = {str(tmp_path / 'run')!r}\n"
        "assert main(['train', '--architecture', 'mlp', '--epochs', '1', '--instances', '3', "
        "'--mutation', 'NAI', '--stack', '1', '--out', out, '--quiet']) == 0\n"
        "assert main(['report', out, '--out', out + '-report', '--sample', '2', "
        "'--bootstraps', '10', '--trials', '10', '--quiet']) == 0")
    assert "tensorflow" in loaded and "torch" not in loaded
