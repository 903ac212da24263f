"""Pure: the command lines that start vLLM, as a paste shows them, and the arguments they give vLLM.

A shell command (``vllm serve M ...``, the api_server module) or a container run of vLLM (``docker run ...
vllm/vllm-openai:TAG --model M ...``), continued over lines with backslashes, up to the shell's own syntax. The start
split (segments.py) opens a start at one; the settings reader (context.py) parses its arguments as vLLM would.
"""

from __future__ import annotations

import re
import shlex
from typing import NamedTuple

from vllm_guard.diagnose.logread import LogLine

# A shell command that starts vLLM: at the line's start or after a prompt ("$ ", or one that ends a word:
# "user@host:~$ ", "root@host:/# ", "PS C:\> "), past environment assignments and nohup/sudo/env
# ("CUDA_VISIBLE_DEVICES=0 nohup vllm serve ..."). Not "# vllm serve ..." or "## ...", a comment or a heading, nor
# "-> vllm serve" in prose (a review's cases).
_PROMPT = r"(?:^|\$ |[^\s#=>-][#>%] )"
_SUDO = r"sudo(?: -[A-Za-z]{1,8})*"  # sudo -E keeps the caller's environment (HF_TOKEN, CUDA_VISIBLE_DEVICES)
_COMMAND = re.compile(_PROMPT + r"(?:(?:[A-Za-z_]\w{0,63}=\S{0,1000}|nohup|" + _SUDO + r"|env|exec|time) ){0,8}"
                      r"(?:vllm serve|python3? -m vllm\.entrypoints\.(?:openai\.)?api_server)(?= |$)")
# A container run (vLLM's Docker docs: "docker run --gpus all -p 8000:8000 vllm/vllm-openai:latest --model M"): the
# container engine's options, an image, then the container's command or its entrypoint's arguments.
_CONTAINER = re.compile(_PROMPT + r"(?:" + _SUDO + r" )?(?:docker|podman) run(?= |$)")
# vLLM's images (docker.io/vllm/vllm-openai:v0.7.1, vllm/vllm-openai-rocm:latest), whose entrypoint is vLLM's server
# (vLLM's Dockerfile: `vllm serve` in later releases, the api_server module before; both read the same options)
_VLLM_IMAGE = re.compile(r"^(?:[\w.:-]+/)*vllm-openai(?:-[\w.]+)?(?::[\w.-]+)?(?:@sha256:[0-9a-f]{64})?$")
# `docker run`'s and `podman run`'s options that take a value as the next word (docker run --help; podman's common
# ones): any other option is a flag. The image is the first word that is no option and no option's value.
_VALUE_OPTIONS = frozenset({
    "-a", "--attach", "--add-host", "--annotation", "--blkio-weight", "--cap-add", "--cap-drop", "--cgroup-parent",
    "--cgroupns", "--cidfile", "--cpu-period", "--cpu-quota", "--cpu-rt-period", "--cpu-rt-runtime", "-c",
    "--cpu-shares", "--cpus", "--cpuset-cpus", "--cpuset-mems", "--device", "--device-cgroup-rule",
    "--device-read-bps", "--device-read-iops", "--device-write-bps", "--device-write-iops", "--dns", "--dns-option",
    "--dns-search", "--domainname", "--entrypoint", "-e", "--env", "--env-file", "--expose", "--gpus", "--group-add",
    "--health-cmd", "--health-interval", "--health-retries", "--health-start-period", "--health-timeout", "-h",
    "--hostname", "--ip", "--ip6", "--ipc", "--isolation", "--kernel-memory", "-l", "--label", "--label-file", "--link",
    "--link-local-ip", "--log-driver", "--log-opt", "--mac-address", "-m", "--memory", "--memory-reservation",
    "--memory-swap", "--memory-swappiness", "--mount", "--name", "--network", "--net", "--network-alias",
    "--oom-score-adj", "--pid", "--pids-limit", "--platform", "-p", "--publish", "--pull", "--restart", "--runtime",
    "--security-opt", "--shm-size", "--stop-signal", "--stop-timeout", "--storage-opt", "--sysctl", "--tmpfs",
    "--ulimit", "-u", "--user", "--userns", "--uts", "-v", "--volume", "--volumes-from", "-w", "--workdir",
    "--hooks-dir", "--pod", "--secret", "--uidmap", "--gidmap",
})
_LINES_MAX = 100
# where the shell's own syntax ends vLLM's arguments: a pipe, a redirection, a background job, a comment
_SHELL_ENDS = frozenset({"|", "||", "&", "&&", ";", "2>&1", "1>&2"})
_SHELL_END_STARTS = ("#", ">", "1>", "2>", "&>", "|")


