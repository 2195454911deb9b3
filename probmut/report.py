"""A campaign as one self-contained HTML page (``probmut report``).

:func:`render_html` turns a :class:`probmut.campaign.Campaign` into one HTML document
that opens from disk with no network: its styles and its script are inline, its
figures PNG data URIs, and it links only to its own sections. It holds

1. a header line saying what produced it (probmut version, command, date, seed);
2. the summary: the campaign's status (complete, or unfinished with every short
   population), the mutation score with its interval and the share decided killed, the
   counts of killed / not killed / not settled / flagged / not analysed mutants, the
   flagged mutants, the model, the data's provenance, the populations and settings;
3. per operator, the kill probability against the magnitude (:func:`probmut.plots.plot_kill_curve`)
   and the smallest killed magnitude with its interval;
4. a table of the mutants, sortable (click a column's header) and filterable (words,
   outcome) by a short inline script, each row linked to
5. the mutant's section: its Figure 3 posterior (:func:`probmut.plots.plot_posterior`),
   the kill test on the whole populations, flags, verdict, and where the run has them,
   its symptoms, the rounds of a run trained until settled and its per-input killing;
6. the coverage result, when there is one, and the definitions of the numbers.

Every text that comes from files (names, descriptions, messages) is escaped.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
import math
import re
from pathlib import Path

from probmut import __version__
from probmut.campaign import OUTCOMES, Campaign, MutantSummary
from probmut.recommend import LEVEL, REFERENCE_SIZE


def figure_uri(fig) -> str:
    """The figure as a PNG data URI (the figure is closed).

    >>> import matplotlib.pyplot as plt
    >>> figure_uri(plt.figure(figsize=(1, 1))).startswith("data:image/png;base64,iVBOR")
    True
    """
    import matplotlib.pyplot as plt

    from probmut.plots import STYLE

    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=STYLE["report_dpi"], bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


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


def _sort_value(value) -> str:
    """A cell's ``data-value`` for sorting numbers (blank sorts last)."""
    if value is None or isinstance(value, bool) or (isinstance(value, float)
                                                    and math.isnan(value)):
        return ""
    return repr(float(value))


def anchor(index: int, name: str) -> str:
    """The id of a mutant's section: unique, and safe in a URL fragment.

    >>> anchor(3, "weights_fuzzing_0.05_1@3")
    'm3-weights_fuzzing_0.05_1-3'
    """
    return f"m{index}-" + re.sub(r"[^A-Za-z0-9_.-]", "-", name)


def _shown(path) -> str:
    """A path as the reader would type it: relative to the current folder when inside it."""
    path = Path(path)
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


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


# --- sections -------------------------------------------------------------------------------

