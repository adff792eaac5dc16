"""The studies that reproduce the paper's figures, one module each, shipped with the
package: ``tmhw scenario --list`` names them and ``tmhw scenario NAME`` runs one.

Each module ``NAME.py`` is the whole study, top to bottom: its grid, its runs, its
tables and its figures, in one function ``study(st)`` over a ``tmhw.studies.Study``.
A new module here that defines ``study`` is a new scenario (a name starting with ``_``
is not one). From a checkout, ``python scenarios/NAME.py`` runs the same function.
``capacity_grid.toml`` is an example grid for ``tmhw sweep``.
"""
