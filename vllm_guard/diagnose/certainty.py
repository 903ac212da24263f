"""Pure: how sure a diagnosis is, and the best candidate when it is not sure enough to name a class.

A class is named with confidence "high" when a known message (a template of vLLM, PyTorch, NCCL, Ray,
transformers or the kernel; diagnose/catalogue.py lists them with their sources) matched and the stage comes
from the message itself or from the traceback's frames; "medium" when the class is sure but the stage was read
from the progress lines around it (stdout and stderr interleave out of order in a paste), or the class rests on
supporting evidence (a disk warning under a failed download, a SIGBUS). Below that bar the answer is `unknown`
with confidence "none", and at most a hint: a candidate class and why, which the ladder never acts on.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterable

from vllm_guard.diagnose import logread
from vllm_guard.diagnose.diagnosis import ready
from vllm_guard.diagnose.logread import LogLine
from vllm_guard.diagnose.markers import CUDA_GRAPH, KV_CACHE, LOADING, PROFILING

LEVELS = ("high", "medium", "none")

# Where a diagnosis's stage came from.
MESSAGE = "the message itself"  # the rule's message belongs to one stage (a config check, the KV check)
FRAMES = "the traceback's frames"
PROGRESS = "the progress lines reached"
NO_STAGE = "nothing in the log"

HOST_OOM_SOURCE = ("the kernel's OOM killer (dmesg 'Out of memory: Killed process'), systemd's result 'oom-kill', "
                   "Docker's OOMKilled, Ray's memory monitor")
DISK_WARNING_SOURCE = ("huggingface_hub file_download.py: 'Not enough free disk space to download the file' "
                       "under a failed download")

# The functions in a traceback that say which stage raised (vLLM V0 to 0.33; the CUDA-graph ones first:
# a capture runs dummy forward passes, and a profile run never runs inside a capture).
FRAME_STAGES: tuple[tuple[str, frozenset[str]], ...] = (
    (CUDA_GRAPH, frozenset(("capture_model", "_capture_cudagraphs", "capture_end", "capture_begin", "capture",
                            "_capture_graphs", "capture_cudagraphs"))),
    (PROFILING, frozenset(("profile_run", "_dummy_sampler_run", "_dummy_pooler_run", "determine_num_available_blocks",
                           "determine_available_memory", "_profile_run"))),
    (KV_CACHE, frozenset(("initialize_kv_cache", "_allocate_kv_cache", "allocate_kv_cache", "_init_cache_engine",
                          "initialize_kv_cache_tensors", "_allocate_kv_cache_tensors", "init_cache_engine"))),
    (LOADING, frozenset(("load_model", "load_weights", "create_weights", "make_layers", "get_model",
                         "initialize_model", "_initialize_model", "_init_workers", "init_model"))),
)


# A torch.nn module's constructor allocates its parameters: in a vLLM start only the model's construction runs
# them (weights are created, then loaded), never the profiling run, the CUDA-graph capture or the KV cache's
# allocation. A paste that cut the frames above it (load_model, initialize_model) still shows the stage
# (blind31/b31-008: nn.Linear's torch.empty in a diffusion transformer's __init__).
_NN_MODULE = re.compile(r"[/\\]torch[/\\]nn[/\\]modules[/\\]\w{1,64}\.py$"
                        # vLLM's own layers' constructors allocate their weights too (0.1-0.33 model_executor/;
                        # blind49/b49-001: ColumnParallelLinear.__init__ in 0.1.2)
                        r"|[/\\]vllm[/\\]model_executor[/\\](?:\w{1,64}[/\\]){0,4}\w{1,64}\.py$")


def stage_of_frames(frames: Iterable[logread.Frame]) -> str | None:
    """The start-up stage a traceback's frames were in, or None when they do not say."""
    frames = tuple(frames)
    funcs = {f.func for f in frames}
    stage = stage_of_functions(funcs)
    # a layer's constructor is the model's construction, unless a forward pass built it (a dummy run: profiling)
    if stage is None and "forward" not in funcs and any(f.func == "__init__" and _NN_MODULE.search(f.path)
                                                       for f in frames):
        return LOADING
    return stage


def stage_of_functions(funcs: set[str]) -> str | None:
    """The start-up stage that functions of vLLM's (a traceback's, or one a worker's error line names) belong to."""
    for stage, names in FRAME_STAGES:
        if funcs & names:
            return stage
    return None


