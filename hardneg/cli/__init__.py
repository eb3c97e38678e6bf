"""The ``hardneg`` command line."""
