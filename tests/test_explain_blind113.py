"""`explain` on blind112 to blind115 (tests/data/real-logs/blind112-115), four blind sets of issue 26, after
their one scoring.

Collected by helpers that never read the classifier: blind112 scored once at 3336211 (6 of 7, no confident error;
its miss, vLLM's profiling assertion labelled gpu_busy, stays a miss as blind62/b62-003 does: three other logs of the
message are labelled unknown), blind113 at 79ad22a (11 of 13, none). What blind113's misses taught, read from the
vllm-rbln plugin's worker (vllm_rbln/v1/worker/rbln_worker.py): Rebellions' runtime names its out-of-memory
SYS_EBUSY or SYS_ENOMEM, and the plugin says an out-of-memory that ends its warm-up's compile in the KV cache's words.
blind114 scored once at ab107dd (11 of 14, one confident error: gloo's "Connection closed by peer", which the Gloo
rule read as a connection failure, after a rank's Neuron compile had failed); its misses taught that rule's limit and
MLX's missing Metal library. Its third miss, a Hygon DCU image's vendor library failing on a DTK version it could not
find (`'NoneType' object has no attribute 'split'`), names no cause the reader can tell from a bug, and stays one.
blind115 scored once at 19fc400 (10 of 11, one confident error: Ray's list of what may have ended a worker, whose
first item names the OOM killer, was read as the OOM killer's own line).
"""

from __future__ import annotations

import textwrap

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_containers import RBLN_BLOCKS, RBLN_OOM
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_rebellions_runtime_out_of_memory_is_an_out_of_memory() -> None:
    # "torch._dynamo.exc.BackendCompilerFailed: backend='_rbln_backend' raised:\nRuntimeError: SYS_EBUSY: Lack of
    # device memory. (code: -16)", nothing placing it
    d = classify(blind_log("blind113", "b113-006"))
    assert (d.cls, d.stage) == ("gpu_oom", "unknown")


def test_vllm_rblns_kv_blocks_that_do_not_fit_beside_the_compiled_model() -> None:
    # the paste's own two lines (blind113/b113-007)
    d = classify(blind_log("blind113", "b113-007"))
    assert (d.cls, d.detail, d.numbers) == ("no_kv_memory", "rbln_blocks", {"num_blocks": 24})
    assert advice_for(d) is RBLN_BLOCKS
    stop = next_step(d, Settings(max_model_len=196608, max_num_seqs=8))
    assert isinstance(stop, Stop) and "--num-gpu-blocks-override" in stop.reason


P = "(EngineCore_DP0 pid=77) "
PROGRESS = (f"{P}INFO 03-02 10:00:00 [default_loader.py:267] Loading weights took 30.10 seconds\n"
            f"{P}INFO 03-02 10:00:01 [kv_cache_utils.py:1087] GPU KV cache size: 196,608 tokens\n")
CHAIN = "".join(f"{P}ERROR 03-02 10:05:00 [core.py:708] {line}\n" for line in (
    "EngineCore failed to start.", "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/site-packages/vllm_rbln/v1/worker/rbln_worker.py", line 300, in '
    "compile_or_warm_up_model", "    self.model_runner.warm_up_model()",
    "torch._dynamo.exc.BackendCompilerFailed: backend='_rbln_backend' raised:",
    "RuntimeError: SYS_EBUSY: Lack of device memory. (code: -16)", "",
    "The above exception was the direct cause of the following exception:", "", "Traceback (most recent call last):",
    '  File "/usr/lib/python3.12/site-packages/vllm_rbln/v1/worker/rbln_worker.py", line 310, in '
    "compile_or_warm_up_model", "    raise RuntimeError(",
    "RuntimeError: Not enough memory for 24 blocks of KV cache. Try reducing the number of blocks by setting "
    "--num-gpu-blocks-override."))