# vLLM logs an error's message and then its traceback ("[linear.py:210] Failed to create unquantized linear weights:
# CUDA out of memory ...", "[core.py:708] EngineCore failed to start.", "Traceback ..."): a traceback of the same
# process that starts this few lines after a line is that line's (blind3/b3-039).
TRACEBACK_FOLLOWS_LINES = 3


def frame_stages(tbs: list[logread.Traceback]) -> Callable[[str, int], str | None]:
    """(process, line index) -> the stage of the earliest traceback of that process around the line whose
    frames name one, else of one that starts right after it. A traceback the paste cut (no exception) counts from
    its start to the end of the log. Looked up by bisection: a log of a million OOM tracebacks stays linear
    (issue 28)."""
    closed: dict[str, list[tuple[int, int, str]]] = {}
    first_open: dict[str, tuple[int, str]] = {}
    starts: dict[str, list[tuple[int, str]]] = {}  # every placed traceback's (first line, stage), per process
    for tb in tbs:
        stage = stage_of_frames(tb.frames)
        if stage is None:
            continue
        starts.setdefault(tb.proc, []).append((tb.first, stage))
        if tb.exception is None:
            if tb.proc not in first_open:
                first_open[tb.proc] = (tb.first, stage)
        else:
            closed.setdefault(tb.proc, []).append((tb.first, tb.exception, stage))
    starts_of = {proc: [c[0] for c in spans] for proc, spans in closed.items()}
    firsts_of = {proc: [first for first, _ in placed] for proc, placed in starts.items()}

    def lookup(proc: str, i: int) -> str | None:
        found: tuple[int, str] | None = None
        spans = closed.get(proc)
        if spans:
            k = bisect.bisect_right(starts_of[proc], i) - 1
            if k >= 0 and spans[k][1] >= i:
                found = (spans[k][0], spans[k][2])
        opened = first_open.get(proc)
        if opened is not None and opened[0] <= i and (found is None or opened[0] < found[0]):
            found = opened
        if found is None and proc in starts:
            k = bisect.bisect_right(firsts_of[proc], i)
            if k < len(starts[proc]) and starts[proc][k][0] - i <= TRACEBACK_FOLLOWS_LINES:
                found = starts[proc][k]
        return found[1] if found else None

    return lookup


# Ray's text when a worker dies without a reason (ray/_private/worker.py): it lists the OOM killer first; later
# releases' raylet says "Some common causes include: (1) the process was killed by the OOM killer due to high memory
# usage, (2) ray stop --force was called, or (3) ... SIGSEGV" (as Ray's own docs quote it; blind115/b115-009).
_RAY_MAYBE_OOM = re.compile(r"killed by SIGKILL by OOM killer due to high memory usage"
                            r"|\(1\) the process was killed by the OOM killer due to high memory usage")
# Ray's warning at start in a container with Docker's default /dev/shm (ray/_private/services.py).
_RAY_SMALL_SHM = re.compile(r"/dev/shm has only (\d{1,20}) bytes available")
# The raylet's when the object store asks more than /dev/shm holds (src/ray/object_manager/plasma/store_runner.cc):
# it gives the store what it counts available (90% of what is free) and goes on, a warning of no failure of its own,
# but little of /dev/shm is left for NCCL and vLLM's queues (blind40/b40-002, a container's 10 GiB, labelled
# shm_exhausted): a candidate, never a class, and never before a hang the log shows
_RAY_STORE_SHRUNK = re.compile(r"System memory request exceeds memory available in /dev/shm\. The request is for "
                               r"\d{1,20} bytes, and the amount available is (\d{1,20}) bytes")
# vLLM's DeviceConfig when no platform is found: "Failed to infer device type" (0.5-0.33, config/device.py at
# 0.33), "No supported device detected." (0.3-0.4), platforms/__init__.py's "No platform detected" (0.10+); and
# PyTorch's words for a driver it cannot use (CUDAHooks "Found no NVIDIA driver on your system", cuInit's "CUDA
# driver initialization failed"): none installed, one that does not match its libraries after an upgrade, or a
# container without the GPU runtime.
_NO_PLATFORM = re.compile(r"Failed to infer device type|No supported device detected|Found no NVIDIA driver on your "
                          r"system|CUDA driver initialization failed, you might not have a CUDA gpu|No platform "
                          r"detected, vLLM is running on UnspecifiedPlatform"
                          # torch.device("") from the unspecified platform's empty device_type (vLLM 0.6+)
                          r"|RuntimeError: Device string must not be empty")
