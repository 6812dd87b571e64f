"""The ACP agent registry: agents launched by id.

``Registry`` reads ``registry.json`` (the official one, ``$ACPLINK_REGISTRY``, or a URL or
file given), caches it (``ETag``), validates it against the registry's schema, and turns an
agent id into a :class:`Launch`: the command line and environment that start the agent (a
binary for this platform, downloaded, checked against its sha256 and unpacked into the
per-user cache; or its ``npx`` / ``uvx`` package). ``connect(agent_id="...")`` and
``acplink chat|prompt --agent ID`` use it; ``acplink agents`` manages it. See docs/registry.md.

A layer below ``client/`` (which imports it) and above ``transports/``; it starts no process.
"""

from __future__ import annotations

from ._archive import ArchiveLimits
from ._fetch import default_cache_dir
from ._registry import DEFAULT_REGISTRY, ENV_REGISTRY, Launch, Registry, RegistryAgent, platform_key

__all__ = ["DEFAULT_REGISTRY", "ENV_REGISTRY", "ArchiveLimits", "Launch", "Registry", "RegistryAgent",
           "default_cache_dir", "platform_key"]
