"""Progress lines that tell the truth (issue 44): the time left leaves out the first
step's one-time costs, and work whose step count may grow says so from the start."""

import io

import numpy as np

import probmut.progress
from probmut.progress import LineProgress
from probmut.recommend import recommend


def test_the_time_left_is_paced_after_the_first_step(monkeypatch):
    """A first step that compiles for 60 s, then 1 s a step: 8 steps left are about 8 s
    (from the start's pace it said 244 s)."""
    clock = iter([0.0, 60.0, 60.0, 61.0, 61.0])
    monkeypatch.setattr(probmut.progress.time, "monotonic", lambda: next(clock))
    stream = io.StringIO()
    bar = LineProgress(10, "posterior", stream=stream, interval=0)
    bar.update()  # 60 s: compiling, then the first step
    bar.update()  # 1 s
    first, second = stream.getvalue().splitlines()[1:]
    assert first == "posterior: 1/10 (10%), 60 s"  # no pace yet: no estimate
    assert second == "posterior: 2/10 (20%), 61 s, about 8 s left"


def test_recommend_says_its_blocks_may_grow(capsys):
    rng = np.random.default_rng(4)
    healthy, mutant = rng.normal(0.9, 0.01, 25), rng.normal(0.88, 0.01, 25)  # killed
    advice = recommend(healthy, mutant, sizes=(25,), simulations=10, seed=2, progress=True)
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "recommend mutant: 2 blocks to do (up to 5 if it needs more)"
    assert advice.simulations_used > 10  # the verdict needed more populations: more blocks
    blocks = 2 + int(np.log2(advice.simulations_used // 10))  # each added block doubles them
    assert lines[-1] == f"recommend mutant: {blocks}/{blocks} (100%) done"
