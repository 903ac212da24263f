"""What a failure rule is: a message, the class and stage it means, its figures, a condition on the lines around it,
and where the message comes from."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from vllm_guard.diagnose.logread import LogLine


@dataclass(frozen=True)
class Rule:
    cls: str
    pattern: re.Pattern[str]
    stage: str | None = None  # None: the stage the log had reached
    detail: str | None = None
    numbers: Callable[[re.Match[str]], dict[str, Any]] | None = None
    when: Callable[[str, list[LogLine], int, dict[str, Any]], bool] | None = None
    # A warning that may explain the failure: kept aside and said (medium) only when no decisive line follows.
    warning: bool = False
    # Where the message comes from (the program, its file and the versions it was read in): shown with the
    # diagnosis as the template it matched. Rules without one are listed in diagnose/catalogue.py.
    source: str = ""
