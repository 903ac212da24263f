"""Write vllm_guard/data/vllm-raise-sites.json: the messages vLLM raises on its start-up path, read from its source.

Each entry is the literal head of one `raise X("...")` or `assert ..., "..."` message (the text before its first
f-string field, %-format or .format() placeholder), the exception, the file and function that raise it, and the
first and last of the releases read that have it. `explain` looks a paste's last exception up in it
(vllm_guard/diagnose/raise_sites.py) to say where in vLLM the message comes from, and, for vLLM's settings checks,
that the settings were refused.

The releases are read from their wheels (no build, no import: Python's `ast` over the files):

    for v in 0.4.3 0.5.5 0.6.6.post1 0.7.3 0.8.5.post1 0.9.2 0.10.2 0.11.2 0.13.0 0.16.0 0.20.2 0.25.1 0.30.0 \\
             0.33.0 0.34.0; do
        pip download vllm==$v --no-deps -d wheels/ && unzip -q -o wheels/vllm-$v-*.whl 'vllm/*.py' -d src/$v
    done
    python scripts/gen_raise_sites.py src/ -o vllm_guard/data/vllm-raise-sites.json
"""

from __future__ import annotations

import argparse
import ast
import json
import re
from collections.abc import Iterator
from pathlib import Path

# The files on the start-up path: settings, engine and worker start, loaders, platforms, distributed set-up, the
# KV cache's sizing, executors, the API server's arguments, the model registry, attention backends, quantization.
START_PATH = re.compile(r"^vllm/(?:config/|config\.py|engine/arg_utils\.py|v1/engine/|v1/worker/|worker/|"
                        r"model_executor/model_loader/|platforms/|distributed/|v1/core/kv_cache|v1/executor/|"
                        r"executor/|entrypoints/\w+/(?:api_server|cli_args)\.py|transformers_utils/|"
                        r"model_executor/models/registry\.py|attention/selector\.py|v1/attention/backends/|"
                        r"model_executor/layers/quantization/|model_executor/layers/fused_moe/oracle/)")
EXCEPTIONS = frozenset(("ValueError", "RuntimeError", "NotImplementedError", "TypeError", "AssertionError",
                        "KeyError", "ImportError"))
MIN_HEAD_CHARS = 24  # shorter heads ("Unsupported ", "Invalid value: ") say nothing of where they come from
_PLACEHOLDER = "\x00"


def _template(node: ast.expr | None, env: dict[str, str]) -> str | None:
    """The message a node builds, placeholders as \\x00; None when it is not a string the source spells."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(str(v.value) if isinstance(v, ast.Constant) else _PLACEHOLDER for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _template(node.left, env), _template(node.right, env)
        return (left if left is not None else _PLACEHOLDER) + (right if right is not None else _PLACEHOLDER)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = _template(node.left, env)
        return re.sub(r"%[-#0 +]*\d*(?:\.\d+)?[sdrfgix]", _PLACEHOLDER, left) if left else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        left = _template(node.func.value, env)
        return re.sub(r"\{[^{}]*\}", _PLACEHOLDER, left) if left else None
    if isinstance(node, ast.Name):
        return env.get(node.id)
    return None


def _exception_name(node: ast.expr) -> str | None:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id
    return target.attr if isinstance(target, ast.Attribute) else None


def _own_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """The nodes of a function's body, not those of the functions and lambdas defined in it (read as their own)."""
    stack = list(ast.iter_child_nodes(fn))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        yield node
        stack.extend(ast.iter_child_nodes(node))


def raise_sites(source: str) -> Iterator[tuple[str, str, str]]:
    """(exception, function, message template) of each raise or assert with a message in a module's source."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        env: dict[str, str] = {}  # msg = f"..." assigned before `raise ValueError(msg)`
        own = list(_own_nodes(fn))
        for node in own:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                value = _template(node.value, env)
                if value is not None:
                    env[node.targets[0].id] = value
        for node in own:
            if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call) and node.exc.args:
                name = _exception_name(node.exc)
                message = _template(node.exc.args[0], env)
                if name in EXCEPTIONS and message:
                    yield name, fn.name, message
            elif isinstance(node, ast.Assert) and node.msg is not None:
                message = _template(node.msg, env)
                if message:
                    yield "AssertionError", fn.name, message


def head_of(message: str) -> str:
    """The literal text before the first placeholder, whitespace collapsed as a log line shows it."""
    return " ".join(message.split(_PLACEHOLDER, maxsplit=1)[0].split())


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version))


def collect(root: Path) -> dict[str, object]:
    versions = sorted((p.name for p in root.iterdir() if (p / "vllm").is_dir()), key=_version_key)
    seen: dict[tuple[str, str, str, str], list[int]] = {}  # (head, exception, file, function) -> [first, last]
    for i, version in enumerate(versions):
        base = root / version
        for path in sorted((base / "vllm").rglob("*.py")):
            rel = path.relative_to(base).as_posix()
            if not START_PATH.match(rel):
                continue
            for exc, func, message in raise_sites(path.read_text(errors="replace")):
                head = head_of(message)
                if len(head) < MIN_HEAD_CHARS:
                    continue
                span = seen.setdefault((head, exc, rel, func), [i, i])
                span[1] = i
    files = sorted({key[2] for key in seen})
    file_index = {f: n for n, f in enumerate(files)}
    sites = [[head, exc, file_index[rel], func, first, last]
             for (head, exc, rel, func), (first, last) in sorted(seen.items())]
    return {"about": "vLLM's raise sites on the start-up path: [head, exception, file, function, first release, "
                     "last release] (indexes into files and versions); scripts/gen_raise_sites.py",
            "versions": versions, "files": files, "sites": sites}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a folder of unpacked wheels: ROOT/<version>/vllm/...")
    parser.add_argument("-o", "--output", type=Path, default=Path("vllm_guard/data/vllm-raise-sites.json"))
    args = parser.parse_args()
    table = collect(args.root)
    args.output.write_text(json.dumps(table, ensure_ascii=False, separators=(",", ":")) + "\n")
    sites, files, versions = table["sites"], table["files"], table["versions"]
    assert isinstance(sites, list) and isinstance(files, list) and isinstance(versions, list)
    print(f"{len(sites)} raise sites from {len(files)} files of vLLM {', '.join(versions)}")


if __name__ == "__main__":
    main()
