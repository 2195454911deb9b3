"""A campaign as one self-contained HTML page (``probmut report``).

:func:`render_html` turns a :class:`probmut.campaign.Campaign` into one HTML document
that opens from disk with no network: its styles and its script are inline, its
figures SVG data URIs (sharp at any zoom), and it links only to its own sections. It
holds

1. a header line saying what produced it (probmut version, command, date, seed);
2. the summary: the campaign's status (complete, or unfinished with every short
   population, "0 of N" for one not started), the mutation score with its interval and
   the share decided killed, the counts of killed / not killed / not settled / flagged /
   not analysed mutants, the model, the data's provenance, the populations and their
   failed instances, the settings and the baselines;
3. the next steps: every unsettled or unanalysed mutant with the instances per side
   that would settle it, and the ``probmut train ... --until-settled`` command;
4. what changed since an earlier report (``--compare``);
5. per operator, its counts and score, the kill probability against the magnitude
   (:func:`probmut.plots.plot_kill_curve`) and the smallest killed magnitude;
6. every mutant at a glance (:func:`probmut.plots.plot_campaign`);
7. a table of the mutants, sortable (click a column's header) and filterable (words,
   several outcomes, kept in the URL's hash) by a short inline script, each row linked
   to
8. the mutant's section: its Figure 3 posterior (:func:`probmut.plots.plot_posterior`),
   the decision, the verdict and beside it what to know about it (a short population,
   a disagreement between test, decision and verdict, its warnings), the kill test on
   the whole populations, and where the run has them, its symptoms, the rounds of a
   run trained until settled and its per-input killing;
9. the coverage result, when there is one, and the definitions of the numbers.

Without JavaScript the page reads the same; the controls that need it are hidden and a
note says so. Every text that comes from files (names, descriptions, messages) is
escaped. The page records which campaign it belongs to (:func:`campaign_id`), so that
:func:`write_report` never replaces the page of another campaign.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import math
import os
import re
import signal
import sys
from pathlib import Path
from typing import NamedTuple

from probmut import __version__
from probmut.campaign import OUTCOMES, Campaign, MutantSummary, shown_path
from probmut.errors import ProbmutError
from probmut.recommend import CERTAINTY, REFERENCE_SIZE

# --- figures ----------------------------------------------------------------------------------


class Image(NamedTuple):
    """A figure for the page: its data URI and its size in CSS pixels."""

    uri: str
    width: int
    height: int


def image_of(fig) -> Image:
    """The figure as an SVG data URI (text drawn as paths: what the browser shows is
    what matplotlib measured), at its own size (1 inch = 96 CSS px); the figure is closed.
    The same figure gives the same bytes.

    >>> import matplotlib.pyplot as plt
    >>> image = image_of(plt.figure(figsize=(1, 0.5)))
    >>> image.uri.startswith("data:image/svg+xml;base64,"), image.width, image.height
    (True, 96, 48)
    """
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    width, height = fig.get_size_inches()
    with plt.rc_context({"svg.hashsalt": "probmut", "svg.fonttype": "path"}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    data = base64.b64encode(buffer.getvalue().encode()).decode("ascii")
    return Image(f"data:image/svg+xml;base64,{data}", round(width * 96), round(height * 96))


def _figure(campaign: Campaign, key: tuple[str, int]) -> Image:
    from probmut.plots import plot_campaign, plot_kill_curve, plot_posterior

    kind, index = key
    if kind == "overview":
        return image_of(plot_campaign(campaign))
    if kind == "operator":
        return image_of(plot_kill_curve(campaign.curves[index], legend=False))
    mutant = campaign.mutants[index]
    return image_of(plot_posterior(mutant.study, mutant.posterior.name, title="",
                                   legend=False))


_ADOPTED: Campaign | None = None  # the campaign a worker process draws


def _adopt(campaign: Campaign) -> None:
    global _ADOPTED
    _ADOPTED = campaign
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the drawing process's to handle


def _draw_share(keys) -> list[Image]:
    return [_figure(_ADOPTED, key) for key in keys]


#: Fewer figures than this are drawn in this process (starting workers would cost
#: more), and each worker draws at least half as many.
PARALLEL_FIGURES = 8
#: The kinds of figures of the page; of them only the overview, coloured by outcome,
#: depends on the verdicts.
KINDS = ("overview", "operator", "mutant")


def figure_keys(campaign: Campaign, kinds=KINDS) -> list[tuple[str, int]]:
    """The keys of the page's figures of these ``kinds``: ``("overview", 0)``,
    ``("operator", i)`` per operator with an analysed magnitude, ``("mutant", i)`` per
    analysed mutant."""
    keys = [("overview", 0)] if "overview" in kinds else []
    if "operator" in kinds:
        keys += [("operator", i) for i, c in enumerate(campaign.curves) if c.magnitudes]
    if "mutant" in kinds:
        keys += [("mutant", i) for i, m in enumerate(campaign.mutants)
                 if m.posterior is not None]
    return keys


def _workers_context():
    """Where drawing workers start from: forks of this process, when it runs no other
    Python thread (a test runner's, a notebook's kernel: one of them may hold a lock that
    a forked child would then wait on forever; a worker of a test run did) and the system
    forks (Linux); else None, and the figures are drawn here. The engine's native threads
    are idle then and the workers never call it."""
    import multiprocessing
    import threading

    if threading.active_count() > 1 or not sys.platform.startswith("linux"):
        return None
    return multiprocessing.get_context("fork")


class Drawing:
    """Figures of a campaign being drawn: by ``jobs`` worker processes (None: one per
    core), which draw while this process goes on (computing the verdicts, say); here, on
    :meth:`wait`, for a few figures or where workers cannot be forked safely
    (:func:`_workers_context`). The same images either way. A context manager: leaving
    it early stops the workers.

    >>> from probmut.campaign import summarize_campaign
    >>> campaign = summarize_campaign(model="mnist_dc", verdicts=False)
    >>> with Drawing(campaign, ("operator",)) as drawing:
    ...     figures = drawing.wait()
    >>> sorted(figures), figures["operator", 0].width
    ([('operator', 0), ('operator', 1), ('operator', 2), ('operator', 3)], 346)
    """

    def __init__(self, campaign: Campaign, kinds=KINDS, jobs: int | None = None):
        self.campaign, self.keys = campaign, figure_keys(campaign, kinds)
        workers = min(jobs or os.cpu_count() or 1, 2 * len(self.keys) // PARALLEL_FIGURES)
        context = _workers_context() if workers >= 2 else None
        self.pool = None
        if context is not None:
            import warnings

            import probmut.plots  # noqa: F401  here, once: the workers inherit it

            self.shares = [self.keys[i::workers] for i in range(workers)]
            with warnings.catch_warnings():
                # Python 3.12 warns on forking a process with threads: the engine's
                # native ones, idle (see _workers_context).
                warnings.simplefilter("ignore", DeprecationWarning)
                self.pool = context.Pool(workers, initializer=_adopt, initargs=(campaign,))
            self.pending = self.pool.map_async(_draw_share, self.shares)

    def wait(self) -> dict:
        """Every figure, by key."""
        if self.pool is None:
            return {key: _figure(self.campaign, key) for key in self.keys}
        drawn = self.pending.get()
        self.pool.close()
        self.pool.join()
        self.pool = None
        return {key: image for share, images in zip(self.shares, drawn, strict=True)
                for key, image in zip(share, images, strict=True)}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.pool is not None:
            self.pool.terminate()
            self.pool.join()
        return False


def draw_figures(campaign: Campaign, jobs: int | None = None, kinds=KINDS) -> dict:
    """Every figure of the page (of these ``kinds``), by key (:func:`figure_keys`), drawn
    by ``jobs`` processes where the system forks them (:class:`Drawing`)."""
    with Drawing(campaign, kinds, jobs) as drawing:
        return drawing.wait()


def _img(image: Image, alt: str, css: str = "") -> str:
    return (f'<img src="{image.uri}" width="{image.width}" height="{image.height}" '
            f'alt="{_e(alt)}"' + (f' class="{css}"' if css else "") + ">")


# --- text -------------------------------------------------------------------------------------

def _e(value) -> str:
    return html.escape(str(value), quote=True)


def _f(value, spec: str = ".4f") -> str:
    """A number for the page: formatted, blank when unknown, words for infinity."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float) and math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return format(value, spec)