# A model class's load_weights looking up a checkpoint's weight name it does not have (params_dict[name], vLLM
# 0.2-0.6), or vLLM 0.6-0.33's AutoWeightsLoader saying so (model_executor/models/utils.py _load_module: "There is no
# module or parameter named 'X' in Y"): the checkpoint's layout and the installed vLLM's (or transformers') class
# differ. Real reports label the two wordings four ways: model_access (blind39/b39-004, b39-005, blind57/b57-003),
# unsupported_architecture (blind9/b9-001, blind37/b37-009, blind49/b49-005), unknown (blind10/b10-001,
# blind22/b22-011), quant_unsupported with a quantized checkpoint (blind23/b23-014, blind25/b25-012): a candidate,
# not a class.
_WEIGHT_KEY = re.compile(r"^KeyError: '[\w.]{1,300}\.(?:weight|bias|qweight|qzeros|scales|g_idx|weight_scale|"
                         r"weight_zero_point|input_scale)'")
# vLLM's platform resolved on first use (vllm/platforms/__init__.py __getattr__, 0.6-0.34): "cannot import name
# 'current_platform'" means the detection failed, and amdsmi's FILE_ERROR (a device file it cannot open) is a cause
# (blind103/b103-007: a service user in a container without the render group)
_PLATFORM_UNRESOLVED = re.compile(r"cannot import name 'current_platform' from 'vllm\.platforms'"
                                  r"|AMDSMI_STATUS_FILE_ERROR")
# A weight loader finding a checkpoint tensor of another shape than the parameter vLLM built from the config
# (layers/linear.py and parameter.py's "assert param_data.shape == loaded_weight.shape", weight_utils.py's "Tried to
# load weights of size X to a parameter of size Y", or the narrow() of a shard past the tensor's end): a checkpoint
# in another layout or quantization than the config says, or a class that computes a dimension otherwise (Mistral-
# Nemo's head_dim in older vLLM). Labelled model_access (blind95/b95-011, b95-012, blind65/b65-001) and
# unsupported_architecture (blind37/b37-012): a candidate, not a class.
_SHAPE_MISMATCH = re.compile(r"assert param_data\.shape == loaded_weight\.shape|Tried to load weights of size "
                             r"torch\.Size|start \(\d{1,12}\) \+ length \(\d{1,12}\) exceeds dimension size "
                             r"\(\d{1,12}\)")
# The phrase is the loader's own, whatever a paste's wrapping keeps of the rest (the name, the class).
_NO_PARAMETER = re.compile(r"There is no module or parameter\b")
# PyTorch's caching allocator asserting on NVML while it writes its out-of-memory message (c10/cuda/
# CUDACachingAllocator.cpp reportProcessMemoryInfo, called only when an allocation failed): NVML cannot list the
# GPU's processes (a MIG slice, some containers). Labelled gpu_oom (blind45/b45-004, a MIG 1g.5gb) and unknown
# (blind13/b13-021, blind17/b17-012, collected/c047, with OOM as their second reading): a candidate, not a class.
_NVML_ASSERT = re.compile(r"NVML_SUCCESS == r INTERNAL ASSERT FAILED at \S{0,300}CUDACachingAllocator\.cpp")
# NCCL's WARN or "Last error:" line naming CUDA's out-of-memory (enqueue.cc, alloc.h: "Cuda failure 'out of memory'")
_NCCL_CUDA_OOM = re.compile(r"Cuda failure '?out of memory")
# vLLM's own names undefined where a program first uses them: lm-evaluation-harness (models/vllm_causallms.py) and
# lmms-eval import vLLM in a `try: ... except ModuleNotFoundError: pass`, so a failed import (vLLM, ray, a module of
# another vLLM release) shows only here. Labelled version_mismatch (blind161/b161-005) and unknown (blind8/b8-010,
# blind9/b9-035, with version_mismatch second), and a script that forgot its import says the same: a candidate.
_VLLM_NAME_UNDEFINED = re.compile(r"NameError: name '(?:LLM|SamplingParams|LLMEngine|AsyncLLMEngine|EngineArgs|"
                                  r"AsyncEngineArgs)' is not defined")
