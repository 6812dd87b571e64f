"""The ACP v1 method registry (``acplink.schema.v1.TABLE``), under its historical names.

Other versions have their own table: ``acplink.schema.v2.TABLE``; the protocol object of a
version (``acplink.protocol.get_protocol``) carries its table.
"""

from __future__ import annotations

from ._table import Kind, MethodInfo, MethodTable, Side
from .v1 import METHODS, agent_methods, client_methods, method_info

__all__ = ["METHODS", "Kind", "MethodInfo", "MethodTable", "Side", "agent_methods", "client_methods", "method_info"]