#: The smallest p-value the page writes as a number; a smaller one (0: it underflowed)
#: is written as below it.
SMALLEST_P = 1e-300


def _p(value, spec: str = ".4g") -> str:
    """A p-value for the page (HTML): "< 1e-300" where it underflows.

    >>> _p(0.0), _p(0.0123)
    ('&lt; 1e-300', '0.0123')
    """
    if value is not None and not math.isnan(value) and value < SMALLEST_P:
        return f"&lt; {SMALLEST_P:g}"
    return _f(value, spec)


def _sort_value(value) -> str:
    """A cell's ``data-value`` for sorting numbers: JavaScript's ``Number`` reads it
    (``Infinity`` for an infinite ratio, which sorts as the largest); blank sorts last."""
    if value is None or isinstance(value, bool) or (isinstance(value, float)
                                                    and math.isnan(value)):
        return ""
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return repr(float(value))


def anchor(index: int, name: str) -> str:
    """The id of a mutant's section: unique, and safe in a URL fragment.

    >>> anchor(3, "weights_fuzzing_0.05_1@3")
    'm3-weights_fuzzing_0.05_1-3'
    """
    return f"m{index}-" + re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def _slug(outcome: str) -> str:
    return outcome.replace(" ", "-")


def _breakable(name: str) -> str:
    """A mutant's name that may wrap after its underscores (a narrow column)."""
    return "_<wbr>".join(_e(part) for part in name.split("_"))


def _value_html(value) -> str:
    """Any JSON-like value (the data's provenance) as nested lists."""
    if isinstance(value, dict):
        return "<ul>" + "".join(f"<li><b>{_e(k)}</b>: {_value_html(v)}</li>"
                                for k, v in value.items()) + "</ul>"
    if isinstance(value, list | tuple):
        return ", ".join(_value_html(v) for v in value)
    return _e(value)


def _facts(rows) -> str:
    """A two-column table of (label, HTML) rows."""
    return ('<table class="facts">' + "".join(f"<tr><th>{_e(k)}</th><td>{v}</td></tr>"
                                              for k, v in rows) + "</table>")


def _tag(outcome: str) -> str:
    return f'<span class="tag {_slug(outcome)}">{_e(outcome)}</span>'


def _score_text(score) -> str:
    return (f"{score.mean:.3f} [{score.ci_low:.3f}, {score.ci_high:.3f}]" if score
            else "none analysed")


# --- sections -------------------------------------------------------------------------------

def _header(campaign: Campaign, command: str | None, created: datetime.datetime) -> str:
    produced = " · ".join([f"probmut {_e(__version__)}",
                           f"<code>{_e(command)}</code>" if command else "Python API",
                           _e(created.strftime("%Y-%m-%d %H:%M %Z").strip()),
                           f"seed {_e(campaign.seed)}"])
    links = [("summary", "Summary")]
    if campaign.next_steps().steps:
        links.append(("next-steps", "Next steps"))
    if campaign.comparison is not None:
        links.append(("compare", "Changes"))
    links += [("operators", "Operators"), ("overview", "At a glance"), ("mutants", "Mutants")]
    if campaign.coverage:
        links.append(("coverage", "Coverage"))
    links.append(("definitions", "Definitions"))
    return (f'<header><h1>Mutation testing report: <code>{_e(campaign.model)}</code></h1>'
            f'<p class="produced" id="produced">{produced}</p><nav>'
            + " ".join(f'<a href="#{target}">{text}</a>' for target, text in links)
            + "</nav></header>")


def _status(campaign: Campaign) -> str:
    lines = campaign.status_lines()
    kind = {True: "complete", False: "unfinished", None: "unknown"}[campaign.complete]
    items = "".join(f"<li>{_e(line.strip())}</li>" for line in lines[1:])
    return (f'<div class="status {kind}" id="status"><b>{_e(lines[0])}</b>'
            + (f"<ul>{items}</ul>" if items else "") + "</div>")