# macOS's loader refusing vLLM's extension of a local build ("Failed to import from vllm._C with ImportError(
# \"dlopen(.../_C.abi3.so, 0x0002): symbol not found in flat namespace '___kmpc_dispatch_deinit'\")", an OpenMP or
# torch symbol the build linked against): its ops are then missing. Labelled version_mismatch (blind143/b143-003,
# blind163/b163-006) and unknown (blind4/b4-032, version_mismatch second): a candidate.
_MACOS_C = re.compile(r"Failed to import from vllm\._C with ImportError\(.{0,1000}?symbol not found in flat namespace")
# CANN failing to set up its platform for the chip as torch_npu sets the device (GE's "[Init][PlatformInfo]init
# runtime platform info failed, SocVersion = Ascend910B2", under AclSetCompileopt's error 500001): a CANN toolkit in
# the image that does not support the chip or fit the host's driver, or its environment not sourced. Labelled
# version_mismatch (blind162/b162-013, b162-014) and unknown (blind11/b11-022, blind50/b50-007): a candidate.
_CANN_PLATFORM = re.compile(r"init runtime platform info failed, SocVersion = \w{1,40}")
# A model's configuration (transformers' class for it, not one of vLLM's own config classes) without a language
# model's setting read at its top ("'Qwen2AudioConfig' object has no attribute 'num_hidden_layers'"): multimodal
# wrappers keep them in a sub-config (text_config, llm_config), so code that does not handle the model reads past it
# (vLLM's, a platform plugin's: vllm-ascend's update_aclgraph_sizes in blind169/b169-003). Labelled
# unsupported_architecture (b169-003, blind155/b155-010) and unknown (blind8/b8-026, blind14/b14-003,
# blind162/b162-010, blind165/b165-013, b165-014): a candidate.
_MODEL_CONFIG_ATTRIBUTE = re.compile(r"AttributeError: '(?P<config>\w{1,100}Config)' object has no attribute "
                                     r"'(?P<attribute>\w{1,100})'")
# VllmConfig and its parts (config/*.py): vLLM's own, whose missing field is another release's (signatures.py)
VLLM_CONFIG_CLASSES = ("ModelConfig", "VllmConfig", "CacheConfig", "ParallelConfig", "SchedulerConfig",
                       "DeviceConfig", "LoadConfig", "LoRAConfig", "SpeculativeConfig", "CompilationConfig",
                       "KVTransferConfig", "ObservabilityConfig", "StructuredOutputsConfig")
# Where a traceback that the paste cut off was, and what most often fails there.
_CUT_IN = {PROFILING: "oom_profiling", KV_CACHE: "kv_cache_too_small", CUDA_GRAPH: "oom_cudagraph",
           LOADING: "oom_loading"}


