"""Re-record every documented output of README.md and docs/*.md in one command.

Runs each example as tests/test_docs.py does (same scratch folders, same order),
rewrites the lines each document shows after a command with what it printed (``...``
lines kept: they stand for lines left out), and for the training examples
(``<!-- doctest: slow train -->``) measures the spread of other draws: the training
examples of their folder (they read only what the training examples before them wrote)
are run again ``--draws - 1`` times with every ``probmut train`` given another seed
(1, 2, ...), and each shown line's varying words and each number's mean and standard
deviation over the draws are written to tests/doc_spread.json, which the doc test
compares training output within. Skipped examples are left as they are.

    python scripts/record_docs.py                     # everything
    python scripts/record_docs.py docs/symptoms.md    # the folders this document's examples run in
    python scripts/record_docs.py --draws 3           # fewer draws: quicker, wider tolerances
    python scripts/record_docs.py docs/training.md --only runs/own
                                                      # only the examples whose command holds
                                                      # runs/own (they must not need the others)

Prints each example's time. Exit code 1 when an example failed or could not be
re-recorded (its block is then left as it was).
"""

import argparse
import json
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.docexamples import (  # noqa: E402
    ROOT,
    SPREAD_FILE,
    Folder,
    align,
    all_examples,
    examples,
    key,
    load_spread,
    make_folder,
    measure,
    recorded,
    with_seed,
)


def run_folder(name, chosen, seed=None):
    """Every example of a folder in order: {example id: output lines}, or an error."""
    outputs, errors = {}, []
    with tempfile.TemporaryDirectory(prefix=f"record-{name}-") as top:
        if seed is not None:  # another draw: only the training examples
            chosen = [e for e in chosen if e.kind == "train"]
        folder = Folder(make_folder(Path(top)), chosen)
        command = (lambda e: with_seed(e.command, seed)) if seed is not None else None
        for example in chosen:
            if example.mode == "skip":
                continue
            start = time.perf_counter()
            result = folder.result(example, command)
            label = "" if seed is None else f" (seed {seed})"
            print(f"{example.id}{label}: {time.perf_counter() - start:.1f} s", flush=True)
            if result.returncode not in (0, 2):
                errors.append(f"{example.id}{label}: exit {result.returncode}\n{result.stderr}")
                break
            outputs[id(example)] = result.output
    return outputs, errors


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("documents", nargs="*", type=Path,
                        help="re-record the folders these documents' examples run in "
                             "(default: all)")
    parser.add_argument("--draws", type=int, default=5,
                        help="draws per training example: the documented one and draws - 1 "
                             "other seeds (default: 5)")
    parser.add_argument("--jobs", type=int, default=2,
                        help="folders (or draws of one) run at a time (default: 2)")
    parser.add_argument("--only", action="append", default=[], metavar="TEXT",
                        help="re-record only the examples whose command holds TEXT "
                             "(repeatable), run alone: they must not read what the others "
                             "write")
    args = parser.parse_args(argv)
    if args.draws < 2:
        parser.error("--draws must be at least 2 (a spread needs two draws)")
    with tempfile.TemporaryDirectory(prefix="record-docs-") as scratch:
        os.environ["TMPDIR"] = scratch  # the commands' temporary files, removed at the end
        tempfile.tempdir = None
        return record(parser, args)


def record(parser, args):
    """Run, rewrite and measure (see the module doc); the exit code."""
    every = all_examples()
    names = {p.resolve().name for p in args.documents}
    folders = sorted({e.folder for e in every if not names or e.document.name in names},
                     key=[e.folder for e in every].index)
    spread = load_spread()
    if spread["examples"] and spread["draws"] != args.draws and names:
        parser.error(f"the spread file was measured with {spread['draws']} draws: re-record "
                     f"every document with --draws {args.draws}, or use --draws {spread['draws']}")
    spread["draws"] = args.draws
    members = {name: [e for e in every if e.folder == name
                      and (not args.only or any(text in e.command for text in args.only))]
               for name in folders}
    tasks = [(name, seed) for name in folders
             for seed in [None, *(range(1, args.draws)
                                  if any(e.kind == "train" for e in members[name]) else [])]]
    tasks.sort(key=lambda task: not any(e.kind == "train" for e in members[task[0]]))
    with ThreadPoolExecutor(args.jobs) as pool:  # the training folders, the longest, first
        done = dict(zip(tasks, pool.map(lambda task: run_folder(task[0], members[task[0]],
                                                                task[1]), tasks), strict=True))

    replacements, errors = {}, []
    for name in folders:
        base, failed = done[name, None]
        errors += failed
        draws = [done[task][0] for task in tasks if task[0] == name and task[1] is not None]
        errors += [e for task in tasks if task[0] == name and task[1] is not None
                   for e in done[task][1]]
        for example in members[name]:
            if id(example) not in base:
                continue
            try:
                shown = recorded(example.expected, base[id(example)])
            except ValueError as error:
                errors.append(f"{example.id}: cannot re-record ({error}); edit it by hand")
                continue
            replacements.setdefault(example.document, []).append((example, shown))
            if example.kind == "train":
                spread["examples"][key(example, every)] = measured(example, shown, draws)

    for document, changes in replacements.items():
        errors += rewrite(document, changes, every)
    keys = {key(e, every) for e in every if e.kind == "train"}
    spread["examples"] = {k: v for k, v in sorted(spread["examples"].items()) if k in keys}
    SPREAD_FILE.write_text(json.dumps(spread, indent=1) + "\n", encoding="utf-8")
    for error in errors:
        print(f"error: {error}", file=sys.stderr)
    print(f"re-recorded {sum(len(c) for c in replacements.values())} examples in "
          f"{len(replacements)} documents; spread: {SPREAD_FILE.relative_to(ROOT)}")
    return 1 if errors else 0


def rewrite(document, changes, every):
    """Put the recorded lines in the document, each where its example is now (the
    document may have been edited meanwhile; an example whose command or shown lines
    changed is left alone, with an error)."""
    now = examples(document)
    where = {(key(e, now), tuple(e.expected)): e.span for e in now}
    spans, errors = [], []
    for example, shown in changes:
        span = where.get((key(example, every), tuple(example.expected)))
        if span is None:
            errors.append(f"{example.id}: changed while it ran; not re-recorded")
        else:
            spans.append((span, shown))
    lines = document.read_text(encoding="utf-8").splitlines()
    for (start, end), shown in sorted(spans, reverse=True):
        lines[start:end] = shown
    document.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return errors


def measured(example, shown, draws):
    """The spread entries of a training example's shown lines over the draws (the shown
    lines are the first draw)."""
    try:
        placed = [align(shown, draw[id(example)]) for draw in draws]
    except (KeyError, ValueError) as error:
        print(f"warning: {example.id}: a draw printed other lines ({error}); every line of "
              "it is free", flush=True)
        placed = None
    entries = []
    for i, line in enumerate(shown):
        if not line.strip() or line.strip() == "...":
            continue
        if placed is None:
            entries.append({"line": line, "free": True, "free_words": [], "numbers": []})
            continue
        lines = [line] + [draw[id(example)][p[i]].rstrip()
                          for draw, p in zip(draws, placed, strict=True)]
        entries.append(measure(lines))
    return entries


if __name__ == "__main__":
    sys.exit(main())
