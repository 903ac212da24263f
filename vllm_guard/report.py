"""The only module that imports rich: every table, bar and verdict is rendered here."""

from __future__ import annotations

from typing import TextIO

from rich.console import Console

from vllm_guard.plan import LaunchPlan


def _console(stream: TextIO) -> Console:
    return Console(file=stream, highlight=False, soft_wrap=True)


def print_plan(plan: LaunchPlan, stream: TextIO) -> None:
    """The command line and the environment changes a launch would use (secrets masked)."""
    c = _console(stream)
    c.print("[bold]command[/bold]")
    c.print(plan.command_line(), markup=False)
    c.print("[bold]environment[/bold]")
    for key, value in plan.redacted_env_set().items():
        c.print(f"  {key}={value}", markup=False, end="")
        c.print(f"  [dim]# {plan.env_reasons.get(key, '')}[/dim]")
    for key in plan.env_unset:
        c.print(f"  unset {key}", markup=False, end="")
        c.print("  [dim]# the guard's own variable[/dim]")
