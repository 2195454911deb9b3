"""The page's sections, each a function of the campaign (and of its figures)."""

from __future__ import annotations

import datetime

from probmut import __version__
from probmut.campaign import OUTCOMES, Campaign, MutantSummary, shown_path
from probmut.campaign.compare import EMBEDDED
from probmut.recommend import CERTAINTY, REFERENCE_SIZE
from probmut.report.assets import OUTCOME_MARKERS, SCRIPT, style_sheet
from probmut.report.figures import Image, draw_figures, overview_parts, posterior_data
from probmut.report.text import (
    anchor,
    breakable,
    esc,
    facts,
    fmt,
    fmt_p,
    score_text,
    slug,
    sort_value,
    tag,
    value_html,
)


def _img(image: Image, alt: str, css: str = "") -> str:
    return (f'<img src="{image.uri}" width="{image.width}" height="{image.height}" '
            f'alt="{esc(alt)}"' + (f' class="{css}"' if css else "") + ">")


#: Rows of a list (short populations, next steps, changes) shown open; a longer list is
#: collapsed behind its count.
OPEN_UP_TO = 6


def _collapsible(summary: str, body: str, rows: int, css: str = "") -> str:
    """``body`` under ``summary`` (HTML), open when it has at most :data:`OPEN_UP_TO`
    rows, else collapsed behind it."""
    opened = " open" if rows <= OPEN_UP_TO else ""
    return (f'<details{opened}' + (f' class="{css}"' if css else "")
            + f"><summary>{summary}</summary>{body}</details>")


def _header(campaign: Campaign, command: str | None, created: datetime.datetime) -> str:
    produced = " · ".join([f"probmut {esc(__version__)}",
                           f"<code>{esc(command)}</code>" if command else "Python API",
                           esc(created.strftime("%Y-%m-%d %H:%M %Z").strip()),
                           f"seed {esc(campaign.seed)}" + (" (the run's)" if campaign.seed_source
                                                           == "the run's" else "")])
    links = [("summary", "Summary")]
    if campaign.next_steps().steps:
        links.append(("next-steps", "Next steps"))
    if campaign.comparison is not None:
        links.append(("compare", "Changes"))
    links += [("operators", "Operators"), ("mutants", "Mutants"), ("curves", "Curves"),
              ("overview", "At a glance"), ("campaign", "Campaign"), ("details", "Each mutant")]
    if campaign.coverage:
        links.append(("coverage", "Coverage"))
    links.append(("definitions", "Definitions"))
    return (f'<header><h1>Mutation testing report: <code>{esc(campaign.model)}</code></h1>'
            f'<p class="produced" id="produced">{produced}</p><nav>'
            + " ".join(f'<a href="#{target}">{text}</a>' for target, text in links)
            + "</nav></header>")


def _status(campaign: Campaign) -> str:
    lines = campaign.status_lines()
    kind = {True: "complete", False: "unfinished", None: "unknown"}[campaign.complete]
    items = "".join(f"<li>{esc(line.strip())}</li>" for line in lines[1:])
    listed = _collapsible(f"{len(lines) - 1} short populations", f"<ul>{items}</ul>",
                          len(lines) - 1) if items else ""
    return f'<div class="status {kind}" id="status"><b>{esc(lines[0])}</b>{listed}</div>'



def _score(campaign: Campaign) -> str:
    score = campaign.score
    if score is None:
        return ('<div class="score" id="score"><div class="big" id="mutation-score">no '
                'mutation score</div><p>no mutant could be analysed (see the status and '
                'the table)</p></div>')
    return (f'<div class="score" id="score"><div class="label">mutation score</div>'
            f'<div class="big" id="mutation-score">{score.mean:.3f}</div>'
            f'<div>{score.mass:.0%} interval <b>[{score.ci_low:.3f}, {score.ci_high:.3f}]'
            f'</b></div><div>decided killed: <b id="decided">{score.decided:.3f}</b> '
            f'({score.killed} of {score.mutants})</div></div>')


