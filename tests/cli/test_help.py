"""Every subcommand has --help with an example; `acplink` alone prints the help."""

from __future__ import annotations

import argparse

import pytest
from cliutil import Cli

from acplink.cli.main import build_parser, main


def _subcommands() -> list[str]:
    parser = build_parser()
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sorted(actions[0].choices)


def test_known_subcommands_are_registered() -> None:
    assert {"chat", "prompt", "demo-agent"} <= set(_subcommands())


@pytest.mark.parametrize("name", _subcommands())
def test_subcommand_help_has_an_example(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([name, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: acplink " + name)
    assert "example" in out.lower()
    assert "acplink " + name in out.split("example", 1)[1]  # the example shows the command itself


def test_no_arguments_prints_help(cli: Cli) -> None:
    proc = cli.call()
    assert proc.returncode in (0, 2)
    assert "usage: acplink" in proc.stdout
    for name in ("chat", "prompt", "demo-agent"):
        assert name in proc.stdout
    assert "Traceback" not in proc.stderr


def test_version_and_module_entry_point(cli: Cli) -> None:
    proc = cli.call("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("acplink ")


def test_usage_error_is_short(cli: Cli) -> None:
    proc = cli.call("prompt")  # the text is missing
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert "error:" in proc.stderr
