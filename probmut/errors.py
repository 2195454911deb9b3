"""The one exception type users see for bad input, and its exit code."""

EXIT_BAD_INPUT = 2


class ProbmutError(ValueError):
    """Bad input or an impossible request, with a message that says what to do.

    A ``ValueError``, so code that already handles bad values handles it. ``option``
    names the setting at fault (a parameter name such as ``"sample"``); the command line
    prints the message without a traceback, adds the matching flag (``--sample``) and
    exits with code 2. Library messages never name command-line flags themselves.

    Examples
    --------
    >>> raise ProbmutError("healthy.csv: no accuracies found")
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: healthy.csv: no accuracies found
    >>> ProbmutError("the sample size k must be at least 2, got 1", option="sample").option
    'sample'
    """

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option
