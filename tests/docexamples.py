"""The shell examples of README.md and docs/*.md: finding them, running them in scratch
folders, and comparing what they print with the document. tests/test_docs.py checks
them (its docstring states the rules); scripts/record_docs.py re-records them.

An example is a command (``$ `` lines of a fenced block) and the lines the document
shows after it. Examples run in *folders*: one scratch folder per document, except that
an example marked ``in OTHER.md`` runs in OTHER.md's folder, after OTHER.md's own
examples (it reads the runs they made).
"""

import json
import math
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: The measured spread of the training examples (written by scripts/record_docs.py).
SPREAD_FILE = ROOT / "tests" / "doc_spread.json"
MARKER = re.compile(r"<!--\s*doctest:\s*(.*?)\s*-->")
KINDS = ("mcmc", "train", "timing")
HEREDOC = re.compile(r"<<-?\s*'?([A-Za-z_]+)'?")


@dataclass
class Example:
    document: Path
    line: int  # of the command, counted from 1
    command: str
    expected: list
    mode: str = "run"  # "run", "slow" or "skip"
    kind: str = "exact"  # "exact", or one of KINDS: how numbers are compared
    folder: str = ""  # the document whose scratch folder it runs in
    reason: str = ""
    span: tuple = (0, 0)  # the document's lines (0-based, end excluded) of `expected`

    @property
    def id(self) -> str:
        return f"{self.document.name}:{self.line}"


def parse_marker(text: str) -> dict:
    """The settings of a ``<!-- doctest: ... -->`` comment.

    >>> parse_marker("slow train in symptoms.md")
    {'mode': 'slow', 'kind': 'train', 'folder': 'symptoms', 'reason': ''}
    >>> parse_marker("skip needs a machine without network")["reason"]
    'needs a machine without network'
    """
    words = text.split()
    if not words or words[0] not in ("slow", "skip"):
        raise ValueError(f"doctest marker must start with slow or skip: {text!r}")
    if words[0] == "skip":
        return {"mode": "skip", "kind": "exact", "folder": "", "reason": " ".join(words[1:])}
    settings = {"mode": "slow", "kind": "exact", "folder": "", "reason": ""}
    rest = words[1:]
    if rest and rest[0] in KINDS:
        settings["kind"] = rest.pop(0)
    if rest[:1] == ["in"] and len(rest) == 2 and rest[1].endswith(".md"):
        settings["folder"] = rest[1][:-3]
        rest = []
    if rest:
        raise ValueError(f"doctest marker not understood: {text!r}")
    return settings


def examples(document: Path) -> list[Example]:
    """The shell examples of one document, in order."""
    lines = document.read_text(encoding="utf-8").splitlines()
    found, index = [], 0
    settings = {"mode": "run", "kind": "exact", "folder": "", "reason": ""}
    plain = dict(settings)
    while index < len(lines):
        line = lines[index]
        marker = MARKER.search(line)
        if marker and line.strip().startswith("<!-- doctest"):
            settings = parse_marker(marker.group(1))
        elif line.startswith("```"):
            end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
            found += _block(document, lines, index + 1, end, settings)
            settings, index = dict(plain), end
        elif line.strip():
            settings = dict(plain)
        index += 1
    return found


def _block(document, lines, start, end, settings):
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
        heredoc = HEREDOC.search(command)
        if heredoc:
            delimiter = heredoc.group(1)
            while index + 1 < end and lines[index].strip() != delimiter:
                index += 1
                command += "\n" + lines[index]
        index += 1
        output_start = index
        while index < end and not lines[index].startswith("$ "):
            index += 1
        found.append(Example(document, first, command.strip(), lines[output_start:index],
                             settings["mode"], settings["kind"],
                             settings["folder"] or document.stem, settings["reason"],
                             (output_start, index)))
    return found


def all_examples() -> list[Example]:
    """Every example, grouped by folder (in the documents' order) and in run order."""
    every = [example for document in DOCUMENTS for example in examples(document)]
    order = [document.stem for document in DOCUMENTS]
    unknown = {e.folder for e in every} - set(order)
    if unknown:
        raise ValueError(f"doctest marker names no document: {sorted(unknown)}")
    return sorted(every, key=lambda e: (order.index(e.folder), e.folder != e.document.stem))


def key(example: Example, every: list[Example]) -> str:
    """The example's name in the spread file: its document and command (numbered when a
    document repeats a command)."""
    same = [e for e in every if e.document == example.document and e.command == example.command]
    suffix = f" #{same.index(example) + 1}" if len(same) > 1 else ""
    return f"{example.document.name}: {example.command}{suffix}"


