"""A mutation-testing campaign in one answer: every mutant of one model, how sure each
kill decision is, the campaign's mutation score with its uncertainty, and per operator
the smallest killed magnitude (what ``probmut report`` shows; :mod:`probmut.report`
renders it as one HTML page).

**Mutation score.** Each mutant m has a kill probability pi_m: the chance that one
k-vs-k kill test (DeepCrime's by default) on random instances kills it, with its bagged
posterior (METHOD.md section 3: B resample posteriors ``Beta(s_mb + 1, N - s_mb + 1)``,
equally weighted). The mutation score is the share of the mutants that such a test
kills, in expectation::

    score = (1 / M) * sum over m of pi_m

over the M mutants that are analysed and not flagged (flagged ones, equivalent or
broken, are listed and left out; survivors stay in). Its posterior comes from joint
draws of the pi_m (:func:`posterior_draws`): a draw picks one bootstrap resample b and
draws every pi_m from its b-th resample posterior. All mutants of a model are analysed
with the same seed, so resample b holds the same healthy resample for each of them
(common random numbers): a draw keeps the correlation the shared healthy population
gives their kill probabilities. ``mean`` is the posterior mean, computed exactly (the
average of the mixtures' means: with the default moment-matched Beta fit, the average of
the posterior means the tables show); ``ci_low, ci_high`` the equal-tailed 95% interval
of the draws. Beside it, ``decided``: the plain share of the same mutants decided killed
(ratio above the threshold, METHOD.md section 4).

**Smallest killed magnitude.** For an operator whose magnitudes are numbers (or
``A_B`` pairs of numbers of which one varies, as weights_fuzzing's ``0.05_1``), the
posterior means of the kill probability against the magnitude are fitted by isotonic
(monotone) regression, weighted by the posteriors' precisions, increasing or decreasing
as the means' rank correlation with the magnitude says (increasing on a tie). The
smallest killed magnitude is where the fit reaches ``killed_at`` (1/2: a k-vs-k test
kills more often than not; for a posterior symmetric around 1/2 the Hellinger ratio is
exactly 1, so this matches the decision rule); a decreasing fit gives the largest killed
magnitude instead. Nothing is known of the curve between two tested magnitudes, so the
answer is the **gap** between the two tested magnitudes where the fit crosses (the last
not killed and the first killed), not a point inside it. Its 95% interval repeats the
fit, unweighted, on joint posterior draws of the kill probabilities (as for the score):
each draw's crossing lies somewhere in its own gap, and the interval runs from the
2.5% quantile of the gaps' lower ends to the 97.5% quantile of their upper ends, so that
it holds wherever in its gap the curve crosses (it spans at least the whole gap). A
crossing below the smallest tested magnitude (killed at every one) or above the largest
(killed at none) is reported as such (``-inf``/``inf`` in the numbers, with its share of
the draws).

**Verdicts.** Each mutant also gets the verdict of :func:`probmut.recommend.recommend`
on its instances: ``killed``, ``not killed`` or ``not settled`` (the decision a
population of 200 fresh instances per side would reach, predicted with probability at
least 0.95, the uncertainty of the instances at hand included). The summary counts
these verdicts; the plain decision of every mutant is in its row.

**Per operator** (:meth:`Campaign.operators`): its mutants' outcomes and the score of its
own analysed, unflagged mutants, computed as the campaign's.

**Next steps** (:meth:`Campaign.next_steps`): every mutant whose verdict is not settled,
or that could not be analysed, with the instances per side that would settle it
(recommend's ``needed``) and a ``probmut train ... --until-settled`` command from the
settings its run recorded, naming the run by its full path. **Changes**
(:attr:`Campaign.comparison`): the outcomes that differ from an earlier report's (its
JSON document or its page), of the same model, analysis settings, kind of outcomes and
seed (another is refused: :mod:`~probmut.campaign.compare`).

**The seed.** A run's campaign is analysed with the seed the run recorded (``train
--seed``, in its ``.work/settings.json``) unless another is given, so that its numbers
are those its rounds computed; populations of no run take the default seed, 42.

**Completeness.** A population holding fewer instances than its run's target is short,
and the campaign is then unfinished, never reported as complete. The targets are the
manifest's ``targets`` table, which ``probmut train`` records before it trains anything
(and again at every round of ``--until-settled``, where mutants stop at different sizes):
the same targets every reader checks (:func:`probmut.io.completeness.check_complete`). A
population not written yet, or holding only its header (a run stopped before any of its
instances finished), is "0 of N" and its mutant not analysed: never an error. A
manifest without targets (the bundled data, one written by hand) cannot say whether a
population is short: its completeness is unknown, and the summary says so.

Examples
--------
>>> import numpy as np
>>> from probmut.bagging import PosteriorSettings, study_from_kill_counts
>>> study = study_from_kill_counts(np.full(50, 5), [np.full(50, 90), np.full(50, 10)],
...                                ["healthy", "a", "b"], PosteriorSettings(bootstraps=50))
>>> score = mutation_score(study.populations[1:], seed=1)
>>> round(score.mean, 4), score.decided      # (91/102 + 11/102) / 2; one of two decided killed
(0.5, 0.5)

The package's modules: :mod:`~probmut.campaign.score` (joint draws, the score and its
variance), :mod:`~probmut.campaign.curve` (the kill curve), :mod:`~probmut.campaign.summary`
(the result types), :mod:`~probmut.campaign.next_steps`, :mod:`~probmut.campaign.compare`
(against an earlier report) and :mod:`~probmut.campaign.analyse` (reading the manifest's
populations and analysing them).
"""

from probmut.campaign.analyse import summarize_campaign, with_verdicts
from probmut.campaign.compare import Comparison, compare_reports
from probmut.campaign.curve import (
    KILLED_AT,
    KillCurve,
    first_killed,
    isotonic,
    kill_curve,
    magnitude_values,
)
from probmut.campaign.next_steps import ROUND, NextStep, NextSteps, shown_path
from probmut.campaign.score import (
    DRAWS,
    MutationScore,
    ScoreShares,
    campaign_score,
    mutant_posterior,
    mutation_score,
    posterior_draws,
    score_shares,
)
from probmut.campaign.summary import OUTCOMES, Campaign, MutantSummary, PopulationCount

__all__ = ["DRAWS", "KILLED_AT", "OUTCOMES", "ROUND", "Campaign", "Comparison", "KillCurve",
           "MutantSummary", "MutationScore", "NextStep", "NextSteps", "PopulationCount",
           "ScoreShares", "campaign_score", "compare_reports", "first_killed", "isotonic",
           "kill_curve", "magnitude_values", "mutant_posterior", "mutation_score",
           "posterior_draws", "score_shares", "shown_path", "summarize_campaign",
           "with_verdicts"]