def _score(campaign: Campaign) -> str:
    score = campaign.score
    if score is None:
        return ('<div class="score" id="score"><div class="big" id="mutation-score">no '
                'mutation score</div><p>no mutant could be analysed (see the status and '
                'the table)</p></div>')
    k = campaign.settings.sample
    return (f'<div class="score" id="score"><div class="label">mutation score</div>'
            f'<div class="big" id="mutation-score">{score.mean:.3f}</div>'
            f'<div>{score.mass:.0%} interval <b>[{score.ci_low:.3f}, {score.ci_high:.3f}]'
            f'</b></div><div>decided killed: <b id="decided">{score.decided:.3f}</b> '
            f'({score.killed} of {score.mutants})</div>'
            f'<p>The expected share of the {score.mutants} analysed, unflagged mutants that '
            f'one kill test of {k} vs {k} instances kills, with its interval from the '
            'mutants\' bagged posteriors; beside it the share the bagged posterior decides '
            'killed. <a href="#definitions">Definitions</a>.</p></div>')


def _counts(campaign: Campaign) -> str:
    counts = campaign.counts
    items = "".join(f'<li class="{_slug(o)}"><b>{counts[o]}</b> {_e(o)}</li>'
                    for o in OUTCOMES)
    note = ("killed, not killed and not settled are the mutants' verdicts (the decision of a "
            f"population of {REFERENCE_SIZE} fresh instances per side, predicted with "
            f"probability at least {CERTAINTY:g})" if campaign.verdicts else
            "killed and not killed are the bagged posterior's decisions (verdicts not "
            "computed)")
    flagged = ""
    if campaign.flagged:
        flagged = ("<p>Flagged, left out of the score: " + "; ".join(
            f'<a href="#{anchor(i, m.name)}">{_e(m.name)}</a> ({_e(", ".join(m.flags))})'
            for i, m in enumerate(campaign.mutants) if m.flags) + "</p>")
    return (f'<ul class="counts" id="counts">{items}</ul><p class="note">{_e(note)}</p>'
            + flagged)


def _summary(campaign: Campaign) -> str:
    sizes = sorted({m.count.instances for m in campaign.mutants})
    mutants = (f"{len(campaign.mutants)} mutant populations of "
               + (f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}")
               + " instances") if sizes else "no mutant populations"
    rows = [("model", f"<code>{_e(campaign.model)}</code>"
             + (f" — {_e(campaign.description)}" if campaign.description else "")),
            ("manifest", f"<code>{_e(shown_path(campaign.manifest))}</code>"),
            ("data", _value_html(campaign.data) if campaign.data else
             "no provenance recorded in the manifest"),
            ("populations", f"healthy: {campaign.healthy.instances} instances"
                            + (f" (target {campaign.healthy.target})"
                               if campaign.healthy.target is not None else "")
                            + f"; {_e(mutants)}"),
            ("instance failures", _e(campaign.failures_line().partition(": ")[2])),
            ("analysis", _e(campaign.settings.describe())),
            ("seed", _e(campaign.seed))]
    rows += [(label, _e(numbers) + "; how often the test kills the healthy population "
              "itself, the baseline of P(above the baseline)")
             for label, numbers in campaign.baselines()]
    if campaign.inputs is not None:
        rows.append(("per-input killing", _e(
            f"DeepMutation mutation score {campaign.inputs.deepmutation_score:.4f}, statistical "
            f"(Fisher, Bonferroni over {campaign.inputs.pool} inputs) "
            f"{campaign.inputs.statistical_score:.4f}")))
    if campaign.rounds_file:
        rows.append(("trained until settled",
                     f"rounds in <code>{_e(shown_path(campaign.rounds_file))}</code>"))
    notes = ("<details><summary>" + f"{len(campaign.notes)} note(s) while reading</summary><ul>"
             + "".join(f"<li>{_e(n)}</li>" for n in campaign.notes) + "</ul></details>"
             if campaign.notes else "")
    return (f'<section id="summary"><h2>Summary</h2>{_status(campaign)}'
            f'<div class="top">{_score(campaign)}<div>{_counts(campaign)}</div></div>'
            f"{_facts(rows)}{_score_rounds(campaign)}{notes}</section>")


def _score_rounds(campaign: Campaign) -> str:
    """The rounds of a run trained until the score was settled (``train --until-score``):
    per round the instances, the score with its interval, and what the next one trained."""
    if not campaign.score_rounds:
        return ""
    rows = "".join(
        f"<tr><td>{r['round']}</td><td>{r['instances'].get('healthy')}</td><td>{r['spent']}"
        f"</td><td>{_f(r['score']['mean'], '.3f')}</td><td>[{_f(r['score']['ci_low'], '.3f')}, "
        f"{_f(r['score']['ci_high'], '.3f')}]</td><td>{_f(r['score']['width'], '.3f')}</td>"
        f"<td class=\"wrap\">{_e(', '.join(f'{p} {n}' for p, n in r['next'].items()) or '-')}"
        "</td></tr>" for r in campaign.score_rounds)
    return ('<details open id="score-rounds"><summary>trained until the score was settled: '
            f"{len(campaign.score_rounds)} rounds</summary><table class=\"data\"><thead><tr>"
            "<th>round</th><th>healthy</th><th>instances</th><th>score</th><th>95% interval</th>"
            "<th>width</th><th>the next round trains, up to</th></tr></thead>"
            f"<tbody>{rows}</tbody></table></details>")


def _next_steps(campaign: Campaign) -> str:
    steps = campaign.next_steps()
    if not steps.steps:
        return ""
    index = {m.name: i for i, m in enumerate(campaign.mutants)}
    rows = "".join(
        f'<tr><td><a href="#{anchor(index[s.name], s.name)}">{_breakable(s.name)}</a></td>'
        f"<td>{_tag(s.outcome)}</td><td>{s.instances}</td>"
        f"<td>{'' if s.needed is None else s.needed}</td><td class=\"wrap\">{_e(s.why)}</td>"
        "</tr>" for s in steps.steps)
    command = (f'<p>To train them on in the run\'s folder, in rounds until each verdict is '
               f'settled:</p><pre id="settle-command"><code>{_e(steps.command)}</code></pre>'
               if steps.command else f'<p id="settle-command">{_e(steps.no_command)}</p>')
    return ('<section id="next-steps"><h2>Next steps</h2><p>The mutants whose verdict is not '
            "settled, or that could not be analysed, and the instances per side that would "
            "settle each (probmut recommend's estimate: with probability about 0.8 if the "
            'mutant is as its instances show).</p><div class="scroll-x"><table class="data">'
            "<thead><tr><th>mutant</th><th>outcome</th><th>instances per side</th>"
            f"<th>needed per side</th><th>why</th></tr></thead><tbody>{rows}</tbody></table>"
            f"</div>{command}</section>")


