"""`explain` on blind41 (tests/data/real-logs/blind41), the forty-first blind set of issue 26, after its one scoring.

Collected from model makers' and recipe repositories' threads by a helper that never read the classifier, and scored
once, whole, at commit 989aa14 (6 of 8 right, no confident error; README.md there). What its misses taught: Gloo's
TCP device refusing an interface the node lacks, and that torch.ops._C without one of vLLM's ops is a candidate
(a build that did not load, or another build), labelled two ways.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_network import GLOO_INTERFACE
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_gloo_told_to_use_an_interface_the_node_lacks() -> None:
    # a Ray worker of a two-node cluster: "RuntimeError: [enforce fail at ../third_party/gloo/gloo/transport/tcp/
    # device.cc:83] ifa != nullptr. Unable to find address for: eth0 [repeated 6x across cluster]"
    d = classify(blind_log("blind41", "b41-008"))
    assert (d.cls, d.detail, d.confidence) == ("network", "gloo_interface", "high")
    assert advice_for(d) is GLOO_INTERFACE and isinstance(next_step(d, Settings()), Stop)


def test_a_missing_compiled_op_is_read_by_what_it_is() -> None:
    # A candidate until blind153 and blind154 brought three more missing ops, whose collectors read a quantization
    # kernel as quant_unsupported: vLLM 0.5-0.6 say "Possibly you have built or installed an obsolete version of
    # vllm", and platform builds leave quantization kernels out. Both of these are labels in dispute.
    assert classify(blind_log("blind41", "b41-003")).detail == "quant_kernel_missing"  # cutlass_scaled_mm_supports_fp8
    # silu_and_mul after a warning that _C did not load (macOS's "symbol not found in flat namespace", which the
    # warning's reading leaves out): the op is not read, the warning decides
    assert classify(blind_log("blind4", "b4-032")).cls == "unknown"


def test_what_blind41_read_right_at_its_score() -> None:
    want = {"b41-001": "remote_code_required", "b41-002": "unsupported_architecture",
            "b41-004": "remote_code_required", "b41-005": "tp_indivisible", "b41-006": "usage_error",
            "b41-007": "gpu_oom"}
    assert {p: classify(blind_log("blind41", p)).cls for p in want} == want
