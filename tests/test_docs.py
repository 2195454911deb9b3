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
  minutes and a smaller run of the same command is tested elsewhere).

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
MARKER = re.compile(r"<!--\s*doctest:\s*(slow|skip)\b\s*(.*?)\s*-->")


@dataclass
class Example:
    document: Path
    line: int
    command: str
    expected: list
    mode: str  # "run", "slow" or "skip"
    reason: str = ""

    @property
    def id(self) -> str:
        return f"{self.document.name}:{self.line}"


def examples(document: Path) -> list[Example]:
    """The shell examples of one document, in order."""
    lines = document.read_text(encoding="utf-8").splitlines()
    found, mode, reason, index = [], "run", "", 0
    while index < len(lines):
        line = lines[index]
        marker = MARKER.search(line)
        if marker:
            mode, reason = marker.group(1), marker.group(2)
        elif line.startswith("```"):
            end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
            found += _block(document, lines, index + 1, end, mode, reason)
            mode, reason, index = "run", "", end
        elif line.strip():
            mode, reason = "run", ""
        index += 1
    return found


def _block(document, lines, start, end, mode, reason):
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
                             mode, reason))
    return found


def matches(expected: list[str], actual: list[str]) -> bool:
    """Line-by-line equality (trailing spaces ignored), ``...`` matching any lines.

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
        return any(matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


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
    assert matches(example.expected, actual), (
        f"{example.id}: `{example.command}` printed\n" + result.stdout
        + "\nbut the document shows\n" + "\n".join(example.expected))