# -- running ------------------------------------------------------------------------------

def make_folder(top: Path) -> Path:
    """A folder under ``top`` that looks like the repository's root: links to its data,
    scripts, examples and docs (what a fresh clone has: nothing beside it)."""
    top.mkdir(parents=True, exist_ok=True)
    work = top / "work"
    work.mkdir()
    for name in ("raw_data", "scripts", "examples", "docs", "plot_results", "README.md"):
        (work / name).symlink_to(ROOT / name)
    return work


@dataclass
class Result:
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> list[str]:
        """What the document shows: standard output, or standard error of a failure."""
        return (self.stdout if self.returncode == 0 else self.stderr).splitlines()


def run(command: str, folder: Path, timeout: float = 1800) -> Result:
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep
           + os.environ.get("PATH", ""), "COLUMNS": "100"}
    done = subprocess.run(["bash", "-c", command], cwd=folder, env=env, capture_output=True,
                          text=True, timeout=timeout)
    return Result(done.returncode, done.stdout, done.stderr)


@dataclass
class Folder:
    """A scratch folder and its examples: each runs once, after the ones before it."""
    path: Path
    examples: list
    results: dict = field(default_factory=dict)

    def result(self, example: Example, command=None) -> Result:
        """``example``'s result, running first every earlier example it may need (the
        quick ones before a quick example; every one before a slow one)."""
        position = self.examples.index(example)
        for earlier in self.examples[:position]:
            if earlier.mode == "skip" or (example.mode == "run" and earlier.mode != "run"):
                continue
            if id(earlier) not in self.results:
                self._run(earlier, command)
        if id(example) not in self.results:
            self._run(example, command)
        return self.results[id(example)]

    def _run(self, example, command):
        text = command(example) if command else example.command
        self.results[id(example)] = run(text, self.path)


SEED = re.compile(r"--seed[ =]\d+")


def with_seed(command: str, seed: int) -> str:
    """``command`` with every ``probmut train`` given ``seed``.

    >>> with_seed("probmut train --seed 0 --out a; probmut train --out b | tail", 3)
    'probmut train --seed 3 --out a; probmut train --seed 3 --out b | tail'
    """
    def one(match):
        text = match.group(0)
        if SEED.search(text):
            return SEED.sub(f"--seed {seed}", text)
        return text.replace("probmut train", f"probmut train --seed {seed}", 1)

    return re.sub(r"probmut train\b[^;&|\n]*", one, command)


# -- comparing ----------------------------------------------------------------------------

def matches(expected: list[str], actual: list[str], same=str.__eq__) -> bool:
    """Line-by-line agreement by ``same`` (default: equality; trailing spaces ignored),
    ``...`` matching any lines.

    >>> matches(["a", "...", "z"], ["a", "b", "c", "z"]), matches(["a"], ["b"])
    (True, False)
    """
    expected, actual = _trimmed(expected), _trimmed(actual)
    if not expected:
        return not actual
    if expected[0].strip() == "...":
        return any(matches(expected[1:], actual[i:], same) for i in range(len(actual) + 1))
    return (bool(actual) and same(expected[0], actual[0])
            and matches(expected[1:], actual[1:], same))


