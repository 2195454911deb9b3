"""probmut and its Keras trainer never import torch; the torch trainer never imports
TensorFlow or Keras (each checked in a fresh interpreter, by ``sys.modules``)."""

import os
import subprocess
import sys
from pathlib import Path

from . import torch_or_skip

REPO = Path(__file__).resolve().parents[3]


def _modules_after(code: str) -> set[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run([sys.executable, "-c", code + "\nimport sys\n"
                             "print(' '.join(sorted(m.split('.')[0] for m in sys.modules)))"],
                            cwd=REPO, env=env, capture_output=True, text=True, check=True)
    return set(result.stdout.split())


def test_probmut_and_the_keras_trainer_never_import_torch():
    loaded = _modules_after(
        "import probmut, probmut.cli.main, probmut.train.trainer, probmut.train.instance, "
        "probmut.train.run, probmut.train.dryrun, probmut.train.stack")
    assert "torch" not in loaded
    assert "probmut" in loaded


def test_a_torch_run_never_imports_tensorflow_or_keras():
    torch_or_skip()
    loaded = _modules_after(
        "import pkgutil, importlib, probmut.train.torch as package\n"
        "for info in pkgutil.iter_modules(package.__path__):\n"
        "    importlib.import_module(f'probmut.train.torch.{info.name}')\n"
        "from probmut.train.datasets import load_dataset\n"
        "from probmut.train.torch.instance import train_unit\n"
        "from probmut.train.torch.process import configure_torch\n"
        "from probmut.train.work import Assignment, RunSettings\n"
        "from probmut.train.models import TrainConfig\n"
        "configure_torch(1)\n"
        "settings = RunSettings('digits', 'mlp', TrainConfig(epochs=1, batch_size=64))\n"
        "result, = train_unit([Assignment(settings, 'healthy', 0)], False,"
        " dataset=load_dataset('digits'))\n"
        "assert result.status == 'ok', result.error")
    assert "torch" in loaded
    assert not loaded & {"tensorflow", "keras", "tf_keras"}
