"""Start an agent of the ACP registry by its id and send it one prompt.

    python examples/registry_client.py                        # list the registry's agents
    python examples/registry_client.py gemini "hello"         # run one (npx, uvx or a binary)
    ACPLINK_REGISTRY=./registry.json python examples/registry_client.py my-agent "hi"

A binary is downloaded into the per-user cache (``$ACPLINK_CACHE_DIR``) once, checked against
the sha256 the registry gives, and unpacked there; the registry itself is cached with its ETag.
"""

import asyncio
import sys

from acplink import Registry, RegistryError, connect


async def ask(registry: Registry, agent_id: str, text: str) -> None:
    async with connect(agent_id=agent_id, registry=registry, stderr="capture") as client:
        info = client.agent_info
        print(f"[{agent_id}: {info.name if info else '?'}]")
        session = await client.new_session(".")
        print(await session.prompt(text).text())


def main() -> int:
    registry = Registry()  # $ACPLINK_REGISTRY, else the official registry
    try:
        if len(sys.argv) < 3:
            for agent in registry.agents():
                print(f"{agent.id}: {agent.name} {agent.version} ({', '.join(agent.kinds()) or 'not here'})")
            return 0
        asyncio.run(ask(registry, sys.argv[1], sys.argv[2]))
    except RegistryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