@pytest.mark.parametrize("before", ["", PROGRESS])
def test_the_runtimes_error_then_the_plugins_words_read_as_the_plugins(before: str) -> None:
    # the order a worker logs them in (the plugin raises its words from the runtime's error); with progress lines
    # that place the stage, the runtime's error was once read first as a CUDA-graph OOM, with a GPU ladder step (a
    # review's finding)
    d = classify(before + CHAIN)
    assert (d.cls, d.detail) == ("no_kv_memory", "rbln_blocks")
    assert isinstance(next_step(d, Settings(max_model_len=196608)), Stop)


def test_what_blind112_and_blind113_read_right_at_their_score() -> None:
    assert [classify(blind_log("blind112", p)).cls for p in ("b112-003", "b112-004", "b112-005")] == \
        ["quant_unsupported", "usage_error", "disk_full"]
    assert classify(blind_log("blind112", "b112-002")).detail == "profiling_assertion"


def test_mlx_without_its_metal_kernels_library() -> None:
    # blind114/b114-004: vllm-swift on a Mac whose macOS is older than the metallib's deployment target
    d = classify(blind_log("blind114", "b114-004"))
    assert (d.cls, d.detail) == ("version_mismatch", "mlx_metallib")
    # the same words where the start went on and got ready are not its failure
    ready = ("MLX error: Failed to load the default metallib. library not found\n"
             "(APIServer pid=1) INFO 04-27 10:00:00 [api_server.py:1] Starting vLLM server on http://0.0.0.0:8000\n"
             "(APIServer pid=1) INFO:     Application startup complete.\n")
    assert classify(ready).cls == "unknown"


@pytest.mark.parametrize("closed", ["Connection closed by peer", "Connection reset by peer"])
def test_gloo_saying_its_peer_went_away_is_no_network_failure(closed: str) -> None:
    # blind114/b114-008: a rank's Neuron compile failed first; gloo's pair.cc then says its peer closed the socket
    d = classify(blind_log("blind114", "b114-008"))
    assert d.cls == "unknown"
    line = f"RuntimeError: [gloo/transport/tcp/pair.cc:547] {closed} [10.0.0.2]:22947\n"
    assert classify(line).cls == "unknown"
    assert classify("RuntimeError: [/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:144] Connect timeout "
                    "[10.0.0.2]:22947\n").cls == "network"


def test_rays_list_of_what_may_have_ended_a_worker_is_no_oom_kill() -> None:
    # blind115/b115-009: "Some common causes include: (1) the process was killed by the OOM killer due to high memory
    # usage, (2) ray stop --force was called, or (3) the worker crashed unexpectedly due to SIGSEGV" (the thread's
    # cause was a segfault); the OOM killer stays Ray's first candidate, not the answer
    d = classify(blind_log("blind115", "b115-009"))
    assert (d.cls, d.hint and d.hint[0]) == ("unknown", "host_oom")



@pytest.mark.parametrize("width", range(60, 221, 7))
def test_rays_list_of_causes_wrapped_at_any_width_is_no_oom_kill(width: int) -> None:
    # a review's finding: wrapped at 26 of 161 widths, the list's "killed by the OOM killer" was read as the kill
    text = blind_log("blind115", "b115-009")
    wrapped = "\n".join(part for line in text.splitlines() for part in (textwrap.wrap(line, width) or [""]))
    assert classify(wrapped + "\n").cls == "unknown"


def test_systemds_oom_kill_of_a_unit_is_one() -> None:
    line = ("Nov 29 06:00:40 gpu-01 systemd[1]: vllm-guard@llama.service: A process of this unit has been killed by "
            "the OOM killer.\n")
    assert classify(line).cls == "host_oom"


def test_the_runtimes_oom_alone_after_progress_lines_names_no_stage() -> None:
    # a review's finding: the stage was given ("CUDA graph capture") and then denied, with CUDA's advice
    d = classify(PROGRESS + "".join(f"{P}ERROR 03-02 10:05:00 [core.py:708] {line}\n" for line in (
        "torch._dynamo.exc.BackendCompilerFailed: backend='_rbln_backend' raised:",
        "RuntimeError: SYS_EBUSY: Lack of device memory. (code: -16)")))
    assert (d.cls, d.stage, d.detail) == ("gpu_oom", "unknown", "rbln_oom")
    assert advice_for(d) is RBLN_OOM