def _compare(campaign: Campaign) -> str:
    c = campaign.comparison
    if c is None:
        return ""
    index = {m.name: i for i, m in enumerate(campaign.mutants)}

    def name(n):
        return f'<a href="#{anchor(index[n], n)}">{_e(n)}</a>' if n in index else _e(n)

    items = [f"<li>{name(n)}: {_tag(before)} → {_tag(now)}</li>" for n, before, now in c.changed]
    items += [f"<li>{name(n)}: new</li>" for n in c.added]
    items += [f"<li>{name(n)}: gone</li>" for n in c.removed]
    head = _e(str(c).splitlines()[0])
    return (f'<section id="compare"><h2>Changes since the earlier report</h2><p>{head}</p>'
            + (f'<ul class="changes">{"".join(items)}</ul>' if items else "")
            + "</section>")


def _operators(campaign: Campaign, figures: dict) -> str:
    mass = f"{campaign.settings.mass:.0%}"
    rows = "".join(
        f"<tr><td>{_e(o['mutation'])}</td><td>{o['mutants']}</td>"
        + "".join(f"<td>{o['counts'][outcome]}</td>" for outcome in OUTCOMES)
        + f"<td>{_score_text(o['score'])}</td><td class=\"wrap\">"
          f"{_e(curve.describe_threshold())}</td></tr>"
        for o, curve in zip(campaign.operators(), campaign.curves, strict=True))
    table = ('<div class="scroll-x"><table class="data" id="operator-table"><thead><tr>'
             "<th>operator</th><th>mutants</th>"
             + "".join(f"<th>{_e(o)}</th>" for o in OUTCOMES)
             + f"<th>score [{mass} interval]</th><th>smallest killed magnitude</th></tr>"
             f"</thead><tbody>{rows}</tbody></table></div>")
    cards = []
    for i, curve in enumerate(campaign.curves):
        if not curve.magnitudes:
            cards.append(f'<figure class="card"><figcaption><b>{_e(curve.mutation)}</b>: no '
                         "analysed magnitude</figcaption></figure>")
            continue
        excluded = (f"; not fitted: {_e(', '.join(curve.excluded))} (flagged or not analysed)"
                    if curve.excluded else "")
        alt = f"kill probability against the magnitude of {curve.mutation}"
        cards.append(f'<figure class="card">{_img(figures[("operator", i)], alt)}'
                     f"<figcaption><b>{_e(curve.mutation)}</b>: {_e(curve.describe_threshold())}"
                     f"{excluded}</figcaption></figure>")
    key = ("In each figure: dots, each magnitude's posterior mean with its "
           f"{mass} interval; solid line, their isotonic fit; dashed, the kill probability "
           "1/2; dotted, the healthy population against itself; orange, the smallest killed "
           f"magnitude and its {mass} interval (categories have no order and no fit).")
    return ('<section id="operators"><h2>Per operator</h2><p>Each operator\'s mutants by '
            f"outcome and its mutation score (the score of its own mutants, with its {mass} "
            f"interval).</p>{table}<p>{_e(key)}</p>"
            f'<div class="cards">{"".join(cards)}</div></section>')


def _overview(campaign: Campaign, figures: dict) -> str:
    colours = "".join(f'<li>{_tag(o)}</li>' for o in OUTCOMES)
    return ('<section id="overview"><h2>Every mutant at a glance</h2><p>Each mutant\'s '
            f"posterior mean and {campaign.settings.mass:.0%} interval of its kill "
            "probability, in the table's order, coloured by its outcome: "
            f'</p><ul class="key">{colours}</ul><figure class="wide">'
            + _img(figures[("overview", 0)], "every mutant's posterior mean and interval, "
                   "coloured by outcome") + "</figure></section>")


#: The mutant table's columns: header and sort type ("number" sorts by ``data-value``).
COLUMNS = (
    ("mutant", "number"), ("n", "number"), ("mean", "number"), ("interval", "number"),
    ("ratio", "number"), ("decision", "text"), ("test p", "number"), ("effect", "number"),
    ("verdict", "text"), ("P(killed)", "number"), ("outcome", "text"), ("remarks", "text"),
    ("symptom", "text"))


def _natural_order(campaign: Campaign) -> dict[str, int]:
    """Each mutant's rank when sorted by operator, then by magnitude as a number (the
    part that varies of ``0.05_1``), categories by name: the mutant column's sort."""
    from probmut.campaign import magnitude_values

    keys = {}
    for mutation in dict.fromkeys(m.mutation for m in campaign.mutants):
        group = [m for m in campaign.mutants if m.mutation == mutation]
        values, _ = magnitude_values([m.magnitude for m in group])
        for j, m in enumerate(group):
            keys[m.name] = (mutation.lower(), 0.0 if values is None else float(values[j]),
                            m.magnitude.lower())
    return {name: rank for rank, name in enumerate(sorted(keys, key=keys.get))}


def brief(note: str) -> str:
    """A warning as the table shows it: without the file it names (the row names the
    mutant), up to its first colon; the mutant's section has it whole.

    >>> brief("/runs/a/m.csv: failed instance(s) 0 (crashed) dropped: crashed, ... not counted")
    'failed instance(s) 0 (crashed) dropped'
    """
    first, colon, rest = note.partition(": ")
    if colon and ("/" in first or "\\" in first or first.endswith((".csv", ".npz"))):
        note = rest
    return note.partition(": ")[0]


