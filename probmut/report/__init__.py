"""A campaign as one self-contained HTML page (``probmut report``).

:func:`render_html` turns a :class:`probmut.campaign.Campaign` into one HTML document
that opens from disk with no network: its styles, its script and its data are inline,
its matplotlib figures SVG data URIs (sharp at any zoom), and it links only to its own
sections. It holds, in this order (the first screen: the score, the operators and the
start of the table, however large the campaign)

1. a header line saying what produced it (probmut version, the command as given, date,
   seed);
2. the summary: the campaign's status (complete, or unfinished with every short
   population, "0 of N" for one not started; a long list folded), the mutation score
   with its interval and below it the share decided killed, the counts of killed / not
   killed / not settled / flagged / not analysed mutants;
3. the next steps, folded behind their counts: every unsettled or unanalysed mutant
   (alike ones in one row) with the instances per side that would settle it, and the
   ``probmut train ... --until-settled`` command;
4. what changed since an earlier report (``--compare``), folded behind its counts and
   both scores;
5. per operator, its counts, its score and its smallest killed magnitude;
6. a table of the mutants, sortable (its headers are buttons) and filterable (words,
   several outcomes), the view (and its order) kept in the URL's hash, each row linked
   to its mutant's section;
7. per operator, the kill probability against the magnitude
   (:func:`probmut.plots.plot_kill_curve`), and every mutant at a glance
   (:func:`probmut.plots.plot_campaign`, one figure per operator, outcomes by colour and
   marker);
8. the campaign's model, data, populations, failures, settings, seed and baselines;
9. each mutant's section: its Figure 3 posterior, drawn by the page's script from the
   data the page embeds when it comes into view (as :func:`probmut.plots.plot_posterior`
   draws it), the decision, the verdict and right after it what to know about it (a
   short population, a disagreement between test, decision and verdict, a symptom from
   another test, its warnings), the kill test on the whole populations, and where the
   run has them, its symptoms, the rounds of a run trained until settled and its
   per-input killing;
10. the coverage result, when there is one, and the definitions of the numbers.

Without JavaScript the page reads the same but for the mutants' figures; the controls
that need it are hidden and a note says so. Every text that comes from files (names,
descriptions, messages) is escaped. The page records which campaign it belongs to
(:func:`campaign_id`), so that :func:`write_report` never replaces the page of another
campaign, and embeds what a later ``--compare`` reads
(:meth:`probmut.campaign.Campaign.record`).

The package's modules: :mod:`~probmut.report.figures` (the figures and the mutants'
figure data), :mod:`~probmut.report.sections` (the page's sections and the page),
:mod:`~probmut.report.text` (formatting), :mod:`~probmut.report.assets` (style sheet and
script) and :mod:`~probmut.report.page` (the page's file).
"""

from probmut.report.figures import KINDS, Drawing, Image, draw_figures, figure_keys, image_of
from probmut.report.page import campaign_id, check_replaceable, write_report
from probmut.report.sections import brief, render_html
from probmut.report.text import anchor

__all__ = ["KINDS", "Drawing", "Image", "anchor", "brief", "campaign_id", "check_replaceable",
           "draw_figures", "figure_keys", "image_of", "render_html", "write_report"]
