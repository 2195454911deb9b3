"""coverage.json: the document `probmut coverage --json` prints, read back, and files
that are not one refused in one line."""

import numpy as np
import pytest

from probmut.coverage import CoverageStudy, LayerValues, instance_coverage
from probmut.errors import ProbmutError
from probmut.io.coverage import read_coverage


def test_the_json_a_coverage_study_prints_reads_back(tmp_path):
    rng = np.random.default_rng(1)
    train = np.maximum(rng.normal(0.5, 1, (200, 3)), 0)
    test = np.maximum(rng.normal(0.5, 1, (30, 3)), 0)
    layer = lambda values: [LayerValues(values, values.min(1), values.max(1))]  # noqa: E731
    study = CoverageStudy("dense (layer 4, 3 neurons)", (2,), (instance_coverage(
        "0", rng.normal(0, 1, (200, 3)), train, test, layer(train), layer(test), 2),),
        30, {"seed": 0})
    path = tmp_path / "coverage.json"
    path.write_text(study.to_json())
    document = read_coverage(path)
    assert document["layer"] == "dense (layer 4, 3 neurons)"
    assert document["idc"]["mean"] == study.idc(2).mean()


@pytest.mark.parametrize("text, says", [
    (None, "no such coverage file"),
    ("{not json", "not a JSON document"),
    ('{"tau": 0.1}', "not a coverage result"),
    ('[1, 2]', "not a coverage result"),
])
def test_a_file_that_is_not_a_coverage_result_is_refused(tmp_path, text, says):
    path = tmp_path / "coverage.json"
    if text is not None:
        path.write_text(text)
    with pytest.raises(ProbmutError, match=says) as error:
        read_coverage(path)
    assert error.value.option == "coverage" and "\n" not in str(error.value)
