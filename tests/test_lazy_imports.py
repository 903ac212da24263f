"""The offline verdict imports only what it uses (issue 22): no Ray, no huggingface_hub, no classifier.

A check of a bundled model against a snapshot needs the profile, the facts, the checks and the renderer; the
Hub client, the Ray client and the log classifier (its regex tables) are each a tenth of a second or more to
import. The CPU-time ratio itself is benchmarks/cli_latency.py's, not a timed test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("ray", "huggingface_hub", "vllm_guard.diagnose.classify", "vllm_guard.diagnose.rules",
         "vllm_guard.cluster.rayapi", "vllm_guard.cluster.gather", "vllm_guard.launch.supervisor", "yaml",
         "prometheus_client", "vllm_guard.report.endpoint")  # the status endpoint's: only when it runs (issue 25)


def _modules_after(argv: list[str], tmp_path: Path) -> tuple[int, set[str]]:
    code = ("import json, sys\nfrom vllm_guard.cli.main import main\n"
            f"code = main({argv!r}, environ={{'HF_HUB_OFFLINE': '1', 'PATH': '/usr/bin', 'HOME': {str(tmp_path)!r}}})\n"
            "print(json.dumps([code, sorted(sys.modules)]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60,
                         check=True).stdout
    code_, modules = json.loads(out.strip().splitlines()[-1])
    return int(code_), set(modules)


def test_offline_check_imports_no_ray_hub_or_classifier(tmp_path: Path) -> None:
    code, modules = _modules_after(["check", "--machine", str(ROOT / "profiles/machines/l4-24gb.json"),
                                    str(ROOT / "profiles/llama-3.1-8b-full-context.toml")], tmp_path)
    assert code == 4  # the example does not fit: the report ran to its verdict
    assert not {m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY}


def test_offline_check_json_and_dry_run_import_no_ray_hub_or_classifier(tmp_path: Path) -> None:
    for argv in (["check", "--json"], ["serve", "--dry-run"]):
        code, modules = _modules_after([*argv, "--machine", str(ROOT / "profiles/machines/l4-24gb.json"),
                                        "Qwen/Qwen3-0.6B", "--max-model-len", "4096"], tmp_path)
        assert code == 0, argv
        assert not {m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY}, argv


def test_help_imports_no_stage(tmp_path: Path) -> None:
    code, modules = _modules_after(["--help"], tmp_path)
    assert code == 0
    stages = {m for m in modules if m.startswith("vllm_guard.") and m.split(".")[1] not in ("cli", "errors",
                                                                                         "exit_codes", "__init__")}
    assert not stages, stages