def _counts(campaign: Campaign) -> str:
    counts = campaign.counts
    items = "".join(f'<li class="{slug(o)}"><b>{counts[o]}</b> {esc(o)}</li>'
                    for o in OUTCOMES)
    note = ("killed, not killed and not settled are the mutants' verdicts (the decision of a "
            f"population of {REFERENCE_SIZE} fresh instances per side, predicted with "
            f"probability at least {CERTAINTY:g})" if campaign.verdicts else
            "killed and not killed are the bagged posterior's decisions (verdicts not "
            "computed)")
    score = campaign.score
    k = campaign.settings.sample
    meaning = (f'<p class="note">The mutation score (left) is the expected share of the '
               f"{score.mutants} analysed, unflagged mutants that one kill test of {k} vs {k} "
               "instances kills, with its interval from the mutants' bagged posteriors; below "
               "it the share the bagged posterior decides killed. "
               '<a href="#definitions">Definitions</a>.</p>') if score else ""
    flagged = ""
    if campaign.flagged:
        names = "; ".join(
            f'<a href="#{anchor(i, m.name)}">{esc(m.name)}</a> ({esc(", ".join(m.flags))})'
            for i, m in enumerate(campaign.mutants) if m.flags)
        flagged = (f"<p>Flagged, left out of the score: {names}</p>"
                   if len(campaign.flagged) <= OPEN_UP_TO else
                   _collapsible(f"{len(campaign.flagged)} flagged, left out of the score",
                                f"<p>{names}</p>", len(campaign.flagged)))
    return (f'<ul class="counts" id="counts">{items}</ul><p class="note">{esc(note)}</p>'
            + meaning + flagged)


def _summary(campaign: Campaign) -> str:
    return (f'<section id="summary"><h2>Summary</h2>{_status(campaign)}'
            f'<div class="top">{_score(campaign)}<div>{_counts(campaign)}</div></div>'
            "</section>")


def _facts(campaign: Campaign) -> str:
    """The campaign's model, data, populations, failures, settings, seed and baselines."""
    sizes = sorted({m.count.instances for m in campaign.mutants})
    mutants = (f"{len(campaign.mutants)} mutant populations of "
               + (f"{sizes[0]}" if len(sizes) == 1 else f"{sizes[0]} to {sizes[-1]}")
               + " instances") if sizes else "no mutant populations"
    rows = [("model", f"<code>{esc(campaign.model)}</code>"
             + (f" — {esc(campaign.description)}" if campaign.description else "")),
            ("manifest", f"<code>{esc(shown_path(campaign.manifest))}</code>"),
            ("data", value_html(campaign.data) if campaign.data else
             "no provenance recorded in the manifest"),
            ("populations", f"healthy: {campaign.healthy.instances} instances"
                            + (f" (target {campaign.healthy.target})"
                               if campaign.healthy.target is not None else "")
                            + f"; {esc(mutants)}"),
            ("instance failures", esc(campaign.failures_line().partition(": ")[2])),
            ("analysis", esc(campaign.settings.describe())),
            ("seed", esc(campaign.describe_seed()))]
    rows += [(label, esc(numbers) + ("" if "paired" in label else "; how often the test "
                                     "kills the healthy population itself, the baseline of "
                                     "P(above the baseline)"))
             for label, numbers in campaign.baselines()]
    if campaign.inputs is not None:
        rows.append(("per-input killing", esc(
            f"DeepMutation mutation score {campaign.inputs.deepmutation_score:.4f}, statistical "
            f"(Fisher, Bonferroni over {campaign.inputs.pool} inputs) "
            f"{campaign.inputs.statistical_score:.4f}")))
    if campaign.rounds_file:
        rows.append(("trained until settled",
                     f"rounds in <code>{esc(shown_path(campaign.rounds_file))}</code>"))
    notes = ("<details><summary>" + f"{len(campaign.notes)} note(s) while reading</summary><ul>"
             + "".join(f"<li>{esc(n)}</li>" for n in campaign.notes) + "</ul></details>"
             if campaign.notes else "")
    return (f'<section id="campaign"><h2>The campaign</h2>{facts(rows)}'
            f"{_score_rounds(campaign)}{notes}</section>")


