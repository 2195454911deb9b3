"""What training needs of its process: the extras it imports installed (:func:`require`),
and TensorFlow set up the same way in every process that trains
(:func:`configure_tensorflow`: oneDNN kernels, thread pools, deterministic ops), so
that results do not depend on which process, or backend (:mod:`probmut.train.backends`),
ran them.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import os
import sys
import warnings

from probmut.errors import ProbmutError


def configure_tensorflow(threads: int) -> None:
    """Set TensorFlow up for training: oneDNN kernels, thread pools of ``threads``,
    deterministic ops (once per process).

    Call before anything imports TensorFlow in the process; a process where it already
    runs (a reused Ray worker) keeps its set-up. oneDNN's CPU kernels are chosen when
    TensorFlow is imported (``TF_ENABLE_ONEDNN_OPTS``: TensorFlow decides by the CPU and
    leaves them off on some CPUs; probmut turns them on unless the variable is set), which
    train faster, a stack most (docs/training.md, *Speed*). Results depend, by float
    rounding, on the kernels and the pools, so TensorFlow imported or sized before this
    call gets a warning: its files may then differ from the command's.

    The objects alive once TensorFlow is imported live as long as the process; they are
    frozen out of garbage collection (``gc.freeze``), so that a full collection no longer
    rescans them (a fifth of a second each, several per stack of a run).
    """
    if "tensorflow" in sys.modules and "TF_ENABLE_ONEDNN_OPTS" not in os.environ:
        _differs_from_the_command("imported before probmut could choose its kernels (oneDNN)")
    set_tensorflow_environment()
    # oneDNN announces itself at import, whatever the log level
    with _native_stderr_silenced(), _hidden(UNUSED_BY_TRAINING):
        import tensorflow as tf

    tf.get_logger().setLevel("ERROR")  # one predict function per instance is expected

    try:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        tf.config.threading.set_inter_op_parallelism_threads(threads)
    except RuntimeError:  # already initialised: keep the pools, say so if they differ
        current = tf.config.threading.get_intra_op_parallelism_threads()
        if current != threads:
            _differs_from_the_command(f"initialised before probmut could size its thread "
                                      f"pools ({current or 'its default'} threads, asked "
                                      f"{threads})")
    tf.config.experimental.enable_op_determinism()
    gc.freeze()


#: Packages Keras imports, where they are installed, only for features training does not
#: use (scikit-learn's estimator wrappers, matplotlib's image galleries, pandas' data
#: frames as inputs to ``fit``): hidden while TensorFlow is imported, a second of every
#: training process's start-up (pandas 0.15 s of it).
UNUSED_BY_TRAINING = ("sklearn", "matplotlib", "pandas")


@contextlib.contextmanager
def _hidden(packages):
    """Make ``import`` of ``packages`` fail, as if they were not installed, for a while
    (those not imported yet); afterwards they import as usual."""
    hidden = [name for name in packages if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # an import raises ImportError
    try:
        yield
    finally:
        for name in hidden:
            if name in sys.modules and sys.modules[name] is None:
                del sys.modules[name]


def set_tensorflow_environment() -> None:
    """Choose what TensorFlow reads from the environment when it is imported (oneDNN
    kernels, quiet C++ logs), where the user has not: for a process that must import
    TensorFlow before :func:`configure_tensorflow` runs, such as a test session."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")


@contextlib.contextmanager
def _native_stderr_silenced():
    """Send what native code writes to file descriptor 2 to /dev/null for a while."""
    sys.stderr.flush()
    try:
        saved = os.dup(2)
    except OSError:  # no file descriptor 2: nothing to silence
        yield
        return
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _differs_from_the_command(what: str) -> None:
    warnings.warn(f"TensorFlow was {what} in this process: results may differ by float "
                  "rounding from the same run of `probmut train`; call "
                  "probmut.train.tf_setup.configure_tensorflow first", RuntimeWarning,
                  stacklevel=3)


def require(module: str, extra: str, what: str = "probmut train") -> None:
    """Refuse, in one line, to go on without ``module`` (of the ``extra`` install).

    >>> require("numpy", "train")
    """
    if importlib.util.find_spec(module) is None:
        raise ProbmutError(f"{what} needs {module}, which is not installed: "
                           f"pip install 'probmut[{extra}]'")
