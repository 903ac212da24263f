"""The failure rules about the installed software: a compiled extension, a PyTorch build, a driver or a Python
package of another release than the one the GPU, vLLM or the model needs. Read in their place in rules.RULES."""

from __future__ import annotations

import re

from vllm_guard.diagnose import conditions
from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.figures import numbers_of
from vllm_guard.diagnose.markers import BEFORE_START, CUDA_GRAPH
from vllm_guard.diagnose.rule import Rule

VERSION_RULES: tuple[Rule, ...] = (
    # A compiled extension that does not match the installed torch or CUDA: an exception line only (vLLM warns
    # "Failed to import from vllm._C with ImportError(...)" and may go on).
    # (a CUDA library's name alone where the paste stops: the loader's message always goes on with why it failed,
    # and each reason is this one; blind145/b145-002, "ImportError: libcudart.so.1" cut from .so.13)
    # (ctypes raises AttributeError for a function the library it loaded lacks: blind102/b102-006, vLLM's CUDA
    # runtime wrapper on ROCm finding tilelang's libcudart_stub.so without hipSetDevice)
    # (quoted indented, as a post or a commit message quotes it: blind172/b172-007, "  ImportError: libcudart.so.13:
    # cannot open shared object file", vLLM 0.19's nixl_ep built for CUDA 13 under a CUDA 12 torch)
    Rule("version_mismatch", re.compile(r"(?:^ {0,8}|\] )(?:ImportError: |AttributeError: |`?(?=/))\S{1,1000}?\.so"
                                        r"(?:\.\d{1,6}){0,4}: "
                                        r"undefined symbol: "
                                        r"|(?:^ {0,8}|\] )(?:ImportError: lib|OSError: lib)(?:cudart|cublas(?:Lt)?|"
                                        r"cudnn\w{0,20}|nccl|nvrtc|cusparse\w{0,10}|curand|cufft|nvJitLink|c10\w{0,10}|torch\w{0,10})"
                                        r"\.so[\d.]{0,12}(?:: cannot open shared object file|$)"), BEFORE_START,
         detail="extension_abi", source=SOURCES["extension_abi"]),
    # A compiled extension built against a newer C library than the OS has (glibc's dynamic loader: "version
    # `GLIBC_2.32' not found (required by .../vllm/_C.abi3.so)"; blind84/b84-001 as vLLM's warning, read in fallback)
    Rule("version_mismatch", re.compile(r"(?:^|\] )(?:ImportError|OSError): \S{1,500}: version `GLIBC_[\d.]{1,8}' not "
                                        r"found"), BEFORE_START, detail="glibc",
         when=conditions.never_ready_nor_skipped, source=SOURCES["glibc"]),
    # vLLM's own FlashAttention package without its compiled extensions (vllm_flash_attn/__init__.py, 0.2x-0.33): a
    # build or overlay that did not compile them (blind19/b19-013, read in the registry's inspection subprocess).
    Rule("version_mismatch", re.compile(r"vllm\.vllm_flash_attn requires the CUDA flash attention extensions"),
         BEFORE_START, detail="extension_abi", source=SOURCES["vllm_fa_missing"]),
    Rule("version_mismatch", re.compile(r"Torch not compiled with CUDA enabled"), BEFORE_START, detail="extension_abi",
         source=SOURCES["cpu_torch"]),
    Rule("version_mismatch", re.compile(r"no kernel image is available for execution on the device"),
         detail="gpu_arch", source=SOURCES["no_kernel_image"]),
    # Triton's compiler asserting on a GPU it has no MMA version for (lib/Dialect/TritonGPU/Transforms/
    # AccelerateMatmul.cpp getMMAVersionSafe): a Triton older than the GPU (blind157/b157-015, sm_120 under vLLM 0.9.2)
    Rule("version_mismatch", re.compile(r"Assertion `false && \"computeCapability not supported\"' failed"),
         detail="gpu_arch", source=SOURCES["triton_mma_version"]),
    # ROCm's twin: rocBLAS without a Tensile library for the GPU's gfx target (library/src/tensile_host.cpp;
    # blind47/b47-004: a Radeon 890M, gfx1150, under an image built for others)
    Rule("version_mismatch", re.compile(r"rocBLAS error: Cannot read \S{1,512}TensileLibrary\S{0,64}: .{0,80}?for GPU "
                                        r"arch ?: ?(?P<gfx>gfx\w{2,8})"), detail="gpu_arch",
         source=SOURCES["rocblas_arch"]),
    # PyTorch's own warning that its build has no kernels for a GPU (torch/cuda/__init__.py _check_cubins): a
    # warning, about every visible GPU (an old second card warns too), so the failure only when the start never got
    # ready and no decisive error follows it.
    Rule("version_mismatch", re.compile(r"with CUDA capability sm_\d{2,3} is not compatible with the "
                                        r"current PyTorch installation"), BEFORE_START, detail="gpu_arch",
         when=conditions.never_ready, warning=True, source=SOURCES["torch_capability"]),
    # ptxas, run by Triton while torch.compile builds vLLM's kernels, refusing the PTX Triton wrote: Triton chose a
    # PTX ISA version older than the GPU's target (blind14/b14-025: a CUDA 12.8 ptxas handed PTX 8.4 for sm_120a;
    # CUDA 12.9 adds the family targets, sm_120f). Dispatched by "does not support".
    Rule("version_mismatch", re.compile(r"PTX \.version \d{1,2}\.\d{1,2} does not support \.target sm_\d{2,3}[af]?\b"),
         detail="gpu_arch", source=SOURCES["ptx_target"]),
    Rule("version_mismatch", re.compile(r"The NVIDIA driver on your system is too old|CUDA driver version is "
                                        r"insufficient for CUDA runtime version"), BEFORE_START, detail="driver",
         source=SOURCES["driver_too_old"]),
    # ptxas (Triton's bundled one, run while torch.compile or vLLM's Triton kernels build) that does not know the GPU's
    # architecture (blind87/b87-004, b87-005: sm_121a, DGX Spark's GB10); a paste may cut the line after "defined for".
    # Not nvcc's 'gpu-code' or 'gpu-architecture' (a kernel build's), and not in a start that served (Inductor's
    # autotuning logs a choice's failure and goes on)
    Rule("version_mismatch", re.compile(r"Value 'sm_\d{2,3}[af]?' is not defined for(?: option 'gpu-name'|\s{0,4}$)"),
         detail="ptxas_arch", when=conditions.never_ready, source=SOURCES["ptxas_arch"]),
    # Triton, compiling vLLM's kernels, not finding the driver's libcuda.so.1 in the linker cache or LD_LIBRARY_PATH
    # (triton/backends/nvidia/driver.py libcuda_dirs, Triton 2.x-3.x; blind75/b75-001: vLLM 0.4's workers)
    Rule("version_mismatch", re.compile(r"libcuda\.so cannot found"), detail="libcuda_missing",
         source=SOURCES["libcuda_missing"]),
    # NCCL refusing to be captured in a CUDA graph, as vLLM captures its collectives with tensor parallelism: an NCCL
    # built with a CUDA runtime before 11.3, or a driver before R465 (NCCL's misc/strongstream.cc; blind73/b73-002)
    Rule("version_mismatch", re.compile(r"NCCL cannot be captured in a graph if either it wasn't built with CUDA "
                                        r"runtime >= 11\.3 or if the installed CUDA driver < R465"), CUDA_GRAPH,
         detail="nccl_graph", source=SOURCES["nccl_graph"]),
    Rule("version_mismatch", re.compile(r"forward compatibility was attempted on non supported HW"), BEFORE_START,
         detail="driver", source=SOURCES["cuda_compat"]),
    # The NVIDIA container toolkit refusing an image whose CUDA the host's driver does not reach (nvidia-container-cli
    # checks the image's NVIDIA_REQUIRE_CUDA before the container starts).
    Rule("version_mismatch", re.compile(r"nvidia-container-cli: requirement error: unsatisfied condition: cuda>="),
         BEFORE_START, detail="driver", source=SOURCES["container_cuda"]),
    # The driver older than the CUDA the build's kernels were compiled with (cudaErrorUnsupportedPtxVersion, 222), or
    # a driver whose kernel module and user libraries differ after an upgrade (cudaErrorSystemDriverMismatch, 803).
    Rule("version_mismatch", re.compile(r"the provided PTX was compiled with an unsupported toolchain|system has "
                                        r"unsupported display driver / cuda driver combination"), BEFORE_START,
         detail="driver", source=SOURCES["cuda_driver_errors"]),
    # A program's own CLI without the vLLM command its instructions name: the program predates it (TRL added
    # `trl vllm-serve` in 0.16; argparse's words for an unknown subcommand).
    Rule("version_mismatch", re.compile(r"error: argument command: invalid choice: 'vllm-serve'"), BEFORE_START,
         detail="vllm_api", source=SOURCES["vllm_serve_command"]),
    # transformers older than the model's config: 4.36-4.42 LlamaConfig._rope_scaling_validation knows only
    # {type, factor}; Llama 3.1's {"rope_type": "llama3", ...} and Qwen's yarn dicts need 4.43+.
    Rule("version_mismatch", re.compile(r"`rope_scaling` must be a dictionary with two fields, `type` and `factor`"),
         BEFORE_START, detail="python_package", source=SOURCES["rope_scaling"]),
    # vLLM's own max-length check asserts a factor in any rope_scaling it does not special-case: the model's
    # config is of a form this vLLM (or the transformers that rewrote it) does not know. Python prints the
    # assert's source line in the traceback, and the AssertionError after it is bare.
    Rule("version_mismatch", re.compile(r"assert \"factor\" in rope_scaling"), BEFORE_START, detail="rope_format",
         when=conditions.assertion_raised, source=SOURCES["rope_factor"]),
    # vLLM transformers_utils/config.py patch_rope_scaling_dict (0.7.3-0.11.0): a rope_scaling with neither
    # 'rope_type' nor the legacy 'type', as transformers 5 (rope_parameters) and models newer than the vLLM write it
    # (Gemma 3/4 on an older vLLM; blind28/b28-008)
    Rule("version_mismatch", re.compile(r"rope_scaling should have a 'rope_type' key"), BEFORE_START,
         detail="rope_format", source=SOURCES["rope_type_key"]),
    # transformers 4.50+ takes a Qwen2-VL-family image processor's size as {shortest_edge, longest_edge} and refuses
    # the {min_pixels, max_pixels} form older checkpoints' preprocessor_config.json gives it (4.49 took it;
    # models/qwen2_vl/image_processing_qwen2_vl.py); blind185/b185-001: UI-TARS-2B under vLLM's V0 engine.
    Rule("version_mismatch", re.compile(r"size must contain 'shortest_edge' and 'longest_edge' keys"),
         detail="image_processor_size", when=conditions.never_ready, source=SOURCES["image_processor_size"]),
    # the tokenizers library (Rust, through serde) unable to read tokenizer.json's model, pre-tokenizer, normalizer,
    # decoder or post-processor: a file written by a later tokenizers (0.20 wrote BPE merges as pairs) read by an
    # older one (blind186/b186-003: a LLaVA tokenizer in an LMI container of vLLM)
    Rule("version_mismatch", re.compile(r"data did not match any variant of untagged enum (?:Model|PreTokenizer|"
                                        r"Normalizer|Decoder|PostProcessor)Wrapper"),
         BEFORE_START, detail="tokenizers_format", when=conditions.never_ready, source=SOURCES["tokenizers_format"]),
    # transformers 5 saves "tokenizer_class": "TokenizersBackend"; 4.x has no such class (vLLM 0.16+ hf.py).
    Rule("version_mismatch", re.compile(r"Tokenizer class TokenizersBackend does not exist or is not currently "
                                        r"imported"), BEFORE_START, detail="python_package",
         source=SOURCES["tokenizers_backend"]),
    # vLLM (or a model's own code) registers a config type that the installed transformers now defines itself
    # (AutoConfig.register: vLLM 0.9's "aimv2" for Ovis against transformers 4.56): transformers is newer than
    # the code that registers it.
    Rule("version_mismatch", re.compile(r"'[\w-]{1,64}' is already used by a Transformers config, pick another name"),
         BEFORE_START, detail="python_package", source=SOURCES["config_registered"]),
    # A torchvision built for another torch: its C++ ops did not register, and its meta registrations name one
    # (torchvision/_meta_registrations.py at import, which transformers' image processors trigger).
    Rule("version_mismatch", re.compile(r"operator torchvision::\w{1,64} does not exist"), BEFORE_START,
         detail="python_package", source=SOURCES["torchvision_ops"]),
    # A module of torch, transformers, triton or huggingface_hub without a name vLLM or the model reads: the same
    # evidence as the ImportError below, spelled as an attribute (vLLM 0.4-0.33 read them at import or start).
    Rule("version_mismatch", re.compile(r"(?:^|\] )AttributeError: module '(?P<package>torch|transformers|triton|"
                                        r"huggingface_hub)(?:\.\w{1,64}){0,4}' has no attribute '\w{1,128}'"),
         BEFORE_START, detail="python_package", source=SOURCES["python_package"]),
    # Not a circular import ("from partially initialized module"): that is a bug, not a version. Any other
    # installed package counts when Python names its file under site- or dist-packages (the message carries the
    # module's file: "cannot import name 'X' from 'outlines.fsm.json_schema' (/.../site-packages/outlines/...)"): the
    # code importing it was written for another release of it (vLLM 0.5's outlines, blind14/b14-020). A local
    # folder ("(unknown location)", a model's own code) is not a package version. A start that got ready survived
    # it (vLLM logs a plugin that fails to load, with its traceback, and goes on: vllm/plugins/__init__.py).
    # Not vllm.platforms' current_platform: a module __getattr__ that resolves the platform when first asked, so its
    # "cannot import name" is the platform's detection failing (an earlier line says why: amdsmi or NVML could not
    # read the devices; blind103/b103-007), not another release (certainty.hint_for names it).
    Rule("version_mismatch", re.compile(r"(?:ImportError: |^)cannot import name "
                                        r"'(?P<name>(?!current_platform')\w{1,128})' from "
                                        r"(?:'(?P<package>transformers|torch|vllm|huggingface_hub|triton)[.'\s]"
                                        r"|'[\w.]{1,200}' \([^()]{0,1000}?[/\\](?:site|dist)-packages[/\\])"
                                        r"|ModuleNotFoundError: No module named 'transformers\.models\.\w{1,128}'"
                                        # a submodule of compressed-tensors, which vLLM pins (requirements/common.txt)
                                        # and imports for compressed-tensors checkpoints: another release of it
                                        # (blind20/b20-008)
                                        r"|ModuleNotFoundError: No module named 'compressed_tensors\.[\w.]{1,200}'"),
         BEFORE_START, detail="python_package", when=conditions.never_ready, source=SOURCES["python_package"]),
    # A module two or more levels under vllm/ that the installed vLLM does not have: the code importing it (a
    # platform plugin, unsloth, a model's vLLM file, or vLLM's own CLI in a source tree whose packages were not all
    # installed) was written for another vLLM layout. vLLM moves modules between releases
    # (vllm/transformers_utils/tokenizer.py is vllm/tokenizers/ in 0.32). Not one level down ('vllm.entrypoints',
    # 'vllm.engine': in every release, so a broken install or a local file named vllm.py), not a compiled part
    # (vllm._C, vllm.vllm_flash_attn._vllm_fa2_C: vLLM 0.32 logs those at ERROR and goes on with another kernel,
    # v1/attention/backends/fa_utils.py), not "; 'vllm' is not a package" (that shadowing), and only as the start's
    # last error (vLLM logs a plugin that fails to import and goes on: plugins/__init__.py).
    Rule("version_mismatch", re.compile(r"No module named '?vllm\.(?![\w.]*_C(?!\w))\w{1,64}\.[\w.]{1,200}(?![\w.])"
                                        r"(?!'?; 'vllm' is not)"),
         BEFORE_START, detail="vllm_module", when=conditions.last_error, source=SOURCES["vllm_module"]),
    # One level down, a module only some releases have (of 0.4.0, 0.4.2, 0.5.5, 0.11.2, 0.20.2, 0.30.0, 0.32.0, 0.33.0
    # and 0.34.0 read, every one has only those listed below): 'vllm.prompt_adapter', gone in 0.10, imported by a TGIS
    # adapter built for an older vLLM (blind132/b132-002). Raised, not 0.4-0.6's warning that it goes on after
    # ("Failed to read commit hash:" over "No module named 'vllm.commit_id'", version.py; a newcomer review).
    Rule("version_mismatch", re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '?vllm\.(?!(?:config|"
                                        r"engine|entrypoints|logger|lora|model_executor|outputs|sampling_params|"
                                        r"sequence|transformers_utils|usage|utils|vllm_flash_attn|commit_id|version)"
                                        r"\b)[a-z]\w{0,63}(?![\w.])(?!'?; 'vllm' is not)"),
         BEFORE_START, detail="vllm_module", when=conditions.last_error, source=SOURCES["vllm_module"]),
    # vLLM's compiled extension raised missing, not logged and gone on after (the warning "Failed to import from
    # vllm._C with ModuleNotFoundError(...)" of 0.5-0.34 is read in fallback): 0.2-0.4.0 imported it unguarded ("from
    # vllm._C import ops"; blind143/b143-016, a source build in February 2024), 0.4.1-0.4.3's _custom_ops.py swallowed
    # the ImportError and failed at the first op ("NameError: name 'vllm_cache_ops' is not defined"; blind153/b153-007,
    # a source checkout run in place); the vllm/ folder of a source tree run in place, or a build that did not
    # compile it
    Rule("version_mismatch", re.compile(r"^ModuleNotFoundError: No module named 'vllm\._(?:C|moe_C|rocm_C)'$"
                                        r"|NameError: name 'vllm_(?:cache_)?ops' is not defined"),
         BEFORE_START, detail="extension_missing", when=conditions.last_error_before_vllm,
         source=SOURCES["extension_missing"]),
    # vLLM's compiled extension (or a plugin's, _C_ascend) without an op its Python code calls, other than a
    # quantization kernel (rules_quant.py): the extension did not load, an earlier warning says why, or was built from
    # another source (blind137/b137-005: a fork installed over another build's compiled parts, '_vllm_fa2_C' without
    # varlen_fwd; blind4/b4-032: a macOS build whose _C failed to load, without silu_and_mul)
    Rule("version_mismatch", re.compile(r"'_OpNamespace' '_\w{0,30}C\w{0,20}' object has no attribute '\w{1,128}'"),
         detail="op_missing", when=conditions.op_missing_alone, source=SOURCES["op_missing"]),
    # vLLM itself not installed where the start ran: bash's and dash's words for a `vllm` not on PATH, Python's for
    # a package it cannot import (also as `python -m vllm.entrypoints...` reports it), in a Slurm job's environment
    # without the conda env vLLM went into (blind142/b142-004), a container or a Ray node without it
    # (the command's name checked whole in the condition: a pattern that opens with that test is tried at every
    # position of every "No module named" line, a fifth of the time of a log of them)
    Rule("version_mismatch", re.compile(r"vllm: (?:command )?not found$|No module named '?vllm'?\)?$"),
         BEFORE_START, detail="vllm_not_installed", when=conditions.vllm_itself_missing,
         source=SOURCES["vllm_not_installed"]),
    # vLLM-Omni's import-time check of its own major.minor against vLLM's (vllm_omni/version.py
    # warn_if_misaligned_vllm_version): a warning, so the failure only when the start never got ready and no
    # decisive error follows (blind23/b23-018)
    Rule("version_mismatch", re.compile(r"vLLM and vLLM-Omni appear to have mismatched major/minor versions"),
         BEFORE_START, detail="plugin_version", when=conditions.never_ready, warning=True,
         source=SOURCES["omni_version"]),
    # numba (which vLLM's n-gram speculator and some kernels import) refuses a NumPy outside its range at import
    Rule("version_mismatch", re.compile(r"Numba needs NumPy [\d.]{1,12} or (?:less|greater)\. Got NumPy [\d.]{1,12}"),
         BEFORE_START, detail="numba_numpy", when=conditions.never_ready, source=SOURCES["numba_numpy"]),
    # Triton builds a C launcher per kernel with the system's C compiler: an image or venv without one (gcc) fails
    # at the first Triton kernel, in the profiling run or torch.compile (blind20/b20-004)
    Rule("version_mismatch", re.compile(r"Failed to find C compiler\. Please specify via CC environment variable"),
         detail="no_c_compiler", when=conditions.never_ready, source=SOURCES["no_c_compiler"]),
    # torch.compile's Inductor building C++ (torch/_inductor/exc.py InvalidCxxCompiler, read at 2.13: "No working C++
    # compiler found in torch._inductor.config.cpp.cxx: (None, 'g++')"): vLLM's CPU backend compiles its model so at
    # start (LocalAI's image without g++, blind173/b173-005)
    Rule("version_mismatch", re.compile(r"No working C\+\+ compiler found in(?: |$)"),
         detail="no_cxx_compiler", when=conditions.never_ready, source=SOURCES["no_cxx_compiler"]),
    # The same launcher's build finding a header missing: Python's (python3-dev), the compiler's own (an incomplete gcc:
    # stddef.h; blind157/b157-013, a source build's profiling run), or CUDA's
    Rule("version_mismatch", re.compile(r"fatal error: (?P<header>Python\.h|stddef\.h|stdlib\.h|cuda\.h): No such "
                                        r"file or directory"), detail="c_headers", when=conditions.near_triton,
         source=SOURCES["c_headers"]),
    # torch's custom-op schema inference (torch/_library/infer_schema.py, 2.4+) refusing the annotation of one of
    # vLLM's ops as vLLM registers them at import (utils direct_register_custom_op): the vLLM (or fork) was written
    # for another torch (blind32/b32-007: ROCm's fork under torch 2.6, 'Optional[list[int]]')
    Rule("version_mismatch", re.compile(r"infer_schema\(func\): Parameter \w{1,64} has unsupported type"),
         BEFORE_START, detail="torch_schema", when=conditions.never_ready, source=SOURCES["infer_schema"]),
    # Sleep mode (--enable-sleep-mode; RL frameworks set enable_sleep_mode=True) allocates through vLLM's compiled
    # allocator, and a build without it fails on the first allocation: vLLM's cumem_allocator (device_allocator/
    # cumem.py, 0.7-0.33: a source build that left it out), xpumem on XPU (0.32+), vllm-ascend's camem in
    # vllm_ascend_C (built only with COMPILE_CUSTOM_KERNELS; blind27/b27-002)
    Rule("version_mismatch", re.compile(r"(?<![\w-])(?:cu|ca|xpu)mem allocator is not available"), BEFORE_START,
         detail="sleep_allocator", when=conditions.never_ready, source=SOURCES["sleep_allocator"]),
    # flash-attention compiled with FLASHATTENTION_DISABLE_UNEVEN_K (or _LOCAL, _DROPOUT) to save build time and
    # wheel size refuses what it left out (csrc/flash_attn/flash_api.cpp set_params_fprop, and the same check in
    # vLLM's vllm-flash-attn fork and FA3's hopper/flash_api.cpp): most often a vision or audio encoder whose head
    # size is 80 (Qwen2.5-VL, Qwen3-Omni) run through that build (blind26/b26-004)
    Rule("version_mismatch", re.compile(r"This flash attention build does not support (?P<feature>[\w ]{1,80})"),
         detail="flash_attn_build", when=conditions.never_ready, source=SOURCES["flash_attn_build"]),
    # ROCm's twin of CUDA's "no kernel image": hipErrorInvalidDeviceFunction, a kernel with no code object for the
    # GPU's gfx target (an image built for MI300's gfx942 on a Radeon; blind103/b103-002, blind80/b80-001..003), and
    # hipErrorInvalidKernelFile, a kernel file the runtime could not load for the GPU ("invalid kernel file":
    # blind152/b152-002, gfx1151 under a build for other targets)
    Rule("version_mismatch", re.compile(r"HIP error: invalid device function|HIP error: invalid kernel file"),
         detail="hip_gpu_arch",
         when=conditions.never_ready, source=SOURCES["hip_invalid_function"]),
    # vLLM's stand-in for DeepGEMM's kernels when the optional deep_gemm package is missing or older than it needs
    # (utils/deep_gemm.py _missing, 0.10-0.33): an FP8 path or the kernel warm-up called one (blind43/b43-011: the
    # sparse-attention indexer's fp8_paged_mqa_logits); and the indexer's own checks as it is built (0.30-0.34
    # sparse_attn_indexer.py, sparse_indexer.py; blind129/b129-013: a Windows build at TP 2)
    Rule("version_mismatch", re.compile(r"DeepGEMM backend is not available or outdated|Sparse Attention Indexer CUDA "
                                        r"op requires DeepGEMM|requires DeepGEMM >= [\d.]{1,8} \(\w{1,64} not found"),
         detail="deep_gemm", source=SOURCES["deep_gemm"]),
    # vLLM's own ImportError that names a package a model, loader or feature needs and this environment lacks or has
    # at another version (vLLM 0.4-0.34: "Please install timm", "bitsandbytes version is wrong. Please install
    # bitsandbytes>=...", "Using Ray backend requires installation of ray", "The package `amd-quark` is required to
    # ..."; blind70/b70-003: Pixtral's Mistral format without xformers, 0.6-0.9 models/pixtral.py, in a ROCm image;
    # Neural Magic's nm-vllm 0.1-0.5 raises a ValueError for its sparsity kernels' package, blind179/b179-001).
    # Not a remote-code file's own list of packages (transformers' message), nor vLLM's gpt_oss check, which its tool
    # servers catch and log as a warning.
    Rule("version_mismatch", re.compile(r"ImportError: (?:Please install \S|Xformers is required for \w|"
                                        r"\w{1,40} version is wrong\. Please|Using Ray backend requires installation "
                                        r"of ray|The package `[\w-]{1,40}` is required to)|ValueError: magic_wand is "
                                        r"not available and required for sparsity"),
         detail="package_required", when=conditions.never_ready_nor_skipped, source=SOURCES["package_required"]),
    # transformers' check of a remote-code file's imports (dynamic_module_utils.py check_imports): the model's own
    # modeling file imports packages this environment lacks (blind92/b92-009: tiktoken for Qwen-7B under Ray;
    # blind11/b11-014: addict and matplotlib for DeepSeek-OCR, labelled unknown by its collector, who found no class
    # for a missing package). vLLM's other missing packages read version_mismatch (package_required, package_missing).
    # Only as the last error: vLLM 0.11-0.34's Transformers fallback tries a remote-code class with warn_on_fail
    # (transformers_utils/dynamic_module.py), logs this traceback and goes on to raise the architecture's own error.
    Rule("version_mismatch", re.compile(r"This modeling file requires the following packages that were not found in "
                                        r"your environment: (?P<packages>[\w., -]{1,300})"),
         detail="remote_code_packages", when=conditions.last_error, source=SOURCES["remote_code_packages"]),
    # vLLM's MoE layers importing OpenAI's triton_kernels package (gpt-oss's MXFP4 and other FP4 MoE paths): it logs
    # the failure and goes on, and the start fails later only if the model needs them (blind7/b7-005 goes on to its
    # banner). Read only where nothing but more of the same follows (blind91/b91-011: the line alone).
    Rule("version_mismatch", re.compile(r"Failed to import Triton kernels\. Please make sure your triton version is "
                                        r"compatible"), detail="triton_kernels", when=conditions.nothing_after,
         warning=True, source=SOURCES["triton_kernels"]),
    # FlashInfer's JIT (jit/cpp_ext.py) finding no CUDA toolkit to compile its kernels: an image with the CUDA runtime
    # but no nvcc (blind105/b105-002: KAITO's phi-4-mini on a T4, where FlashInfer is the attention backend)
    Rule("version_mismatch", re.compile(r"Could not find nvcc and default cuda_home="), detail="nvcc_missing",
         when=conditions.never_ready, source=SOURCES["nvcc_missing"]),
    # torch_npu calling a function of CANN's ACL that the installed CANN does not have (its ACL interface loads them by
    # name: "Failed to find function aclmdlRICaptureBegin", then "ERR00008 PTA resource not found"): CANN older than
    # the torch_npu and vllm-ascend need, met first by ACL graph capture (vllm-ascend#1261; blind151/b151-006, whose
    # paste interleaves the name with another line: "aclmdlRIC")
    Rule("version_mismatch", re.compile(r"Failed to find function (?P<function>acl\w{1,80})"),
         detail="cann_function", when=conditions.never_ready, source=SOURCES["cann_function"]),
    # CANN's operator library finding no kernel binaries for an aclnn op (opbase's NnopbaseCollecter): the kernels
    # package (Ascend-cann-kernels for this chip) is not installed, or ASCEND_OPP_PATH does not lead to it
    # (blind162/b162-009: torch_npu.npu_swiglu in vllm-ascend 0.7.3's profile run, "call aclnnSwiGlu failed")
    Rule("version_mismatch", re.compile(r"Get path and read binary_info_config\.json failed, please check if the "
                                        r"opp_kernel package is installed"),
         detail="cann_kernels", when=conditions.never_ready, source=SOURCES["cann_kernels"]),
    # xFormers' operator dispatch listing why no kernel fits, and the reason is its own build (xformers/ops/fmha:
    # "xFormers wasn't build with CUDA support", its spelling): an xformers wheel for another torch or CUDA, which
    # cannot load its compiled part (blind156/b156-005, xformers under vLLM 0.6.4's profiling run on a V100)
    Rule("version_mismatch", re.compile(r"xFormers wasn't build with CUDA support"), detail="extension_abi",
         when=conditions.never_ready, source=SOURCES["xformers_build"]),
    # The CUDA C++ library's check that nvcc and the CUDA headers are one release (CCCL cuda/std/__cccl/cuda_toolkit.h
    # compares nvcc's major.minor with CUDART_VERSION): pip's nvidia-cuda-nvcc and nvidia-cuda-runtime wheels drift
    # apart (vLLM 0.2x-0.3x on CUDA 13), and FlashInfer's JIT (its sampler at engine start) or DeepGEMM's fails
    # (blind147/b147-006: nvcc 13.3 over runtime 13.0)
    Rule("version_mismatch", re.compile(r"CUDA compiler and CUDA toolkit headers are incompatible"),
         detail="cuda_toolkit_skew", when=conditions.never_ready, source=SOURCES["cuda_toolkit_skew"]),
    # Triton-Ascend's compiler (bishengir-compile, under vllm-ascend's Triton kernels) without the chip's target: a
    # Triton-Ascend older than the NPU (blind99/b99-010: Ascend910B4-1 in the v0.13.0rc1 image).
    Rule("version_mismatch", re.compile(r"bishengir-compile: for the --target option: Cannot find option named "
                                        r"'(?P<target>[\w.-]{1,64})'"), detail="bisheng_target",
         when=conditions.never_ready, source=SOURCES["bisheng_target"]),
    # FlashAttention 3's kernels as xformers bundles them (built for Hopper, and the A100 from 0.0.31), launched on
    # another GPU: xformers before 0.0.33 took any GPU from capability 9.0 up for them (8.0 from 0.0.31;
    # ops/fmha/flash3.py), and vLLM 0.10 and earlier ran many vision encoders through xformers, also on Blackwell
    # (0.11 platforms/cuda.py get_vit_attn_backend uses SDPA there, citing xformers issue 1317).
    # blind184/b184-006: Cosmos-Reason1 on an RTX PRO 6000.
    Rule("version_mismatch", re.compile(r"CUDA error \(\S{0,300}xformers/third_party/flash-attention/hopper/"
                                        r"[\w.]{1,80}:\d{1,6}\): invalid argument"),
         detail="xformers_fa3_arch", when=conditions.never_ready, source=SOURCES["xformers_fa3_arch"]),
    # vLLM's Transformers backend, standing in for a multimodal architecture vLLM has no class for, counts an image's
    # tokens with the processor's _get_num_multimodal_tokens (0.10-0.34 models/transformers*.py), which transformers
    # gives only the processors of models its vLLM backend runs (from 4.55, more in each release): a processor it never
    # gave it (a model's own, remote code) cannot be run so (blind184/b184-004: Step3-VL-10B before vLLM's own class
    # for it, which its nightly had). One of transformers' own that lacks it is a transformers older than the release
    # that gave it the method: the processor API's rule below reads it, as it reads other missing attributes.
    Rule("unsupported_architecture", re.compile(r"AttributeError: '\w{1,120}' object has no attribute "
                                                r"'_get_num_multimodal_tokens'"),
         BEFORE_START, detail="transformers_backend_mm", when=conditions.processor_not_transformers,
         source=SOURCES["transformers_backend_mm"]),
    # A multimodal processor or feature extractor (transformers', or vLLM's stand-in for mistral_common's) without a
    # method or attribute the other side calls: transformers and vLLM (or the model's processor code) of releases
    # that do not match (blind39/b39-011: Qwen2VLProcessor.image_token; blind100/b100-001: transformers 5.10 calling
    # fetch_audio on vLLM 0.22's MistralCommonFeatureExtractor).
    # Only where the frames above are multimodal processing's (not a user's logits processor, nor vLLM's
    # LogitsProcessor or InputProcessor classes).
    Rule("version_mismatch", re.compile(r"AttributeError: '\w{0,120}(?<!Logits)(?<!Input)(?:Processor|FeatureExtractor|"
                                        r"ImageProcessor(?:Fast)?)' object has no attribute '\w{1,128}'"),
         detail="processor_api", when=conditions.raised_in_processing, source=SOURCES["processor_api"]),
    # The NixlConnector (--kv-transfer-config, disaggregated prefill: Dynamo, llm-d) where the nixl package did not
    # import: vLLM logs a warning at import and raises when the connector's worker starts (0.10-0.34). The warning
    # alone is every start's that does not use NIXL (startups/011): only the raise (blind22/b22-002, Dynamo 0.4).
    Rule("version_mismatch", re.compile(r"(?<![\w.])RuntimeError: NIXL is not available"), detail="nixl_missing",
         source=SOURCES["nixl_missing"]),
    # PyTorch's Inductor (torch.compile, which vLLM compiles the model with) on a GPU older than Triton takes
    # (torch/_inductor/exc.py GPUTooOldForTriton, scheduler.py before: "Found Tesla P40 which is too old to be supported
    # by the triton GPU compiler, ... CUDA Capability >= 7.0, but your device is of CUDA capability 6.1";
    # blind121/b121-001, a Pascal build of vLLM with the stock Triton)
    Rule("version_mismatch", re.compile(r"which is too old to be supported by the triton GPU compiler(?:.{0,200}?your "
                                        r"device is of CUDA capability (?P<current_capability>\d{1,2}\.\d))?"),
         detail="triton_capability", numbers=lambda m: numbers_of(m, "current_capability"),
         source=SOURCES["triton_capability"]),
    # Triton building its CUDA helper module (triton/runtime/build.py _build: cc ... -lcuda -L<libcuda_dirs()>) where
    # the folder holding the driver's libcuda.so.1 has no libcuda.so for "-lcuda" to find (containers): GNU ld's
    # "cannot find -lcuda" (blind123/b123-001, Qwen2.5-VL on vLLM 0.9). FlashInfer's JIT links -lcuda too. Only where
    # the start went no further: a compile that failed once and was survived is not the failure (a review's case).
    # A worker's copy of the build's output comes under vLLM's logging prefix (blind176/b176-010, FlashInfer's JIT in
    # a conda toolchain on WSL2).
    Rule("version_mismatch", re.compile(r"^(?:ERROR \d\d-\d\d \d\d:\d\d:\d\d \[[\w./-]{1,200}:\d{1,6}\] )?\S{0,200}ld: "
                                        r"cannot find -lcuda\b"), detail="triton_libcuda",
         when=conditions.went_no_further, source=SOURCES["triton_libcuda"]),
    # PyTorch's TCPStore asked for its libuv backend (the default since torch 2.4) in a torch built without it: the
    # Windows wheels (torch/csrc/distributed/c10d/TCPStore.cpp; "build without" in earlier releases; blind119/b119-001,
    # a native Windows fork of vLLM under a torch other than the one it was built against)
    Rule("version_mismatch", re.compile(r"use_libuv was requested but PyTorch was buil[dt] without libuv support"),
         BEFORE_START, detail="torch_no_libuv", source=SOURCES["torch_no_libuv"]),
    # MLX (Apple's array library, under vLLM's Apple Silicon plugins) without its Metal kernels library: none next to
    # the binary or in its bundle, or one built for a newer macOS ("This library is using a deployment target
    # (0x00020008) that is not supported on this OS"; blind114/b114-004, vllm-swift)
    Rule("version_mismatch", re.compile(r"Failed to load the default metallib|Failed to load device library from <"),
         BEFORE_START, detail="mlx_metallib", when=conditions.never_ready, source=SOURCES["mlx_metallib"]),
    # A Triton newer than the torch: torch 2.5's Inductor reads AttrsDescriptor's fields at import
    # (_inductor/runtime/hints.py), and Triton 3.2's is no longer a dataclass (blind170/b170-004: HabanaAI's fork the
    # day Triton 3.2 came out; its fix pinned triton 3.1.0)
    Rule("version_mismatch", re.compile(r"TypeError: must be called with a dataclass type or instance"),
         BEFORE_START, detail="triton_torch", when=conditions.at_inductor_hints, source=SOURCES["triton_torch"]),
    # vllm-gaudi's check of the Habana build it detected, which took four numbers only (blind169/b169-018: a
    # habana-torch-plugin of version 1.23.0.post1)
    Rule("version_mismatch", re.compile(r"\bbuild: '(?P<build>[^']{0,64})' doesn't match pattern '\^\\d"),
         BEFORE_START, detail="gaudi_build", source=SOURCES["gaudi_build"]),
)