def _score_rounds(campaign: Campaign) -> str:
    """The rounds of a run trained until the score was settled (``train --until-score``):
    per round the instances, the score with its interval, and what the next one trained."""
    if not campaign.score_rounds:
        return ""
    rows = "".join(
        f"<tr><td>{r['round']}</td><td>{r['instances'].get('healthy')}</td><td>{r['spent']}"
        f"</td><td>{fmt(r['score']['mean'], '.3f')}</td><td>[{fmt(r['score']['ci_low'], '.3f')}, "
        f"{fmt(r['score']['ci_high'], '.3f')}]</td><td>{fmt(r['score']['width'], '.3f')}</td>"
        f"<td class=\"wrap\">{esc(', '.join(f'{p} {n}' for p, n in r['next'].items()) or '-')}"
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
    groups = steps.groups()
    rows = "".join(
        "<tr><td>" + ", ".join(f'<a href="#{anchor(index[s.name], s.name)}">'
                               f"{breakable(s.name)}</a>" for s in group)
        + f"</td><td>{tag(group[0].outcome)}</td><td>{group[0].instances}</td>"
        f"<td>{'none within reach' if group[0].needed is None else group[0].needed}</td>"
        f'<td class="wrap">{esc(group[0].why)}</td></tr>' for group in groups)
    if steps.command:
        where = (f"from <code>{esc(steps.run_from)}</code> (the run's <code>--data</code> "
                 "path is relative to it)" if steps.run_from else
                 esc(steps.note) if steps.note else
                 "from any folder (the run's folder is named by its full path)")
        command = (f"<p>To train them on in the run's folder, in rounds until each verdict is "
                   f'settled; run it {where}:</p><pre id="settle-command"><code>'
                   f"{esc(steps.shell)}</code></pre>")
    else:
        command = f'<p id="settle-command">{esc(steps.no_command)}</p>'
    outcomes = [s.outcome for s in steps.steps]
    counted = ", ".join(f"{outcomes.count(o)} {o}" for o in ("not settled", "not analysed")
                        if o in outcomes)
    body = ("<p>The mutants whose verdict is not settled, or that could not be analysed "
            "(alike ones together), and the instances per side that would settle each "
            "(probmut recommend's estimate: with probability about 0.8 if the mutant is as "
            'its instances show).</p><div class="scroll-x"><table class="data"><thead><tr>'
            "<th>mutants</th><th>outcome</th><th>instances per side</th>"
            f"<th>needed per side</th><th>why</th></tr></thead><tbody>{rows}</tbody></table>"
            f"</div>{command}")
    # collapsed behind its counts, whatever its length: the first screen keeps the score,
    # the operators and the start of the table (its link in the header opens it)
    return (f'<section id="next-steps"><details class="heading"><summary><h2>Next steps: '
            f"{esc(counted)}</h2></summary>{body}</details></section>")


def _compare(campaign: Campaign) -> str:
    c = campaign.comparison
    if c is None:
        return ""
    index = {m.name: i for i, m in enumerate(campaign.mutants)}

    def name(n):
        return f'<a href="#{anchor(index[n], n)}">{esc(n)}</a>' if n in index else esc(n)

    items = [f"<li>{name(n)}: {tag(before)} → {tag(now)}</li>" for n, before, now in c.changed]
    items += [f"<li>{name(n)}: new, {tag(now)}</li>" for n, now in c.added]
    items += [f"<li>{name(n)}: gone (was {tag(before)})</li>" for n, before in c.removed]
    listed = f'<ul class="changes">{"".join(items)}</ul>' if items else ""
    brief = (f"{len(c.changed)} changed, {len(c.added)} new, {len(c.removed)} gone; score "
             f"{score_text(c.score_before)} then, {score_text(c.score_now)} now")
    return (f'<section id="compare"><details class="heading"><summary><h2>Changes since the '
            f"earlier report: {esc(brief)}</h2></summary><p>{esc(c.head())}</p>{listed}"
            "</details></section>")


def _operators(campaign: Campaign) -> str:
    mass = f"{campaign.settings.mass:.0%}"
    rows = "".join(
        f"<tr><td>{esc(o['mutation'])}</td><td>{o['mutants']}</td>"
        + "".join(f"<td>{o['counts'][outcome]}</td>" for outcome in OUTCOMES)
        + f"<td>{score_text(o['score'])}</td><td>{esc(curve.describe_brief())}</td></tr>"
        for o, curve in zip(campaign.operators(), campaign.curves, strict=True))
    return ('<section id="operators"><h2>Per operator</h2><div class="scroll-x">'
            '<table class="data" id="operator-table"><thead><tr>'
            "<th>operator</th><th>mutants</th>"
            + "".join(f"<th>{esc(o)}</th>" for o in OUTCOMES)
            + f"<th>score [{mass} interval]</th><th>smallest killed magnitude [{mass} "
            f"interval]</th></tr></thead><tbody>{rows}</tbody></table></div>"
            '<p class="note">Each operator\'s mutants by outcome, its mutation score (of its '
            "own mutants) and where its kill probability crosses 1/2 between the magnitudes "
            'tested: <a href="#curves">its figure</a>.</p></section>')


def _curves(campaign: Campaign, figures: dict) -> str:
    mass = f"{campaign.settings.mass:.0%}"
    cards = []
    for i, curve in enumerate(campaign.curves):
        if not curve.magnitudes:
            cards.append(f'<figure class="card"><figcaption><b>{esc(curve.mutation)}</b>: no '
                         "analysed magnitude</figcaption></figure>")
            continue
        excluded = (f"; not fitted: {esc(', '.join(curve.excluded))} (flagged or not analysed)"
                    if curve.excluded else "")
        alt = f"kill probability against the magnitude of {curve.mutation}"
        cards.append(f'<figure class="card">{_img(figures[("operator", i)], alt)}'
                     f"<figcaption><b>{esc(curve.mutation)}</b>: {esc(curve.describe_threshold())}"
                     f"{excluded}</figcaption></figure>")
    key = ("In each figure: dots, each magnitude's posterior mean with its "
           f"{mass} interval; solid line, their isotonic fit; dashed, the kill probability "
           "1/2; dotted, the healthy population against itself; orange, the smallest killed "
           "magnitude: a thick segment on the dashed line between the two tested magnitudes "
           f"where the fit crosses it (nothing was trained between them), shaded its {mass} "
           "interval (categories have no order and no fit).")
    return ('<section id="curves"><h2>Kill probability against the magnitude</h2>'
            f'<p>{esc(key)}</p><div class="cards">{"".join(cards)}</div></section>')


def _overview(campaign: Campaign, figures: dict) -> str:
    shapes = {"o": "●", "s": "■", "D": "◆", "X": "✖"}
    marks = {o: shapes[OUTCOME_MARKERS[o]] for o in OUTCOME_MARKERS}
    key = "".join(f"<li>{tag(o)} {marks.get(o, '(a label)')}</li>" for o in OUTCOMES)
    parts = overview_parts(campaign)
    images = "".join(
        '<figure class="card">' + _img(figures[("overview", j)], "posterior mean and interval "
                                       "of " + ", ".join(campaign.mutants[i].name for i in part)
                                       + ", marked by outcome") + "</figure>"
        for j, part in enumerate(parts))
    return ('<section id="overview"><h2>Every mutant at a glance</h2><p>Each mutant\'s '
            f"posterior mean and {campaign.settings.mass:.0%} interval of its kill "
            "probability, in the campaign's order (the table's first order), one figure per "
            "operator (a long one in parts, each with its axis); its outcome by colour and "
            f'by marker:</p><ul class="key">{key}</ul><div class="cards">{images}</div>'
            "</section>")


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


def _symptom(m: MutantSummary) -> str:
    """The symptom, with the test behind it where it tested the accuracies (not the kill
    test: the two can differ)."""
    if m.symptoms is None:
        return ""
    a = m.symptoms.accuracy_change
    return m.symptoms.symptom + (f" ({a.test} p {a.p_value:.3g})" if a is not None else "")


def _cells(index: int, m: MutantSummary, rank: int) -> list[tuple[str, str]]:
    p, t, v = m.posterior, m.test, m.verdict
    n = ("no file yet" if not m.count.exists else f"{m.count.instances}"
         + (f" / {m.count.target}" if m.count.complete is False else ""))
    remarks = "; ".join(dict.fromkeys([*m.remarks, *(brief(n) for n in m.notes)]))
    return [
        (f'<a href="#{anchor(index, m.name)}">{breakable(m.name)}</a>', str(rank)),
        (esc(n), sort_value(m.count.instances)),
        (fmt(p and p.mean), sort_value(p and p.mean)),
        (f"[{p.ci_low:.3f}, {p.ci_high:.3f}]" if p else "", sort_value(p and p.ci_low)),
        (fmt(p and p.ratio, ".4g"), sort_value(p and p.ratio)),
        (esc(m.decision), m.decision),
        (fmt_p(t and t.p_value), sort_value(t and t.p_value)),
        (fmt(t and t.effect_size, ".3f"), sort_value(t and t.effect_size)),
        (esc(v["verdict"]) if v else "", v["verdict"] if v else ""),
        (fmt(v and v["p_killed"], ".2f"), sort_value(v and v["p_killed"])),
        (tag(m.outcome), m.outcome),
        (esc(remarks), remarks),
        (esc(_symptom(m)), m.symptoms.symptom if m.symptoms else "")]


def _table(campaign: Campaign) -> str:
    labels = {"interval": f"{campaign.settings.mass:.0%} interval"}
    head = "".join(f'<th data-type="{kind}" data-key="{slug(name)}" scope="col">'
                   f"{esc(labels.get(name, name))}</th>" for name, kind in COLUMNS)
    ranks = _natural_order(campaign)
    rows = []
    for index, m in enumerate(campaign.mutants):
        cells = _cells(index, m, ranks[m.name])
        search = " ".join([m.name, m.mutation, m.magnitude, m.decision, m.outcome, *m.flags,
                           m.symptoms.symptom if m.symptoms else ""]).lower()
        rows.append(f'<tr data-outcome="{slug(m.outcome)}" data-search="{esc(search)}">'
                    + "".join(f'<td data-value="{esc(value)}">{shown}</td>'
                              for shown, value in cells) + "</tr>")
    counts = campaign.counts
    boxes = "".join(f'<label><input type="checkbox" value="{slug(o)}"> {tag(o)} '
                    f"({counts[o]})</label>" for o in OUTCOMES)
    return ('<section id="mutants"><h2>Mutants</h2><div class="controls needs-js">'
            '<input id="filter" type="search" placeholder="filter: words of the name, '
            'operator, decision, flags, symptom" aria-label="filter the mutants">'
            f'<fieldset id="outcomes"><legend>show only</legend>{boxes}</fieldset>'
            '<span id="shown" aria-live="polite"></span></div>'
            '<noscript><p class="note">JavaScript is off: the table cannot be sorted or '
            "filtered here; it lists the mutants in the campaign's order, and each mutant's "
            "figure, which the page's script draws, is not shown.</p></noscript>"
            '<div class="scroll"><table id="mutant-table" class="data"><thead><tr>'
            f'{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
            '<p class="note"><span class="needs-js">Click a column\'s header to sort by it '
            "(again: the other way); the view (filter and order) is kept in the page's "
            "address, to share. </span>n shows instances / target where a population is "
            "short; test p is the kill test's (the criterion's, on the whole populations), "
            "the symptom's p another test's; remarks are what to know beside the verdict "
            "(each mutant's section has them too).</p>"
            "</section>")


#: The size of a mutant's figure on the page (CSS px; :data:`probmut.plots.STYLE`'s width).
POSTERIOR_SIZE = (346, 210)


def _posterior(index: int, m: MutantSummary) -> str:
    """The place of a mutant's figure, which the page's script draws there from its data
    (:func:`~probmut.report.figures.posterior_data`) when it comes into view."""
    width, height = POSTERIOR_SIZE
    return (f'<div class="posterior" data-figure="{index}" role="img" aria-label="bagged '
            f'posterior of the kill probability of {esc(m.name)}" style="width:{width}px;'
            f'height:{height}px"><span class="needs-js">drawing…</span></div>')


def _mutant(index: int, m: MutantSummary, campaign: Campaign) -> str:
    from probmut.killtest.criteria import CRITERIA

    rows = [("operator", f"{esc(m.mutation)} at magnitude {esc(m.magnitude)}"
                         + (" (model-level: paired with the healthy instances)" if m.paired
                            else "")),
            ("instances", f"{m.count.instances} in <code>{esc(m.count.file)}</code>"
                          + ("" if m.count.exists else " (no file yet)")
                          + ("" if m.count.target is None else f" (target {m.count.target}"
                             + (", SHORT" if m.count.complete is False else "") + ")")
                          + f"; {m.usable} usable"),
            ("flags", esc(", ".join(m.flags)) if m.flags else "none")]
    figure = ""
    p = m.posterior
    remarks = ("remarks", "<ul class=\"remarks\">" + "".join(
        f"<li>{esc(r)}</li>" for r in (*m.remarks, *m.notes)) + "</ul>") if (
            m.remarks or m.notes) else None
    if p is None:
        why = {"missing": "no population file yet (the run has not written it)",
               "empty": "no instance yet (the file holds only its header: the run stopped "
                        "before one finished)",
               "failed": "every instance failed (see the symptoms)",
               "too few": f"fewer usable instances than the sample size k = "
                          f"{campaign.settings.sample} (lower it, or train more)"}.get(
                              m.status, m.status)
        rows.append(("analysis", f"<b>not analysed</b>: {esc(why)}"))
        if remarks:
            rows.append(remarks)
    else:
        figure = _posterior(index, m)
        base = m.baseline
        paired = " paired by instance id," if m.paired else ""
        rows += [("bagged posterior", f"mean <b>{p.mean:.4f}</b>, {campaign.settings.mass:.0%} "
                                      f"interval [{p.ci_low:.3f}, {p.ci_high:.3f}], "
                                      f"Beta({p.alpha:.4g}, {p.beta:.4g})"),
                 ("decision", f"ratio {fmt(p.ratio, '.6g')} (H_sound {p.h_sound:.5f}, H_mutant "
                              f"{p.h_mutant:.5f}) → <b>{esc(m.decision)}</b>; P(above the "
                              f"baseline) {fmt(p.p_above_baseline, '.3f')} (the baseline: "
                              f"healthy vs healthy,{paired} mean {base.mean:.4f})")]
        if m.verdict:
            rows.append(("verdict", f"<b>{esc(m.verdict['verdict'])}</b>: "
                                    f"{esc(m.verdict['message'])}"))
        if remarks:
            rows.append(remarks)
        t = m.test
        rows.append(("kill test, whole populations",
                     f"{esc(CRITERIA[t.kind].test)}, {t.n_healthy} healthy vs {t.n_mutant} "
                     "mutant instances: p "
                     f"{fmt_p(t.p_value)}, effect {fmt(t.effect_size, '.4f')} → <b>"
                     f"{'killed' if t.killed else 'not killed'}</b> (killed iff "
                     f"{esc(t.criterion)})"))
    if m.symptoms is not None:
        s, a = m.symptoms, m.symptoms.accuracy_change
        text = (f"<b>{esc(s.symptom)}</b>: {s.instances} instances, {s.crashed} crashed, "
                f"{s.timed_out} timed out, {s.diverged} diverged, {s.constant} constant")
        if a is not None:
            text += (f"; accuracy {a.mean_healthy:.4f} → {a.mean_mutant:.4f} "
                     f"({esc(a.test)} p {fmt_p(a.p_value)}: the symptom's test, not the "
                     "kill test)")
        if s.time_change is not None:
            text += (f"; training time ×{fmt(s.time_change.ratio, '.2f')} (p "
                     f"{fmt_p(s.time_change.p_value, '.3g')})")
        text += "".join(f"<br><code>{esc(error)}</code>" for error in s.errors[:3])
        rows.append(("symptoms", text))
    extra = _rounds(m) + _inputs(m)
    return (f'<section class="mutant" id="{anchor(index, m.name)}"><h3>{esc(m.name)} '
            f"{tag(m.outcome)}</h3>"
            f'<div class="pair">{figure}{facts(rows)}</div>{extra}'
            '<p class="back"><a href="#mutants" class="back-to-table">back to the table</a>'
            "</p></section>")


def _rounds(m: MutantSummary) -> str:
    if not m.rounds:
        return ""
    rows = "".join(
        f"<tr><td>{esc(r.get('round'))}</td><td>{esc(r.get('instances'))}</td>"
        f"<td>{esc(r.get('verdict'))}</td><td>{fmt(r.get('p_killed'), '.2f')}</td>"
        f"<td class=\"wrap\">{esc(r.get('message', ''))}</td></tr>" for r in m.rounds)
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
        f"<td>{i.mutant_correct[j]:.3f}</td><td>{fmt_p(i.p_values[j], '.3g')}</td></tr>"
        for j in killers[:show])
    table = ('<div class="scroll-x"><table class="data"><thead><tr><th>input</th><th>label'
             '</th><th>healthy correct</th><th>mutant correct</th><th>Fisher p</th></tr>'
             f"</thead><tbody>{rows}</tbody></table></div>") if killers else (
                 "<p>no input kills it</p>")
    return (f"<details open><summary>per-input killing</summary><p>killed classes "
            f"(DeepMutation, majority): {esc(list(i.killed_classes) or 'none')}; "
            f"{i.majority_killers.size} inputs kill by majority, {i.statistical_killers.size} "
            f"by Fisher's test (per-input alpha {i.alpha_per_input:.3g}; "
            f"smallest p {fmt_p(i.smallest_p, '.3g')}): "
            f"<b>{'killed' if i.statistically_killed else 'not killed'}</b>"
            + (f"; the {show} with the smallest p:" if len(killers) > show else "")
            + f"</p>{table}</details>")


