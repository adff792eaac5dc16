"""Placement tables and the policies that build them (TM-Training and its baselines)."""

from tmhw.placement.base import Feedback, PlanContext, Policy
from tmhw.placement.registry import POLICIES, make_policy
from tmhw.placement.table import Action, Move, PlacementTable

__all__ = ["Action", "Feedback", "Move", "POLICIES", "PlacementTable", "PlanContext",
           "Policy", "make_policy"]
