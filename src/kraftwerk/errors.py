"""The root of every error kraftwerk raises on purpose; each layer derives its own family."""


class KraftwerkError(Exception):
    """A failure with a message meant for the operator (the CLI prints it, never a traceback)."""