def _coverage(campaign: Campaign) -> str:
    c = campaign.coverage
    if not c:
        return ""

    def summary(key):
        value = c.get(key) or {}
        return f"mean {fmt(value.get('mean'), '.4f')}, sd {fmt(value.get('sd'), '.4f')}"

    rows = [("layer", esc(c.get("layer"))), ("test inputs", esc(c.get("test_inputs"))),
            (f"IDC (m = {c.get('neurons')})", summary("idc")), ("NC", summary("nc")),
            ("KMNC", summary("kmnc")), ("TKNC", summary("tknc"))]
    correlation = c.get("correlation")
    if correlation:
        rows.append(("coverage against killing",
                     f"Kendall's tau {fmt(correlation.get('tau'), '.3f')} "
                     f"[{fmt(correlation.get('ci_low'), '.3f')}, "
                     f"{fmt(correlation.get('ci_high'), '.3f')}], p "
                     f"{fmt_p(correlation.get('p_value'), '.3g')}, "
                     f"{esc(correlation.get('subsets'))} subsets of "
                     f"{esc(correlation.get('subset_size'))} inputs"))
    if c.get("answer"):
        rows.append(("answer", esc(c["answer"])))
    return ('<section id="coverage"><h2>Coverage</h2><p>Importance-driven coverage of the '
            "healthy instances (probmut coverage).</p>" + facts(rows) + "</section>")


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
         "means against the magnitude, weighted by their precisions, reaches 1/2: between "
         "two tested magnitudes, the last not killed and the first killed (nothing is known "
         "of the curve between them, so no point inside is given); the interval repeats the "
         "fit on posterior draws and spans their gaps whole."),
        ("flagged", "equivalent or broken mutants (probmut train's checks): listed, left out "
         "of the score and the fits; survivors stay in."),
        ("outcome", "the mutant's category in the counts: flagged, not analysed, or its "
         "verdict."),
        ("needed per side", "the instances per side at which a verdict would be settled with "
         "probability 0.8 if the mutant is as its instances show (probmut recommend)."),
    ]
    return ('<section id="definitions"><h2>Definitions</h2><dl>' + "".join(
        f"<dt>{esc(term)}</dt><dd>{esc(text)}</dd>" for term, text in items)
        + "</dl><p>The full definitions: docs/report.md in probmut.</p></section>")




