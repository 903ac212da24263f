"""`explain` on blind5 (tests/data/real-logs/blind5), the fifth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit 34fbd75 (31 of 43 right,
3 confident errors: the table in tests/data/real-logs/README.md). What each miss taught is checked on the log that
taught it, and on a near miss that must not change.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose import logread
from vllm_guard.diagnose.classify import classify


def _log(prefix: str) -> str:
    return blind_log("blind5", prefix)


@pytest.mark.parametrize(("prefix", "cls", "detail", "confidence"), [
    # vLLM's registry could not import LlamaForCausalLM in its subprocess; the paste stops before vLLM's
    # "not supported" error (vllm #9712 on Windows, #9624 under Ray): a candidate since blind37, whose labels and
    # earlier sets' read this both ways
    ("b5-006", "unknown", "inspection_failed", "none"),
    ("b5-008", "unknown", "inspection_failed", "none"),
    # FastChat's logger ("DATE TIME | ERROR | stderr | ") inside docker compose's column: the traceback is read,
    # and V0's _check_if_gpu_supports_dtype raises one thing only (QAnything #128, a V100)
    ("b5-011", "dtype_unsupported", None, "medium"),
    # Ray's autoscaler names why the placement group never comes: no node can hold a GPU bundle (vllm #8908)
    ("b5-016", "too_few_gpus", None, "high"),
    # argparse's error quoted inside a sentence (vllm-omni #1081)
    ("b5-028", "usage_error", None, "high"),
    # huggingface_hub's validate_repo_id, retold by the reporter with typos ("in the from", vllm #17877)
    ("b5-041", "model_access", None, "high"),
])
def test_what_the_misses_taught(prefix: str, cls: str, detail: str | None, confidence: str) -> None:
    d = classify(_log(prefix))
    assert (d.cls, d.detail, d.confidence) == (cls, detail, confidence)
    assert d.template


def test_fastchats_prefix_is_taken_off() -> None:
    lines = logread.read(_log("b5-011"))
    assert any(line.text.startswith('  File "/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py"')
               for line in lines)


def test_an_inspection_failure_gives_way_to_the_subprocess_error_that_caused_it() -> None:
    # the subprocess's own error, when the paste has it, decides (here an extension built for another torch)
    text = (_log("b5-008").rsplit("\n", 1)[0] + "\n"
            "ERROR 10-23 23:20:26 registry.py:272] ImportError: /opt/vllm/_C.abi3.so: undefined symbol: "
            "_ZN3c104cuda9SetDeviceEi\n")
    d = classify(text)
    assert (d.cls, d.detail) == ("version_mismatch", "extension_abi")


def test_an_infeasible_request_without_a_gpu_is_not_a_lack_of_gpus() -> None:
    # Ray's autoscaler says the same of a CPU or memory request, which is not vLLM's GPU bundle
    line = ("(autoscaler +21m12s) Error: No available node types can fulfill resource request {'CPU': 1.0, "
            "'memory': 22548578304.0}. Add suitable node types to this cluster to resolve this issue.\n")
    assert classify(line).cls == "unknown"


@pytest.mark.parametrize("prefix", ["b5-012", "b5-013"])
def test_nccls_system_error_is_network_also_cut_mid_word(prefix: str) -> None:
    # the interface, /dev/shm or P2P (collected/c049, the same line, was /dev/shm): said medium, the advice says how
    # to tell which; b5-012's paste ends inside the words ("unhandled syst")
    d = classify(_log(prefix))
    assert (d.cls, d.detail, d.confidence) == ("network", "nccl_unhandled", "medium")
