"""connect()'s options are real keyword parameters: a misspelt one fails type checking."""

from acplink import PermissionPolicy, connect


async def main() -> None:
    async with connect(["my-agent"], permission=PermissionPolicy.allow_all(), fs=False, debug=True) as client:
        print(client.agent_info)
    async with connect(["my-agent"], permision=PermissionPolicy.allow_all()) as client:  # error
        print(client.agent_info)
    await connect(["my-agent"], terminal="yes")  # error
    async with connect(["my-agent"], resume="sess_1", recover=True) as client:
        session = client.resumed  # a Session, or None
        if session is not None and client.recovery is not None:
            report = await client.recovery.wait()
            print(session.session_id, report.lost if report is not None else [])
        print(client.resumed.session_id)  # error
    await connect(["my-agent"], recover="always")  # error
    await connect(["my-agent"], resume=42)  # error
