"""An npx distribution run for real: ``npx`` installs a package tarball (a dependency-free ACP
agent, ``npx_agent.js``) from the test's loopback server; npm's registry is pointed at the
loopback server too, so nothing reaches the internet."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from regutil import HERE, Served, agent_entry, registry_json

_SCRIPT = Path(sys.executable).parent / "acplink"
ACPLINK = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "acplink"]

pytestmark = pytest.mark.skipif(shutil.which("npx") is None or shutil.which("node") is None,
                                reason="npx (Node.js) not installed")


def _npm_tarball() -> bytes:
    """An npm package (``package/`` prefix) whose bin is npx_agent.js."""
    manifest = {"name": "loopback-agent", "version": "1.0.0", "bin": {"loopback-agent": "agent.js"}}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as t:
        for name, data, mode in (("package/package.json", json.dumps(manifest).encode(), 0o644),
                                 ("package/agent.js", (HERE / "npx_agent.js").read_bytes(), 0o755)):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            t.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_prompt_an_npx_agent_installed_from_loopback(served: Served, tmp_path: Path) -> None:
    package = served.put("/loopback-agent-1.0.0.tgz", _npm_tarball())
    body = registry_json(agent_entry("npx-agent", {"npx": {"package": package, "args": ["--acp"],
                                                           "env": {"NPX_AGENT_MODE": "registry"}}}))
    served.put("/registry.json", body, etag=f'"{hashlib.sha256(body).hexdigest()[:8]}"')
    env = {**os.environ, "ACPLINK_CACHE_DIR": str(tmp_path / "cache"), "ACPLINK_REGISTRY": served.url("/registry.json"),
           # npm: its own cache, its registry on loopback (a lookup there is a 404), no notices
           "npm_config_cache": str(tmp_path / "npm-cache"), "npm_config_registry": served.url("/npm/"),
           "npm_config_update_notifier": "false", "npm_config_audit": "false", "npm_config_fund": "false"}
    env.pop("NPX_AGENT_MODE", None)

    def prompt(environment: dict[str, str]) -> str:
        proc = subprocess.run([*ACPLINK, "prompt", "--agent", "npx-agent", "hello", "--cwd", str(tmp_path)],
                              capture_output=True, text=True, env=environment, timeout=180, check=False)
        assert proc.returncode == 0, proc.stderr
        return proc.stdout.strip()

    assert prompt(env) == 'npx agent got "hello"; args --acp; NPX_AGENT_MODE=registry'
    assert prompt({**env, "NPX_AGENT_MODE": "user"}) == 'npx agent got "hello"; args --acp; NPX_AGENT_MODE=user'
    assert served.statuses("/loopback-agent-1.0.0.tgz")[0] == 200
    assert not any(path.startswith("/npm/") and status == 200 for path, status in served.log)
