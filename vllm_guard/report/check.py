"""The preflight report for people: the checks table, the memory budget per GPU, the verdict and the plan."""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from vllm_guard.preflight.findings import FAIL, WARN, Finding
from vllm_guard.preflight.kv_cache import DEFAULT_BLOCK_SIZE
from vllm_guard.preflight.memory_terms import IN_ACTIVATION, IN_WEIGHTS
from vllm_guard.report.text import STATUS_STYLE, Console, Table, Text, console_for, fmt, plain

if TYPE_CHECKING:  # types only: the offline check imports no more than it renders
    from vllm_guard.facts.machine import Facts
    from vllm_guard.launch.plan import LaunchPlan
    from vllm_guard.preflight.fix import Fix
    from vllm_guard.preflight.run import Preflight


def print_plan(plan: LaunchPlan, stream: TextIO) -> None:
    """The command line and the environment changes a launch would use (secrets masked)."""
    c = console_for(stream)
    c.print("[bold]command[/bold]")
    c.print(plain(plan.command_line()), soft_wrap=True)
    c.print("[bold]environment[/bold]")
    for key, value in plan.redacted_env_set().items():
        c.print(Text.assemble(plain(f"  {key}={value}"), plain(f"  # {plan.env_reasons.get(key, '')}", "dim")))
    for key in plan.env_unset:
        c.print(Text.assemble(plain(f"  unset {key}"), ("  # the guard's own variable", "dim")))
    for note in plan.notes:
        c.print(plain(f"note: {note}", "yellow"))


def print_check(pre: Preflight, facts: Facts, target: str, stream: TextIO, fix: Fix | None = None) -> None:
    c = console_for(stream)
    m = facts.model
    c.print(Text.assemble(("vllm-guard check ", "bold"), plain(target, "bold cyan"),
                          plain(f" on {facts.machine_origin}")))
    weights = f"weights {fmt(m.weights_bytes, '_bytes')} ({m.weights_source})" if m.weights_bytes else "weights unknown"
    c.print(plain(f"model  {m.model}: {m.architecture or '?'} from {m.source}, {weights}, "
               f"derived max length {fmt(m.derived_max_len)}"))
    for g in facts.gpus:
        cc = f"{g.compute_capability[0]}.{g.compute_capability[1]}" if g.compute_capability else "?"
        c.print(plain(f"GPU {g.index}  {g.name or '?'}: {fmt(g.memory_free_bytes, '_bytes')} free of "
                   f"{fmt(g.memory_total_bytes, '_bytes')}, compute capability {cc}"))
    print_findings(c, pre.findings)
    if pre.estimate is not None and not _layout_missing(pre):
        print_budget(c, pre)
    for note in (*pre.notes, *facts.notes, *m.notes, *facts.machine.notes):
        c.print(plain(f"note: {note}", "dim"))
    print_verdict(c, pre.verdict, pre.findings, fix, pre.profile.path)


# weights, non-torch, activations, CUDA graphs, KV cache, rest of the budget
BAR_GLYPHS = ("█", "+", "▓", "▒", "░", "=", ".")


def _layout_missing(pre: Preflight) -> bool:
    """gpu.count failed: the memory bar and KV figures would describe GPUs that are not there."""
    return any(f.id == "gpu.count" and f.status == FAIL for f in pre.findings)


def print_findings(c: Console, findings: list[Finding]) -> None:
    """The sentence of each check, never its key: value dump (the numbers stay in --json); a skipped check says
    why it was skipped. The verdict below lists the failures with their fixes."""
    table = Table(show_lines=False, header_style="bold")
    for col in ("check", "status", "finding", "fix"):
        table.add_column(col, overflow="fold", no_wrap=col in ("check", "status"))
    for f in findings:
        # Messages and fixes quote paths, names and values from the snapshot and the profile:
        # plain text, never markup (a disk path "[/]" would otherwise be a rich markup error).
        finding = f.message + (f" ({f.note})" if f.note else "")
        table.add_row(plain(f.id), Text(f.status, style=STATUS_STYLE[f.status]), plain(finding), plain(f.fix or ""))
    c.print(table)


