"""The ``kraftwerk`` command."""
