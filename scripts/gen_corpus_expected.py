"""Write what vLLM's own parser makes of each real command line in tests/data/corpus/commands.json.

Run it with the target vLLM's interpreter (the tests never need vLLM installed):

    /path/to/vllm-venv/bin/python scripts/gen_corpus_expected.py

For each entry it records the namespace vLLM parses (only the options that differ from
a plain `vllm serve m`, the model under "model"), or vLLM's error; then it parses the
command line the guard would hand vLLM (vllm_guard.options.table, this checkout) with the same
vLLM parser and records whether that namespace is the same.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import io
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "tests" / "data" / "corpus"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from gen_vllm_options import build_serve_parser, jsonable  # noqa: E402


def vllm_namespace(top: Any, argv: list[str], baseline: dict[str, Any]) -> dict[str, Any]:
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            ns = vars(top.parse_args(["serve", *argv]))
    except SystemExit:
        return {"error": err.getvalue().strip().splitlines()[-1] if err.getvalue().strip() else "exit"}
    except Exception as e:  # vLLM raises ValueError / AssertionError from its pre-processing
        return {"error": f"{type(e).__name__}: {e}"}
    model = ns.pop("model_tag", None) or ns.get("model")
    for value in ns.values():
        # KVTransferConfig draws a fresh engine_id (a UUID) at every parse: not part of what was asked.
        if hasattr(value, "engine_id"):
            value.engine_id = None
    out = {k: jsonable(v) for k, v in ns.items()
           if k not in ("dispatch_function", "subparser") and jsonable(v) != jsonable(baseline.get(k))}
    out["model"] = model
    return {"namespace": out}


def main() -> None:
    from vllm_guard.options.argv import ArgvProblem, parse_command_line
    from vllm_guard.options.table import load_table
    from vllm_guard.profile.vllm_config import read_config

    version = importlib.metadata.version("vllm").split("+")[0]
    top, _ = build_serve_parser(["serve", "m"])
    baseline = vars(top.parse_args(["serve", "m"]))
    baseline.pop("model_tag", None)
    table = load_table(version)
    entries = json.loads((CORPUS / "commands.json").read_text())["entries"]
    results = {}
    for entry in entries:
        with tempfile.TemporaryDirectory() as tmp:
            for name, text in entry.get("configs", {}).items():
                Path(tmp, name).write_text(text)
            cwd = os.getcwd()
            os.chdir(tmp)
            try:
                expected = vllm_namespace(top, entry["argv"], baseline)
                try:
                    handed = parse_command_line(entry["argv"], table, read_config=read_config).argv()
                    expected["handed_argv"] = handed
                    expected["handed_parses_same"] = vllm_namespace(top, handed, baseline) == {
                        k: v for k, v in expected.items() if k in ("namespace", "error")}
                except (ArgvProblem, Exception) as e:  # the guard refuses it: the test compares that
                    expected["guard_refuses"] = f"{type(e).__name__}: {e}"
            finally:
                os.chdir(cwd)
        results[entry["id"]] = expected
    doc = {"vllm_version": version, "generated_by": "scripts/gen_corpus_expected.py with vLLM's own parser",
           "expected": results}
    out = CORPUS / f"expected-{version}.json"
    out.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    bad = [k for k, v in results.items() if v.get("handed_parses_same") is False]
    print(f"wrote {out}: {len(results)} entries, {sum('error' in v for v in results.values())} refused by vLLM, "
          f"handed command line parses differently for: {bad or 'none'}", file=sys.stderr)


if __name__ == "__main__":
    main()