def _header(campaign: Campaign, command: str | None, created: datetime.datetime) -> str:
    produced = " · ".join([f"probmut {_e(__version__)}",
                           f"<code>{_e(command)}</code>" if command else "Python API",
                           _e(created.strftime("%Y-%m-%d %H:%M %Z").strip()),
                           f"seed {_e(campaign.seed)}"])
    return (f'<header><h1>Mutation testing report: <code>{_e(campaign.model)}</code></h1>'
            f'<p class="produced" id="produced">{produced}</p>'
            '<nav><a href="#summary">Summary</a> <a href="#operators">Operators</a> '
            '<a href="#mutants">Mutants</a>'
            + (' <a href="#coverage">Coverage</a>' if campaign.coverage else "")
            + ' <a href="#definitions">Definitions</a></nav></header>')


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
    items = "".join(f'<li class="{_e(o.replace(" ", "-"))}"><b>{counts[o]}</b> {_e(o)}</li>'
                    for o in OUTCOMES)
    note = ("killed, not killed and not settled are the mutants' verdicts (the decision of a "
            f"population of {REFERENCE_SIZE} fresh instances per side, predicted with "
            f"probability at least {LEVEL:g})" if campaign.verdicts else
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
    baseline = campaign.baseline
    rows = [("model", f"<code>{_e(campaign.model)}</code>"
             + (f" — {_e(campaign.description)}" if campaign.description else "")),
            ("manifest", f"<code>{_e(_shown(campaign.manifest))}</code>"),
            ("data", _value_html(campaign.data) if campaign.data else
             "no provenance recorded in the manifest"),
            ("populations", f"healthy: {campaign.healthy.instances} instances"
                            + (f" (target {campaign.healthy.target})"
                               if campaign.healthy.target is not None else "")
                            + f"; {_e(mutants)}"),
            ("analysis", _e(campaign.settings.describe())),
            ("seed", _e(campaign.seed))]
    if baseline is not None:
        rows.append(("healthy vs healthy", f"posterior mean {baseline.mean:.4f} "
                     f"[{baseline.ci_low:.3f}, {baseline.ci_high:.3f}] (the baseline: how "
                     "often the test kills the healthy population itself)"))
    if campaign.inputs is not None:
        rows.append(("per-input killing", _e(
            f"DeepMutation mutation score {campaign.inputs.mutation_score:.4f}, statistical "
            f"(Fisher, Bonferroni over {campaign.inputs.pool} inputs) "
            f"{campaign.inputs.statistical_score:.4f}")))
    if campaign.rounds_file:
        rows.append(("trained until settled",
                     f"rounds in <code>{_e(_shown(campaign.rounds_file))}</code>"))
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


def _operators(campaign: Campaign) -> str:
    from probmut.plots import plot_kill_curve

    cards = []
    for curve in campaign.curves:
        if not curve.magnitudes:
            cards.append(f'<figure class="card"><figcaption><b>{_e(curve.mutation)}</b>: no '
                         "analysed magnitude</figcaption></figure>")
            continue
        excluded = (f"; not fitted: {_e(', '.join(curve.excluded))} (flagged or not analysed)"
                    if curve.excluded else "")
        cards.append(f'<figure class="card"><img src="{figure_uri(plot_kill_curve(curve))}" '
                     f'alt="kill probability against the magnitude of {_e(curve.mutation)}">'
                     f"<figcaption><b>{_e(curve.mutation)}</b>: {_e(curve.describe_threshold())}"
                     f"{excluded}</figcaption></figure>")
    return ('<section id="operators"><h2>Per operator</h2><p>The kill probability of each '
            "magnitude (posterior mean and interval), its isotonic fit and where the fit "
            "reaches 1/2: the smallest killed magnitude, with its interval from posterior "
            f'draws.</p><div class="cards">{"".join(cards)}</div></section>')


#: The mutant table's columns: header, sort type, and the cell of a row (text, sort value).
COLUMNS = (
    ("mutant", "text"), ("n", "number"),
    ("posterior mean", "number"), ("interval", "number"), ("ratio", "number"),
    ("decision", "text"), ("verdict", "text"), ("P(killed)", "number"), ("test p", "number"),
    ("effect", "number"), ("flags", "text"), ("symptom", "text"), ("outcome", "text"))


def _cells(index: int, m: MutantSummary) -> list[tuple[str, str]]:
    p, t, v = m.posterior, m.test, m.verdict
    n = f"{m.count.instances}" + (f" / {m.count.target}" if m.count.complete is False else "")
    return [
        (f'<a href="#{anchor(index, m.name)}">{_e(m.name)}</a>', m.name),
        (_e(n), _sort_value(m.count.instances)),
        (_f(p and p.mean), _sort_value(p and p.mean)),
        (f"[{p.ci_low:.3f}, {p.ci_high:.3f}]" if p else "", _sort_value(p and p.ci_low)),
        (_f(p and p.ratio, ".4g"), _sort_value(p and p.ratio)),
        (_e(m.decision), m.decision), (_e(v["verdict"]) if v else "", v["verdict"] if v else ""),
        (_f(v and v["p_killed"], ".2f"), _sort_value(v and v["p_killed"])),
        (_f(t and t.p_value, ".4g"), _sort_value(t and t.p_value)),
        (_f(t and t.effect_size, ".3f"), _sort_value(t and t.effect_size)),
        (_e(", ".join(m.flags)), ", ".join(m.flags)),
        (_e(m.symptoms.symptom) if m.symptoms else "", m.symptoms.symptom if m.symptoms else ""),
        (_e(m.outcome), m.outcome)]


def _table(campaign: Campaign) -> str:
    labels = {"interval": f"{campaign.settings.mass:.0%} interval"}
    head = "".join(f'<th data-type="{kind}" title="sort by {_e(labels.get(name, name))}">'
                   f"{_e(labels.get(name, name))}</th>" for name, kind in COLUMNS)
    rows = []
    for index, m in enumerate(campaign.mutants):
        cells = _cells(index, m)
        search = " ".join([m.name, m.mutation, m.magnitude, m.decision, m.outcome, *m.flags,
                           m.symptoms.symptom if m.symptoms else ""]).lower()
        rows.append(f'<tr data-outcome="{_e(m.outcome)}" data-search="{_e(search)}">' + "".join(
            f'<td data-value="{_e(value)}">{shown}</td>' for shown, value in cells) + "</tr>")
    options = "".join(f'<option value="{_e(o)}">{_e(o)}</option>' for o in OUTCOMES)
    return ('<section id="mutants"><h2>Mutants</h2><div class="controls">'
            '<input id="filter" type="search" placeholder="filter: words of the name, '
            'operator, decision, flags, symptom" aria-label="filter the mutants">'
            '<select id="outcome" aria-label="show one outcome"><option value="">every '
            f'outcome</option>{options}</select> <span id="shown"></span></div>'
            '<div class="scroll"><table id="mutant-table" class="data"><thead><tr>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
            "<p class=\"note\">Click a column's header to sort by it (again: the other way); "
            "n shows instances / target where a population is short.</p></section>")


def _mutant(index: int, m: MutantSummary, campaign: Campaign) -> str:
    from probmut.plots import plot_posterior

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
    if p is None:
        why = {"missing": "no population file yet (the run has not written it)",
               "failed": "every instance failed (see the symptoms)",
               "too few": f"fewer usable instances than the sample size k = "
                          f"{campaign.settings.sample} (lower it, or train more)"}.get(
                              m.status, m.status)
        rows.append(("analysis", f"<b>not analysed</b>: {_e(why)}"))
    else:
        figure = (f'<img src="{figure_uri(plot_posterior(m.study, p.name))}" '
                  f'alt="bagged posterior of the kill probability of {_e(m.name)}">')
        rows += [("bagged posterior", f"mean <b>{p.mean:.4f}</b>, {campaign.settings.mass:.0%} "
                                      f"interval [{p.ci_low:.3f}, {p.ci_high:.3f}], "
                                      f"Beta({p.alpha:.4g}, {p.beta:.4g})"),
                 ("decision", f"ratio {_f(p.ratio, '.6g')} (H_sound {p.h_sound:.5f}, H_mutant "
                              f"{p.h_mutant:.5f}) → <b>{_e(m.decision)}</b>; P(above the "
                              f"baseline) {_f(p.p_above_baseline, '.3f')}")]
        if m.verdict:
            rows.append(("verdict", f"<b>{_e(m.verdict['verdict'])}</b>: "
                                    f"{_e(m.verdict['message'])}"))
        t = m.test
        rows.append(("kill test, whole populations",
                     f"{t.n_healthy} healthy vs {t.n_mutant} mutant instances: p "
                     f"{_f(t.p_value, '.4g')}, effect {_f(t.effect_size, '.4f')} → <b>"
                     f"{'killed' if t.killed else 'not killed'}</b> (killed iff "
                     f"{_e(t.criterion)})"))
    if m.symptoms is not None:
        s, a = m.symptoms, m.symptoms.accuracy_change
        text = (f"<b>{_e(s.symptom)}</b>: {s.instances} instances, {s.crashed} crashed, "
                f"{s.timed_out} timed out, {s.diverged} diverged, {s.constant} constant")
        if a is not None:
            text += (f"; accuracy {a.mean_healthy:.4f} → {a.mean_mutant:.4f} (p "
                     f"{_f(a.p_value, '.4g')})")
        if s.time_change is not None:
            text += (f"; training time ×{_f(s.time_change.ratio, '.2f')} (p "
                     f"{_f(s.time_change.p_value, '.3g')})")
        text += "".join(f"<br><code>{_e(error)}</code>" for error in s.errors[:3])
        rows.append(("symptoms", text))
    extra = _rounds(m) + _inputs(m)
    return (f'<section class="mutant" id="{anchor(index, m.name)}"><h3>{_e(m.name)} '
            f'<span class="tag {_e(m.outcome.replace(" ", "-"))}">{_e(m.outcome)}</span></h3>'
            f'<div class="pair">{figure}{_facts(rows)}</div>{extra}'
            '<p class="back"><a href="#mutants">back to the table</a></p></section>')


def _rounds(m: MutantSummary) -> str:
    if not m.rounds:
        return ""
    rows = "".join(
        f"<tr><td>{_e(r.get('round'))}</td><td>{_e(r.get('instances'))}</td>"
        f"<td>{_e(r.get('verdict'))}</td><td>{_f(r.get('p_killed'), '.2f')}</td>"
        f"<td class=\"wrap\">{_e(r.get('message', ''))}</td></tr>" for r in m.rounds)
    return ("<details open><summary>trained until settled: rounds</summary>"
            '<table class="data"><thead><tr><th>round</th><th>instances</th><th>verdict</th>'
            f"<th>P(killed)</th><th>why</th></tr></thead><tbody>{rows}</tbody></table></details>")


def _inputs(m: MutantSummary, show: int = 5) -> str:
    i = m.inputs
    if i is None:
        return ""
    killers = sorted(set(i.majority_killers.tolist()) | set(i.statistical_killers.tolist()),
                     key=lambda j: i.p_values[j])
    rows = "".join(
        f"<tr><td>{j}</td><td>{i.labels[j]}</td><td>{i.healthy_correct[j]:.3f}</td>"
        f"<td>{i.mutant_correct[j]:.3f}</td><td>{i.p_values[j]:.3g}</td></tr>"
        for j in killers[:show])
    table = ('<table class="data"><thead><tr><th>input</th><th>label</th><th>healthy correct'
             '</th><th>mutant correct</th><th>Fisher p</th></tr></thead>'
             f"<tbody>{rows}</tbody></table>") if killers else "<p>no input kills it</p>"
    return (f"<details open><summary>per-input killing</summary><p>killed classes "
            f"(DeepMutation, majority): {_e(list(i.killed_classes) or 'none')}; "
            f"{i.majority_killers.size} inputs kill by majority, {i.statistical_killers.size} "
            f"by Fisher's test (level {i.level:.3g}; smallest p {i.smallest_p:.3g}): "
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
                     f"Kendall's tau {_f(correlation.get('tau'), '.3f')} [{_f(correlation.get('ci_low'), '.3f')}, "
                     f"{_f(correlation.get('ci_high'), '.3f')}], p {_f(correlation.get('p_value'), '.3g')}, "
                     f"{_e(correlation.get('subsets'))} subsets of {_e(correlation.get('subset_size'))} inputs"))
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
         "killed is the share of the same mutants the bagged posterior decides killed."),
        ("decision", "the bagged posterior's: killed when the ratio of its Hellinger distances "
         "to the ideal sound and ideal mutant posteriors exceeds the threshold."),
        ("verdict", f"the decision a population of {REFERENCE_SIZE} fresh instances per side "
         "would reach, predicted from the instances at hand with their uncertainty: killed or "
         f"not killed when predicted with probability at least {LEVEL:g}, else not settled "
         "(probmut recommend)."),
        ("smallest killed magnitude", "where the isotonic (monotone) fit of the posterior "
         "means against the magnitude, weighted by their precisions, reaches 1/2, linearly "
         "interpolated; the interval repeats the fit on posterior draws."),
        ("flagged", "equivalent or broken mutants (probmut train's checks): listed, left out "
         "of the score and the fits; survivors stay in."),
        ("outcome", "the mutant's category in the counts: flagged, not analysed, or its "
         "verdict."),
    ]
    return ('<section id="definitions"><h2>Definitions</h2><dl>' + "".join(
        f"<dt>{_e(term)}</dt><dd>{_e(text)}</dd>" for term, text in items)
        + "</dl><p>The full definitions: docs/report.md in probmut.</p></section>")


