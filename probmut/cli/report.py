"""``probmut report``: one self-contained HTML page of a campaign (a training run, or a
model of any manifest), and its summary as text or one JSON document."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from probmut.cli.args import (
    PAPER_HELP_POSTERIOR,
    add_cache_arguments,
    add_criterion_arguments,
    add_posterior_arguments,
    add_run_arguments,
    cache_from,
    posterior_settings_from,
    refuse_given,
    writable_file,
)
from probmut.errors import ProbmutError
from probmut.results import dumps

EXAMPLE = """examples:
  probmut report runs/digits                    # a run of probmut train -> runs/digits/report.html
  probmut report --model mnist --out mnist.html # the bundled data (the paper's populations)
  probmut report --model mnist --json           # the summary as one JSON document too
  probmut report runs/digits --compare old.json # what changed since an earlier report's --json
"""

#: Options that change where or how the report is written, not its numbers: left out of
#: the command shown in its header.
_OUTPUT_ONLY = {"out", "json", "quiet", "jobs", "cache", "no_cache"}
#: The verdicts' cache, in the folder of the page: a report written again (after another
#: round of training, say) simulates only the mutants whose populations changed.
CACHE = ".probmut_cache"


def _source(args) -> tuple[Path | None, str | None]:
    """The manifest and model to report on, from a run directory or --model/--manifest."""
    if args.run and args.manifest:
        raise ProbmutError("give a run directory or --manifest, not both")
    if args.run:
        run = Path(args.run)
        if not run.is_dir():
            raise ProbmutError(f"{run}: no such directory; give a run directory written by "
                               "probmut train (or --model NAME [--manifest FILE])")
        manifest = run / "manifest.toml"
        if not manifest.is_file():
            raise ProbmutError(f"{run}: no manifest.toml, so no populations: not a run "
                               "directory written by probmut train")
        return manifest, args.model
    if not args.model:
        raise ProbmutError("give a run directory, or --model NAME [--manifest FILE]")
    return (Path(args.manifest) if args.manifest else None), args.model


def command_line(args, parser) -> str:
    """The command that gives the report's numbers: ``probmut report`` with every
    option given that differs from its default (not ``--out``, ``--json``, ``--quiet``,
    ``--jobs``, ``--cache``, ``--no-cache``: they change where and how it is written, not
    what it says)."""
    defaults = vars(parser.parse_args([]))
    words = ["probmut", "report"] + ([args.run] if args.run else [])
    for key, value in vars(args).items():
        if key not in defaults or key in _OUTPUT_ONLY | {"run"} or value == defaults[key]:
            continue
        flag = "--" + key.replace("_", "-")
        words += [flag] if value is True else [flag, str(value)]
    return shlex.join(words)


def _out(args, manifest: Path | None, model: str | None) -> tuple[Path, bool, int]:
    """Where the page goes (``--out``; by default ``report.html`` in the run's folder, or in
    the current one for ``--model``), whether it replaces an earlier page of the same
    campaign (refused when the file holds anything else), and how many figures the page
    can have at most (one per mutant and per operator, and the overview)."""
    from probmut.io.manifest import Manifest
    from probmut.report import campaign_id, check_replaceable

    out = Path(args.out) if args.out else (Path(args.run) if args.run else Path()) / "report.html"
    out = writable_file(out, "report", "out")
    loaded = Manifest.load(manifest)
    model = model or loaded.model_names()[0]
    loaded.healthy(model)  # an unknown model is said before anything else
    figures = 1 + sum(1 + len(entry.magnitudes) for entry in loaded.mutations(model))
    return out, check_replaceable(out, campaign_id(loaded.path, model, out.parent)), figures


def _run_report(args, parser) -> int:
    from probmut.campaign import shown_path, summarize_campaign, with_verdicts
    from probmut.report import Drawing, write_report

    manifest, model = _source(args)
    out, again, most = _out(args, manifest, model)
    settings = posterior_settings_from(args)
    if args.no_verdicts:
        refuse_given(args, ("cache",), "with --no-verdicts: only the verdicts are cached")
    args.resumes = not args.no_verdicts  # the verdicts' blocks are the work a rerun reads
    cache = None if args.no_verdicts else cache_from(args, out.parent / CACHE)
    # The workers start now, importing matplotlib while the campaign is computed; they draw
    # the mutants' and operators' figures, which do not depend on the verdicts, meanwhile
    # (one worker fewer beside the verdicts' threads: on 2 cores one worker draws them
    # all before the verdicts end, and a second's import of matplotlib is CPU spent).
    with Drawing(args.jobs, most, alongside=not args.no_verdicts) as drawing:
        result = summarize_campaign(manifest, model, settings, seed=args.seed, jobs=args.jobs,
                                    verdicts=False, coverage=args.coverage,
                                    compare=args.compare, progress=not args.quiet)
        drawing.draw(result, ("operator", "mutant"))
        if not args.no_verdicts:
            result = with_verdicts(result, jobs=args.jobs, progress=not args.quiet,
                                   cache=cache)
        drawing.draw(result, ("overview",))
        figures = drawing.wait()
    write_report(result, out, command=command_line(args, parser), figures=figures)
    where = shown_path(out)
    if args.json:
        print(dumps(result.to_dict() | {"report": where}))
    else:
        print(f"{result}\nreport: {where}"
              + (" (it replaces the earlier page of this campaign)" if again else ""))
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "report", help="one self-contained HTML page of a campaign: mutation score, "
                       "operators, every mutant",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Analyse every mutant of a run (or of one model of a manifest) and write "
                    "one HTML page that opens from disk without network: the mutation score "
                    "with its uncertainty, per operator the kill probability against the "
                    "magnitude and the smallest killed magnitude, a sortable and filterable "
                    "table of the mutants and a section for each (see docs/report.md). "
                    "Prints the summary (--json: as one JSON document).",
        epilog=EXAMPLE)
    parser.add_argument("run", nargs="?", metavar="RUN_DIR",
                        help="a run directory written by probmut train (its manifest.toml)")
    parser.add_argument("--model", help="the model of the manifest (default for a run: its "
                                        "first)")
    parser.add_argument("--manifest", help="manifest TOML (default: bundled "
                                           "raw_data/manifest.toml or $PROBMUT_MANIFEST)")
    parser.add_argument("--out", metavar="FILE",
                        help="the HTML file to write (default: report.html in RUN_DIR, or in "
                             "the current folder with --model); it replaces only an earlier "
                             "page of the same campaign")
    parser.add_argument("--compare", metavar="OLD.json",
                        help="an earlier report's JSON document (probmut report --json): "
                             "which outcomes changed since")
    parser.add_argument("--coverage", metavar="FILE.json",
                        help="a coverage result to include (probmut coverage --json; default: "
                             "RUN_DIR/coverage.json if there is one)")
    parser.add_argument("--no-verdicts", action="store_true",
                        help="skip each mutant's verdict (killed / not killed / not settled: "
                             "probmut recommend's, the longest part of the report); the counts "
                             "then use the bagged posterior's decisions")
    add_cache_arguments(parser, "verdicts' simulated blocks", default=f"{CACHE} beside the page")
    add_criterion_arguments(parser, PAPER_HELP_POSTERIOR)
    add_posterior_arguments(parser)
    add_run_arguments(parser, "print the summary as one JSON document")
    parser.set_defaults(resumes=True, func=lambda args: _run_report(args, parser))
