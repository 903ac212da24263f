"""`explain` on blind59 (tests/data/real-logs/blind59), scored once at 7889326 (3 of 4, no confident error; its
README.md), found by error messages sampled at random from vLLM's own raise sites. Its miss, b59-001: vLLM's Ray
executor refusing nodes that report one IP address (a shared .env set VLLM_HOST_IP alike on every node), a setting to
change: usage_error, ray_node_ip."""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import Settings, Stop, next_step


def test_nodes_with_one_ip_address_are_a_setting_to_change() -> None:
    d = classify(blind_log("blind59", "b59-001"))  # hard-wrapped after "Got 2 nodes with"
    assert (d.cls, d.detail, d.confidence, d.numbers) == ("usage_error", "ray_node_ip", "high", {"nodes": 2})
    assert any("VLLM_HOST_IP" in fix for fix in advice_for(d).helps)
    step = next_step(d, Settings(gpu_memory_utilization=0.9, max_model_len=4096))
    assert isinstance(step, Stop) and "VLLM_HOST_IP" in step.reason


def test_the_message_on_one_line_as_vllm_0_11_logs_it() -> None:
    text = ("(EngineCore_DP0 pid=211) ERROR 10-02 09:14:55 [core.py:718] RuntimeError: Every node should have a unique "
            "IP address. Got 2 nodes with node ids ['8f2c', '1a7d'] and 1 unique IP addresses {'10.0.0.5'}. Please "
            "check your network configuration. If you set `VLLM_HOST_IP` environment variable, make sure it is unique "
            "for each node.\n")
    assert (classify(text).cls, classify(text).detail) == ("usage_error", "ray_node_ip")


def test_wrapped_after_its_first_sentence_and_more_addresses_than_nodes() -> None:
    # the first sentence is vLLM's alone; a paste may wrap right after it (57 characters: too short for the reader
    # to rejoin). More addresses than nodes: the driver took another interface than Ray registered its node under.
    text = ("RuntimeError: Every node should have a unique IP address.\n"
            "Got 2 nodes with node ids ['8f2c', '1a7d'] and 3 unique IP addresses {'10.0.0.5', '10.0.0.6', "
            "'172.17.0.2'}.\n")
    d = classify(text)
    assert (d.cls, d.detail) == ("usage_error", "ray_node_ip")
    one_line = classify(text.replace(".\nGot", ". Got"))
    assert one_line.numbers == {"nodes": 2, "ips": 3}
    assert "more when" in advice_for(one_line).explanation


def test_what_blind59_read_right_at_its_score() -> None:
    want = {"b59-002": "usage_error", "b59-003": "model_access", "b59-004": "oom_profiling"}
    assert {p: classify(blind_log("blind59", p)).cls for p in want} == want