STYLE_SHEET = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;
max-width:1240px;padding:0 16px 40px;color:#222}
h1{font-size:22px;margin:18px 0 4px}h2{font-size:18px;margin:28px 0 8px;
border-bottom:1px solid #ddd}h3{font-size:15px;margin:0 0 6px}
.produced{color:#555;margin:0 0 6px}nav a{margin-right:12px}
.status{padding:8px 12px;border-radius:4px;margin:8px 0}
.status.complete{background:#e8f5e9}.status.unknown{background:#fff8e1}.status.unfinished{background:#fdecea;border:1px solid #e53935}
.status ul{margin:4px 0 0}.top{display:flex;gap:32px;align-items:flex-start;flex-wrap:wrap}
.score{flex:0 1 440px}.top>div:last-child{flex:1 1 420px}.score .label{color:#555}
.score .big{font-size:40px;font-weight:600;line-height:1.1}
.counts{list-style:none;padding:0;display:flex;gap:18px;flex-wrap:wrap;margin:8px 0}
.counts b{font-size:20px}.note{color:#555;font-size:12px}
table{border-collapse:collapse}.facts th{text-align:left;vertical-align:top;
padding:3px 12px 3px 0;color:#555;font-weight:normal;white-space:nowrap}
.facts td{padding:3px 0}.facts ul{margin:0;padding-left:18px}
table.data th,table.data td{border-bottom:1px solid #e4e4e4;padding:3px 8px;text-align:left;
white-space:nowrap}table.data th{background:#f5f5f5;position:sticky;top:0}
table.data td.wrap{white-space:normal;min-width:320px}
#mutant-table th{cursor:pointer;user-select:none}
#mutant-table th[aria-sort=ascending]::after{content:" \\25B2"}
#mutant-table th[aria-sort=descending]::after{content:" \\25BC"}
.scroll{overflow-x:auto;max-width:100%}.controls{margin:6px 0}
.controls input{width:380px;padding:4px}.cards{display:flex;flex-wrap:wrap;gap:16px}
.card{margin:0;width:380px}.card img{width:100%}
.mutant{border-top:1px solid #ddd;padding:12px 0}.pair{display:flex;gap:20px;
flex-wrap:wrap;align-items:flex-start}.pair img{flex:0 0 340px;width:340px}
.pair .facts{flex:1 1 520px}
.tag{font-size:12px;font-weight:normal;padding:1px 6px;border-radius:8px;background:#eee}
.tag.killed{background:#c8e6c9}.tag.not-settled{background:#fff3c4}
.tag.flagged{background:#e1d5f0}.tag.not-analysed{background:#fdecea}
details{margin:6px 0}.back{font-size:12px}dt{font-weight:600}dd{margin:0 0 8px 16px}
"""

#: Sorting and filtering of the mutant table: plain JavaScript, no library.
SCRIPT = """
(function () {
  "use strict";
  var table = document.getElementById("mutant-table");
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var headers = table.tHead.rows[0].cells;
  var filter = document.getElementById("filter");
  var outcome = document.getElementById("outcome");
  var shown = document.getElementById("shown");

  function value(row, column, numeric) {
    var text = row.cells[column].getAttribute("data-value");
    if (!numeric) { return text.toLowerCase(); }
    return text === "" ? NaN : parseFloat(text);
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
      if (numeric) {
        if (isNaN(x) || isNaN(y)) { return isNaN(x) - isNaN(y); }
        return sign * (x - y);
      }
      return sign * (x < y ? -1 : x > y ? 1 : 0);
    });
    sorted.forEach(function (row) { body.appendChild(row); });
  }

  function apply() {
    var words = filter.value.toLowerCase().split(/\\s+/).filter(Boolean);
    var wanted = outcome.value;
    var count = 0;
    rows.forEach(function (row) {
      var text = row.getAttribute("data-search");
      var keep = words.every(function (w) { return text.indexOf(w) >= 0; }) &&
        (!wanted || row.getAttribute("data-outcome") === wanted);
      row.hidden = !keep;
      count += keep ? 1 : 0;
    });
    shown.textContent = count + " of " + rows.length + " mutants shown";
  }

  Array.prototype.forEach.call(headers, function (header, column) {
    header.tabIndex = 0;
    header.addEventListener("click", function () { sortBy(column); });
    header.addEventListener("keydown", function (event) {
      if (event.key === "Enter") { sortBy(column); }
    });
  });
  filter.addEventListener("input", apply);
  outcome.addEventListener("change", apply);
  apply();
})();
"""


def render_html(campaign: Campaign, *, command: str | None = None,
                created: datetime.datetime | None = None) -> str:
    """The campaign as one self-contained HTML document (see the module notes).

    ``command`` is what produced it (shown in the header line), ``created`` when
    (default: now, in UTC).
    """
    created = created or datetime.datetime.now(datetime.UTC)
    details = "".join(_mutant(i, m, campaign) for i, m in enumerate(campaign.mutants))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>probmut report: {_e(campaign.model)}</title>"
        f"<style>{STYLE_SHEET}</style></head><body>"
        f"{_header(campaign, command, created)}{_summary(campaign)}{_operators(campaign)}"
        f'{_table(campaign)}<section id="details"><h2>Each mutant</h2>{details}</section>'
        f"{_coverage(campaign)}{_definitions(campaign)}"
        f"<script>{SCRIPT}</script></body></html>\n")


def write_report(campaign: Campaign, path, *, command: str | None = None,
                 created: datetime.datetime | None = None) -> Path:
    """Write :func:`render_html`'s page to ``path`` (atomically); returns the path."""
    from probmut.io.atomic import atomic_write_text

    path = Path(path)
    atomic_write_text(path, render_html(campaign, command=command, created=created))
    return path
