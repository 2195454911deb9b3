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

The package's modules: :mod:`~probmut.report.figures` (drawing the figures),
:mod:`~probmut.report.sections` (the page's sections and the page),
:mod:`~probmut.report.text` (formatting), :mod:`~probmut.report.assets` (style sheet and
script) and :mod:`~probmut.report.page` (the page's file).
"""

from probmut.report.figures import KINDS, Drawing, Image, draw_figures, figure_keys, image_of
from probmut.report.page import campaign_id, check_replaceable, write_report
from probmut.report.sections import brief, render_html
from probmut.report.text import anchor

__all__ = ["KINDS", "Drawing", "Image", "anchor", "brief", "campaign_id", "check_replaceable",
           "draw_figures", "figure_keys", "image_of", "render_html", "write_report"]
