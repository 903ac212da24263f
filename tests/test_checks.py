"""Preflight checks, table-driven: (machine, profile) -> check statuses, both sides of every threshold."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from tests.conftest import DATA, MACHINES, run_cli
from vllm_guard.checkids import CHECK_IDS
from vllm_guard.facts.machine import Facts, GpuProcess, Machine, P2pLink
from vllm_guard.preflight.findings import Finding
from vllm_guard.preflight.memory import GIB, MIB, estimate
from vllm_guard.preflight.memory_params import Params
from vllm_guard.preflight.run import preflight
from vllm_guard.probes import gather, load_machine
from vllm_guard.profile.load import load_profile

ENV = {"HF_HUB_OFFLINE": "1", "HOME": "/nonexistent-home"}


def machine(name: str) -> Machine:
    return load_machine(MACHINES / f"{name}.json")


def run(tmp_path: Path, machine_name: str, vllm: str = "", *, model: str = "meta-llama/Llama-3.1-8B-Instruct",
        extra: str = "", env: dict[str, str] | None = None, edit_machine=None, **facts_changes) -> dict[str, str]:
    profile_path = tmp_path / "p.toml"
    profile_path.write_text(f'[model]\nid = "{model}"\n[vllm]\n{vllm}\n{extra}')
    snap = tmp_path / "m.json"
    m = machine(machine_name)
    if edit_machine:
        m = edit_machine(m)
    snap.write_text(json.dumps(m.to_dict()))
    profile = load_profile(profile_path)
    facts = gather(profile, environ={**ENV, **(env or {})}, machine_file=str(snap))
    if facts_changes:
        facts = replace(facts, **facts_changes)
    pre = preflight(profile, facts)
    run.last = pre  # type: ignore[attr-defined]
    return {f.id: f.status for f in pre.findings}


def finding(check_id: str) -> Finding:
    return next(f for f in run.last.findings if f.id == check_id)  # type: ignore[attr-defined]


def with_gpu_memory(free_bytes: int, processes: tuple[GpuProcess, ...] = ()):
    def edit(m: Machine) -> Machine:
        g = m.gpus[0]
        return replace(m, gpus=(replace(g, memory_free_bytes=free_bytes,
                                        memory_used_bytes=(g.memory_total_bytes or 0) - free_bytes,
                                        processes=processes), *m.gpus[1:]))
    return edit


def with_host(**changes):
    return lambda m: replace(m, host=replace(m.host, **changes))


# (case, machine, [vllm] lines, model, [guard] extra, check id, expected status)
CASES = [
    ("fits on an L4", "l4-24gb", "max-model-len = 16384", None, "", "model.kv_fit", "pass"),
    ("full context misfit", "l4-24gb", "", None, "", "model.kv_fit", "fail"),
    ("no KV memory left", "l4-24gb", "gpu-memory-utilization = 0.7\nmax-model-len = 4096", None, "",
     "model.kv_fit", "fail"),
    ("concurrency under the profile's minimum", "l4-24gb", "max-model-len = 16384", None,
     "[guard.checks]\nmin-concurrency = 4", "model.kv_fit", "warn"),
    ("concurrency above the minimum", "l4-24gb", "max-model-len = 8192", None,
     "[guard.checks]\nmin-concurrency = 4", "model.kv_fit", "pass"),
    ("70B does not fit 24 GB", "l4-24gb", "max-model-len = 4096", "meta-llama/Llama-3.1-70B-Instruct", "",
     "model.weights_fit", "fail"),
    ("8B fits 24 GB", "l4-24gb", "max-model-len = 4096", None, "", "model.weights_fit", "pass"),
    ("tp 2 on one GPU", "l4-24gb", "tensor-parallel-size = 2", None, "", "gpu.count", "fail"),
    ("tp 2 on two GPUs", "a100-80gb-x2", "tensor-parallel-size = 2", None, "", "gpu.count", "pass"),
    ("GPU busy", "h100-80gb-shared", "max-model-len = 8192", None, "", "gpu.free_memory", "fail"),
    ("GPU busy, lower utilization", "h100-80gb-shared", "max-model-len = 8192\ngpu-memory-utilization = 0.45",
     None, "", "gpu.free_memory", "pass"),
    ("too long for the model", "a100-80gb-x2", "max-model-len = 200000", None, "", "model.max_len", "fail"),
    ("the model's own maximum", "a100-80gb-x2", "max-model-len = 131072", None, "", "model.max_len", "pass"),
    ("heads 40 / tp 3", "a100-80gb-x2", "tensor-parallel-size = 3", "meta-llama/Llama-2-13b-hf", "",
     "model.tp_divisible", "fail"),
    ("heads 40 / tp 2", "a100-80gb-x2", "tensor-parallel-size = 2", "meta-llama/Llama-2-13b-hf", "",
     "model.tp_divisible", "pass"),
    ("KV heads 4 over tp 7", "a100-80gb-x2", "tensor-parallel-size = 7", "Qwen/Qwen2.5-7B-Instruct", "",
     "model.tp_divisible", "fail"),
    ("explicit bf16 on a T4", "t4-16gb", 'dtype = "bfloat16"\nmax-model-len = 4096', "Qwen/Qwen3-0.6B", "",
     "gpu.dtype", "fail"),
    ("auto bf16 model on a T4", "t4-16gb", "max-model-len = 4096", "Qwen/Qwen3-0.6B", "", "gpu.dtype", "warn"),
    ("half on a T4", "t4-16gb", 'dtype = "half"\nmax-model-len = 4096', "Qwen/Qwen3-0.6B", "", "gpu.dtype", "pass"),
    ("bf16 on an L4", "l4-24gb", "max-model-len = 4096", None, "", "gpu.dtype", "pass"),
    ("fp8 KV on 8.9", "l4-24gb", 'kv-cache-dtype = "fp8"', None, "", "gpu.kv_cache_dtype", "pass"),
    ("fp8 KV on 8.0", "a100-80gb-x2", 'kv-cache-dtype = "fp8"', None, "", "gpu.kv_cache_dtype", "warn"),
    ("fp8 KV on 7.5", "t4-16gb", 'kv-cache-dtype = "fp8"', "Qwen/Qwen3-0.6B", "", "gpu.kv_cache_dtype", "fail"),
    # nvfp4's requirements are not in the guard's table: not a pass it cannot back
    ("nvfp4 KV on 8.0", "a100-80gb-x2", 'kv-cache-dtype = "nvfp4"', None, "", "gpu.kv_cache_dtype", "skip"),
    ("bf16 KV on 7.5", "t4-16gb", 'kv-cache-dtype = "bfloat16"', "Qwen/Qwen3-0.6B", "", "gpu.kv_cache_dtype", "warn"),
    ("bf16 KV on 8.0", "a100-80gb-x2", 'kv-cache-dtype = "bfloat16"', None, "", "gpu.kv_cache_dtype", "pass"),
    ("awq_marlin on a T4", "t4-16gb", 'quantization = "awq_marlin"', "Qwen/Qwen2.5-32B-Instruct-AWQ", "",
     "gpu.quantization", "fail"),
    ("awq on a T4", "t4-16gb", "", "Qwen/Qwen2.5-32B-Instruct-AWQ", "", "gpu.quantization", "pass"),
    ("fp8 weights on a T4 (75)", "t4-16gb", 'quantization = "fp8"', "Qwen/Qwen3-0.6B", "", "gpu.quantization",
     "pass"),
    ("fbgemm_fp8 on a T4", "t4-16gb", 'quantization = "fbgemm_fp8"', "Qwen/Qwen3-0.6B", "", "gpu.quantization",
     "fail"),
    # 32 GiB container, ~18 GiB of safetensors: vLLM maps them, so it loads; below 2x it warns (issue 15).
    ("cgroup limit below 2x weights", "docker-2x4090-64m-shm", "tensor-parallel-size = 2",
     "Qwen/Qwen2.5-32B-Instruct-AWQ", "", "host.ram", "warn"),
    ("the RAM factor lowered", "docker-2x4090-64m-shm", "tensor-parallel-size = 2", "Qwen/Qwen2.5-32B-Instruct-AWQ",
     "[guard.checks]\nhost-ram-factor = 1.5", "host.ram", "pass"),
    ("64 MiB shm with tp 2", "docker-2x4090-64m-shm", "tensor-parallel-size = 2", None, "", "host.shm", "fail"),
    ("64 MiB shm with tp 1", "docker-2x4090-64m-shm", "max-model-len = 8192", None, "", "host.shm", "warn"),
    ("plenty of shm", "a100-80gb-x2", "tensor-parallel-size = 2", None, "", "host.shm", "pass"),
    ("disk has room", "l4-24gb", "", None, "", "host.disk", "pass"),
    ("unknown model", "l4-24gb", "", "nobody/nothing", "", "model.facts", "fail"),
    ("known model", "l4-24gb", "", None, "", "model.facts", "pass"),
    ("port not in a snapshot", "l4-24gb", "", None, "", "net.port", "skip"),
    ("executable not checked for a snapshot", "l4-24gb", "", None, "", "vllm.executable", "skip"),
    ("skipped by the profile", "l4-24gb", "", None, '[guard.checks]\nskip = ["model.kv_fit"]', "model.kv_fit",
     "skip"),
    ("downgraded by the profile", "l4-24gb", "", None, '[guard.checks]\nwarn-only = ["model.kv_fit"]',
     "model.kv_fit", "warn"),
    ("fp8 weights need 8.0 for fbgemm", "a100-80gb-x2", 'quantization = "fbgemm_fp8"', None, "", "gpu.quantization",
     "pass"),
    # The example snapshots predate the p2p field: unknown, so skipped, never passed or failed.
    ("P2P not in the snapshot", "a100-80gb-x2", "tensor-parallel-size = 2", None, "", "gpu.p2p", "skip"),
    ("P2P with one GPU", "l4-24gb", "", None, "", "gpu.p2p", "skip"),
]


@pytest.mark.parametrize(("case", "name", "vllm", "model", "extra", "check_id", "status"), CASES,
                         ids=[c[0] for c in CASES])
def test_check_table(tmp_path: Path, case: str, name: str, vllm: str, model: str | None, extra: str,
                     check_id: str, status: str) -> None:
    got = run(tmp_path, name, vllm, model=model or "meta-llama/Llama-3.1-8B-Instruct", extra=extra)
    assert got[check_id] == status, (case, finding(check_id))


def test_every_check_id_is_covered_by_the_table() -> None:
    assert {c[5] for c in CASES} | {"gpu.present", "host.nofile"} >= set(CHECK_IDS)


OK, NS = "ok", "not supported"


@pytest.mark.parametrize(
    ("links", "vllm", "status", "words"),
    [
        (((0, 1, OK, OK),), "tensor-parallel-size = 2", "pass", "over NVLink"),
        (((0, 1, OK, NS),), "tensor-parallel-size = 2", "pass", "over PCIe"),
        (((0, 1, NS, NS, "chipset not supported"),), "tensor-parallel-size = 2", "warn",
         "GPU 0-1 (chipset not supported)"),
        (((0, 1, None, None),), "tensor-parallel-size = 2", "skip", "unknown between GPU 0-1"),
        ((), "tensor-parallel-size = 2", "skip", "unknown between GPU 0-1"),
        (((0, 1, NS, NS),), "", "skip", "one GPU in the layout"),  # P2P off, but only one GPU used
        (((0, 1, NS, NS),), "pipeline-parallel-size = 2", "warn", "GPU 0-1"),  # world size counts pipeline too
    ],
    ids=["nvlink", "pcie", "no p2p", "unknown pair", "pair not listed", "tp 1", "pp 2"],
)
def test_gpu_p2p(tmp_path: Path, links: tuple, vllm: str, status: str, words: str) -> None:
    p2p = tuple(P2pLink((a, b), read, nvlink, *rest) for a, b, read, nvlink, *rest in links)
    got = run(tmp_path, "a100-80gb-x2", vllm, edit_machine=lambda m: replace(m, p2p=p2p))
    f = finding("gpu.p2p")
    assert got["gpu.p2p"] == status and words in f.message, f
    if status == "warn":
        assert f.fix and "--disable-custom-all-reduce" in f.fix and "NCCL_P2P_DISABLE=1" in f.fix


def test_gpu_p2p_skips_without_a_gpu(tmp_path: Path) -> None:
    got = run(tmp_path, "a100-80gb-x2", "tensor-parallel-size = 2", edit_machine=lambda m: replace(m, gpus=()))
    assert got["gpu.p2p"] == "skip" and "unknown" in finding("gpu.p2p").message


def test_kv_misfit_gives_the_length_that_fits(tmp_path: Path) -> None:
    run(tmp_path, "l4-24gb", "gpu-memory-utilization = 0.9")
    f = finding("model.kv_fit")
    fit = f.measured["max_fitting_model_len"]
    assert f.fix is not None and f.fix.startswith(f"--max-model-len {fit}")
    assert fit % 16 == 0 and 20000 < fit < 45000
    # And that length passes.
    assert run(tmp_path, "l4-24gb", f"gpu-memory-utilization = 0.9\nmax-model-len = {fit}")["model.kv_fit"] == "pass"
    assert run(tmp_path, "l4-24gb", f"gpu-memory-utilization = 0.9\nmax-model-len = {fit + 16}")["model.kv_fit"] \
        == "fail"


def test_long_max_len_allowed_by_env(tmp_path: Path) -> None:
    got = run(tmp_path, "a100-80gb-x2", "max-model-len = 200000", env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"})
    assert got["model.max_len"] == "warn"


def test_quant_group_split_by_tensor_parallel(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    cfg = json.loads((DATA / "models" / "llama-2-13b" / "config.json").read_text())
    cfg["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 128}
    (model / "config.json").write_text(json.dumps(cfg))
    # 13824 / 8 = 1728 inputs per GPU: 13.5 groups of 128.
    assert run(tmp_path, "a100-80gb-x2", "tensor-parallel-size = 8", model=str(model))["model.tp_divisible"] == "fail"
    assert "quantization groups" in finding("model.tp_divisible").message
    assert run(tmp_path, "a100-80gb-x2", "tensor-parallel-size = 4", model=str(model))["model.tp_divisible"] == "pass"


def test_busy_gpu_lists_holders_and_flags_orphans(tmp_path: Path) -> None:
    procs = (GpuProcess(4242, "VLLM::EngineCore", "svc-vllm", 20 * GIB, orphaned_vllm=True),
             GpuProcess(5151, "python3", "alice", 2 * GIB))
    got = run(tmp_path, "l4-24gb", "max-model-len = 4096", edit_machine=with_gpu_memory(2 * GIB, procs))
    assert got["gpu.free_memory"] == "fail"
    f = finding("gpu.free_memory")
    assert "pid 4242 svc-vllm VLLM::EngineCore 20,480 MiB" in f.message and "KillMode=mixed" in f.message
    assert "pid 5151 alice python3" in f.message
    assert "kill" not in (f.fix or "")  # not the user's processes: never suggest killing them
    assert f.measured["max_utilization_now"] < 0.1


def test_own_orphan_may_be_stopped(tmp_path: Path) -> None:
    procs = (GpuProcess(4242, "VLLM::EngineCore", "me", 20 * GIB, orphaned_vllm=True),)
    run(tmp_path, "l4-24gb", "max-model-len = 4096", edit_machine=with_gpu_memory(2 * GIB, procs),
        live=True, user="me")
    assert "kill 4242" in (finding("gpu.free_memory").fix or "")


def test_free_memory_margin_threshold(tmp_path: Path) -> None:
    total = machine("l4-24gb").gpus[0].memory_total_bytes or 0
    need = -(-total * 92 // 100)
    at = run(tmp_path, "l4-24gb", "max-model-len = 4096", edit_machine=with_gpu_memory(need + 512 * MIB))
    below = run(tmp_path, "l4-24gb", "max-model-len = 4096", edit_machine=with_gpu_memory(need + 511 * MIB))
    assert (at["gpu.free_memory"], below["gpu.free_memory"]) == ("pass", "fail")


@pytest.mark.parametrize(("shm_mib", "tp", "status"), [(199, 2, "fail"), (200, 2, "warn"), (1023, 2, "warn"),
                                                       (1024, 2, "pass"), (199, 1, "warn"), (200, 1, "pass")])
def test_shm_thresholds(tmp_path: Path, shm_mib: int, tp: int, status: str) -> None:
    got = run(tmp_path, "a100-80gb-x2", f"tensor-parallel-size = {tp}",
              edit_machine=with_host(shm_free_bytes=shm_mib * MIB))
    assert got["host.shm"] == status


# 16.06e9 bytes of weights x 1.1 = 16.45 GiB wanted.
@pytest.mark.parametrize(("free_gib", "status"), [(17, "pass"), (16, "warn")])
def test_disk_thresholds(tmp_path: Path, free_gib: int, status: str) -> None:
    def edit(m: Machine) -> Machine:
        return replace(m, host=replace(m.host, disks=(replace(m.host.disks[0], free_bytes=free_gib * GIB),)))
    assert run(tmp_path, "l4-24gb", "", edit_machine=edit)["host.disk"] == status


def test_disk_fails_when_weights_surely_missing(tmp_path: Path) -> None:
    def edit(m: Machine) -> Machine:
        return replace(m, host=replace(m.host, disks=(replace(m.host.disks[0], free_bytes=GIB),)))
    run(tmp_path, "l4-24gb", "", edit_machine=edit)
    facts = _facts(tmp_path, edit)
    facts = replace(facts, model=replace(facts.model, weights_local=False))
    pre = preflight(load_profile(tmp_path / "p.toml"), facts)
    assert {f.id: f.status for f in pre.findings}["host.disk"] == "fail"


def _facts(tmp_path: Path, edit) -> Facts:
    snap = tmp_path / "m2.json"
    snap.write_text(json.dumps(edit(machine("l4-24gb")).to_dict()))
    return gather(load_profile(tmp_path / "p.toml"), environ=ENV, machine_file=str(snap))


# Llama-3.1-8B: 14.96 GiB of safetensors. Fail below weights + 3 GiB (17.96 GiB: vLLM maps the files, the
# processes need their own memory), warn up to 2 x weights (29.92 GiB), pass above.
@pytest.mark.parametrize(("ram_gib", "status", "words"), [
    (32, "pass", ">= 2 x weights"),
    (29, "warn", "enough to load 14.96 GiB of safetensors weights, which vLLM memory-maps"),
    (18, "warn", "below 2 x weights = 29.92 GiB"),
    (17, "fail", "needs at least 17.96 GiB"),
    (8, "fail", "the kernel OOM killer ends vLLM"),
])
def test_host_ram_is_graded(tmp_path: Path, ram_gib: int, status: str, words: str) -> None:
    got = run(tmp_path, "l4-24gb", "", edit_machine=with_host(memory_available_bytes=ram_gib * GIB))
    assert got["host.ram"] == status and words in finding("host.ram").message


def test_host_ram_eager_loading_wants_the_full_factor(tmp_path: Path) -> None:
    # --safetensors-load-strategy eager reads the files instead of mapping them: 29 GiB < 2 x 14.96 fails.
    got = run(tmp_path, "l4-24gb", 'safetensors-load-strategy = "eager"',
              edit_machine=with_host(memory_available_bytes=29 * GIB))
    assert got["host.ram"] == "fail" and "--safetensors-load-strategy eager reads them" in finding("host.ram").message


@pytest.mark.parametrize(("nofile", "status"), [(1024, "warn"), (65536, "pass")])
def test_nofile(tmp_path: Path, nofile: int, status: str) -> None:
    assert run(tmp_path, "l4-24gb", "", edit_machine=with_host(nofile_soft_limit=nofile))["host.nofile"] == status


def test_live_only_checks(tmp_path: Path) -> None:
    got = run(tmp_path, "l4-24gb", "", live=True, port_free=False, vllm_path=None)
    assert (got["net.port"], got["vllm.executable"]) == ("fail", "fail")
    got = run(tmp_path, "l4-24gb", "", live=True, port_free=True, vllm_path="/usr/bin/vllm")
    assert (got["net.port"], got["vllm.executable"]) == ("pass", "pass")


def test_no_gpu(tmp_path: Path) -> None:
    got = run(tmp_path, "l4-24gb", "", edit_machine=lambda m: replace(m, gpus=(), notes=("no NVIDIA driver",)))
    assert got["gpu.present"] == "fail" and "no NVIDIA driver" in finding("gpu.present").message
    assert got["model.kv_fit"] == "skip" and got["gpu.count"] == "skip"


def test_no_gpu_selected(tmp_path: Path) -> None:
    got = run(tmp_path, "l4-24gb", "", env={"CUDA_VISIBLE_DEVICES": ""})
    assert got["gpu.present"] == "fail"


def test_guard_gpus_select_and_set_cuda_visible_devices(tmp_path: Path) -> None:
    run(tmp_path, "a100-80gb-x2", "max-model-len = 4096", extra="[guard]\ngpus = [1]")
    facts = _gather(tmp_path, "a100-80gb-x2")
    assert [g.index for g in facts.gpus] == [1] and facts.cuda_visible_devices == "1"


def _gather(tmp_path: Path, name: str) -> Facts:
    snap = tmp_path / "g.json"
    snap.write_text(json.dumps(machine(name).to_dict()))
    return gather(load_profile(tmp_path / "p.toml"), environ=ENV, machine_file=str(snap))


def test_max_model_len_auto_resolves_to_a_fitting_number(tmp_path: Path) -> None:
    run(tmp_path, "l4-24gb", 'max-model-len = "auto"')
    pre = run.last  # type: ignore[attr-defined]
    assert pre.profile.value("max_model_len") == -1  # "auto" stays vLLM's (issue 11) ...
    length = pre.params.max_model_len  # ... the checks judge the length the guard predicts vLLM will choose
    assert 20000 < length < 50000 and length % 16 == 0
    assert {f.id: f.status for f in pre.findings}["model.kv_fit"] == "pass"
    assert any("auto" in n for n in pre.notes)
    run(tmp_path, "l4-24gb", 'max-model-len = "auto"', extra="[guard]\nmax-model-len-cap = 8192")
    assert run.last.profile.value("max_model_len") == 8192  # type: ignore[attr-defined]
    run(tmp_path, "a100-80gb-x2", 'max-model-len = "auto"')
    assert run.last.params.max_model_len == 131072  # type: ignore[attr-defined]


def test_seed_case_from_a_real_vllm_log() -> None:
    """Llama-3.1-8B bf16, 23.64 GiB card, utilization 0.90, 8192 batched tokens, eager (domain.md)."""
    from vllm_guard.probes.model import probe_model

    model = probe_model(str(DATA / "models" / "llama-3.1-8b"), revision=None, environ={}, cache_dir="/x")
    gpu = replace(machine("l4-24gb").gpus[0], memory_total_bytes=int(23.64 * GIB), memory_free_bytes=int(23.5 * GIB),
                  name="NVIDIA A10G")
    e = estimate(model, gpu, Params(utilization=0.90, max_num_batched_tokens=8192, enforce_eager=True,
                                    max_model_len=8192))
    assert e.kv_bytes_per_token == 131072
    assert e.kv_budget_bytes is not None and e.kv_tokens is not None and e.max_concurrency is not None
    assert abs(e.kv_budget_bytes / GIB - 4.95) / 4.95 < 0.10
    assert abs(e.kv_tokens - 40544) / 40544 < 0.10
    assert abs(e.max_concurrency - 4.95) / 4.95 < 0.10
    assert abs(e.budget_bytes / GIB - 21.28) < 0.01
    assert e.cudagraph_bytes == 0  # eager
    assert e.kv_needed_bytes(model, Params(), 131072) == 16 * GIB


def test_kv_cache_memory_bytes_fixes_the_kv_size(tmp_path: Path) -> None:
    run(tmp_path, "l4-24gb", "kv-cache-memory-bytes = \"2G\"\nmax-model-len = 8192")
    e = run.last.estimate  # type: ignore[attr-defined]
    assert e.kv_budget_bytes == 2 * GIB and e.kv_cache_memory_fixed


def test_defaults_are_reported(tmp_path: Path) -> None:
    run(tmp_path, "h100-80gb-shared", "gpu-memory-utilization = 0.4\nmax-model-len = 8192")
    e = run.last.estimate  # type: ignore[attr-defined]
    assert (e.max_num_batched_tokens, e.max_num_seqs) == (8192, 1024)  # H100 tier in vLLM 0.33
    assert "max-num-seqs" in e.defaults and "gpu-memory-utilization" not in e.defaults


def test_check_json_schema() -> None:
    r = run_cli("check", "--json", "--machine", str(MACHINES / "l4-24gb.json"),
                "profiles/llama-3.1-8b-full-context.toml")
    assert r.code == 4
    doc = json.loads(r.out)
    assert doc["verdict"] == "fail" and doc["model_source"] in ("local", "cache", "hub", "bundled")
    assert isinstance(doc["target"], str)
    for c in doc["checks"]:
        assert set(c) >= {"id", "status", "message", "fix", "measured", "required"}
        assert c["status"] in ("pass", "warn", "fail", "skip")
    mem = doc["memory"]
    ints = ["gpu_total_bytes", "budget_bytes", "weights_bytes_per_gpu", "non_torch_bytes", "activation_bytes",
            "cudagraph_bytes", "kv_budget_bytes", "kv_bytes_per_token", "kv_tokens", "max_model_len",
            "max_fitting_model_len"]
    for key in ints:
        assert isinstance(mem[key], int), key
    assert isinstance(mem["utilization"], float) and isinstance(mem["max_concurrency"], float)


def test_check_exit_codes_through_the_cli() -> None:
    ok = run_cli("check", "--machine", str(MACHINES / "l4-24gb.json"), "profiles/llama-3.1-8b-l4.toml")
    assert ok.code == 0 and "verdict: PASS" in ok.out
    bad = run_cli("check", "--machine", str(MACHINES / "l4-24gb.json"), "profiles/llama-3.1-8b-full-context.toml")
    assert bad.code == 4 and "verdict: FAIL" in bad.out and "--max-model-len" in bad.out


def test_every_example_profile_is_valid() -> None:
    for path in Path("profiles").glob("*.toml"):
        r = run_cli("check", "--json", "--machine", str(MACHINES / "a100-80gb-x2.json"), str(path))
        assert r.code in (0, 4), (path, r.err)
