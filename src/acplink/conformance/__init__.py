"""The conformance checker: requirements (ids ↔ spec sections), checks, and the runner."""

from .probe import Options, Outcome
from .requirements import REQUIREMENTS, Requirement, requirement
from .runner import Report, run_checks, select_checks

__all__ = ["REQUIREMENTS", "Options", "Outcome", "Report", "Requirement", "requirement", "run_checks",
           "select_checks"]