class Command(NamedTuple):
    args: list[str] | None  # vLLM's arguments; None where the shell could not split them (an unclosed quote)
    last: int  # the index of the command's last line (continued with backslashes)


def maybe(text: str) -> bool:
    """The cheap test first, on every line: the words a command line that starts vLLM spells (command() reads it)."""
    return "vllm serve" in text or "vllm.entrypoints" in text or (
        " run" in text and ("docker" in text or "podman" in text))


def command(lines: list[LogLine], i: int) -> Command | None:
    """The command line at line i that starts vLLM, with the lines a trailing backslash joins to it; None where line
    i opens none (no such command, or a container of another program)."""
    text = lines[i].text
    m = _COMMAND.search(text) if "vllm serve" in text or "vllm.entrypoints" in text else None
    container = m is None
    if m is None and (m := _CONTAINER.search(text)) is None:
        return None
    parts = [text[m.end():]]
    while parts[-1].endswith("\\") and i + len(parts) < len(lines) and len(parts) < _LINES_MAX:
        parts[-1] = parts[-1][:-1]
        parts.append(lines[i + len(parts)].text)
    last = i + len(parts) - 1
    try:
        tokens = shlex.split(" ".join(parts))
    except ValueError:  # an unclosed quote: a container's image cannot be known either
        return None if container else Command(None, last)
    end = next((k for k, t in enumerate(tokens) if t in _SHELL_ENDS or t.startswith(_SHELL_END_STARTS)), len(tokens))
    if not container:
        return Command(tokens[:end], last)
    args = container_args(tokens[:end])
    return None if args is None else Command(args, last)


def container_args(tokens: list[str]) -> list[str] | None:
    """vLLM's arguments in a container run's (its options, an image, then the rest); None where it runs no vLLM.

    The container runs its entrypoint with the rest appended: ``--entrypoint``'s, else the image's. vLLM's image's
    entrypoint is vLLM's server, so the rest is vLLM's arguments, past ``vllm serve`` or the api_server module if the
    rest names them again (blind25/b25-013 did, and vLLM refused ``serve`` as an argument). Another image runs vLLM
    only where the rest names it; an ``--entrypoint`` of another program (a script) runs no vLLM.
    """
    entrypoint: list[str] | None = None
    k = 0
    while k < len(tokens) and tokens[k].startswith("-") and tokens[k] != "-":
        name, eq, value = tokens[k].partition("=")
        if name == "--entrypoint":
            entrypoint = (value if eq else " ".join(tokens[k + 1: k + 2])).split()
        k += 1 if eq or name not in _VALUE_OPTIONS else 2
    if k >= len(tokens):
        return None  # no image
    image, rest = tokens[k], tokens[k + 1:]
    runs = (entrypoint or []) + rest
    if runs[:2] == ["vllm", "serve"]:
        return runs[2:]
    if len(runs) >= 3 and runs[0].startswith("python") and runs[1] == "-m" and runs[2].startswith("vllm.entrypoints."):
        return runs[3:]
    return rest if entrypoint is None and _VLLM_IMAGE.match(image) else None