def _cells(index: int, m: MutantSummary, rank: int) -> list[tuple[str, str]]:
    p, t, v = m.posterior, m.test, m.verdict
    n = f"{m.count.instances}" + (f" / {m.count.target}" if m.count.complete is False else "")
    remarks = "; ".join(dict.fromkeys([*m.remarks, *(brief(n) for n in m.notes)]))
    return [
        (f'<a href="#{anchor(index, m.name)}">{_breakable(m.name)}</a>', str(rank)),
        (_e(n), _sort_value(m.count.instances)),
        (_f(p and p.mean), _sort_value(p and p.mean)),
        (f"[{p.ci_low:.3f}, {p.ci_high:.3f}]" if p else "", _sort_value(p and p.ci_low)),
        (_f(p and p.ratio, ".4g"), _sort_value(p and p.ratio)),
        (_e(m.decision), m.decision),
        (_p(t and t.p_value), _sort_value(t and t.p_value)),
        (_f(t and t.effect_size, ".3f"), _sort_value(t and t.effect_size)),
        (_e(v["verdict"]) if v else "", v["verdict"] if v else ""),
        (_f(v and v["p_killed"], ".2f"), _sort_value(v and v["p_killed"])),
        (_tag(m.outcome), m.outcome),
        (_e(remarks), remarks),
        (_e(m.symptoms.symptom) if m.symptoms else "", m.symptoms.symptom if m.symptoms else "")]


def _table(campaign: Campaign) -> str:
    labels = {"interval": f"{campaign.settings.mass:.0%} interval"}
    head = "".join(f'<th data-type="{kind}" data-label="{_e(labels.get(name, name))}">'
                   f"{_e(labels.get(name, name))}</th>" for name, kind in COLUMNS)
    ranks = _natural_order(campaign)
    rows = []
    for index, m in enumerate(campaign.mutants):
        cells = _cells(index, m, ranks[m.name])
        search = " ".join([m.name, m.mutation, m.magnitude, m.decision, m.outcome, *m.flags,
                           m.symptoms.symptom if m.symptoms else ""]).lower()
        rows.append(f'<tr data-outcome="{_slug(m.outcome)}" data-search="{_e(search)}">'
                    + "".join(f'<td data-value="{_e(value)}">{shown}</td>'
                              for shown, value in cells) + "</tr>")
    counts = campaign.counts
    boxes = "".join(f'<label><input type="checkbox" value="{_slug(o)}"> {_tag(o)} '
                    f"({counts[o]})</label>" for o in OUTCOMES)
    return ('<section id="mutants"><h2>Mutants</h2><div class="controls needs-js">'
            '<input id="filter" type="search" placeholder="filter: words of the name, '
            'operator, decision, flags, symptom" aria-label="filter the mutants">'
            f'<fieldset id="outcomes"><legend>show only</legend>{boxes}</fieldset>'
            '<span id="shown" aria-live="polite"></span></div>'
            '<noscript><p class="note">JavaScript is off: the table cannot be sorted or '
            "filtered here; it lists the mutants in the campaign's order.</p></noscript>"
            '<div class="scroll"><table id="mutant-table" class="data"><thead><tr>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
            '<p class="note"><span class="needs-js">Click a column\'s header to sort by it '
            "(again: the other way); a filtered view is kept in the page's address, to "
            "share. </span>n shows instances / target where a population is short; remarks "
            "are what to know beside the verdict (each mutant's section has them too).</p>"
            "</section>")


def _mutant(index: int, m: MutantSummary, campaign: Campaign, figures: dict) -> str:
    rows = [("operator", f"{_e(m.mutation)} at magnitude {_e(m.magnitude)}"
                         + (" (model-level: paired with the healthy instances)" if m.paired
                            else "")),
            ("instances", f"{m.count.instances} in <code>{_e(m.count.file)}</code>"
                          + ("" if m.count.target is None else f" (target {m.count.target}"
                             + (", SHORT" if m.count.complete is False else "") + ")")
                          + f"; {m.usable} usable"),
            ("flags", _e(", ".join(m.flags)) if m.flags else "none")]
    figure = ""
    p = m.posterior
    remarks = ("remarks", "<ul class=\"remarks\">" + "".join(
        f"<li>{_e(r)}</li>" for r in (*m.remarks, *m.notes)) + "</ul>") if (
            m.remarks or m.notes) else None
    if p is None:
        why = {"missing": "no population file yet (the run has not written it)",
               "empty": "no instance yet (the file holds only its header: the run stopped "
                        "before one finished)",
               "failed": "every instance failed (see the symptoms)",
               "too few": f"fewer usable instances than the sample size k = "
                          f"{campaign.settings.sample} (lower it, or train more)"}.get(
                              m.status, m.status)
        rows.append(("analysis", f"<b>not analysed</b>: {_e(why)}"))
        if remarks:
            rows.append(remarks)
    else:
        figure = _img(figures[("mutant", index)],
                      f"bagged posterior of the kill probability of {m.name}", "posterior")
        base = m.baseline
        paired = " paired by instance id," if m.paired else ""
        rows += [("bagged posterior", f"mean <b>{p.mean:.4f}</b>, {campaign.settings.mass:.0%} "
                                      f"interval [{p.ci_low:.3f}, {p.ci_high:.3f}], "
                                      f"Beta({p.alpha:.4g}, {p.beta:.4g})"),
                 ("decision", f"ratio {_f(p.ratio, '.6g')} (H_sound {p.h_sound:.5f}, H_mutant "
                              f"{p.h_mutant:.5f}) → <b>{_e(m.decision)}</b>; P(above the "
                              f"baseline) {_f(p.p_above_baseline, '.3f')} (the baseline: "
                              f"healthy vs healthy,{paired} mean {base.mean:.4f})")]
        if m.verdict:
            rows.append(("verdict", f"<b>{_e(m.verdict['verdict'])}</b>: "
                                    f"{_e(m.verdict['message'])}"))
        if remarks:
            rows.append(remarks)
        t = m.test
        rows.append(("kill test, whole populations",
                     f"{t.n_healthy} healthy vs {t.n_mutant} mutant instances: p "
                     f"{_p(t.p_value)}, effect {_f(t.effect_size, '.4f')} → <b>"
                     f"{'killed' if t.killed else 'not killed'}</b> (killed iff "
                     f"{_e(t.criterion)})"))
    if m.symptoms is not None:
        s, a = m.symptoms, m.symptoms.accuracy_change
        text = (f"<b>{_e(s.symptom)}</b>: {s.instances} instances, {s.crashed} crashed, "
                f"{s.timed_out} timed out, {s.diverged} diverged, {s.constant} constant")
        if a is not None:
            text += (f"; accuracy {a.mean_healthy:.4f} → {a.mean_mutant:.4f} (p "
                     f"{_p(a.p_value)})")
        if s.time_change is not None:
            text += (f"; training time ×{_f(s.time_change.ratio, '.2f')} (p "
                     f"{_p(s.time_change.p_value, '.3g')})")
        text += "".join(f"<br><code>{_e(error)}</code>" for error in s.errors[:3])
        rows.append(("symptoms", text))
    extra = _rounds(m) + _inputs(m)
    return (f'<section class="mutant" id="{anchor(index, m.name)}"><h3>{_e(m.name)} '
            f"{_tag(m.outcome)}</h3>"
            f'<div class="pair">{figure}{_facts(rows)}</div>{extra}'
            '<p class="back"><a href="#mutants">back to the table</a></p></section>')


