"""`explain` on blind179-191 (tests/data/real-logs), issue 26's sets after their one scoring.

blind179, failed starts quoted in the commit messages of serving stacks, cloud recipes and vLLM's forks (Open Data
Hub's vLLM fork, AMD's aiter, optimum-neuron, Neuron's inference library), scored once at 3abc7fd: 3 of 6. Its three
misses were messages of the accelerators' and forks' own code no rule read: Neural Magic's nm-vllm asking for its
sparsity package, ROCm's AITER refusing an MXFP4 MoE combination, and AWS Neuron's runtime finding its cores held by
another process. blind180, the commit messages of libraries and model projects whose users start vLLM, scored once
at the same commit: 1 of 1. blind182, excerpts of the issue threads of libraries vLLM loads, scored once at 98c8264:
10 of 11 (its miss shows Triton's ptxas failing without the error ptxas printed). blind183 and blind184, issue threads
of model makers' repositories, scored once at fe73e2e: 3 of 4 and 5 of 9; blind184's misses taught vLLM's
Transformers backend meeting a model's own processor, and xformers' FlashAttention 3 kernels on a Blackwell GPU.
blind185 (more model makers' threads) and blind186 (cloud vendors' and platforms' guides), scored once at fc5aba4: 7 of
10 and 2 of 4; their misses taught transformers 4.50's image-processor size, a plugin reading a module vLLM moved, NIM
not reaching NGC, and a tokenizer.json newer than the tokenizers installed. blind187-188 (Qwen's threads) and
blind190-191 (OCR projects', multimodal and speech models' threads), scored once at ce3ed1f and a76fd82: 27 of 27 and
22 of 24, most of them excerpts cut before their cause; blind190's one reading was a function that raises one failure.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.ladder import Settings, Stop, next_step
from vllm_guard.diagnose.ladder_reasons import NOT_RELAXABLE_DETAIL


@pytest.mark.parametrize(("part", "name", "cls", "detail"), [
    # nm-vllm 0.1-0.5's own check for its sparsity kernels' package (a ValueError, under LLM(..., sparsity=...))
    ("blind179", "b179-001", "version_mismatch", "package_required"),
    # Triton's cache directory raced by several workers' compiles: the commit does not say the start is the moment
    ("blind179", "b179-002", "unknown", None),
    ("blind179", "b179-003", "unknown", None),
    # AITER's CK 2-stage MoE without a Swiglu+MXFP4 kernel (gpt-oss-20b MXFP4 on MI355X), quoted indented, broken
    ("blind179", "b179-004", "quant_unsupported", "aiter_moe"),
    # Neuron's runtime: the logical cores are held by a leftover vLLM container (cores busy, ret=-16)
    ("blind179", "b179-005", "gpu_busy", "neuron_busy"),
    # transformers asking for trust_remote_code (read before the score)
    ("blind179", "b179-006", "remote_code_required", None),
    # a CPU op missing from vLLM's extension (the image's torch), then KServe's use of an attribute vLLM removed
    ("blind180", "b180-001", "version_mismatch", "op_missing"),
    # a Triton ptxas failure for sm_110a whose own error (ptxas's stderr) the excerpt does not show: not read
    ("blind182", "b182-006", "unknown", None),
    # one KeyError line of a weight name: nothing in it says bitsandbytes, which its collector's label rests on
    ("blind183", "b183-004", "unknown", None),
    # transformers' "does not recognize this architecture": read as the other logs of those words are (a label in
    # dispute, KNOWN_CONFIDENT_ERRORS)
    ("blind184", "b184-002", "unsupported_architecture", "transformers_model_type"),
    ("blind184", "b184-003", "unsupported_architecture", "transformers_model_type"),
    # vLLM's Transformers backend asking Step3-VL's own processor for a method transformers' processors have
    ("blind184", "b184-004", "unsupported_architecture", "transformers_backend_mm"),
    ("blind184", "b184-005", "unsupported_architecture", None),
    # xformers' bundled FlashAttention 3, not built for Blackwell, launched on an RTX PRO 6000 Blackwell
    ("blind184", "b184-006", "version_mismatch", "xformers_fa3_arch"),
    # the same line on an RTX 5080 (MinerU), relabelled from unknown with a note in its index
    ("blind8", "b8-013", "version_mismatch", "xformers_fa3_arch"),
    # cut in the frames above the call, before the exception: not read
    ("blind184", "b184-007", "unknown", None),
    # transformers 4.50+ refusing the old Qwen2-VL preprocessor_config.json's size (UI-TARS-2B)
    ("blind185", "b185-001", "version_mismatch", "image_processor_size"),
    # vLLM's weight loader naming a checkpoint weight its class lacks: labels of these words disagree (four classes
    # and unknown across the corpus), so it stays unread
    ("blind185", "b185-004", "unknown", None),
    # VibeVoice's plugin reading vllm.multimodal.audio.AudioMediaIO, which vLLM moved (medium: a program's reading)
    ("blind185", "b185-008", "version_mismatch", "vllm_api"),
    ("blind186", "b186-001", "usage_error", "batched_tokens"),
    # NIM's hub client could not send its request to NGC
    ("blind186", "b186-002", "network", "ngc_unreachable"),
    # tokenizers older than the tokenizer.json it reads (an LMI container)
    ("blind186", "b186-003", "version_mismatch", "tokenizers_format"),
    ("blind186", "b186-004", "gpu_oom", None),
    # a vLLM module a model's code imports that this vLLM has not (read before the score)
    ("blind190", "b190-001", "version_mismatch", "vllm_module"),
    # cut at `raise ValueError(` in vLLM 0.8-0.9's resolve_transformers_arch, whose three raises all refuse the
    # architecture (medium: the function, not the message)
    ("blind190", "b190-002", "unsupported_architecture", None),
    # Triton's PTXASError cut before ptxas's own words (GB10): not read, as b182-006
    ("blind190", "b190-006", "unknown", None),
])
def test_reading(part: str, name: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log(part, name))
    assert (d.cls, d.detail) == (cls, detail)


def test_neuron_cores_held_elsewhere_are_not_waited_for() -> None:
    # the ladder's wait for a busy GPU polls NVML, which sees no NeuronCore: waiting would wait for nothing
    step = next_step(classify(blind_log("blind179", "b179-005")), Settings())
    assert isinstance(step, Stop) and step.reason == NOT_RELAXABLE_DETAIL["neuron_busy"]


@pytest.mark.parametrize(("line", "cls"), [
    # the older runtime's wording (optimum-neuron's issue 377: the message as AWS's troubleshooting guide heads it)
    ("2023-Dec-13 16:44:18.626441 190864:229706 ERROR   NRT:nrt_allocate_neuron_cores               NeuronCore(s) "
     "not available - Requested:2 Available:0", "gpu_busy"),
    # the newer one on one line
    ("ERROR  NRT:nrt_allocate_neuron_cores  Logical Neuron Core(s) not available - Requested:lnc8-lnc9 Available:0 "
     "Logical Core size:1 (cores busy, ret=-16)", "gpu_busy"),
    # some cores free but fewer than asked: too few may be the cause as well as another process, so no reading
    ("ERROR  NRT:nrt_allocate_neuron_cores  NeuronCore(s) not available - Requested:4 Available:2", "unknown"),
])
def test_neuron_core_allocation(line: str, cls: str) -> None:
    assert classify(line + "\nRuntimeError: The PyTorch Neuron Runtime could not be initialized.\n").cls == cls


@pytest.mark.parametrize("line", [
    # AITER v0.1.20's refusal of bf16 activations with MXFP4 weights outside its one SiTU layout
    "NotImplementedError: a16w4 (bf16 A x MXFP4 W) SiTUv2 is not supported: per-expert bias.",
    # AITER v0.1.18-0.1.20's FlyDSL MXFP4 port under expert parallelism
    "NotImplementedError: MXFP4 a4w4 FlyDSL port does not support expert-parallel yet (expert_mask is dropped by the "
    "output_aux sort path).",
])
def test_aiter_moe_refusals(line: str) -> None:
    d = classify(line + "\n")
    assert (d.cls, d.detail) == ("quant_unsupported", "aiter_moe")


def test_a_server_that_got_ready_is_not_read_by_aiter_refusal() -> None:
    # a request's MoE call after the server was ready fails that request, not the start
    text = ("INFO 06-05 18:00:00 [api_server.py:1] Starting vLLM server on http://0.0.0.0:8000\n"
            "NotImplementedError: MXFP4 a4w4 FlyDSL port does not support expert-parallel yet.\n")
    assert classify(text).detail != "aiter_moe"


def test_the_transformers_backends_processor_call_is_read_before_the_processor_api() -> None:
    # another missing attribute of a processor is still read as transformers and vLLM of releases that do not match
    other = classify("AttributeError: 'Qwen2VLProcessor' object has no attribute 'image_token'.\n")
    assert (other.cls, other.detail) == ("version_mismatch", "processor_api")


def test_vllms_own_flash_attention_3_is_not_read_as_xformers() -> None:
    # vLLM's vllm-flash-attn builds the same Hopper template: on a Hopper GPU, where vLLM alone picks FA3, its launch
    # failure says nothing of xformers' dispatch
    line = "CUDA error (/workspace/.deps/vllm-flash-attn-src/hopper/flash_fwd_launch_template.h:188): invalid argument"
    assert classify(line + "\nRuntimeError: Engine core initialization failed.\n").detail != "xformers_fa3_arch"


def test_a_name_vllms_own_module_lacks_under_vllms_own_frame_is_no_programs_mismatch() -> None:
    # vLLM's own code reading its own module: a mixed install, not a program written for another release
    text = ('  File "/usr/lib/python3.12/site-packages/vllm/multimodal/processing.py", line 10, in <module>\n'
            "    from vllm.multimodal.audio import AudioMediaIO\n"
            "AttributeError: module 'vllm.multimodal.audio' has no attribute 'AudioMediaIO'\n")
    assert classify(text).detail != "vllm_api"


def test_a_request_that_could_not_be_sent_to_another_host_is_not_ngc() -> None:
    line = "ERROR hub error sending request for url (https://example.com/v2/models/x/files)"
    assert classify(line + "\nRuntimeError: Engine core initialization failed.\n").detail != "ngc_unreachable"



# A newcomer review's cases (each reproduced, then fixed)

def test_nims_request_error_is_not_the_failure_of_a_start_that_went_on() -> None:
    # NIM may go on from its cache after its hub client's error: a later stage's failure decides
    text = ("[09-25 ERROR nim_sdk::hub::repo repo.rs:119] error sending request for url "
            "(https://api.ngc.nvidia.com/v2/org/nim/team/meta/models/x/files)\n"
            "INFO 09-25 19:05:00 [gpu_model_runner.py:1] Loading model weights took 60.0 GiB\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.10 GiB of which 1.00 GiB is free.\n")
    assert classify(text).detail != "ngc_unreachable"


@pytest.mark.parametrize(("counts", "detail"), [("Requested:4 Available:0", "neuron_busy"),
                                                ("Requested:4 Available:2", None)])
def test_a_neuron_line_broken_before_its_counts_is_read_by_them(counts: str, detail: str | None) -> None:
    text = f"ERROR NRT:nrt_allocate_neuron_cores  NeuronCore(s) not available\n - {counts}\n"
    assert classify(text).detail == detail


_ENVS = ('  File "/usr/lib/python3.12/site-packages/{reader}", line 5, in run\n    if envs.VLLM_NEW_FLAG:\n'
         '  File "/usr/lib/python3.12/site-packages/vllm/envs.py", line 900, in __getattr__\n'
         '    raise AttributeError(f"module {{__name__!r}} has no attribute {{name!r}}")\n'
         "AttributeError: module 'vllm.envs' has no attribute 'VLLM_NEW_FLAG'\n")


@pytest.mark.parametrize(("reader", "detail"), [
    # vllm/envs.py raises from its own __getattr__: the reader is the frame above it
    ("vllm/v1/engine/core.py", None),  # vLLM's own code: a mixed install, not a program's release
    ("vllm_ascend/worker/worker.py", "vllm_api"),  # a plugin written for another vLLM
])
def test_the_reader_of_a_name_vllms_module_lacks_is_the_frame_past_its_getattr(reader: str, detail: str | None) -> None:
    assert classify(_ENVS.format(reader=reader)).detail == detail


@pytest.mark.parametrize(("processor", "cls", "detail"), [
    # transformers' own processor without the method: a transformers older than the release that gave it the method
    ("LlavaProcessor", "version_mismatch", "processor_api"),
    # a processor transformers never gave it: the model's own code
    ("Step3VLProcessor", "unsupported_architecture", "transformers_backend_mm"),
])
def test_whose_processor_lacks_the_transformers_backends_method(processor: str, cls: str, detail: str) -> None:
    d = classify(f"AttributeError: '{processor}' object has no attribute '_get_num_multimodal_tokens'\n")
    assert (d.cls, d.detail) == (cls, detail)



# A second review's cases (each reproduced, then fixed)

def test_nims_request_error_is_not_the_failure_when_another_follows_at_the_same_stage() -> None:
    text = ("[09-25 ERROR nim_sdk::hub::repo repo.rs:119] error sending request for url "
            "(https://api.ngc.nvidia.com/v2/org/nim/team/meta/models/x/files)\n"
            "ValueError: User-specified max_model_len (200000) is greater than the derived max_model_len "
            "(max_position_embeddings=131072 or model_max_length=None in model's config.json).\n")
    assert classify(text).cls == "max_len_exceeds_model"


def test_nims_own_traceback_for_the_hub_keeps_its_reading() -> None:
    text = ("[09-25 ERROR nim_sdk::hub::repo repo.rs:119] error sending request for url "
            "(https://api.ngc.nvidia.com/v2/org/nim/team/meta/models/x/files)\n"
            "Traceback (most recent call last):\n"
            '  File "/opt/nim/llm/vllm_nvext/entrypoints/args.py", line 155, in prepare_environment\n'
            "    engine_args, extracted_name = inject_ngc_hub(engine_args)\n"
            "Exception: error sending request for url\n")
    assert classify(text).detail == "ngc_unreachable"


@pytest.mark.parametrize(("reader", "detail"), [
    ("/usr/lib/python3.12/site-packages/xinference/model/llm/vllm/core.py", "vllm_api"),  # a framework's vllm folder
    ("/home/u/vllm/run.py", "vllm_api"),  # a user's folder named vllm
    ("/workspace/vllm/vllm/v1/engine/core.py", None),  # vLLM's source tree
    (r"C:\Py\Lib\site-packages\vllm\engine\x.py", None),  # vLLM installed, on Windows
])
def test_whose_file_reads_a_name_a_vllm_module_lacks(reader: str, detail: str | None) -> None:
    text = (f'  File "{reader}", line 5, in load\n    x = arg_utils.NewThing\n'
            "AttributeError: module 'vllm.engine.arg_utils' has no attribute 'NewThing'\n")
    assert classify(text).detail == detail


@pytest.mark.parametrize(("code", "after", "cls"), [
    ("raise ValueError(", "", "unsupported_architecture"),
    # the same function imports a remote-code class through transformers, which fails for other reasons
    ("get_class_from_dynamic_module(module,", "", "unknown"),
    ("raise ValueError(", "ModuleNotFoundError: No module named 'flash_attn'\n", "version_mismatch"),
])
def test_resolve_transformers_arch_is_read_only_at_its_raise(code: str, after: str, cls: str) -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.12/site-packages/vllm/model_executor/model_loader/utils.py", line 170, in '
            f"resolve_transformers_arch\n    {code}\n{after}")
    assert classify(text).cls == cls
