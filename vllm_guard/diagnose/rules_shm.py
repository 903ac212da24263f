"""The failure rules about shared memory (/dev/shm): vLLM's own check, a bus error however it is written, and NCCL's
segments. Read in their place in rules.RULES."""

from __future__ import annotations

import re

from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.figures import numbers_of
from vllm_guard.diagnose.rule import Rule

SHM_RULES: tuple[Rule, ...] = (
    Rule("shm_exhausted", re.compile(
        # 0.30's wording names no allocation (blind98/b98-001, a 0.27 build on ppc64le)
        r"Insufficient space in /dev/shm(?: for (?P<allocation>\S{1,128}))?: (?P<required_mib>[\d.]+) MiB required, "
        r"(?P<free_mib>[\d.]+) MiB free"), numbers=lambda m: numbers_of(m, "required_mib", "free_mib"),
         source=SOURCES["shm_vllm"]),
    Rule("shm_exhausted", re.compile(r"Unexpected bus error encountered in worker|insufficient shared memory \(shm\)"
                                     r"|Error while creating shared memory segment"
                                     # NCCL's shmutils.cc: creating or sizing a segment; not "Error while
                                     # attaching ... No such file" (another process's segment is gone: vllm #18831)
                                     r"|NCCL WARN(?!.{0,300}?(?:attaching|No such file)).{0,300}?(?:/dev/shm|shm_open|"
                                     r"[Ss]hared memory)|^Bus error|SIGBUS"
                                     # Python's faulthandler on SIGBUS (a worker writing past /dev/shm; blind40/b40-003)
                                     r"|Fatal Python error: Bus error"), source=SOURCES["shm_other"]),
)
