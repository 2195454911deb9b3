"""probmut.compiled: the compiled kernels' on-disk cache follows the sources it is built
from (a criterion added as docs/map.md describes is used by the next process), and a
machine with no writable folder for it compiles without it."""

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from tests.conftest import ROOT

#: One kill test through the compiled dispatch, and whether ``decide`` came from the cache.
SCRIPT = textwrap.dedent("""
    import sys, warnings
    import numpy as np
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from probmut.killtest import KillCriterion, kill_test
        from probmut.killtest.dispatch import decide
        x, y = np.linspace(0.90, 0.92, 10), np.linspace(0.88, 0.90, 10)
        result = kill_test(x, y, criterion=KillCriterion(kind=sys.argv[1]))
    print(repr(result.p_value), sum(decide.stats.cache_hits.values()),
          "|".join(str(w.message) for w in caught), sep="\t")
""")

#: A criterion added as docs/map.md describes: a compiled kernel and a registry row.
KERNEL = textwrap.dedent("""

    @compiled(nogil=True)
    def constant_test(x, y):
        return 0.0123, 1.0, -1.0
""")
ROW = """    Criterion(name="constant", test="constant test", label="constant ", effect="none",
              symbol="c", thresholds=_COHEN_D, sources="none", rules=_signed_rules("c"),
              bounds=(0.0, math.inf), kernel_name="constant_test", description="for tests"),
)}"""


def _copy(tmp_path):
    """The analysis core (no trainer, no command line) in a folder of its own, uncached."""
    folder = tmp_path / "site"
    shutil.copytree(ROOT / "probmut", folder / "probmut",
                    ignore=shutil.ignore_patterns("__pycache__", "train", "cli", "report"))
    return folder


def _run(folder, kind, **environment):
    process = subprocess.run([sys.executable, "-c", SCRIPT, kind], cwd=folder, text=True,
                             capture_output=True, check=True,
                             env={**os.environ, "PYTHONPATH": str(folder), **environment})
    p, hits, warned = process.stdout.rstrip("\n").split("\t")
    return float(p), int(hits), warned


@pytest.mark.slow
def test_a_criterion_added_in_the_sources_is_used_by_the_next_process(tmp_path):
    """numba keys its cache on the defining file only: ``decide`` (dispatch.py) inlines a
    dispatch built from criteria.py and kernels.py, so a criterion added there ran the
    stale dispatch of the cache (issue 58). The stamp covers the sources."""
    folder = _copy(tmp_path)
    p, hits, _ = _run(folder, "deepcrime")
    assert hits == 0 and p < 0.05  # compiled, then cached
    assert _run(folder, "deepcrime") == (p, 1, "")  # the cache is used while nothing changed
    killtest = folder / "probmut" / "killtest"
    (killtest / "kernels.py").write_text((killtest / "kernels.py").read_text() + KERNEL)
    criteria = (killtest / "criteria.py").read_text()
    (killtest / "criteria.py").write_text(criteria.replace("\n)}", "\n" + ROW, 1))
    assert _run(folder, "constant")[:2] == (0.0123, 0)  # the new dispatch, compiled afresh
    assert _run(folder, "deepcrime")[:2] == (p, 1)


#: What a read-only package folder and home folder do to numba's cache locators (the
#: suite may run as root, who writes into read-only folders).
READ_ONLY = textwrap.dedent("""
    from numba.core import caching
    def refused(self):
        raise PermissionError(13, "Permission denied", self.get_cache_path())
    caching._CacheLocator.ensure_cache_path = refused
""")


@pytest.mark.slow
def test_without_a_writable_folder_kernels_compile_uncached_with_one_warning(tmp_path):
    """Every command died in numba's cache locator (issue 57): they run, uncached."""
    folder = _copy(tmp_path)
    (folder / "sitecustomize.py").write_text(READ_ONLY)
    p, hits, warned = _run(folder, "deepcrime", NUMBA_CACHE_DIR="")
    assert p < 0.05 and hits == 0
    assert warned.startswith("probmut: no writable folder for numba's cache")
    assert not list(folder.rglob("*.nbi"))
