"""The one error base of torchpulse.

Every error a user can cause (a bad flag value, a malformed file, an unknown name, a commit
that is not on the branch) or that a tool torchpulse drives reports back (git, asv publish)
is a ``TorchpulseError``: the command line prints its message as one line on stderr and exits
with 2, never with a traceback. Standard library only, so that every layer can raise it.
"""


class TorchpulseError(Exception):
    """Reported in one line, exit code 2; the message says what is wrong and, where it can,
    what to do about it."""
