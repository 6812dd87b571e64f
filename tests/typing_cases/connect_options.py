"""connect()'s options are real keyword parameters: a misspelt one fails type checking."""

from acplink import PermissionPolicy, connect


async def main() -> None:
    async with connect(["my-agent"], permission=PermissionPolicy.allow_all(), fs=False, debug=True) as client:
        print(client.agent_info)
    async with connect(["my-agent"], permision=PermissionPolicy.allow_all()) as client:  # error
        print(client.agent_info)
    await connect(["my-agent"], terminal="yes")  # error
