"""The one exception type users see for bad input, and its exit code."""

EXIT_BAD_INPUT = 2


class ProbmutError(Exception):
    """Bad input or an impossible request, with a message that says what to do.

    The command line prints the message (no traceback) and exits with code 2.

    Examples
    --------
    >>> raise ProbmutError("healthy.csv: no accuracies found")
    Traceback (most recent call last):
    ...
    probmut.errors.ProbmutError: healthy.csv: no accuracies found
    """
