"""`explain` on blind73 to blind76 (tests/data/real-logs/), found by messages sampled from Ray's and NCCL's source
(blind73, 3 of 10 at 04a1bc1), PyTorch's (blind74, 2 of 3 at 23ed93a), the kernel libraries' (blind75, 3 of 6 at
d78b116) and the NVIDIA Container Toolkit's (blind76, 4 of 5 at d656dc0), each scored once (README.md in each).
What blind73's misses taught, each from the source that writes the message: NCCL's internal error (and an older
NCCL's proxy that could not connect), NCCL's own trace of a failed call's result code, a log that ends in NCCL's
failure being no hang, Ray's driver that finds no Ray node on its own host, and NCCL refusing a CUDA graph; of
blind75's and blind76's: Triton that finds no libcuda.so.1, and a container runtime refusing a CDI device name;
blind79's (1 of 2 at 54c7fe6, found by Kubernetes' own messages): the scheduler that places no pod for want of GPUs;
blind81's (4 of 5 at 1ae1254, on Gaudi): HPU graphs with tensor parallelism that need lazy collectives; blind82's
(none of 4 at 1daebc5, on TPUs): a TPU another process holds, XLA out of a core's on-chip memory, a plugin calling vLLM
as another release spelled it. blind83 (6 of 6 at dd9c9cf, all labelled unknown) was found by frameworks' messages;
blind84 (1 of 2 at 1cd1bf4) on pages in Japanese and Korean: its miss taught a wheel built for a newer glibc;
blind85 (5 of 6 at 436020f, Intel GPUs) and blind86 (7 of 8 at 8bed3d5, the CPU backend): VLLM_USE_V1=1 where V1
does not run; blind87 (4 of 7 at 70fe51e, Jetson, DGX Spark, Grace): a ptxas older than the GPU. blind88 (1 of 1 at
e2df2e4, WSL2) is labelled unknown."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.diagnosis import Diagnosis
from vllm_guard.diagnose.ladder import NOT_RELAXABLE_DETAIL, Settings, Step, Stop, next_step


def _stops_with_its_reason(d: Diagnosis, detail: str) -> None:
    """The ladder changes nothing for the reading, and says why in the reading's own words."""
    stop = next_step(d, Settings())
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL[detail]



@pytest.mark.parametrize(("folder", "prefix", "detail"), [
    ("blind73", "b73-005", "nccl_internal"),  # ncclInternalError after "Proxy Call to rank 7 failed (Connect)"
    ("blind73", "b73-008", "nccl_internal"),  # multi-node over InfiniBand, ncclCommInitRank
    ("blind9", "b9-019", "nccl_internal"),  # cupy's "NCCL Error 3: internal error" under Ray
    ("blind73", "b73-004", "nccl_unhandled"),  # WSL2: "Cuda failure 'invalid argument'", then "init.cc:1032 -> 1"
])
def test_nccls_failures_as_they_are_logged(folder: str, prefix: str, detail: str) -> None:
    d = classify(blind_log(folder, prefix))
    assert (d.cls, d.detail, d.confidence) == ("network", detail, "medium")
    assert "NCCL_DEBUG=INFO" in " ".join(advice_for(d).helps)
    _stops_with_its_reason(d, detail)


def test_a_log_that_ends_in_nccls_failure_traces_is_no_hang() -> None:
    # b73-004 was read as a hang at NCCL's set-up at its score: its last lines are NCCL's, but they trace a failure
    assert classify(blind_log("blind73", "b73-004")).cls != "startup_hang"


def test_nccls_internal_error_that_names_an_out_of_memory_is_not_the_network() -> None:
    text = ("NCCL WARN Cuda failure 'out of memory'\n"
            "RuntimeError: NCCL error: internal error - please report this issue to the NCCL developers\n")
    assert classify(text).detail != "nccl_internal"


def test_a_trace_of_another_result_code_is_not_read_so() -> None:
    # 5 is ncclInvalidUsage (nccl.h), which real reports label several ways
    assert classify("x:1:1 [0] NCCL INFO init.cc:1549 -> 5\n").cls == "unknown"


def test_rays_driver_finds_no_node_on_its_host() -> None:
    d = classify(blind_log("blind73", "b73-001"))
    assert (d.cls, d.detail, d.confidence) == ("network", "ray_local_node", "high")
    _stops_with_its_reason(d, "ray_local_node")


