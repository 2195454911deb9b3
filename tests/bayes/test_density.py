"""The compiled log density nutpie samples (probmut.bayes.density): its digamma against
SciPy's, its value and gradient against PyMC's model."""

import numpy as np
import pytest

pytest.importorskip("pymc")
pytest.importorskip("arviz")

from probmut.bayes.density import digamma, model_log_density  # noqa: E402
from probmut.bayes.model import scaled_data  # noqa: E402
from probmut.bayes.nutpie_sampler import nutpie_model  # noqa: E402
from probmut.bayes.pymc_sampler import pymc_model  # noqa: E402

from ..conftest import normal_accuracies  # noqa: E402

pytestmark = pytest.mark.bayes


def test_digamma_matches_scipy():
    from scipy import special

    x = np.concatenate([np.linspace(0.5, 12, 200), np.geomspace(12, 1e6, 50)])
    np.testing.assert_allclose([digamma(v) for v in x], special.digamma(x), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("paired", [False, True])
@pytest.mark.parametrize("likelihood", ["student-t", "normal"])
def test_nutpie_s_compiled_density_is_pymc_s(paired, likelihood):
    # The density nutpie samples equals PyMC's logp and gradient (the transforms'
    # Jacobians included) on the unconstrained scale, at random points, on two data sets;
    # its start is PyMC's initial point.
    student = likelihood == "student-t"
    rng = np.random.default_rng(8)
    for seed, shift in ((1, 0.002), (2, -0.001)):
        first, second, _ = scaled_data(*normal_accuracies(seed, n=25, shift=shift), paired)
        model = pymc_model(first, second, paired, likelihood)
        logp, dlogp = model.compile_logp(), model.compile_dlogp()
        points = []
        shapes = {name: np.shape(v) for name, v in model.initial_point().items()}
        sizes = [int(np.prod(shape)) for shape in shapes.values()]
        for x in rng.normal(0, 1.5, (3, sum(sizes))):
            point = {name: part.reshape(shape) for (name, shape), part
                     in zip(shapes.items(), np.split(x, np.cumsum(sizes)[:-1]), strict=True)}
            value, grad = model_log_density(x, first, second, student, paired)
            # PyMC takes the log of its float32 prior scale 2.0 in float32: its constant
            # differs by 2e-9 per prior term; differences between points agree closely.
            assert value == pytest.approx(float(logp(point)), abs=1e-7)
            if points:
                assert value - points[0][0] == pytest.approx(
                    float(logp(point)) - points[0][1], rel=1e-11, abs=1e-9)
            points.append((value, float(logp(point))))
            # PyTensor's digamma (in the gradient in nu) is within 1.5e-10 of SciPy's, ours
            # within 1e-14: the t's gradients agree to about 1e-8.
            np.testing.assert_allclose(grad, dlogp(point), rtol=1e-7, atol=1e-9)
    center = np.concatenate([np.ravel(v) for v in model.initial_point().values()])
    starts = np.array([nutpie_model(paired, likelihood)._make_initial_points(seed)
                       for seed in range(200)])
    assert np.all(np.abs(starts - center) <= 1) and np.all(np.abs(starts.mean(0) - center) < 0.2)
