"""The cache of simulated blocks (probmut.io.cache): a damaged, wrong or misplaced entry
is never used; it is computed afresh, with a warning (a study on a damaged cache:
tests/cli/test_bad_input.py)."""

import numpy as np
import pytest

from probmut.io.cache import Cache, DamagedCacheWarning, cache_key

from ..conftest import damage_file


def test_an_entry_reads_back_as_put(tmp_path):
    cache = Cache(tmp_path)
    key = cache_key("chunk", 0, 1.5)
    assert cache.get(key) is None
    cache.put(key, means=np.linspace(0, 1, 6).reshape(2, 3), counts=np.arange(4))
    got = cache.get(key, shapes={"means": (2, 3)})
    assert np.array_equal(got["means"], np.linspace(0, 1, 6).reshape(2, 3))
    assert np.array_equal(got["counts"], np.arange(4))
    assert cache_key("chunk", 0, 1.5) == key != cache_key("chunk", 0, 1.25)


@pytest.mark.parametrize("case", ["truncated", "emptied", "bit flip"])
def test_a_damaged_cache_file_is_recomputed_with_a_warning(tmp_path, case):
    cache = Cache(tmp_path)
    key = cache_key("chunk", 1)
    cache.put(key, means=np.linspace(0, 1, 6).reshape(2, 3))
    damage_file(next(tmp_path.rglob("*.npz")), case)
    with pytest.warns(DamagedCacheWarning, match="damaged cache entry"):
        assert cache.get(key, shapes={"means": (2, 3)}) is None


@pytest.mark.parametrize("arrays, says", [
    ({"other": np.zeros((2, 3))}, "expected array 'means'"),
    ({"means": np.zeros((3, 2))}, "expected array 'means' of shape"),
    ({"means": np.full((2, 3), np.nan)}, "NaN"),
])
def test_a_well_formed_cache_file_with_the_wrong_content_is_not_used(tmp_path, arrays, says):
    cache = Cache(tmp_path)
    key = cache_key("chunk", 2)
    cache.put(key, **arrays)
    with pytest.warns(DamagedCacheWarning, match=says):
        assert cache.get(key, shapes={"means": (2, 3)}) is None


def test_a_cache_file_written_for_another_key_is_not_used(tmp_path):
    cache = Cache(tmp_path)
    one, two = cache_key("a"), cache_key("b")
    cache.put(one, means=np.zeros((2, 3)))
    target = cache._path(two)
    target.parent.mkdir(parents=True, exist_ok=True)
    cache._path(one).rename(target)
    with pytest.warns(DamagedCacheWarning, match="another key"):
        assert cache.get(two) is None
