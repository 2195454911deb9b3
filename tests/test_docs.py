"""The documents cannot go stale: every shell example of README.md and docs/*.md runs
and its output is compared with the document.

An example is a fenced code block whose lines starting with ``$ `` are commands (a line
ending in ``\\`` continues on the next); the lines after a command, up to the next
command, are what it prints, compared line by line (numbers to the printed digits): its
standard output when it succeeds, its standard error when it fails (an example of an
error message; it must then exit with code 2). Progress lines and warnings on standard
error of a successful run are not compared. A line holding only ``...`` (indented or
not) matches any number of lines. An HTML
comment on the line before the block changes how it runs:

- ``<!-- doctest: slow -->``: the example takes long; it runs with the slow tests;
- ``<!-- doctest: skip REASON -->``: not run, for the reason given (e.g. it trains for
  minutes and a smaller run of the same command is tested elsewhere);
- ``<!-- doctest: slow mcmc -->``: a slow example whose table rows come from MCMC
  sampling. NUTS is reproducible for a seed on one machine, but on another CPU
  (OpenBLAS and NumPy pick other SIMD kernels, which round differently) the chains take
  other paths: its rows are compared within Monte-Carlo error
  (:func:`same_within_mcmc_error`), every other line exactly.

Commands run with ``bash``, with this Python's scripts first on the PATH, in a scratch
folder per document that looks like the repository's root (links to ``raw_data``,
``scripts``, ``docs``, ``plot_results`` and, beside it, ``shared``): a document's examples
run in order and see each other's files (a training run, then its analysis), and
nothing is written into the repository.
"""

import functools
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARKER = re.compile(r"<!--\s*doctest:\s*(slow|skip)\b\s*(mcmc\b)?\s*(.*?)\s*-->")


@dataclass
class Example:
    document: Path
    line: int
    command: str
    expected: list
    mode: str  # "run", "slow" or "skip"
    reason: str = ""
    mcmc: bool = False

    @property
    def id(self) -> str:
        return f"{self.document.name}:{self.line}"


def examples(document: Path) -> list[Example]:
    """The shell examples of one document, in order."""
    lines = document.read_text(encoding="utf-8").splitlines()
    found, mode, reason, mcmc, index = [], "run", "", False, 0
    while index < len(lines):
        line = lines[index]
        marker = MARKER.search(line)
        if marker:
            mode, mcmc, reason = marker.group(1), bool(marker.group(2)), marker.group(3)
        elif line.startswith("```"):
            end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
            found += _block(document, lines, index + 1, end, mode, reason, mcmc)
            mode, reason, mcmc, index = "run", "", False, end
        elif line.strip():
            mode, reason, mcmc = "run", "", False
        index += 1
    return found


def _block(document, lines, start, end, mode, reason, mcmc):
    found, index = [], start
    while index < end:
        if not lines[index].startswith("$ "):
            index += 1
            continue
        first = index + 1
        command = lines[index][2:]
        while command.endswith("\\") and index + 1 < end:
            index += 1
            command = command[:-1] + " " + lines[index].strip()
        index += 1
        output_start = index
        while index < end and not lines[index].startswith("$ "):
            index += 1
        found.append(Example(document, first, command.strip(), lines[output_start:index],
                             mode, reason, mcmc))
    return found


def matches(expected: list[str], actual: list[str], same=str.__eq__) -> bool:
    """Line-by-line agreement by ``same`` (default: equality; trailing spaces ignored),
    ``...`` matching any lines.

    >>> matches(["a", "...", "z"], ["a", "b", "c", "z"]), matches(["a"], ["b"])
    (True, False)
    """
    expected = [line.rstrip() for line in expected]
    actual = [line.rstrip() for line in actual]
    while expected and not expected[-1]:
        expected.pop()
    while actual and not actual[-1]:
        actual.pop()
    if not expected:
        return not actual
    if expected[0].strip() == "...":
        return any(matches(expected[1:], actual[i:], same) for i in range(len(actual) + 1))
    return (bool(actual) and same(expected[0], actual[0])
            and matches(expected[1:], actual[1:], same))