def _rounds(m: MutantSummary) -> str:
    if not m.rounds:
        return ""
    rows = "".join(
        f"<tr><td>{_e(r.get('round'))}</td><td>{_e(r.get('instances'))}</td>"
        f"<td>{_e(r.get('verdict'))}</td><td>{_f(r.get('p_killed'), '.2f')}</td>"
        f"<td class=\"wrap\">{_e(r.get('message', ''))}</td></tr>" for r in m.rounds)
    return ('<details open><summary>trained until settled: rounds</summary><div class="scroll-x">'
            '<table class="data"><thead><tr><th>round</th><th>instances</th><th>verdict</th>'
            f"<th>P(killed)</th><th>why</th></tr></thead><tbody>{rows}</tbody></table></div>"
            "</details>")


def _inputs(m: MutantSummary, show: int = 5) -> str:
    i = m.inputs
    if i is None:
        return ""
    killers = sorted(set(i.majority_killers.tolist()) | set(i.statistical_killers.tolist()),
                     key=lambda j: i.p_values[j])
    rows = "".join(
        f"<tr><td>{j}</td><td>{i.labels[j]}</td><td>{i.healthy_correct[j]:.3f}</td>"
        f"<td>{i.mutant_correct[j]:.3f}</td><td>{_p(i.p_values[j], '.3g')}</td></tr>"
        for j in killers[:show])
    table = ('<div class="scroll-x"><table class="data"><thead><tr><th>input</th><th>label'
             '</th><th>healthy correct</th><th>mutant correct</th><th>Fisher p</th></tr>'
             f"</thead><tbody>{rows}</tbody></table></div>") if killers else (
                 "<p>no input kills it</p>")
    return (f"<details open><summary>per-input killing</summary><p>killed classes "
            f"(DeepMutation, majority): {_e(list(i.killed_classes) or 'none')}; "
            f"{i.majority_killers.size} inputs kill by majority, {i.statistical_killers.size} "
            f"by Fisher's test (per-input alpha {i.alpha_per_input:.3g}; "
            f"smallest p {_p(i.smallest_p, '.3g')}): "
            f"<b>{'killed' if i.statistically_killed else 'not killed'}</b>"
            + (f"; the {show} with the smallest p:" if len(killers) > show else "")
            + f"</p>{table}</details>")


def _coverage(campaign: Campaign) -> str:
    c = campaign.coverage
    if not c:
        return ""

    def summary(key):
        value = c.get(key) or {}
        return f"mean {_f(value.get('mean'), '.4f')}, sd {_f(value.get('sd'), '.4f')}"

    rows = [("layer", _e(c.get("layer"))), ("test inputs", _e(c.get("test_inputs"))),
            (f"IDC (m = {c.get('neurons')})", summary("idc")), ("NC", summary("nc")),
            ("KMNC", summary("kmnc")), ("TKNC", summary("tknc"))]
    correlation = c.get("correlation")
    if correlation:
        rows.append(("coverage against killing",
                     f"Kendall's tau {_f(correlation.get('tau'), '.3f')} "
                     f"[{_f(correlation.get('ci_low'), '.3f')}, "
                     f"{_f(correlation.get('ci_high'), '.3f')}], p "
                     f"{_p(correlation.get('p_value'), '.3g')}, "
                     f"{_e(correlation.get('subsets'))} subsets of "
                     f"{_e(correlation.get('subset_size'))} inputs"))
    if c.get("answer"):
        rows.append(("answer", _e(c["answer"])))
    return ('<section id="coverage"><h2>Coverage</h2><p>Importance-driven coverage of the '
            "healthy instances (probmut coverage).</p>" + _facts(rows) + "</section>")


def _definitions(campaign: Campaign) -> str:
    k = campaign.settings.sample
    items = [
        ("mutation score", "the expected share of the analysed, unflagged mutants that one kill "
         f"test of {k} vs {k} instances kills: the average of their kill probabilities. Its "
         "interval comes from joint draws of the kill probabilities from the mutants' bagged "
         "posteriors (one bootstrap resample per draw, shared by every mutant); decided "
         "killed is the share of the same mutants the bagged posterior decides killed. An "
         "operator's score is the same over its own mutants."),
        ("decision", "the bagged posterior's: killed when the ratio of its Hellinger distances "
         "to the ideal sound and ideal mutant posteriors exceeds the threshold."),
        ("verdict", f"the decision a population of {REFERENCE_SIZE} fresh instances per side "
         "would reach, predicted from the instances at hand with their uncertainty: killed or "
         f"not killed when predicted with probability at least {CERTAINTY:g}, else not settled "
         "(probmut recommend)."),
        ("kill test, whole populations", "the kill criterion (DeepCrime's test by default) "
         "once on all the instances: one test, where the decision and the verdict weigh "
         "many. Where the three disagree, the mutant's remarks say so."),
        ("baseline", "the healthy population against itself: how often the test kills a "
         "population that is not mutated. A model-level mutant is paired with the healthy "
         "instances it derives from, and so is its baseline."),
        ("smallest killed magnitude", "where the isotonic (monotone) fit of the posterior "
         "means against the magnitude, weighted by their precisions, reaches 1/2, linearly "
         "interpolated; the interval repeats the fit on posterior draws."),
        ("flagged", "equivalent or broken mutants (probmut train's checks): listed, left out "
         "of the score and the fits; survivors stay in."),
        ("outcome", "the mutant's category in the counts: flagged, not analysed, or its "
         "verdict."),
        ("needed per side", "the instances per side at which a verdict would be settled with "
         "probability 0.8 if the mutant is as its instances show (probmut recommend)."),
    ]
    return ('<section id="definitions"><h2>Definitions</h2><dl>' + "".join(
        f"<dt>{_e(term)}</dt><dd>{_e(text)}</dd>" for term, text in items)
        + "</dl><p>The full definitions: docs/report.md in probmut.</p></section>")


