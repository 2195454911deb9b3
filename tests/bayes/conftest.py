"""Shared by the tests of probmut.bayes: the short sampler settings most tests run."""

from probmut.bayes.settings import BayesSettings

#: Two chains of 500 draws after 500 tuning steps, one core: enough for the checks here.
SHORT = BayesSettings(draws=500, tune=500, chains=2, cores=1)
