"""The bundled trainer: healthy and mutant populations with TensorFlow (``probmut train``).

Modules: :mod:`~probmut.train.datasets`, :mod:`~probmut.train.models`,
:mod:`~probmut.train.operators` (mutation operators), :mod:`~probmut.train.instance`
(one instance), :mod:`~probmut.train.run` (resumable population runs),
:mod:`~probmut.train.backends` (serial, local processes, Ray) and
:mod:`~probmut.io.outcomes` (per-input outcomes, NumPy only). Importing this package
does not import TensorFlow.
"""