def _trimmed(lines):
    lines = [line.rstrip() for line in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def align(expected: list[str], actual: list[str]) -> list:
    """For each line the document shows, the index of the printed line that takes its
    place (None for ``...``): the lines before the first ``...`` are the first printed
    ones, those after the last the last ones, and a group between two ``...`` starts at
    the next printed line with the same first word.

    >>> align(["a 1", "...", "z 9"], ["a 2", "b", "c", "z 8"])
    [0, None, 3]
    >>> align(["x", "...", "c 1", "..."], ["x", "b", "c 2", "d"])
    [0, None, 2, None]
    """
    expected, actual = _trimmed(expected), _trimmed(actual)
    gaps = [i for i, line in enumerate(expected) if line.strip() == "..."]
    if not gaps:
        if len(expected) != len(actual):
            raise ValueError(f"{len(actual)} lines printed, {len(expected)} shown")
        return list(range(len(actual)))
    places = [None] * len(expected)
    for i in range(gaps[0]):
        places[i] = i
    tail = len(expected) - gaps[-1] - 1
    for i in range(tail):
        places[gaps[-1] + 1 + i] = len(actual) - tail + i
    cursor = gaps[0]
    for start, stop in zip(gaps, gaps[1:], strict=False):
        group = expected[start + 1:stop]
        if not group:
            continue
        first = group[0].split()[:1]
        at = next((p for p in range(cursor, len(actual)) if actual[p].split()[:1] == first),
                  None)
        if at is None or at + len(group) > len(actual) - tail:
            raise ValueError(f"no printed line starts like {group[0]!r}")
        for i in range(len(group)):
            places[start + 1 + i] = at + i
        cursor = at + len(group)
    if gaps[0] > len(actual) - tail:
        raise ValueError("fewer lines printed than shown")
    return places


def recorded(expected: list[str], actual: list[str]) -> list[str]:
    """The document's lines with the printed ones in place (``...`` kept, and the
    trailing blank lines that separate the next command)."""
    blank = len(expected) - len(_trimmed(expected))
    actual = _trimmed(actual)
    if not any(line.strip() == "..." for line in expected):
        return actual + [""] * blank
    places = align(expected, actual)
    new = [expected[i] if place is None else actual[place] for i, place in enumerate(places)]
    return new + [""] * blank


NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
# A number followed by a unit of time is a wall time: it depends on the machine and its
# load, not on the draw.
WALL_TIME = re.compile(r"\s?(?:s|ms|min|/min)\b")


def tokens(line: str) -> tuple[list[str], list[str]]:
    """The line's words between numbers (spaces collapsed) and its numbers.

    >>> tokens("3.1   20 20  0.6666  -0.1363  not killed")
    (['', '', '', '', '', 'not killed'], ['3.1', '20', '20', '0.6666', '-0.1363'])
    """
    numbers = NUMBER.findall(line)
    words = [" ".join(part.split()) for part in NUMBER.split(line)]
    return words, numbers


def wall_times(line: str) -> list[bool]:
    """For each number of the line, whether it is a wall time.

    >>> wall_times("trained 80 instances in 28.2 s (169.9/min); 0 were already done")
    [False, True, True, False]
    """
    return [bool(WALL_TIME.match(line, match.end())) for match in NUMBER.finditer(line)]


def same_words(expected: str, actual: str) -> bool:
    """The same words and as many numbers, whatever the numbers (a timing's line).

    >>> same_words("coverage  13.8 s  (0.69 s per instance)",
    ...            "coverage  9.1 s  (0.4 s per instance)")
    True
    """
    return tokens(expected)[0] == tokens(actual)[0]


# -- the spread of training examples ------------------------------------------------------

#: Each number's check fails with this probability when the code is right (a normal
#: model of the draws), so a few hundred numbers rarely fail together by chance.
FALSE_ALARM = 0.001


def tolerance_factor(draws: int) -> float:
    """How many measured standard deviations a new draw may lie from the draws' mean: the
    two-sided ``FALSE_ALARM`` prediction interval of one new normal observation from
    ``draws`` observations, t(1 - FALSE_ALARM/2, draws - 1) sqrt(1 + 1/draws).

    >>> round(tolerance_factor(5), 2)
    9.43
    """
    from scipy.stats import t

    return float(t.ppf(1 - FALSE_ALARM / 2, draws - 1) * math.sqrt(1 + 1 / draws))


def measure(lines_by_draw: list[list[str]]) -> dict:
    """One shown line's spread over draws (the first draw is the documented one): which
    words vary (free), each number's mean and standard deviation (None: free: a wall
    time), or, when the draws do not even have the same words and numbers in the same
    places, the whole line free.

    >>> measure(["p 0.5 not killed", "p 0.01 KILLED", "p 0.3 not killed"])["free_words"]
    [1]
    >>> measure(["in 2.0 s", "in 3.0 s"])["numbers"]
    [None]
    """
    shown = lines_by_draw[0]
    parsed = [tokens(line) for line in lines_by_draw]
    entry = {"line": shown, "free": False, "free_words": [], "numbers": []}
    if len({(len(words), len(numbers)) for words, numbers in parsed}) > 1:
        entry["free"] = True
        return entry
    words = [w for w, _ in parsed]
    entry["free_words"] = [i for i in range(len(words[0])) if len({w[i] for w in words}) > 1]
    timed = wall_times(shown)
    for j, is_time in enumerate(timed):
        values = [float(numbers[j]) for _, numbers in parsed]
        if is_time or not all(map(math.isfinite, values)):
            entry["numbers"].append(None)
            continue
        mean = sum(values) / len(values)
        sd = (math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))
              if len(values) > 1 else 0.0)
        entry["numbers"].append([mean, sd])
    return entry


