"""`explain` on blind67 to blind70 (tests/data/real-logs/), found by what vLLM's source emits outside the two earlier
raise-site samples (other files' raises, other exception types, logger.error) and scored once (2 of 3 and 4 of 4 at
ab778c3, 3 of 4 at 939130b, 5 of 7 at f120916; README.md in each). What their misses taught, from the vLLM source
that raises the message: an encoder or encoder-decoder model on an attention backend without encoder attention
(b67-003), a sliding window on some layers of a Qwen2 model (b69-001), and vLLM's own ImportErrors that name a
package to install (b70-003: Pixtral's Mistral format without xformers). blind71 (2 of 3 at ae0d818) was found by
vllm-ascend's own messages; its miss taught Mooncake's store client that cannot reach its master (b71-001). Read
again beside them, two older misses: blind22/b22-002, the NixlConnector where NIXL does not import, and
blind6/b6-042, an engine built against VLLM_USE_V1."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.diagnosis import Diagnosis
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Stop, next_step


def _stops_with_its_reason(d: Diagnosis, detail: str) -> None:
    """The ladder changes nothing for the reading, and says why in the reading's own words."""
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL[detail]



def test_encoder_attention_on_a_backend_without_it() -> None:
    # Llama 3.2 Vision (mllama's cross-attention) on Gaudi's HPUAttentionImpl, a traceback's last frames only
    d = classify(blind_log("blind67", "b67-003"))
    assert (d.cls, d.detail, d.confidence) == ("unsupported_architecture", "encoder_attention", "high")
    assert d.template and "encoder attention" in advice_for(d).explanation
    _stops_with_its_reason(d, "encoder_attention")


@pytest.mark.parametrize("line", [
    # V1's wording, one sentence per kind (v1/attention/backends/flash_attn.py, rocm_attn.py, 0.30-0.34)
    "NotImplementedError: Encoder self-attention is not implemented for FlashAttentionImpl",
    # V0's, as a worker prefixes it (attention/backends/rocm_flash_attn.py 0.5.5-0.6)
    "(VllmWorkerProcess pid=12) ERROR NotImplementedError: Encoder self-attention and encoder/decoder cross-attention "
    "are not implemented for ROCmFlashAttentionImpl",
])
def test_each_releases_wording(line: str) -> None:
    assert classify(line + "\n").detail == "encoder_attention"