@pytest.mark.parametrize(("folder", "prefix", "cls"), [
    ("blind73", "b73-003", "unknown"), ("blind73", "b73-006", "too_few_gpus"), ("blind73", "b73-007", "too_few_gpus"),
    ("blind74", "b74-001", "version_mismatch"), ("blind74", "b74-002", "version_mismatch"),
])
def test_what_the_two_sets_read_right_at_their_score(folder: str, prefix: str, cls: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == cls


def test_nccl_refusing_a_cuda_graph() -> None:
    # tensor parallelism with multiprocessing workers, in the capture: an NCCL built against an older CUDA
    d = classify(blind_log("blind73", "b73-002"))
    assert (d.cls, d.detail, d.stage) == ("version_mismatch", "nccl_graph", "cuda_graph")
    assert any("--enforce-eager" in h for h in advice_for(d).helps)
    step = next_step(d, Settings())  # eager mode captures no graph: the ladder's one change
    assert isinstance(step, Step) and (step.param, step.value) == ("enforce-eager", True)
    stop = next_step(d, Settings(enforce_eager=True))
    assert isinstance(stop, Stop) and stop.reason == NOT_RELAXABLE_DETAIL["nccl_graph"]


def test_a_container_refused_a_cdi_device_name() -> None:
    # blind76/b76-001: the kubelet's event for GPUStack's vLLM pod in StartError
    d = classify(blind_log("blind76", "b76-001"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "cdi_device", "high")
    assert any("nvidia-ctk cdi" in h for h in advice_for(d).helps)
    _stops_with_its_reason(d, "cdi_device")


@pytest.mark.parametrize(("folder", "prefix", "cls"), [
    ("blind75", "b75-003", "unknown"), ("blind75", "b75-005", "unknown"), ("blind75", "b75-006", "unknown"),
    ("blind76", "b76-002", "version_mismatch"), ("blind76", "b76-003", "version_mismatch"),
    ("blind76", "b76-004", "version_mismatch"), ("blind76", "b76-005", "unknown"),
])
def test_what_blind75_and_blind76_read_right_at_their_score(folder: str, prefix: str, cls: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == cls


def test_triton_finds_no_libcuda() -> None:
    # blind75/b75-001: vLLM 0.4's workers under Mixtral with tensor parallelism, only /lib64/libcuda.so.1 present
    d = classify(blind_log("blind75", "b75-001"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "libcuda_missing", "high")
    assert any("TRITON_LIBCUDA_PATH" in h for h in advice_for(d).helps)
    _stops_with_its_reason(d, "libcuda_missing")


def test_vllm_omnis_orchestrator_that_never_became_ready() -> None:
    # blind77/b77-001: the 600 s default applied where the user's --stage-init-timeout was ignored (vllm-omni #2518)
    d = classify(blind_log("blind77", "b77-001"))
    assert (d.cls, d.detail, d.numbers) == ("startup_timeout", "omni_stage", {"waited_s": 600})
    assert any("--init-timeout" in h for h in advice_for(d).helps)


def test_kubernetes_scheduler_places_no_pod_for_want_of_gpus() -> None:
    # blind79/b79-001: a second vLLM Deployment on a node whose one L4 the first holds
    d = classify(blind_log("blind79", "b79-001"))
    assert (d.cls, d.detail, d.numbers) == ("too_few_gpus", "k8s_unschedulable", {"nodes": 1, "short_nodes": 1})
    assert any("Recreate" in h for h in advice_for(d).helps)
    _stops_with_its_reason(d, "k8s_unschedulable")


def test_the_schedulers_message_with_other_reasons_first() -> None:
    text = ("  Warning  FailedScheduling  12s  default-scheduler  0/3 nodes are available: 1 node(s) had untolerated "
            "taint {node-role.kubernetes.io/control-plane: }, 2 Insufficient nvidia.com/gpu. preemption: 0/3 nodes "
            "are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming "
            "pod.\n")
    d = classify(text)
    assert (d.detail, d.numbers) == ("k8s_unschedulable", {"nodes": 3, "short_nodes": 2})


def test_insufficient_cpu_or_memory_alone_is_not_a_want_of_gpus() -> None:
    text = "0/2 nodes are available: 2 Insufficient memory. preemption: 0/2 nodes are available.\n"
    assert classify(text).detail != "k8s_unschedulable"


def test_gaudis_hpu_graphs_with_tensor_parallelism_need_lazy_collectives() -> None:
    # blind81/b81-002: HabanaAI's vllm-fork, Ray tensor parallelism, HPU graphs in the warm-up
    d = classify(blind_log("blind81", "b81-002"))
    assert (d.cls, d.detail, d.stage) == ("usage_error", "hpu_lazy_collectives", "cuda_graph")
    assert any("PT_HPU_ENABLE_LAZY_COLLECTIVES=true" in h for h in advice_for(d).helps)
    _stops_with_its_reason(d, "hpu_lazy_collectives")


# (b80-001 to b80-003, labelled unknown, read version_mismatch since blind103: ROCm's "invalid device function" is the
# paste's error, tests/test_explain_blind103.py; they are known confident errors)
@pytest.mark.parametrize(("folder", "prefix"), [("blind80", "b80-004"), ("blind80", "b80-005")]
                         + [("blind81", f"b81-00{k}") for k in (1, 3, 4, 5)])
def test_what_blind80_and_blind81_read_right_at_their_score(folder: str, prefix: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == "unknown"


@pytest.mark.parametrize("prefix", ["b82-002", "b82-003"])
def test_a_tpu_another_process_holds(prefix: str) -> None:
    d = classify(blind_log("blind82", prefix))
    assert (d.cls, d.detail) == ("gpu_busy", "tpu_busy")
    _stops_with_its_reason(d, "tpu_busy")  # no wait: the wait polls NVML, which does not see a TPU


@pytest.mark.parametrize(("folder", "prefix"), [("blind82", "b82-001"), ("blind47", "b47-010")])
def test_xla_out_of_a_tpu_cores_on_chip_memory(folder: str, prefix: str) -> None:
    d = classify(blind_log(folder, prefix))
    assert (d.cls, d.detail) == ("gpu_oom", "tpu_onchip")
    assert any("--gpu-memory-utilization" in h for h in advice_for(d).does_not_help)
    _stops_with_its_reason(d, "tpu_onchip")


def test_a_platform_plugin_calling_vllm_as_another_release_spelled_it() -> None:
    # blind82/b82-004: vllm-spyre's warm-up building NewRequestData with a keyword vLLM main had dropped
    d = classify(blind_log("blind82", "b82-004"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "vllm_api", "medium")
    assert "platform plugin" in advice_for(d).explanation


@pytest.mark.parametrize("prefix", [f"b83-00{k}" for k in range(1, 7)])
def test_what_blind83_read_right_at_its_score(prefix: str) -> None:
    assert classify(blind_log("blind83", prefix)).cls == "unknown"


def test_a_wheel_built_for_a_newer_glibc() -> None:
    # blind84/b84-001: vLLM's own warning is all the paste shows (Ubuntu 20.04, glibc 2.31); read medium
    d = classify(blind_log("blind84", "b84-001"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "glibc", "medium")
    raised = ("ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found (required by "
              "/usr/local/lib/python3.10/dist-packages/vllm/_C.abi3.so)\n")
    assert (classify(raised).detail, classify(raised).confidence) == ("glibc", "high")
    _stops_with_its_reason(classify(raised), "glibc")


def test_vllm_use_v1_set_where_v1_does_not_run() -> None:
    # blind86/b86-004: the CPU image of vLLM 0.9 with VLLM_USE_V1=1 on device type=cpu
    d = classify(blind_log("blind86", "b86-004"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "v1_unsupported", "high")
    _stops_with_its_reason(d, "v1_unsupported")


@pytest.mark.parametrize(("folder", "prefix", "cls"), [
    ("blind85", "b85-002", "unknown"), ("blind85", "b85-003", "gpu_oom"), ("blind85", "b85-004", "unknown"),
    ("blind86", "b86-001", "unknown"), ("blind86", "b86-008", "unknown"),
])
def test_what_blind85_and_blind86_read_right_at_their_score(folder: str, prefix: str, cls: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == cls


@pytest.mark.parametrize("prefix", ["b87-004", "b87-005"])  # the whole line; one cut after "is not defined for"
def test_a_ptxas_older_than_the_gpu(prefix: str) -> None:
    # DGX Spark's GB10 (sm_121a) under Triton's bundled ptxas
    d = classify(blind_log("blind87", prefix))
    assert (d.cls, d.detail) == ("version_mismatch", "ptxas_arch")
    assert any("TRITON_PTXAS_PATH" in h for h in advice_for(d).helps)
    _stops_with_its_reason(d, "ptxas_arch")


@pytest.mark.parametrize(("folder", "prefix"), [("blind87", "b87-001"), ("blind87", "b87-002"), ("blind87", "b87-006"),
                                                ("blind87", "b87-007"), ("blind88", "b88-001")])
def test_what_blind87_and_blind88_read_right_at_their_score(folder: str, prefix: str) -> None:
    assert classify(blind_log(folder, prefix)).cls == "unknown"