def within_spread(expected: str, actual: str, entry: dict, factor: float) -> bool:
    """``actual`` agrees with the documented line ``expected`` within its measured spread:
    the same words except those that varied between draws, and each number as
    :func:`number_within_spread` judges it.

    >>> entry = measure(["p 0.5 not killed", "p 0.4 KILLED", "p 0.6 not killed"])
    >>> within_spread("p 0.5 not killed", "p 0.9 KILLED", entry, 5.0)
    True
    >>> within_spread("p 0.5 not killed", "p 1.2 KILLED", entry, 5.0)
    False
    """
    if entry["free"]:
        return True
    (words, numbers), (actual_words, actual_numbers) = tokens(expected), tokens(actual)
    if len(words) != len(actual_words) or len(numbers) != len(actual_numbers):
        return False
    if any(a != b for i, (a, b) in enumerate(zip(words, actual_words, strict=True))
           if i not in entry["free_words"]):
        return False
    return all(number_within_spread(documented, printed, spread, factor)
               for documented, printed, spread in zip(numbers, actual_numbers, entry["numbers"],
                                                      strict=True))


#: A number printed with decimals at a bound of [0, 1] ("0.000", "1.00000").
AT_BOUND = re.compile(r"^[-+]?(?:0\.0+|1\.0+)$")


def number_within_spread(documented: str, printed: str, spread, factor: float) -> bool:
    """One number of a training example against its draws' ``spread`` ([mean, sd], or
    None for a wall time: free).

    The draws of a number are modelled as normal on the number's own scale, and a new
    draw must lie within ``factor`` sds of their mean (:func:`tolerance_factor`). Two
    cases where that model is wrong are modelled otherwise:

    - a number in [0, 1] whose normal interval reaches beyond 0 or 1 (a probability, a
      Hellinger distance, a p-value near a bound: its draws are skewed, and a few draws
      near the bound give an sd far too small for the far side): it may also lie within
      ``factor`` sds on the logit scale, the sd carried there to first order (the delta
      method: sd / (mean (1 - mean))), a printed 0 or 1 read as half a printed unit
      inside the bound;
    - a number that never varied: equal, unless it sat at a bound of [0, 1] in every draw
      (an interval's end at 0.000: another draw may leave the bound, by an amount the
      draws cannot tell): then anywhere in [0, 1].

    >>> number_within_spread("0.99967", "0.99852", [0.99992, 0.00014], 9.43)  # issue 57
    True
    >>> number_within_spread("0.9512", "0.80", [0.95, 0.01], 9.43)
    True
    >>> number_within_spread("0.9512", "0.60", [0.95, 0.01], 9.43)
    False
    >>> number_within_spread("0.3487", "-0.05", [0.22, 0.18], 9.43)  # a d, not in [0, 1]
    True
    >>> (number_within_spread("20", "20", [20.0, 0.0], 9.43),
    ...  number_within_spread("20", "19", [20.0, 0.0], 9.43))
    (True, False)
    >>> number_within_spread("0.000", "0.012", [0.0, 0.0], 9.43)
    True
    """
    if spread is None:
        return True
    value = float(printed)
    mean, sd = spread
    if sd == 0:
        if AT_BOUND.match(documented):
            return 0 <= value <= 1
        return value == float(documented)
    if abs(value - mean) <= factor * sd:
        return True
    reaches_out = mean - factor * sd < 0 or mean + factor * sd > 1
    if not (reaches_out and 0 < mean < 1 and 0 <= value <= 1):
        return False
    half_unit = 0.5 * 10.0 ** -len(printed.partition(".")[2]) if "." in printed else 0.5
    inside = min(max(value, half_unit), 1 - half_unit)
    logit_sd = sd / (mean * (1 - mean))
    return abs(_logit(inside) - _logit(mean)) <= factor * logit_sd


def _logit(p: float) -> float:
    return math.log(p / (1 - p))


def load_spread() -> dict:
    if not SPREAD_FILE.exists():
        return {"draws": 0, "examples": {}}
    return json.loads(SPREAD_FILE.read_text(encoding="utf-8"))


def spread_comparison(example_key: str, spread: dict):
    """The line comparison of a training example, from its recorded spread; raises
    KeyError naming what is missing when the document changed since it was recorded."""
    entries = spread["examples"].get(example_key)
    if entries is None:
        raise KeyError(f"no spread recorded for `{example_key}`")
    by_line = {}
    for entry in entries:
        by_line.setdefault(entry["line"], entry)
    factor = tolerance_factor(spread["draws"])

    def same(expected: str, actual: str) -> bool:
        if not expected.strip():
            return not actual.strip()
        if expected not in by_line:
            raise KeyError(f"no spread recorded for the line {expected!r} of `{example_key}`")
        return within_spread(expected, actual, by_line[expected], factor)

    return same
