"""TensorFlow set up for training (probmut.train.tf_setup): what it imports, and the
warning when TensorFlow was set up before it."""

import os
import subprocess
import sys

import pytest

from .commands import REPO


def test_tensorflow_is_imported_without_the_packages_training_does_not_use():
    """configure_tensorflow imports TensorFlow with scikit-learn, matplotlib and pandas
    hidden (Keras imports them for features training does not use: a second of
    start-up), and they import as usual afterwards."""
    pytest.importorskip("tensorflow")
    code = ("import sys; from probmut.train.tf_setup import configure_tensorflow; "
            "configure_tensorflow(1); "
            "print(sorted(n for n in ('sklearn', 'matplotlib', 'pandas') if n in sys.modules)); "
            "import sklearn, matplotlib.pyplot, pandas; print('imported')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["[]", "imported"]


@pytest.mark.train
def test_tensorflow_set_up_before_probmut_gets_a_warning():
    """TensorFlow set up before configure_tensorflow keeps its kernels and pools, and
    results depend on both: importing it first or asking for other pools warns; asking
    again for the same set-up does not."""
    pytest.importorskip("tensorflow")
    script = (
        "import warnings, sys\n"
        "from probmut.train.tf_setup import configure_tensorflow\n"
        "warnings.simplefilter('error')\n"
        "if sys.argv[1] == 'early':\n"
        "    import tensorflow\n"
        "try:\n"
        "    configure_tensorflow(1)\n"
        "    import tensorflow as tf\n"
        "    tf.constant(1.0) + 1\n"
        "    configure_tensorflow(1)\n"  # the same set-up again: silent
        "    configure_tensorflow(2)\n"
        "except RuntimeWarning as warning:\n"
        "    print(warning)\n")
    environment = {key: value for key, value in os.environ.items()
                   if key != "TF_ENABLE_ONEDNN_OPTS"}
    printed = {}
    for when in ("early", "late"):
        done = subprocess.run([sys.executable, "-c", script, when], capture_output=True,
                              text=True, cwd=REPO, env={**environment, "PYTHONPATH": str(REPO)})
        assert done.returncode == 0, done.stderr
        printed[when] = done.stdout
    assert "imported before probmut could choose its kernels (oneDNN)" in printed["early"]
    assert "before probmut could size its thread pools (1 threads, asked 2)" in printed["late"]
