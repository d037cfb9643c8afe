"""Failures whose message is the whole story, so a job reports them without a traceback."""


class ActionableError(Exception):
    """The user can act on the message alone: licensed data to obtain, a malformed input file to fix."""
