"""`explain` for people: the class, the stage, the evidence, what helps and the ladder's next step."""

from __future__ import annotations

from typing import Any, TextIO

from vllm_guard.diagnose.classify import Diagnosis
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import Step, Stop
from vllm_guard.diagnose.markers import STAGE_NAMES
from vllm_guard.redact import mask_url_credentials
from vllm_guard.report.text import Text, console_for, fmt, plain
from vllm_guard.suggest import flag, toml_line


def _shown_number(key: str, value: Any) -> str:
    """A number from vLLM's log as people read it: a capability vLLM writes as 75 is compute capability 7.5."""
    if key.endswith("capability") and isinstance(value, (int, float)) and not isinstance(value, bool):
        if value >= 10 and float(value).is_integer():
            return f"{int(value) // 10}.{int(value) % 10}"
        return f"{value:.1f}"
    if key.endswith(("pid", "port")) and isinstance(value, int):
        return str(value)  # a process id or a port is a name, not a quantity: no thousands separators
    return fmt(value)


def _certainty(d: Diagnosis) -> str:
    """How sure the diagnosis is, and on what: the template matched and where the stage came from."""
    if d.cls == "unknown":
        return "confidence: none (no known failure message decides this start)"
    parts = [f"confidence: {d.confidence}"]
    if d.template:
        parts.append(f"template: {d.template}")
    if d.stage_from:
        parts.append(f"stage from {d.stage_from}")
    return parts[0] + (f" ({'; '.join(parts[1:])})" if parts[1:] else "")


def print_explain(d: Diagnosis, step: Step | Stop, stream: TextIO) -> None:
    c = console_for(stream)
    advice = advice_for(d)
    style = "bold yellow" if d.cls == "unknown" else "bold red"
    c.print(Text.assemble(("failure: ", "bold"), (d.cls, style), f" during {STAGE_NAMES.get(d.stage, d.stage)}"))
    if d.numbers:
        c.print(plain("numbers: " + ", ".join(f"{k} {_shown_number(k, v)}" for k, v in d.numbers.items())))
    if d.exit_signal:
        c.print(f"vLLM was killed by signal {d.exit_signal}", markup=False)
    c.print(plain(_certainty(d)))
    if d.hint:
        c.print(plain(f"best candidate (below the bar, not acted on): {d.hint[0]}: {d.hint[1]}"))
    c.print("[bold]evidence[/bold]")
    for line in d.evidence:
        c.print(plain(f"  {mask_url_credentials(line)}"))
    c.print("[bold]why[/bold]")
    c.print(f"  {advice.explanation}", markup=False)
    c.print("[bold]what helps[/bold]")
    for item in advice.helps:
        c.print(f"  + {item}", markup=False)
    if advice.does_not_help:
        c.print("[bold]what does not[/bold]")
        for item in advice.does_not_help:
            c.print(f"  - {item}", markup=False)
    if isinstance(step, Step):
        # A log does not say whether vLLM was started from a profile or a command line: both spellings.
        change = (f"{toml_line(step.param, step.value)} in a profile's [vllm] table, or {flag(step.param, step.value)}"
                  " on the command line") if step.change and step.param else "no change"
        c.print(Text.assemble(("next step: ", "bold"), (change, "bold green"), f" ({step.reason})"))
    else:
        c.print(Text.assemble(("next step: ", "bold"), ("none the ladder can take", "bold"), f" ({step.reason})"))
