"""examples/registry_client.py, against a registry and an archive served on loopback."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from regutil import Served, agent_entry, binary, launcher_script, make_tar, registry_json

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "registry_client.py"


def test_the_example_lists_and_prompts_an_agent_of_the_registry(served: Served, tmp_path: Path) -> None:
    archive = make_tar({"run-agent": launcher_script()})
    body = registry_json(agent_entry("demo", binary(served.put("/demo.tgz", archive), archive)))
    served.put("/registry.json", body, etag=f'"{hashlib.sha256(body).hexdigest()[:8]}"')
    env = {**os.environ, "ACPLINK_CACHE_DIR": str(tmp_path / "cache"),
           "ACPLINK_REGISTRY": served.url("/registry.json")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, str(EXAMPLE), *args], capture_output=True, text=True, env=env,
                              cwd=tmp_path, timeout=120, check=False)

    listed = run()
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout == "demo: Test demo 1.0.0 (binary)\n"
    asked = run("demo", "hello")
    assert asked.returncode == 0, asked.stderr
    first, reply = asked.stdout.split("\n", 1)
    assert first == "[demo: acplink-demo]" and "hello" in reply.lower()
    missing = run("nope", "hi")
    assert missing.returncode == 1 and missing.stderr.startswith("error: no agent 'nope' in the registry")
