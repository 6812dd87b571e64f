"""An agent that wraps plain Python functions as tools.

Each prompt names a function and its input: ``count some words here`` or ``calc 2 * (3 + 4)``.
The agent reports a tool call (``tool_call`` → ``in_progress`` → ``completed``/``failed``)
with the input and output, then answers in text. Anything else lists the tools.

    python examples/function_agent.py        # serves ACP on stdio
"""

from __future__ import annotations

import ast
from collections.abc import Callable

from acplink import AgentApp, PromptContext, builders, run_agent

# -- the plain functions ---------------------------------------------------------------------------


def count_words(text: str) -> dict[str, int]:
    """Count the words, lines and characters of a text."""
    return {"words": len(text.split()), "lines": text.count("\n") + 1 if text else 0, "chars": len(text)}


_BINARY: dict[type[ast.operator], Callable[[float, float], float]] = {
    ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b, ast.Pow: lambda a, b: a**b, ast.Mod: lambda a, b: a % b,
}
_UNARY: dict[type[ast.unaryop], Callable[[float], float]] = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a}


def calculate(expression: str) -> float:
    """Evaluate an arithmetic expression (numbers, + - * / % ** and parentheses)."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](ev(node.operand))
        raise ValueError(f"unsupported expression: {ast.unparse(node)}")

    return ev(ast.parse(expression, mode="eval").body)


TOOLS: dict[str, Callable[[str], object]] = {"count": count_words, "calc": calculate}

# -- the agent -------------------------------------------------------------------------------------

app = AgentApp("function-agent", "1.0.0")


@app.prompt
async def prompt(ctx: PromptContext) -> None:
    name, _, arg = ctx.text.strip().partition(" ")
    fn = TOOLS.get(name)
    if fn is None:
        await ctx.send_text("Tools: " + ", ".join(f"{n} ({f.__doc__})" for n, f in TOOLS.items()))
        return
    tool = await ctx.start_tool_call(f"{fn.__name__}({arg!r})", kind="other", raw_input={"input": arg})
    await tool.update(status="in_progress")
    try:
        result = fn(arg)
    except (ValueError, SyntaxError, ZeroDivisionError, OverflowError) as exc:
        await tool.fail(raw_output={"error": str(exc)})
        await ctx.send_text(f"{fn.__name__} failed: {exc}")
        return
    text = str(result)
    await tool.complete(raw_output={"result": result}, content=[builders.tool_content(text)])
    await ctx.send_text(f"{fn.__name__} says: {text}")


if __name__ == "__main__":
    run_agent(app)
