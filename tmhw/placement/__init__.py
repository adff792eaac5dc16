"""Placement tables and the policies that build them (TM-Training and its baselines).

The package imports none of its modules: import what you use from where it lives
(``tmhw.placement.base``: ``Policy``, ``PlanContext``, ``Feedback``, ``make_policy``;
``tmhw.placement.table``: ``PlacementTable``, ``Move``, ``Action``;
``tmhw.placement.registry``: ``POLICIES``), so that the config can read the registry's
list of names without loading the policies' base, which reads the config.
"""