def _style_sheet() -> str:
    from probmut.plots import STYLE

    tags = "".join(f".tag.{_slug(o)}{{border-color:{colour};color:{colour}}}"
                   for o, colour in STYLE["outcome_colors"].items())
    return STYLE_SHEET + tags


STYLE_SHEET = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;
max-width:1280px;padding:0 16px 40px;color:#222}
h1{font-size:22px;margin:18px 0 4px;overflow-wrap:anywhere}h2{font-size:18px;margin:28px 0 8px;
border-bottom:1px solid #ddd}h3{font-size:15px;margin:0 0 6px;overflow-wrap:anywhere}
code,pre{overflow-wrap:anywhere;word-break:break-word}
pre{white-space:pre-wrap;background:#f5f5f5;padding:8px;border-radius:4px}
.produced{color:#555;margin:0 0 6px}nav a{margin-right:12px;display:inline-block}
.status{padding:8px 12px;border-radius:4px;margin:8px 0}
.status.complete{background:#e8f5e9}.status.unknown{background:#fff8e1}
.status.unfinished{background:#fdecea;border:1px solid #e53935}
.status ul{margin:4px 0 0}.top{display:flex;gap:32px;align-items:flex-start;flex-wrap:wrap}
.score{flex:0 1 440px;min-width:0}.top>div:last-child{flex:1 1 300px;min-width:0}
.score .label{color:#555}.score .big{font-size:40px;font-weight:600;line-height:1.1}
.counts{list-style:none;padding:0;display:flex;gap:18px;flex-wrap:wrap;margin:8px 0}
.counts b{font-size:20px}.note{color:#555;font-size:12px}
table{border-collapse:collapse}.facts{max-width:100%}.facts th{text-align:left;width:11em;
vertical-align:top;padding:3px 12px 3px 0;color:#555;font-weight:normal}
.facts td{padding:3px 0;overflow-wrap:anywhere}.facts ul{margin:0;padding-left:18px}
table.data th,table.data td{border-bottom:1px solid #e4e4e4;padding:3px 6px;text-align:left;
vertical-align:top}table.data th{background:#f5f5f5;position:sticky;top:0;z-index:1}
table.data td.wrap{min-width:14em}
.scroll-x{overflow-x:auto;max-width:100%}
#mutant-table{font-size:13px}#mutant-table td{white-space:nowrap}
#mutant-table td:first-child{white-space:normal;min-width:11em}
#mutant-table td:nth-child(12),#mutant-table td:nth-child(13){white-space:normal;
min-width:9em;font-size:12px;overflow-wrap:anywhere}
#mutant-table th{white-space:nowrap}
.js #mutant-table th{cursor:pointer;user-select:none}
#mutant-table th[aria-sort=ascending]::after{content:" \\25B2"}
#mutant-table th[aria-sort=descending]::after{content:" \\25BC"}
.scroll{overflow:auto;max-height:80vh;max-width:100%}
@media (min-width:1200px){.scroll{overflow:visible;max-height:none}}
.needs-js{display:none}.js .needs-js{display:block}.js span.needs-js{display:inline}
.controls{margin:6px 0}.controls input[type=search]{width:100%;max-width:380px;padding:4px}
#outcomes{border:0;padding:0;margin:6px 0;display:flex;flex-wrap:wrap;gap:4px 14px}
#outcomes legend{float:left;margin-right:8px;color:#555}
img{max-width:100%;height:auto}
.cards{display:flex;flex-wrap:wrap;gap:16px}.card{margin:0;max-width:360px}
figure.wide{margin:0}
.mutant{border-top:1px solid #ddd;padding:12px 0}.pair{display:flex;gap:20px;
flex-wrap:wrap;align-items:flex-start}.pair img{flex:0 0 auto}
.pair .facts{flex:1 1 320px;min-width:0}
.remarks{margin:0;padding-left:18px;color:#8a4b00}
.tag{font-size:12px;font-weight:normal;padding:0 6px;border-radius:8px;border:1px solid #999;
white-space:nowrap;background:#fff}
.key{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:6px 12px}
details{margin:6px 0}.back{font-size:12px}dt{font-weight:600}dd{margin:0 0 8px 16px}
"""

#: Sorting and filtering of the mutant table: plain JavaScript, no library. The view
#: (outcomes shown, words) is kept in the URL's hash: ``#show=killed,not-settled&q=label``.
SCRIPT = """
(function () {
  "use strict";
  document.documentElement.classList.add("js");
  var table = document.getElementById("mutant-table");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var headers = table.tHead.rows[0].cells;
  var filter = document.getElementById("filter");
  var boxes = Array.prototype.slice.call(document.querySelectorAll("#outcomes input"));
  var shown = document.getElementById("shown");

  function value(row, column, numeric) {
    var text = row.cells[column].getAttribute("data-value");
    if (!numeric) { return text.toLowerCase(); }
    return text === "" ? NaN : Number(text);
  }

  function sortBy(column) {
    var header = headers[column];
    var numeric = header.getAttribute("data-type") === "number";
    var ascending = header.getAttribute("aria-sort") !== "ascending";
    for (var i = 0; i < headers.length; i++) { headers[i].removeAttribute("aria-sort"); }
    header.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    var sign = ascending ? 1 : -1;
    var sorted = rows.slice().sort(function (a, b) {
      var x = value(a, column, numeric), y = value(b, column, numeric);
      if (numeric && (isNaN(x) || isNaN(y))) { return isNaN(x) - isNaN(y); }
      return sign * (x < y ? -1 : x > y ? 1 : 0);
    });
    sorted.forEach(function (row) { body.appendChild(row); });
  }

  function writeView() {
    var chosen = boxes.filter(function (b) { return b.checked; })
      .map(function (b) { return b.value; });
    var parts = [];
    if (chosen.length) { parts.push("show=" + chosen.join(",")); }
    if (filter.value.trim()) { parts.push("q=" + encodeURIComponent(filter.value.trim())); }
    var here = location.pathname + location.search;
    history.replaceState(null, "", parts.length ? here + "#" + parts.join("&") : here);
  }

  function readView() {
    var hash = location.hash.slice(1);
    if (!/^(show|q)=/.test(hash)) { return false; }  // a section of the page, not a view
    var view = {};
    hash.split("&").forEach(function (part) {
      var at = part.indexOf("=");
      if (at > 0) { view[part.slice(0, at)] = decodeURIComponent(part.slice(at + 1)); }
    });
    var chosen = (view.show || "").split(",");
    boxes.forEach(function (b) { b.checked = chosen.indexOf(b.value) >= 0; });
    filter.value = view.q || "";
    return true;
  }

  function apply() {
    var words = filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var chosen = boxes.filter(function (b) { return b.checked; })
      .map(function (b) { return b.value; });
    var count = 0;
    rows.forEach(function (row) {
      var text = row.getAttribute("data-search");
      var keep = words.every(function (w) { return text.indexOf(w) >= 0; }) &&
        (!chosen.length || chosen.indexOf(row.getAttribute("data-outcome")) >= 0);
      row.hidden = !keep;
      count += keep ? 1 : 0;
    });
    shown.textContent = count + " of " + rows.length + " mutants shown";
  }

  Array.prototype.forEach.call(headers, function (header, column) {
    header.tabIndex = 0;
    header.title = "sort by " + header.getAttribute("data-label");
    header.addEventListener("click", function () { sortBy(column); });
    header.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { sortBy(column); }
    });
  });
  filter.addEventListener("input", function () { apply(); writeView(); });
  boxes.forEach(function (b) {
    b.addEventListener("change", function () { apply(); writeView(); });
  });
  window.addEventListener("hashchange", function () { if (readView()) { apply(); } });
  readView();
  apply();
})();
"""


#: What the lines of each mutant's figure are.
POSTERIOR_KEY = ("In each mutant's figure (its Figure 3): faint grey, the posteriors of its "
                 "bootstrap resamples; dashed black, their mixture, the bagged posterior; "
                 "blue, its Beta summary, shaded over its interval, which the bar on the "
                 "axis marks too; dotted blue, its mean.")


def render_html(campaign: Campaign, *, command: str | None = None,
                created: datetime.datetime | None = None, jobs: int | None = None,
                identity: str | None = None, figures: dict | None = None) -> str:
    """The campaign as one self-contained HTML document (see the module notes).

    ``command`` is what produced it (shown in the header line), ``created`` when
    (default: now, in UTC); ``identity`` the campaign it records (:func:`campaign_id`);
    ``figures`` its images as :func:`draw_figures` gives them (drawn here by ``jobs``
    processes when not given).
    """
    created = created or datetime.datetime.now(datetime.UTC)
    figures = figures or draw_figures(campaign, jobs)
    details = "".join(_mutant(i, m, campaign, figures) for i, m in enumerate(campaign.mutants))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="probmut {_e(__version__)}">'
        + (f'<meta name="probmut-campaign" content="{_e(identity)}">' if identity else "")
        + f"<title>probmut report: {_e(campaign.model)}</title>"
        f"<style>{_style_sheet()}</style></head><body>"
        f"{_header(campaign, command, created)}{_summary(campaign)}{_next_steps(campaign)}"
        f"{_compare(campaign)}{_operators(campaign, figures)}{_overview(campaign, figures)}"
        f'{_table(campaign)}<section id="details"><h2>Each mutant</h2><p>{_e(POSTERIOR_KEY)}'
        f"</p>{details}</section>"
        f"{_coverage(campaign)}{_definitions(campaign)}"
        f"<script>{SCRIPT}</script></body></html>\n")


# --- the page's file --------------------------------------------------------------------------

def campaign_id(manifest, model: str, folder) -> str:
    """What a page records of its campaign: its model and its manifest, relative to the
    page's ``folder`` (so that a run's page stays its own when the run is moved).

    >>> campaign_id("/runs/a/manifest.toml", "a", "/runs/a")
    'a @ manifest.toml'
    """
    return f"{model} @ {Path(os.path.relpath(Path(manifest).resolve(), Path(folder).resolve())).as_posix()}"


_RECORDED = re.compile(r'<meta name="probmut-campaign" content="([^"]*)">')


def check_replaceable(path, identity: str) -> bool:
    """Whether writing the page of ``identity`` to ``path`` replaces an earlier page of
    the same campaign (True) or nothing (False); a ProbmutError when ``path`` holds
    anything else: another campaign's page, or a file that is not a probmut report."""
    path = Path(path)
    if not path.exists():
        return False
    try:
        with path.open("rb") as handle:
            start = handle.read(4096).decode("utf-8", "replace")
    except OSError as error:
        raise ProbmutError(f"{path}: cannot read it ({error.strerror})", option="out") from None
    found = _RECORDED.search(start)
    if found and html.unescape(found[1]) == identity:
        return True
    what = (f"the report of another campaign ({html.unescape(found[1])})" if found else
            "a page of an older probmut that does not say its campaign"
            if "<title>probmut report:" in start else "a file that is not a probmut report")
    raise ProbmutError(f"{path}: holds {what}; give --out FILE for this one, or remove it",
                       option="out")


def write_report(campaign: Campaign, path, *, command: str | None = None,
                 created: datetime.datetime | None = None, jobs: int | None = None,
                 figures: dict | None = None) -> Path:
    """Write :func:`render_html`'s page to ``path`` (atomically); returns the path. It
    replaces an earlier page of the same campaign only (:func:`check_replaceable`)."""
    from probmut.io.atomic import atomic_write_text

    path = Path(path)
    identity = campaign_id(campaign.manifest, campaign.model, path.parent)
    check_replaceable(path, identity)
    atomic_write_text(path, render_html(campaign, command=command, created=created, jobs=jobs,
                                        identity=identity, figures=figures))
    return path
