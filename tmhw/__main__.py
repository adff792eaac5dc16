"""``python -m tmhw``: the ``tmhw`` command, for an environment whose scripts folder is
not on the PATH."""

from tmhw.cli import entry

entry()
