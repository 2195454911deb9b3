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
    integer,
    posterior_settings_from,
    refuse_given,
    writable_file,
)
from probmut.errors import ProbmutError
from probmut.results import dumps
from probmut.seeds import DEFAULT_SEED

EXAMPLE = """examples:
  probmut report runs/digits                    # a run of probmut train -> runs/digits/report.html
  probmut report --model mnist --out mnist.html # the bundled data (the paper's populations)
  probmut report --model mnist --json           # the summary as one JSON document too
  probmut report runs/digits --compare runs/digits/report.html  # what changed since
"""

#: Options that change where or how the report is written, not its numbers: left out of
#: the command shown in its header.
_OUTPUT_ONLY = {"out", "json", "quiet", "jobs", "threads", "cache", "no_cache"}
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


#: The options (dests) that set the analysis (the bagged posteriors and their kill test).
ANALYSIS_OPTIONS = frozenset({"paper", "bootstraps", "trials", "sample", "threshold", "fit",
                              "interval", "criterion", "alpha", "effect", "direction",
                              "round_p"})


def command_line(args, parser) -> str:
    """The command that gives the report's numbers: ``probmut report`` with the options
    given on its command line (``args.given``), as given, but ``--out``, ``--json``,
    ``--quiet``, ``--jobs``, ``--threads``, ``--cache``, ``--no-cache``: they change where
    and how it is written, not what it says."""
    words = ["probmut", "report"] + ([args.run] if args.run else [])
    for action in parser._actions:
        if action.dest not in args.given or action.dest in _OUTPUT_ONLY:
            continue
        value = getattr(args, action.dest)
        words += [action.option_strings[-1]] + ([] if action.nargs == 0 else [str(value)])
    return shlex.join(words)


def _out(args, manifest: Path | None, model: str | None) -> tuple[Path, bool, int, str]:
    """Where the page goes (``--out``; by default ``report.html`` in the run's folder, or in
    the current one for ``--model``), whether it replaces an earlier page of the same
    campaign (refused when the file holds anything else), how many figures matplotlib
    draws for it (per operator, its kill curve and its part of the overview) and the
    model."""
    from probmut.io.manifest import Manifest
    from probmut.report import campaign_id, check_replaceable
    from probmut.report.figures import OVERVIEW_ROWS

    out = Path(args.out) if args.out else (Path(args.run) if args.run else Path()) / "report.html"
    out = writable_file(out, "report", "out")
    loaded = Manifest.load(manifest)
    model = model or loaded.model_names()[0]
    loaded.healthy(model)  # an unknown model is said before anything else
    magnitudes = [len(entry.magnitudes) for entry in loaded.mutations(model)]
    figures = sum(1 + -(-n // OVERVIEW_ROWS) for n in magnitudes)
    return (out, check_replaceable(out, campaign_id(loaded.path, model, out.parent)), figures,
            model)


def _run_report(args, parser) -> int:
    from probmut.campaign import shown_path, summarize_campaign, with_verdicts
    from probmut.campaign.compare import check_comparable, read_report
    from probmut.report import Drawing, write_report

    manifest, model = _source(args)
    out, again, most, model = _out(args, manifest, model)
    # none of them given: the analysis of the run's rounds, if it was trained in rounds
    settings = posterior_settings_from(args) if args.given & ANALYSIS_OPTIONS else None
    if args.no_verdicts:
        refuse_given(args, ("cache",), "with --no-verdicts: only the verdicts are cached")
    if args.compare:  # its kind of outcomes now (the rest: summarize_campaign, as early)
        check_comparable({"model": model, "verdicts": not args.no_verdicts},
                         read_report(args.compare), args.compare)
    args.resumes = not args.no_verdicts  # the verdicts' blocks are the work a rerun reads
    cache = None if args.no_verdicts else cache_from(args, out.parent / CACHE)
    # The workers start now, importing matplotlib while the campaign is computed; they draw
    # the mutants' and operators' figures, which do not depend on the verdicts, meanwhile
    # (one worker fewer beside the verdicts' threads: on 2 cores one worker draws them
    # all before the verdicts end, and a second's import of matplotlib is CPU spent).
    with Drawing(args.jobs, most, alongside=not args.no_verdicts) as drawing:
        # no --seed (None): the run's own (train --seed), the numbers its rounds computed
        result = summarize_campaign(manifest, model, settings, seed=args.seed,
                                    threads=args.threads,
                                    verdicts=False, coverage=args.coverage,
                                    compare=args.compare, progress=not args.quiet)
        drawing.draw(result, ("operator",))
        if not args.no_verdicts:
            result = with_verdicts(result, threads=args.threads, progress=not args.quiet,
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
    parser.add_argument("--model", help="the model of the manifest (default: a run's first)")
    parser.add_argument("--manifest", help="manifest TOML (default: bundled "
                                           "raw_data/manifest.toml or $PROBMUT_MANIFEST)")
    parser.add_argument("--out", metavar="OUT",
                        help="the HTML file to write (default: report.html in RUN_DIR, or in "
                             "the current folder with --model); it replaces only an earlier "
                             "page of the same campaign")
    parser.add_argument("--compare", metavar="OLD",
                        help="an earlier report of the same campaign and settings: its page "
                             "(which holds its data: RUN_DIR/report.html before it is "
                             "replaced) or its JSON document (probmut report --json): which "
                             "outcomes changed since")
    parser.add_argument("--coverage", metavar="FILE.json",
                        help="a coverage result to include (probmut coverage --json) "
                             "(default: RUN_DIR/coverage.json if there is one)")
    parser.add_argument("--no-verdicts", action="store_true",
                        help="skip each mutant's verdict (killed / not killed / not settled: "
                             "probmut recommend's, the longest part of the report); the counts "
                             "then use the bagged posterior's decisions")
    add_cache_arguments(parser, "verdicts' simulated blocks", default=f"{CACHE} beside the page")
    add_criterion_arguments(parser, PAPER_HELP_POSTERIOR)
    add_posterior_arguments(parser)
    add_run_arguments(parser, "print the summary as one JSON document",
                      seed_default=f"the seed the run recorded, train --seed; {DEFAULT_SEED} "
                                   "for populations of no run", jobs_alias=False)
    parser.add_argument("--jobs", type=integer(1, 4096), default=None,
                        help="worker processes that draw the page's figures, one of them fewer "
                             "while the verdicts run (default: one per core)")
    parser.set_defaults(resumes=True, func=lambda args: _run_report(args, parser))