#: What the lines of each mutant's figure are.
POSTERIOR_KEY = ("In each mutant's figure (its Figure 3, drawn by the page when shown): faint "
                 "grey, the posteriors of its bootstrap resamples; dashed black, their "
                 "mixture, the bagged posterior; blue, its Beta summary, shaded over its "
                 "interval, which the bar on the axis marks too; dotted blue, its mean.")


def page_data(campaign: Campaign) -> str:
    """The page's data as JSON safe inside its script element: what a later comparison
    reads (:meth:`~probmut.campaign.Campaign.record`) and what the page's script draws
    each analysed mutant's figure from (:func:`~probmut.report.figures.posterior_data`),
    by the mutant's index."""
    import json

    data = {"campaign": campaign.record(),
            "figures": {str(i): posterior_data(m) for i, m in enumerate(campaign.mutants)
                        if m.posterior is not None}}
    text = json.dumps(data, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def render_html(campaign: Campaign, *, command: str | None = None,
                created: datetime.datetime | None = None, jobs: int | None = None,
                identity: str | None = None, figures: dict | None = None) -> str:
    """The campaign as one self-contained HTML document (see the module notes).

    ``command`` is what produced it (shown in the header line), ``created`` when
    (default: now, in UTC); ``identity`` the campaign it records (:func:`campaign_id`);
    ``figures`` its matplotlib images as :func:`draw_figures` gives them (drawn here by
    ``jobs`` processes when not given).
    """
    created = created or datetime.datetime.now(datetime.UTC)
    figures = figures or draw_figures(campaign, jobs)
    details = "".join(_mutant(i, m, campaign) for i, m in enumerate(campaign.mutants))
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="probmut {esc(__version__)}">'
        + (f'<meta name="probmut-campaign" content="{esc(identity)}">' if identity else "")
        + f"<title>probmut report: {esc(campaign.model)}</title>"
        f"<style>{style_sheet()}</style></head><body>"
        f"{_header(campaign, command, created)}{_summary(campaign)}{_next_steps(campaign)}"
        f"{_compare(campaign)}{_operators(campaign)}{_table(campaign)}"
        f"{_curves(campaign, figures)}{_overview(campaign, figures)}{_facts(campaign)}"
        f'<section id="details"><h2>Each mutant</h2><p>{esc(POSTERIOR_KEY)}</p>{details}'
        f"</section>{_coverage(campaign)}{_definitions(campaign)}"
        f'<script type="application/json" id="{EMBEDDED}">{page_data(campaign)}</script>'
        f"<script>{SCRIPT}</script></body></html>\n")
