"""A proxy that offers the agent an MCP server of its own (MCP-over-ACP), for the proxy tests."""

from acplink import ProxyApp
from acplink.mcp import McpServer

server = McpServer("proxy-tools")


@server.tool()
def echo(text: str) -> str:
    """Echo the text back, marked as the proxy's."""
    return f"proxy echoes {text}"


app = ProxyApp("mcp-proxy")
app.add_mcp_server("proxy-tools", server)

if __name__ == "__main__":
    app.run()