@pytest.mark.parametrize(("folder", "prefix", "cls"), [
    ("blind67", "b67-001", "unsupported_architecture"), ("blind67", "b67-002", "usage_error"),
    ("blind68", "b68-001", "version_mismatch"), ("blind68", "b68-002", "unknown"), ("blind68", "b68-003", "unknown"),
    ("blind68", "b68-004", "startup_timeout"),
])
def test_what_the_two_sets_read_right_at_their_score(folder: str, prefix: str, cls: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == cls


def test_the_nixl_connector_without_nixl() -> None:
    # blind22/b22-002 (Dynamo 0.4's disaggregated workers): vLLM's raise when the NixlConnector's worker starts
    d = classify(blind_log("blind22", "b22-002"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "nixl_missing", "high")
    _stops_with_its_reason(d, "nixl_missing")


def test_nixls_import_warning_alone_is_no_failure() -> None:
    # every start that does not use NIXL may log it (startups/011): only the raise is the failure
    text = ("WARNING 04-10 12:00:01 [nixl_connector.py:75] NIXL is not available\n"
            "INFO 04-10 12:00:09 [api_server.py:1] Starting vLLM API server 0 on http://0.0.0.0:8000\n")
    assert classify(text).detail != "nixl_missing"


@pytest.mark.parametrize("line", [
    # blind6/b6-042's wording (verl's async server, vLLM 0.8-0.10), then V0's (engine/llm_engine.py)
    "ValueError: Using V1 AsyncLLMEngine, but envs.VLLM_USE_V1=False. This should not happen. As a workaround, try "
    "using AsyncLLMEngine.from_vllm_config(...) or explicitly set VLLM_USE_V1=0 or 1 and report this issue on Github.",
    "ValueError: Using V0 LLMEngine, but envs.VLLM_USE_V1=True. This should not happen. As a workaround, try using",
])
def test_an_engine_built_against_vllm_use_v1(line: str) -> None:
    d = classify(line + "\n")
    assert (d.cls, d.detail) == ("usage_error", "engine_choice")
    _stops_with_its_reason(d, "engine_choice")


def test_blind6s_engine_choice() -> None:
    assert classify(blind_log("blind6", "b6-042")).detail == "engine_choice"


def test_blind69s_sliding_window_on_some_layers() -> None:
    # Qwen2.5-7B under vLLM 0.8 with use_sliding_window on: the message alone, as the reporter quoted it
    d = classify(blind_log("blind69", "b69-001"))
    assert (d.cls, d.detail, d.stage, d.confidence) == ("usage_error", "window_layers", "weight_loading", "high")
    assert any("use_sliding_window" in h for h in advice_for(d).helps)
    _stops_with_its_reason(d, "window_layers")


@pytest.mark.parametrize(("prefix", "cls"), [("b69-002", "version_mismatch"), ("b69-003", "unknown"),
                                             ("b69-004", "unknown")])
def test_what_blind69_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind69", prefix)).cls == cls


@pytest.mark.parametrize("line", [
    "ImportError: Please install timm to use OpenVLA. OpenVLA verification used timm==0.9.10.",  # a vision tower
    "ImportError: bitsandbytes version is wrong. Please install bitsandbytes>=0.46.1.",  # the bitsandbytes loader
    "ImportError: Using Ray backend requires installation of ray.",  # the Ray executor
    "ImportError: The package `amd-quark` is required to use MX-FP4 models. Please install it with `pip install "
    "amd-quark`.",
])
def test_vllms_own_install_messages(line: str) -> None:
    d = classify(line + "\n")
    assert (d.cls, d.detail) == ("version_mismatch", "package_required")


def test_blind70s_pixtral_without_xformers() -> None:
    # vLLM 0.7.3's ROCm image: Pixtral's Mistral format needs xformers, which the image does not ship
    d = classify(blind_log("blind70", "b70-003"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "package_required", "high")
    _stops_with_its_reason(d, "package_required")


def test_a_remote_code_files_packages_are_not_vllms_message() -> None:
    # transformers' check of a remote modeling file's imports (blind11/b11-014, labelled unknown) says "Run `pip
    # install ...`": not one of vLLM's own install messages
    assert classify(blind_log("blind11", "b11-014")).detail != "package_required"


@pytest.mark.parametrize(("prefix", "cls"), [("b70-001", "quant_unsupported"), ("b70-004", "version_mismatch"),
                                             ("b70-005", "usage_error"), ("b70-006", "unknown"),
                                             ("b70-007", "usage_error")])
def test_what_blind70_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind70", prefix)).cls == cls


def test_an_install_message_in_a_plugin_vllm_went_on_without_ends_nothing() -> None:
    # vLLM logs a plugin that fails to load, with its traceback, and goes on (plugins/__init__.py load_plugins_by_group)
    text = """INFO 01-01 00:00:00 [__init__.py:30] Available plugins for group vllm.general_plugins:
ERROR 01-01 00:00:01 [__init__.py:45] Failed to load plugin my_plugin
Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/vllm/plugins/__init__.py", line 41, in load_plugins_by_group
    func = plugin.load()
  File "/usr/lib/python3/site-packages/my_plugin/__init__.py", line 3, in <module>
    raise ImportError("Please install foo to use my_plugin")
ImportError: Please install foo to use my_plugin
INFO 01-01 00:00:05 [gpu_model_runner.py:2602] Starting to load model
"""
    assert classify(text).detail != "package_required"
    assert classify(text.replace("Failed to load plugin my_plugin", "Engine core start")).detail == "package_required"


def test_blind71s_mooncake_master_out_of_reach() -> None:
    # vllm-ascend's MooncakeStore across 8 nodes: the store client's RPC to its master timed out at connect
    d = classify(blind_log("blind71", "b71-001"))
    assert (d.cls, d.detail, d.confidence) == ("network", "mooncake_master", "high")
    _stops_with_its_reason(d, "mooncake_master")


def test_a_mooncake_rpc_failure_after_the_server_is_ready_is_no_start_failure() -> None:
    text = ("INFO:     Application startup complete.\n"
            "E20251112 11:16:11.129794 58058 master_client.cpp:146] RPC call failed: Connection timed out\n")
    assert classify(text).detail != "mooncake_master"


@pytest.mark.parametrize(("prefix", "cls"), [("b71-002", "unknown"), ("b71-003", "unknown")])
def test_what_blind71_read_right_at_its_score(prefix: str, cls: str) -> None:
    assert classify(blind_log("blind71", prefix)).cls == cls