def print_budget(c: Console, pre: Preflight) -> None:
    e = pre.estimate
    assert e is not None
    extra = e.terms_bytes(IN_WEIGHTS) + e.terms_bytes(IN_ACTIVATION)
    parts = [("weights", e.weights_bytes_per_gpu, "blue"), ("extra terms", extra, "bright_red"),
             ("non-torch", e.non_torch_bytes, "magenta"),
             ("activations", e.activation_bytes, "yellow"), ("CUDA graphs", e.cudagraph_bytes, "cyan"),
             ("KV cache", max(e.kv_budget_bytes or 0, 0), "green")]
    used = sum(v or 0 for _, v, _ in parts)
    rest = max(e.budget_bytes - used, 0)
    over = max(used - e.budget_bytes, 0)
    c.print(f"[bold]memory per GPU[/bold]: budget {fmt(e.budget_bytes, '_bytes')} = "
            f"{fmt(e.gpu_total_bytes, '_bytes')} x utilization {e.utilization:g}")
    width = 60
    bar = Text()
    scale = max(e.budget_bytes, used, 1)
    # Each part has its own glyph, so the bar reads without colour (a pipe, the journal, NO_COLOR).
    for (_name, value, style), glyph in zip([*parts, ("rest", rest, "dim")], BAR_GLYPHS, strict=True):
        bar.append(glyph * round((value or 0) / scale * width), style=style)
    c.print(bar)
    legend = Text()
    for (name, value, style), glyph in zip([*parts, ("rest of budget", rest, "dim")], BAR_GLYPHS, strict=True):
        legend.append(f"{glyph} ", style=style)
        legend.append(f"{name} {fmt(value, '_bytes')}  ")
    c.print(legend)
    for t in e.terms:
        # LoRA slots, a drafter, an encoder cache (preflight/memory_terms.py): each with the vLLM figure it is in
        size = fmt(t.bytes_per_gpu, "_bytes") if t.bytes_per_gpu is not None else "unknown"
        c.print(Text.assemble(("  + ", "bright_red"), plain(f"{t.name} {size} ({t.how})")))
    if over:
        c.print(f"[red]over budget by {fmt(over, '_bytes')}[/red]")
    kv_line = f"KV cache: {fmt(e.kv_bytes_per_token)} bytes/token"
    if e.block_size != DEFAULT_BLOCK_SIZE:  # a hybrid model's state forces a larger block (memory_terms.py)
        kv_line += f" in blocks of {e.block_size:,} tokens"
    if e.kv_expected_error_bytes and e.kv_budget_bytes is not None:
        # How close the model has come on real start-ups (memory.WEIGHTS/CUDAGRAPH_ERROR_FRACTION).
        kv_line += (f", predicted {fmt(max(e.kv_budget_bytes, 0), '_bytes')} "
                    f"± {fmt(e.kv_expected_error_bytes, '_bytes')} (expected error on real start-ups)")
    if e.kv_tokens is not None:
        kv_line += f", {e.kv_tokens:,} tokens"
    if e.max_fitting_model_len is not None:
        kv_line += f"; longest max-model-len that fits: {e.max_fitting_model_len:,}"
    if e.max_concurrency is not None and e.max_model_len:
        kv_line += f"; {e.max_concurrency:.2f}x concurrency at {e.max_model_len:,} tokens"
    c.print(kv_line, markup=False)
    if e.defaults:
        c.print(f"vLLM defaults used for: {', '.join(e.defaults)} "
                f"(max-num-batched-tokens {e.max_num_batched_tokens}, max-num-seqs {e.max_num_seqs})",
                markup=False, style="dim")


def print_verdict(c: Console, verdict: str, findings: list[Finding], fix: Fix | None = None,
                   profile_path: object = None) -> None:
    """The verdict, how many checks failed or warned, and the fix of each one (not only the first)."""
    fails = [f for f in findings if f.status == FAIL]
    warns = [f for f in findings if f.status == WARN]
    text = Text("verdict: ", style="bold")
    text.append(verdict.upper(), style=STATUS_STYLE[verdict])
    counts = [f"{len(fails)} check{'s' if len(fails) != 1 else ''} failed"] if fails else []
    counts += [f"{len(warns)} warning{'s' if len(warns) != 1 else ''}"] if warns else []
    if counts:
        text.append(f" ({', '.join(counts)})")
    c.print(text)
    for f in (*fails, *warns):
        c.print(Text.assemble(("  ", ""), (f.status.upper(), STATUS_STYLE[f.status]), " ", plain(f.id),
                              plain(f": {f.fix}" if f.fix else ": no fix the guard knows")))
    if fix is not None and fix.exists:
        # Spelled the way the user wrote the settings: profile lines for a profile, flags for a command line.
        spelled = f"in {profile_path}: {fix.profile_lines()}" if profile_path else fix.command_line()
        c.print(plain(f"one fix that passes every check: {spelled} ({fix.reason})"))
    elif fix is not None:
        c.print(plain(f"no single fix passes every check: {fix.reason}"))