INTERVAL = re.compile(r"([-+]?\d+\.\d+) \[([-+]?\d+\.\d+), ([-+]?\d+\.\d+)\]")
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")
# A row's estimates and interval ends may move by this share of the documented
# interval's width. Measured against docs/bayes.md's two examples (2 chains x 1000
# draws), rerun with seeds 1 to 4 and, for neurons_freezing, with seed 42 on a CPU with
# other SIMD kernels: estimates moved by up to 0.053 of the width and interval ends by up
# to 0.115, apart from the kill probability's steps of 0.01; ESS ranged from 962 to 2,031.
INTERVAL_SHARE = 0.25


def same_within_mcmc_error(expected: str, actual: str) -> bool:
    """Equal lines, or rows of an MCMC summary that agree within Monte-Carlo error.

    A row (a line holding ``estimate [low, high]``) must have the same words and first
    field; each estimate and interval end may move by ``INTERVAL_SHARE`` of the
    documented interval's width (plus one step of its resolution), other decimals (P(worse),
    R-hat) by 0.02, counts (ESS) within a factor of 2 (ESS is itself a noisy estimate:
    962 to 1,787 for neurons_freezing 0.1 over six runs), and 0 stays 0 (divergences).

    >>> row = "0.1   0.388 [0.200, 0.600]   1.000  1.010   1484    0"
    >>> same_within_mcmc_error(row, "0.1   0.395 [0.170, 0.590]   1.000  1.000   1457    0")
    True
    >>> same_within_mcmc_error(row, "0.1   0.600 [0.400, 0.800]   1.000  1.000   1457    0")
    False
    >>> same_within_mcmc_error(row, "0.1   0.395 [0.170, 0.590]   1.000  1.000   1457    3")
    False
    """
    if expected == actual:
        return True
    if not INTERVAL.search(expected) or expected.split()[0] != actual.split()[0]:
        return False
    if NUMBER.sub("#", expected).split() != NUMBER.sub("#", actual).split():
        return False
    for documented, printed in zip(INTERVAL.findall(expected), INTERVAL.findall(actual),
                                   strict=True):
        low, high = float(documented[1]), float(documented[2])
        decimals = len(documented[0].split(".")[1])
        # P(kill), printed with three decimals, is a share of 100 simulated tests per
        # draw: its interval ends move in steps of 0.01.
        step = 0.01 if decimals == 3 else 10.0 ** -decimals
        if any(abs(float(a) - float(e)) > INTERVAL_SHARE * (high - low) + step
               for e, a in zip(documented, printed, strict=True)):
            return False
    for documented, printed in zip(NUMBER.findall(INTERVAL.sub("", expected))[1:],
                                   NUMBER.findall(INTERVAL.sub("", actual))[1:], strict=True):
        if "." in documented:
            close = abs(float(printed) - float(documented)) <= 0.02
        else:
            close = int(documented) / 2 <= int(printed) <= 2 * int(documented)
        if not close:
            return False
    return True


ALL = [example for document in DOCUMENTS for example in examples(document)]


def _param(example: Example):
    marks = []
    if example.mode == "slow":
        marks.append(pytest.mark.slow)
    if example.mode == "skip":
        marks.append(pytest.mark.skip(reason=example.reason or "marked skip in the document"))
    return pytest.param(example, id=example.id, marks=marks)


def test_every_skipped_example_says_why():
    assert all(example.reason for example in ALL if example.mode == "skip")


@functools.cache
def scratch(document: Path) -> Path:
    """A folder that looks like the repository's root, one per document."""
    top = Path(tempfile.mkdtemp(prefix=f"probmut-docs-{document.stem}-"))
    (top / "shared").symlink_to(ROOT.parent / "shared")
    work = top / "work"
    work.mkdir()
    for name in ("raw_data", "scripts", "docs", "plot_results", "README.md"):
        (work / name).symlink_to(ROOT / name)
    return work


@pytest.mark.parametrize("example", [_param(e) for e in ALL])
def test_documented_output_is_what_the_command_prints(example):
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep
           + os.environ.get("PATH", ""), "COLUMNS": "100"}
    result = subprocess.run(["bash", "-c", example.command], cwd=scratch(example.document), env=env,
                            capture_output=True, text=True, timeout=1800)
    assert result.returncode in (0, 2), f"{example.id}: {example.command}\n{result.stderr}"
    actual = (result.stdout if result.returncode == 0 else result.stderr).splitlines()
    same = same_within_mcmc_error if example.mcmc else str.__eq__
    assert matches(example.expected, actual, same), (
        f"{example.id}: `{example.command}` printed\n" + result.stdout
        + "\nbut the document shows\n" + "\n".join(example.expected))
