"""`explain` on blind138-147 (tests/data/real-logs/blind138 to blind147), ten blind sets of issue 26, after their one
scoring.

Collected by helpers that never read the classifier, side by side. blind138, self-made fine-tunes and conversions,
scored once at 009302d: 19 of 20, 1 confident error (a label in dispute). blind139, new models' launch weeks, scored
once at the same commit: 16 of 18, 0 confident errors. Their misses taught: a message quoted indented in a post keeps
its indent on its wrapped lines; an MTP draft's missing weights include its own copy of the embedding; transformers'
KeyError for a model type it does not know, where the paste stops before it is re-raised.

blind140, the official Docker image's starts, and blind141, home labs with several consumer GPUs, scored once at
955a6ea: 13 of 15 (1 confident error) and 17 of 19 (2), all three labels in dispute. They taught: the Hub's own words
for a gated repo, kept alone in a paste.

blind142, HPC clusters, and blind143, the CPU backend and machines without a CUDA GPU, scored once at 5bbf1e7: 15 of
16 (0 confident errors) and 12 of 16 (1, a label in dispute; 11 of 15 once its copy of blind119/b119-009 was removed).
They taught: vLLM not installed where the start ran, and vLLM 0.2-0.4.0's unguarded import of its compiled extension.

blind144, long-context starts, and blind145, data- and expert-parallel MoE starts, scored once at 1cff02f: 13 of 14
(1 confident error, a label in dispute) and 16 of 19 (1; 15 of 18 once its copy of failures/054 was removed). They
taught: a CUDA library's name alone where a paste stops is the loader's failure; a log whose last line is a vLLM
record cut inside its header was cut by the paste, not stopped by a hang.

blind146, starts on GPUs others share, and blind147, vLLM run as a service, scored once at 56f64df: 13 of 14 and 14
of 15, no confident error. They taught: CCCL's refusal of an nvcc and CUDA headers of two releases.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder_reasons import NOT_RELAXABLE_DETAIL


def test_a_quantization_block_message_quoted_indented_and_wrapped_is_read() -> None:
    # "  ValueError: Weight input_size_per_partition = 192 is not divisible by" / "  weight quantization block_k = 128."
    d = classify(blind_log("blind139", "b139-003"))
    assert (d.cls, d.numbers) == ("tp_indivisible", {"size": 192, "block": 128})


FRAMES = ('  File "/usr/lib/python3.12/site-packages/vllm/model_executor/model_loader/default_loader.py", line 291, in '
          'load_weights\n'
          '  File "/usr/lib/python3.12/site-packages/vllm/model_executor/models/utils.py", line 240, in _load_module\n')


@pytest.mark.parametrize("text", [
    # two frames at the same indent are two records, not one wrapped line
    FRAMES + "KeyError: 'qwen2_vl'\n",
    # code under a frame is indented deeper; a statement at the frame's indent is code, not prose
    '  File "/x/vllm/config.py", line 12, in verify_with_parallel_config_and_many_more_words_here\n'
    "  raise ValueError(f'Total number of attention heads ({total}) must be divisible by tensor parallel size')\n",
])
def test_indented_traceback_lines_are_not_joined_as_wrapped_prose(text: str) -> None:
    d = classify(text)
    assert d.cls == "unknown", d


def test_an_mtp_drafts_missing_layer_with_its_own_embedding_is_the_checkpoint_without_mtp() -> None:
    # GLM-OCR merged by LLaMA-Factory, served with --speculative-config mtp: layer 16 and model.embed_tokens missing
    d = classify(blind_log("blind138", "b138-016"))
    assert (d.cls, d.detail) == ("model_access", "mtp_weights_missing")
    assert "--speculative-config" in NOT_RELAXABLE_DETAIL[d.detail or ""]


def test_a_target_models_own_missing_embedding_stays_weights_missing() -> None:
    line = ("ValueError: Following weights were not initialized from checkpoint: {'model.embed_tokens.weight', "
            "'lm_head.weight'}\n")
    assert (classify(line).cls, classify(line).detail) == ("model_access", "weights_missing")


def test_transformers_keyerror_for_an_unknown_model_type_is_read_where_the_paste_stops() -> None:
    # the KeyError of CONFIG_MAPPING[config_dict["model_type"]], cut before transformers re-raises it
    d = classify(blind_log("blind139", "b139-001"))
    assert (d.cls, d.detail) == ("unsupported_architecture", "transformers_model_type")
    assert "transformers" in NOT_RELAXABLE_DETAIL[d.detail or ""]


def test_a_keyerror_elsewhere_is_not_an_unknown_model_type() -> None:
    assert classify(FRAMES + "KeyError: 'qwen2_vl'\n").detail != "transformers_model_type"


def test_transformers_own_words_for_an_unknown_model_type_carry_the_advice() -> None:
    line = ("ValueError: The checkpoint you are trying to load has model type `qwen3_5_moe` but Transformers does not "
            "recognize this architecture. This could be because of an issue with the checkpoint, or because your "
            "version of Transformers is out of date.\n")
    d = classify(line)
    assert (d.cls, d.detail) == ("unsupported_architecture", "transformers_model_type")
    assert any("transformers" in h for h in advice_for(d).helps)


@pytest.mark.parametrize("line", [
    # the Hub's answer without a token (blind140/b140-012, a rank's prefix kept), and to a user not yet let in
    "[rank0]: Access to model meta-llama/Llama-3.2-1B is restricted. You must have access to it and be authenticated "
    "to access it. Please log in.\n",
    "Access to model ardent-figment/gated-model is restricted and you are not in the authorized list. Visit "
    "https://huggingface.co/ardent-figment/gated-model to ask for access.\n",
])
def test_the_hubs_own_words_for_a_gated_repo_are_model_access(line: str) -> None:
    assert classify(line).cls == "model_access"


def test_blind140s_gated_paste() -> None:
    assert classify(blind_log("blind140", "b140-012")).cls == "model_access"


@pytest.mark.parametrize("line", [
    "/usr/bin/bash: line 1: vllm: command not found",  # blind142/b142-004, under srun
    "sh: 1: vllm: not found",
    "ModuleNotFoundError: No module named 'vllm'",
    "/usr/bin/python3: Error while finding module specification for 'vllm.entrypoints.openai.api_server' "
    "(ModuleNotFoundError: No module named 'vllm')",
])
def test_vllm_not_installed_where_the_start_ran(line: str) -> None:
    d = classify(line + "\n")
    assert (d.cls, d.detail) == ("version_mismatch", "vllm_not_installed")


def test_blind142s_slurm_job_without_vllm() -> None:
    d = classify(blind_log("blind142", "b142-004"))
    assert (d.cls, d.detail) == ("version_mismatch", "vllm_not_installed")


def test_vllm_not_found_then_started_another_way_is_not_the_failure() -> None:
    # a script that tries `vllm` and falls back to `python -m`, then serves
    text = ("bash: vllm: command not found\n"
            "INFO 05-01 10:00:00 [api_server.py:1000] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
            "INFO:     Application startup complete.\n")
    assert classify(text).detail != "vllm_not_installed"


def test_vllm_0_3s_unguarded_import_of_its_compiled_extension() -> None:
    # 'from vllm._C import ops' raising in a source build (blind143/b143-016)
    d = classify(blind_log("blind143", "b143-016"))
    assert (d.cls, d.detail) == ("version_mismatch", "extension_missing")
    assert any("source" in h for h in advice_for(d).helps)


def test_the_compiled_extensions_warning_vllm_goes_on_after_is_not_this_reading() -> None:
    # 0.5+: a warning with the error's repr, and a start that goes on to load
    text = ("WARNING 08-31 15:52:50 _custom_ops.py:18] Failed to import from vllm._C with ModuleNotFoundError(\"No "
            "module named 'vllm._C'\")\n"
            "INFO 08-31 15:52:52 api_server.py:440] vLLM API server version 0.5.5\n")
    assert classify(text).detail != "extension_missing"


def test_a_cuda_librarys_name_cut_where_the_paste_stops_is_the_loaders_failure() -> None:
    # "**(EngineCore pid=169) ERROR ... [core.py:1108] ImportError: libcudart.so.1", cut from .so.13 (nixl_ep)
    d = classify(blind_log("blind145", "b145-002"))
    assert (d.cls, d.detail) == ("version_mismatch", "extension_abi")


NCCL_SETUP = "".join(f"(VllmWorker rank={r} pid=29{r}) INFO 03-27 16:00:08 [pynccl.py:69] vLLM is using nccl==2.21.5\n"
                     for r in range(4))


def test_a_log_whose_last_record_is_cut_inside_its_header_is_a_cut_paste_not_a_hang() -> None:
    assert classify(blind_log("blind145", "b145-012")).cls == "unknown"
    cut = classify(NCCL_SETUP + "(VllmWorker rank=2 pid=292) INFO 03-27 16:00:08 [pynccl\n")
    assert (cut.cls, cut.hint[0] if cut.hint else None) == ("unknown", "startup_hang")
    # the same lines, whole, still read as a start that stopped there
    assert classify(NCCL_SETUP).cls == "startup_hang"


def test_nvcc_and_cuda_headers_of_two_releases() -> None:
    # FlashInfer's sampler JIT under pip's drifted nvidia-cuda-nvcc 13.3 and nvidia-cuda-runtime 13.0 (b147-006)
    d = classify(blind_log("blind147", "b147-006"))
    assert (d.cls, d.detail) == ("version_mismatch", "cuda_toolkit_skew")
    assert any("nvidia-cuda-nvcc" in h for h in advice_for(d).helps)
    # the compiler's own wording, with its path and "#error"
    line = ("/venv/lib/python3.12/site-packages/flashinfer/data/cccl/libcudacxx/include/cuda/std/__cccl/cuda_toolkit.h"
            ':41:8: error: #error "CUDA compiler and CUDA toolkit headers are incompatible, please check your include '
            'paths"\n')
    assert classify(line).detail == "cuda_toolkit_skew"


def test_vllm_0_30s_wording_of_the_hybrid_kv_refusal() -> None:
    line = "ValueError: Failed to promote local KV cache specs to one unified type.\n"
    assert classify(line).detail == "hybrid_kv_disabled"


def test_a_plugin_calling_its_own_objects_method_wrongly_is_not_read_as_another_vllm() -> None:
    # the method named in the TypeError is not the one the held object's call shows
    text = ('  File "/opt/vllm-ascend/vllm_ascend/worker/model_runner_v1.py", line 2971, in _dummy_run\n'
            "    self.helper.prepare(num_tokens=num_tokens)\n"
            "TypeError: CudagraphDispatcher.dispatch() got an unexpected keyword argument 'num_tokens'\n")
    assert classify(text).detail != "vllm_api"


# A newcomer review's cases.

def test_cloud_runs_line_gives_way_to_the_containers_own_error() -> None:
    gcloud = ("ERROR: (gcloud.run.deploy) Revision 'x' is not ready and cannot serve traffic. The user-provided "
              "container failed to start and listen on the port defined provided by the PORT=8080 environment "
              "variable within the allocated timeout.\n")
    oom = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
           "22.05 GiB of which 1.00 GiB is free.\n")
    cuda = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3/dist-packages/vllm/_custom_ops.py", line 1, in <module>\n'
            "ImportError: libcudart.so.12: cannot open shared object file: No such file or directory\n")
    assert classify(oom + gcloud).cls == "gpu_oom"
    assert classify(gcloud + cuda).detail == "extension_abi"


def test_vllm_that_ran_after_the_shell_could_not_find_it_is_installed() -> None:
    text = ("bash: vllm: command not found\n$ source ~/venvs/vllm/bin/activate\n"
            "INFO 03-27 16:00:08 [api_server.py:1] vLLM API server version 0.8.5\n"
            "INFO 03-27 16:00:09 [pynccl.py:69] vLLM is using nccl==2.21.5\n")
    assert classify(text).detail != "vllm_not_installed"


def test_the_extension_advice_builds_it_rather_than_skipping_it() -> None:
    d = classify("ModuleNotFoundError: No module named 'vllm._C'\n")
    assert d.detail == "extension_missing"
    assert not any("VLLM_USE_PRECOMPILED=1" in h for h in advice_for(d).helps)


@pytest.mark.parametrize("text", [
    # Inductor's autotune table, IPython's numbered source, the guard's own report: rows, not wrapped prose
    "".join(f"  triton_mm_{k} 0.0219 ms 100.0% ACC_TYPE='tl.float32', ALLOW_TF32=False, BLOCK_K=32, BLOCK_M=16\n"
            for k in range(3)),
    "   1530  return self._compiled_call_impl(*args, **kwargs)  # type: ignore[misc] and some more words\n"
    "   1531  else:\n",
    "  FAIL model.kv_fit: the KV cache for max-model-len 32768 needs 4.0 GiB and 2.1 GiB is left\n"
    "  WARN gpu.dtype: bfloat16 needs compute capability 8.0\n",
])
def test_indented_rows_are_not_joined_as_one_wrapped_message(text: str) -> None:
    from vllm_guard.diagnose import logread

    lines = logread.read(text)
    assert all(logread.continuation(lines, i) is None for i in range(len(lines)))


def test_vllms_placement_warning_gives_way_to_the_error_after_it() -> None:
    warning = ("WARNING 09-23 03:01:22 [ray_utils.py:352] The number of required NPUs exceeds the total number of "
               "available NPUs in the placement group.\n")
    error = ("ValueError: Current node has no NPU available. current_node_resource={'memory': 2.1e11}. vLLM engine "
             "cannot start without NPU.\n")
    assert classify(warning + error).detail == "ray_head_without_gpu"
    # alone, the warning still says there are too few devices, and the advice is the NPU's, not CUDA_VISIBLE_DEVICES
    alone = classify(warning)
    assert (alone.cls, alone.detail) == ("too_few_gpus", "ray_accelerators")
    assert "ASCEND_RT_VISIBLE_DEVICES" in " ".join(advice_for(alone).helps)


def test_a_missing_op_after_the_start_served_is_not_a_start_failure() -> None:
    text = ("INFO:     Application startup complete.\n"
            "AttributeError: '_OpNamespace' '_C' object has no attribute 'awq_dequantize'\n")
    assert classify(text).detail not in ("quant_kernel_missing", "op_missing")


def test_an_import_error_in_the_inspection_subprocess_is_the_install() -> None:
    d = classify(blind_log("blind155", "b155-014"))  # torch's inductor importing triton on ppc64le
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "python_package", "medium")
    # without the subprocess's own error, the inspection stays a candidate
    bare = ("ValueError: Model architectures ['GraniteForCausalLM'] failed to be inspected. Please check the logs for "
            "more details.\n")
    assert (classify(bare).cls, classify(bare).detail) == ("unknown", "inspection_failed")


def test_xformers_built_without_cuda() -> None:
    d = classify(blind_log("blind156", "b156-005"))
    assert (d.cls, d.detail) == ("version_mismatch", "extension_abi")


@pytest.mark.parametrize(("part", "prefix"), [("blind157", "b157-011"), ("failures", "056")])
def test_an_invalid_kernel_image_is_a_candidate(part: str, prefix: str) -> None:
    d = classify(blind_log(part, prefix))
    assert d.cls == "unknown" and d.hint is not None and d.hint[0] == "version_mismatch"


# The readings blind151-157's misses taught, each from its real log (and older logs they decided: b137-005).
TAUGHT = [
    ("blind151", "b151-001", "version_mismatch", "extension_abi"),  # libvllm_ascend_kernels.so missing: its ops missing
    ("blind151", "b151-002", "version_mismatch", "vllm_api"),  # vllm-ascend main over vLLM 0.11.2's CudagraphDispatcher
    ("blind151", "b151-003", "unsupported_architecture", "hybrid_kv_disabled"),  # Qwen3.6 under LMCache's connector
    ("blind151", "b151-004", "unsupported_architecture", "hybrid_kv_disabled"),  # the same, the wrapper's line cut off
    ("blind151", "b151-006", "version_mismatch", "cann_function"),  # "Failed to find function aclmdlRIC", interleaved
    ("blind151", "b151-007", "usage_error", "moe_backend"),  # --moe-backend triton for an NvFP4 checkpoint
    ("blind152", "b152-002", "version_mismatch", "hip_gpu_arch"),  # gfx1151: "HIP error: invalid kernel file"
    ("blind152", "b152-007", "too_few_gpus", "ray_accelerators"),  # "The number of required TPUs exceeds ..."
    ("blind152", "b152-008", "too_few_gpus", "ray_head_without_gpu"),  # "Current node has no TPU available."
    ("blind153", "b153-007", "version_mismatch", "extension_missing"),  # NameError: name 'vllm_cache_ops'
    ("blind153", "b153-015", "quant_unsupported", "quant_kernel_missing"),  # awq_dequantize on a Radeon
    ("blind153", "b153-019", "quant_unsupported", "quant_kernel_missing"),  # gptq_marlin_repack on the CPU build
    ("blind153", "b153-020", "usage_error", "spec_vocab"),  # a draft of another vocabulary
    ("blind154", "b154-016", "model_access", "download_resume"),  # the Hub's 416
    ("blind154", "b154-018", "quant_unsupported", "moe_quant"),  # FusedMoE: assert self.quant_method is not None
    ("blind137", "b137-005", "version_mismatch", "op_missing"),  # '_vllm_fa2_C' without varlen_fwd
    ("blind157", "b157-006", "quant_unsupported", "fp8_moe_scales"),  # Llama 4 Maverick FP8, channel-wise scales
    ("blind157", "b157-012", "gpu_oom", "tpu_onchip"),  # "ValueError: Ran out of memory in memory space vmem"
    ("blind157", "b157-013", "version_mismatch", "c_headers"),  # "fatal error: stddef.h: No such file or directory"
    ("blind157", "b157-015", "version_mismatch", "gpu_arch"),  # Triton's "computeCapability not supported" on sm_120
]


@pytest.mark.parametrize(("part", "prefix", "cls", "detail"), TAUGHT)
def test_what_blind151_to_blind157_taught(part: str, prefix: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log(part, prefix))
    assert (d.cls, d.detail) == (cls, detail)


# The second newcomer review's cases.

C_WARNING = ("WARNING 08-30 10:00:00 _custom_ops.py:17] Failed to import from vllm._C with ImportError("
             "'libcudart.so.12: cannot open shared object file: No such file or directory')\n")
AWQ_OP = ("Traceback (most recent call last):\n"
          '  File "/usr/lib/python3/site-packages/vllm/_custom_ops.py", line 229, in awq_dequantize\n'
          "    return torch.ops._C.awq_dequantize(qweight, scales, zeros, split_k_iters, thx, thy)\n"
          "AttributeError: '_OpNamespace' '_C' object has no attribute 'awq_dequantize'\n")


def test_an_op_missing_after_the_extension_failed_to_load_is_the_extensions_failure() -> None:
    assert classify(C_WARNING + AWQ_OP).detail == "extension_abi"
    assert classify(AWQ_OP).detail == "quant_kernel_missing"


@pytest.mark.parametrize(("op", "namespace"), [
    ("moe_wna16_marlin_gemm", "_moe_C"), ("per_token_group_fp8_quant", "_C"), ("wvSplitKQ_int8", "_rocm_C"),
])
def test_quantization_kernels_in_any_extension(op: str, namespace: str) -> None:
    line = f"AttributeError: '_OpNamespace' '{namespace}' object has no attribute '{op}'\n"
    assert classify(line).detail == "quant_kernel_missing"


def test_the_sparse_indexers_fp8_op_is_not_a_quantization_kernel() -> None:
    line = "AttributeError: '_OpNamespace' '_C' object has no attribute 'fp8_paged_mqa_logits_cpu'\n"
    assert classify(line).detail == "op_missing"


PLACEMENT = ("WARNING 05-01 10:00:01 [ray_utils.py:365] The number of required GPUs exceeds the total number of "
             "available GPUs in the placement group.\n")


@pytest.mark.parametrize("text", [
    # another log format, then the server came up
    "2025-05-01 10:00:01 | WARNING | vllm.v1.executor.ray_utils | The number of required GPUs exceeds the total "
    "number of available GPUs in the placement group.\n"
    "INFO:     Application startup complete.\n",
    # the start went on to load, then the host's OOM killer
    PLACEMENT + "INFO 05-01 10:02:00 [default_loader.py:267] Loading weights took 120.50 seconds\nKilled\n",
    # another failure after the warning
    PLACEMENT + "Traceback (most recent call last):\n  File \"/x/vllm/worker.py\", line 3, in f\n    assert ok\n"
                "AssertionError\n",
])
def test_the_placement_warning_does_not_decide_a_start_that_went_on(text: str) -> None:
    assert classify(text).cls != "too_few_gpus"


LINEAR_ASSERT = ('  File "/x/vllm/model_executor/layers/linear.py", line 205, in __init__\n'
                 "    assert self.quant_method is not None\n"
                 "AssertionError\n")


def test_the_same_assert_in_a_linear_layer_is_not_the_moes() -> None:
    assert classify(LINEAR_ASSERT).detail != "moe_quant"
    prefixed = ("(EngineCore_DP0 pid=7) ERROR 05-01 10:02:00 [core.py:700]   File \"/x/vllm/model_executor/layers/"
                "fused_moe/layer.py\", line 192, in __init__\n"
                "(EngineCore_DP0 pid=7) ERROR 05-01 10:02:00 [core.py:700]     assert self.quant_method is not None\n"
                "(EngineCore_DP0 pid=7) ERROR 05-01 10:02:00 [core.py:700] AssertionError\n")
    assert classify(prefixed).detail == "moe_quant"


def test_a_missing_header_of_a_packages_own_build_is_not_tritons() -> None:
    text = ("  building 'yaml._yaml' extension\n"
            "  ext/_yaml.c:4:10: fatal error: Python.h: No such file or directory\n"
            "INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.11.2\n"
            "ERROR 05-01 10:02:00 [core.py:700] ValueError: To serve at least one request with the models's max seq "
            "len (131072), (16.00 GiB KV cache is needed, which is larger than the available KV cache memory (9.50 "
            "GiB). Based on the available memory, the estimated maximum model length is 77824. Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
    assert classify(text).cls == "kv_cache_too_small"
