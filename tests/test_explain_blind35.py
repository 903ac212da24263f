"""`explain` on blind35 (tests/data/real-logs/blind35), the thirty-fifth blind set of issue 26, after its one scoring.

Collected outside the vllm-project organisation by a helper that never read the classifier, and scored once, whole,
at commit 85fa776 (3 of 8 right, the 3 labelled `unknown`; no confident error; README.md there). What its misses
taught: macOS's errno for a port in use, vLLM's Ray check that the driver's node holds a GPU bundle, V0's zero GPU
blocks before its cut error, and a KV message a person wrapped before its own parenthesis.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.ladder import Settings, Step, next_step


def test_a_port_in_use_on_macos() -> None:
    # vllm-metal: create_server_socket -> sock.bind(addr) -> "OSError: [Errno 48] Address already in use"
    assert classify(blind_log("blind35", "b35-001")).cls == "port_in_use"


def test_the_ray_driver_node_without_a_gpu_bundle() -> None:
    # "RuntimeError: driver node id 507fd... is not included in a placement group PlacementGroupID(...). ... You
    # don't have enough GPUs available in a current node."
    d = classify(blind_log("blind35", "b35-002"))
    assert (d.cls, d.detail) == ("too_few_gpus", "ray_head_without_gpu")


def test_a_kv_message_wrapped_before_its_parenthesis() -> None:
    # "... max seq len (40960), " / "(5.62 GiB KV cache is needed, which is larger than the available KV cache memory
    # (4.50 GiB). ": a line starting with "(" and a figure continues the one before
    d = classify(blind_log("blind35", "b35-003"))
    assert (d.cls, d.numbers["needed_gib"], d.numbers["available_gib"]) == ("kv_cache_too_small", 5.62, 4.5)
    step = next_step(d, Settings(max_model_len=40960))
    assert isinstance(step, Step) and step.param == "max-model-len" and step.value < 40960


def test_a_process_prefix_in_parentheses_still_begins_a_record() -> None:
    log = ("ERROR 10-08 20:33:48 [core.py:708] RuntimeError: something failed in the worker while it was starting, "
           "see above\n(Worker pid=3) INFO 10-08 20:33:49 [gpu_worker.py:1] shutting down\n")
    assert "shutting down" not in " ".join(classify(log).evidence)


def test_v0_finding_no_gpu_block_before_its_cut_error() -> None:
    # "# GPU blocks: 0, # CPU blocks: 1638", "Maximum concurrency for 131072 tokens per request: 0.00x", then the
    # worker's traceback in initialize_cache, cut before its message
    d = classify(blind_log("blind35", "b35-007"))
    assert (d.cls, d.stage, d.confidence) == ("no_kv_memory", "kv_cache", "medium")


def test_zero_blocks_is_a_warning_a_decisive_line_overrides() -> None:
    log = ("INFO 10-28 11:14:52 distributed_gpu_executor.py:57] # GPU blocks: 0, # CPU blocks: 1638\n"
           "ERROR 10-28 11:14:53 worker.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n")
    assert classify(log).cls != "no_kv_memory"


def test_what_blind35_read_right_at_its_score() -> None:
    want = {"b35-004": "unknown", "b35-006": "unknown", "b35-008": "unknown"}
    assert {p: classify(blind_log("blind35", p)).cls for p in want} == want