def hint_for(lines: list[LogLine], tbs: list[logread.Traceback]) -> tuple[str, str] | None:
    """The best candidate for a log that names no failure with confidence, or None when there is none."""
    macos = False
    for line in lines:
        macos = macos or ("flat namespace" in line.text and _MACOS_C.search(line.text) is not None)
        if "OOM killer" in line.text and _RAY_MAYBE_OOM.search(line.text):
            return "host_oom", "Ray says a worker died and names the OOM killer first among the possible causes"
        if "/dev/shm has only" in line.text:
            m = _RAY_SMALL_SHM.search(line.text)
            if m and int(m.group(1)) < 1 << 30:
                return "shm_exhausted", f"Ray warned that /dev/shm holds only {int(m.group(1)) >> 20} MiB"
        if "System memory request exceeds" in line.text and (m := _RAY_STORE_SHRUNK.search(line.text)):
            return "shm_exhausted", "Ray's object store asked for more than /dev/shm holds and took the " \
                                    f"{int(m.group(1)) >> 20} MiB Ray counts available there: NCCL and vLLM's " \
                                    "shared memory share what is left"
        if any(w in line.text for w in ("device", "driver", "platform", "Device")) and _NO_PLATFORM.search(line.text):
            # vLLM found no platform: a build for another one (the PyPI wheel is CUDA's; a CPU-only torch, a broken
            # torch_xla) or no GPU visible (a container without GPUs); real reports are both (blind5/b5-040,
            # blind6/b6-035: the build; blind6/b6-009: a Ray actor given no GPU), so neither is decided
            return "version_mismatch", "no usable device platform: a vLLM or torch built for another platform, an " \
                                       "NVIDIA driver missing or not matching its libraries, or no GPU visible to " \
                                       "the process (a container or Ray actor without GPUs)"
        if "kernel image is invalid" in line.text:
            # CUDA_ERROR_INVALID_IMAGE from Triton: a kernel the driver cannot load, most often built by Triton's
            # bundled CUDA 12 toolchain for a CUDA 11.8 torch; labelled version_mismatch (blind157/b157-011) and
            # unknown (failures/056): a candidate, not a class
            return "version_mismatch", "the driver could not load a compiled kernel: built for another GPU, or by a " \
                                       "newer CUDA toolchain (Triton's own) than the torch and driver in use"
        if "is not defined" in line.text and _VLLM_NAME_UNDEFINED.search(line.text):
            return "version_mismatch", "vLLM's own name is undefined where the program first uses it: the program " \
                                       "(lm-evaluation-harness, lmms-eval) imported vLLM inside try/except and went " \
                                       "on when the import failed; `python -c 'from vllm import LLM'` in that " \
                                       "environment shows what is missing (lm-evaluation-harness imports ray there too)"
        if "platform info failed" in line.text and _CANN_PLATFORM.search(line.text):
            return "version_mismatch", "CANN could not set up its platform information for this chip: the CANN " \
                                       "toolkit in the image does not support the chip or does not fit the host's " \
                                       "NPU driver, or its environment (set_env.sh) is not sourced"
        if "out of memory" in line.text and _NCCL_CUDA_OOM.search(line.text):
            return "gpu_oom", "NCCL's own line says a CUDA call ran out of GPU memory as it set up its buffers (its " \
                              "unhandled error is that allocation's failure)"
        if "NVML_SUCCESS" in line.text and _NVML_ASSERT.search(line.text):
            return "gpu_oom", "PyTorch's allocator asserts so while it writes its out-of-memory message and NVML " \
                              "cannot list the GPU's processes (a MIG slice, some containers): an allocation most " \
                              "likely failed"
        if ("current_platform" in line.text or "AMDSMI_STATUS" in line.text) \
                and _PLATFORM_UNRESOLVED.search(line.text):
            return "usage_error", "vLLM could not resolve its platform: amdsmi or NVML could not read the GPU's " \
                                  "device files (/dev/kfd, /dev/dri/renderD*: the user needs the video and render " \
                                  "groups, a container the devices themselves)"
        if ("loaded_weight" in line.text or "weights of size" in line.text or "dimension size" in line.text) \
                and _SHAPE_MISMATCH.search(line.text):
            return "model_access", "a weight loader found a checkpoint tensor of another shape than the parameter " \
                                   "vLLM built from the config: a checkpoint in another layout or quantization " \
                                   "than its config says (AWQ or GPTQ weights read without their quantization), or " \
                                   "a model class of this vLLM that computes a dimension otherwise (a newer variant)"
        if (("KeyError: '" in line.text and _WEIGHT_KEY.search(logread.body(line.text)))
                or ("no module or parameter" in line.text and _NO_PARAMETER.search(line.text))):
            return "model_access", "the checkpoint holds a weight the installed vLLM's class for the model does not " \
                                   "(a head for another task, such as a classifier's 'score', a checkpoint in " \
                                   "another layout or quantization format, or a model variant newer than this " \
                                   "vLLM or transformers)"
        if "Config' object has no attribute" in line.text and (m := _MODEL_CONFIG_ATTRIBUTE.search(line.text)) \
                and m.group("config") not in VLLM_CONFIG_CLASSES:
            return "unsupported_architecture", f"the model's configuration ({m.group('config')}) has no " \
                f"'{m.group('attribute')}' at its top, where code that does not handle this model reads it (a " \
                "multimodal model keeps its language model's settings in a sub-config): a vLLM, platform plugin or " \
                "program release that supports the model"
    # a warning vLLM logs at import and may go on after: the last lead, and none in a start that got ready
    if macos and not ready(lines):
        return "version_mismatch", "macOS's loader could not load vLLM's compiled extension (a symbol the build " \
                                   "linked against, OpenMP's or torch's, is not in the libraries loaded), so its ops " \
                                   "are missing: a build against the installed torch and OpenMP"
    cut = [tb for tb in tbs if tb.exception is None and tb.frames]
    if cut:
        stage = stage_of_frames(cut[-1].frames)
        if stage in _CUT_IN:
            return _CUT_IN[stage], f"the paste stops inside a traceback in {stage.replace('_', ' ')}, before its error"
    return None
