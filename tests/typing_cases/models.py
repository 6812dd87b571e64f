"""The models take their attribute names (or, all of them, the wire names) as keywords."""

from acplink import schema

diff = schema.Diff(path="/a.py", old_text="old", new_text="new")
new_file = schema.Diff(path="/a.py", new_text="new")
option = schema.PermissionOption(option_id="ok", name="Allow", kind="allow_once")
wire = schema.PermissionOption(optionId="ok", name="Allow", kind="allow_once", _meta={"x": 1})
chunk = schema.AgentMessageChunk(content=schema.TextContent(text="hi"), message_id="m1")
old_text: str | None = diff.old_text
unknown = schema.UnknownContentBlock(type="_custom", value=1)

schema.Diff(path="/a.py", old_txt="old", new_text="new")  # error
schema.Diff(path="/a.py", old_text="old")  # error
schema.PermissionOption(option_id="ok", name="Allow", kind="allow_sometimes")  # error
schema.PermissionOption(option_id=1, name="Allow", kind="allow_once")  # error
