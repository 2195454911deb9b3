"""The kill probability of a posterior draw: the share of simulated k-vs-k kill tests,
on instances drawn from the model with that draw's parameters, that kill."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from probmut import seeds

#: Posterior draws simulated per block; each block has its own random stream.
DRAW_CHUNK = 250


def _student_t(rng, nu, size):
    # nu is per draw, shape (D,); infinite nu is the normal limit.
    nu = np.asarray(nu, dtype=np.float64)
    finite = np.isfinite(nu)
    out = rng.standard_normal(size)
    if finite.any():
        out[finite] = rng.standard_t(nu[finite][:, None, None],
                                     size=(int(finite.sum()),) + size[1:])
    return out


def simulated_kill_rates(params, paired: bool, settings,
                          root: np.random.SeedSequence) -> np.ndarray:
    """Share of ``trials`` simulated k-vs-k tests killed, for each posterior draw.

    The draws are simulated in blocks of ``DRAW_CHUNK``, each from its own stream (the
    ``"bayes tests"`` role of :mod:`probmut.seeds` under ``root``), on ``settings.cores``
    threads (NumPy's generators release the GIL): the same numbers for any number of
    threads.
    """
    from probmut.killtest import kill_test_batch

    mu_h, sigma_h, nu_h, mu_2, sigma_2, nu_2 = params
    k, tests = settings.sample, settings.trials
    starts = range(0, mu_h.size, DRAW_CHUNK)
    rates = np.empty(mu_h.size)

    def simulate(start, child):
        part = slice(start, start + DRAW_CHUNK)
        rng = np.random.default_rng(child)
        count = mu_h[part].size
        size = (count, tests, k)
        x = mu_h[part, None, None] + sigma_h[part, None, None] * _student_t(rng, nu_h[part], size)
        second = mu_2[part, None, None] + sigma_2[part, None, None] * _student_t(
            rng, nu_2[part], size)
        y = x + second if paired else second
        _, _, killed = kill_test_batch(x.reshape(-1, k), y.reshape(-1, k),
                                            settings.criterion)
        rates[part] = killed.reshape(count, tests).mean(axis=1)

    children = [seeds.stream(root, "bayes tests", i) for i in range(len(starts))]
    with ThreadPoolExecutor(max(1, min(settings.cores, len(starts)))) as pool:
        list(pool.map(simulate, starts, children))
    return rates
