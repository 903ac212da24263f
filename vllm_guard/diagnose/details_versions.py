"""What helps for a reading of `version_mismatch` (a Diagnosis's detail): the installed pieces (vLLM, torch,
a compiled extension, the driver, a plugin, a package) do not belong together. The rules are rules_versions.py."""

from __future__ import annotations

from vllm_guard.diagnose.knowledge import Advice

EXTENSION_ABI = Advice(
    "A compiled extension (vLLM's own, or flash-attn, xformers) was built for another torch or CUDA than the one "
    "installed: the loader finds an undefined C++ symbol or a missing CUDA library.",
    ("install vLLM in a fresh virtual environment and let it pin its torch (`pip install vllm==X`)",
     "rebuild or remove a separately installed flash-attn or xformers (vLLM ships its own kernels)",
     "a wheel built for the CUDA the driver and image have"), ("restarting", "changing vLLM's settings"),
)

GPU_ARCH = Advice(
    "The installed torch or vLLM has no kernels for this GPU's compute capability (a new GPU under an older "
    "wheel: Blackwell's sm_100/sm_120 needs CUDA 12.8 builds).",
    ("a vLLM and torch built for this GPU (the CUDA 12.8+ wheels for Blackwell), in a fresh virtual environment",
     "`python -c 'import torch; print(torch.cuda.get_arch_list())'` lists the architectures the torch has"),
    ("changing vLLM's settings", "restarting"),
)

NVCC_MISSING = Advice(
    "FlashInfer compiles its kernels when first used and found no CUDA compiler (nvcc) and no CUDA toolkit at "
    "/usr/local/cuda: the image has the CUDA runtime but not the toolkit.",
    ("an image with the CUDA toolkit (a -devel image), or CUDA_HOME naming an installed toolkit",
     "an attention backend and sampler that need no JIT, where the GPU runs one (VLLM_ATTENTION_BACKEND, "
     "VLLM_USE_FLASHINFER_SAMPLER=0)"),
    ("changing memory settings", "retrying unchanged"),
)

OP_MISSING = Advice(
    "vLLM's compiled extension (or a plugin's) has no op that its Python code calls: the extension did not load (an "
    "earlier warning 'Failed to import from vllm._C' says why), or it was built from another vLLM source than the "
    "Python files beside it (a fork or source tree over another build's compiled parts, VLLM_USE_PRECOMPILED with "
    "another commit's wheel).",
    ("a clean install of one release (a fresh environment, `pip install vllm==X`), or a full build of the source "
     "tree in use", "the earlier 'Failed to import from vllm._C' line, where there is one, for why it did not load"),
    ("changing vLLM's settings", "retrying unchanged"),
)

CANN_FUNCTION = Advice(
    "torch_npu called a function of Huawei's CANN (ACL) that the installed CANN does not have: the CANN toolkit is "
    "older than the one this torch_npu and vllm-ascend release were built for (ACL graph capture is the first to "
    "need the newer functions).",
    ("the CANN version the vllm-ascend release names (its installation page), or vllm-ascend's image that ships it",
     "`cat /usr/local/Ascend/ascend-toolkit/latest/*/ascend_toolkit_install.info` for the installed one",
     "--enforce-eager skips graph capture, where the missing function is graph capture's"),
    ("changing memory settings", "retrying unchanged"),
)

CUDA_TOOLKIT_SKEW = Advice(
    "A kernel compiled at start (FlashInfer's sampler or attention, DeepGEMM) found a CUDA compiler (nvcc) of another "
    "CUDA release than the CUDA headers: pip installs nvidia-cuda-nvcc and nvidia-cuda-runtime as separate wheels, "
    "and they drift apart (nvcc 13.3 over a 13.0 runtime), or CUDA_HOME names another toolkit than the one in use.",
    ("pin nvidia-cuda-nvcc (and nvidia-cuda-cccl, -crt, nvidia-nvvm) to the CUDA major.minor of the "
     "nvidia-cuda-runtime torch installed", "CUDA_HOME naming one whole toolkit of that release",
     "clear FlashInfer's JIT cache (~/.cache/flashinfer) after the fix",
     "VLLM_USE_FLASHINFER_SAMPLER=0 when the sampler is the only kernel compiled"),
    ("changing memory settings", "retrying unchanged"),
)

HIP_GPU_ARCH = Advice(
    "The installed torch or vLLM (or one of its kernels) has no code for this AMD GPU's gfx target: an image built for "
    "another GPU (the rocm/vllm MI300 images hold gfx942 code; a Radeon is gfx11xx or gfx12xx).",
    ("`rocminfo | grep gfx` names the GPU's target; use a vLLM and torch built for it (PYTORCH_ROCM_ARCH when "
     "building)", "`python -c 'import torch; print(torch.cuda.get_arch_list())'` lists the targets the torch has"),
    ("changing vLLM's settings", "restarting"),
)

DRIVER_TOO_OLD = Advice(
    "The NVIDIA driver is older than the CUDA runtime that torch and vLLM were built with.",
    ("a newer NVIDIA driver (nvidia-smi shows the CUDA version it supports)",
     "a vLLM and torch built for the CUDA the driver supports"), ("changing vLLM's settings",),
)

PYTHON_PACKAGE = Advice(
    "An installed Python package (transformers, torch, compressed-tensors or vLLM itself) lacks a name this vLLM or "
    "model imports: it is older or newer than the one they were written for.",
    ("the versions vLLM pins (`pip install vllm==X` in a fresh virtual environment)",
     "a newer transformers for a model newer than it (`pip install -U transformers`)"),
    ("restarting", "changing vLLM's settings"),
)

ROPE_FORMAT = Advice(
    "This vLLM's max-length check found a rope_scaling it does not know (one without a factor): the model's "
    "config.json is newer than this vLLM, or the installed transformers rewrote it into a form this vLLM predates.",
    ("a vLLM release that supports the model (for Qwen2-VL, one with vllm PR #7905, which let mrope through)",
     "the transformers version this vLLM pins (vllm #8388: a transformers development build rewrote Qwen2-VL's "
     "mrope)"),
    ("--max-model-len: the check reads rope_scaling whatever the length asked", "retrying unchanged"),
)

VLLM_API = Advice(
    "The program that drives vLLM (FastChat, OpenRLHF, verl, unsloth, Triton's vllm backend, LLaMA-Factory), or a "
    "platform plugin (vllm-ascend, vllm-spyre, ...), was written for another vLLM release: it reads an attribute or "
    "passes an option this vLLM does not have.",
    ("the vLLM version that program or plugin pins (its requirements or release notes)",
     "for V1-era code on an older vLLM, or V0-era code on 0.8+: upgrade the program, or VLLM_USE_V1=0 where the "
     "vLLM still has V0"), ("changing vLLM's memory settings", "retrying unchanged"),
)

NUMBA_NUMPY = Advice(
    "numba, which vLLM pins and imports, refuses the installed NumPy: it supports only the range its message names, "
    "and another package (or a `pip install -U`) put a NumPy outside it.",
    ("a NumPy inside numba's range (`pip install 'numpy<=X'` as the message names), or the numba vLLM pins",
     "a fresh virtual environment with vLLM's own pins"), ("changing vLLM's settings", "retrying unchanged"),
)

PLUGIN_VERSION = Advice(
    "A vLLM plugin (vLLM-Omni) warns that its release does not match the installed vLLM's major.minor, and the "
    "start then failed: the plugin is written against another vLLM.",
    ("install the vLLM release the plugin pins (vLLM-Omni 0.X.y expects vllm==0.X.*)",),
    ("changing vLLM's settings", "retrying unchanged"),
)

VLLM_MODULE = Advice(
    "Code that imports vLLM asks for a module this vLLM does not have: it was written for another vLLM release "
    "(a platform plugin such as vllm-ascend, unsloth, a model's own vLLM file), or a vLLM source tree was installed "
    "without all its packages.",
    ("the vLLM release the importing code pins (its requirements or release notes)",
     "for vLLM's own CLI missing a module of its own: install a release wheel, or build from a git clone of a "
     "release tag (its .git present), so every package of it is installed"),
    ("changing vLLM's settings", "retrying unchanged"),
)

EXTENSION_MISSING = Advice(
    "vLLM's compiled extension (vllm._C) is not where Python looked: a vLLM source folder run in place (Python "
    "imports ./vllm from the current folder before the installed package), or a build from source that did not "
    "compile it.",
    ("start from another folder than a vLLM source tree", "a full build in the source tree (`pip install -e .`, "
     "which compiles the extension and needs the CUDA toolkit; in 0.4-0.5 VLLM_USE_PRECOMPILED builds none)",
     "a release wheel"),
    ("changing vLLM's settings", "retrying unchanged"),
)

VLLM_NOT_INSTALLED = Advice(
    "The environment the start ran in has no vLLM: the shell found no `vllm` command, or Python no `vllm` package. "
    "vLLM went into another virtual or conda environment than the one the job, unit, container or Ray node uses, "
    "or that environment's bin folder is not on PATH.",
    ("activate the environment vLLM is installed in inside the job or unit itself (`source .../activate`, or the "
     "environment's own `.../bin/vllm` path)", "`python -c 'import vllm; print(vllm.__file__)'` with the same "
     "interpreter the start uses", "on a Ray cluster, the same vLLM on every node (or a runtime_env)"),
    ("changing vLLM's settings", "retrying unchanged"),
)

NO_C_COMPILER = Advice(
    "Triton compiles a small C launcher for each kernel the first time it runs, with the system's C compiler, and "
    "none was found: an image or environment without gcc.",
    ("install a C compiler where vLLM runs (gcc: apt-get install build-essential, or the image's own)",
     "or name one in CC"), ("changing vLLM's settings", "retrying unchanged"),
)

C_HEADERS = Advice(
    "Triton compiles a small C launcher for each kernel the first time it runs, and the C compiler found no header "
    "it needs: Python.h (the Python development headers), or the compiler's and C library's own (an incomplete gcc "
    "install), or cuda.h.",
    ("install the headers where vLLM runs (apt-get install python3-dev build-essential, or the image's -devel "
     "variant)",), ("changing vLLM's settings", "retrying unchanged"),
)

FLASH_ATTN_BUILD = Advice(
    "The flash-attention kernels in this install were built without some of their cases to save build time "
    "(FLASHATTENTION_DISABLE_UNEVEN_K: head sizes that are not multiples of 32; or local attention, or dropout), "
    "and the model uses one: most often a vision or audio encoder with head size 80 (Qwen2.5-VL, Qwen3-Omni).",
    ("for a multimodal encoder: --mm-encoder-attn-backend TORCH_SDPA (vLLM 0.11+)",
     "for the language model: --attention-backend FLASHINFER or TRITON_ATTN (VLLM_ATTENTION_BACKEND before 0.11)",
     "a vLLM wheel whose flash-attention has all head sizes, rather than a separately built flash-attn"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

BISHENG_TARGET = Advice(
    "Triton-Ascend's compiler (bishengir-compile) does not know this NPU's target: the Triton-Ascend in this image or "
    "environment is older than the chip.",
    ("a vllm-ascend image (or Triton-Ascend release) that lists the chip, as its release notes say",
     "`npu-smi info` names the chip the target must match"),
    ("changing vLLM's settings", "retrying unchanged"),
)

PROCESSOR_API = Advice(
    "A multimodal processor (or its feature extractor) lacks a method or attribute that vLLM or transformers calls on "
    "it: the installed transformers (or the model's own processor code) is of another release than this vLLM was "
    "written for.",
    ("the transformers version this vLLM release pins (its requirements) against `pip show transformers`",
     "a transformers release in that range, or a vLLM release that supports the installed one"),
    ("changing memory settings", "retrying unchanged"),
)

REMOTE_CODE_PACKAGES = Advice(
    "The model's own code (its remote-code modeling or tokenizer file, run with --trust-remote-code) imports Python "
    "packages this environment does not have; transformers checks its imports before running it and names them.",
    ("pip install the packages the message names, in the environment that runs vLLM's workers (each node; a Ray "
     "runtime_env where Ray starts them)",
     "the model card's requirements, for the versions it was written against"),
    ("changing vLLM's settings", "retrying unchanged"),
)

TRITON_KERNELS = Advice(
    "vLLM could not import OpenAI's triton_kernels package, which its MXFP4 and other FP4 mixture-of-experts paths "
    "use (gpt-oss, DeepSeek's FP4 checkpoints): the package is missing, or its version is not the one this vLLM was "
    "written for (triton_kernels 3.8 moved matmul_ogs to matmul). vLLM logs this and goes on, so the start fails here "
    "only for a model that needs the kernels.",
    ("the triton and triton_kernels versions against those this vLLM release pins (its requirements, or its "
     "Docker image)", "a vLLM image built with the kernels, or a vLLM release that matches the installed Triton"),
    ("changing memory settings", "retrying unchanged"),
)

MODULE_MISSING = Advice(
    "Python found no module of the name the error gives where the start imported it. The paste keeps no traceback, so "
    "which code imported it does not show: most often a dependency the install left out, or, for a dotted name, a "
    "part of an installed package that its version does not have or its build did not make (a JIT or compiled "
    "module).",
    ("pip show the package the name starts with: not installed, install it at the version vLLM (or the plugin "
     "that uses it) pins; installed, its version against the one pinned, or its build steps for the missing part",
     "the whole traceback (the log above this line) names the code that imported it"),
    ("changing vLLM's settings", "retrying unchanged"),
)

PACKAGE_MISSING = Advice(
    "An installed package (a library vLLM uses, a vLLM platform plugin, or vLLM itself) imports a module that is not "
    "installed here: a dependency its install left out (triton on a host whose platform does not ship it), an "
    "optional one a setting asks for (modelscope for VLLM_USE_MODELSCOPE), or a compiled part of a plugin that was "
    "not built (vllm-ascend's custom_ops without its custom kernels).",
    ("install the missing module at the version the importing package pins (`pip show` it, or its requirements)",
     "for a plugin's compiled module: build the plugin with its kernels (its install guide), or use its release "
     "image", "a fresh virtual environment from the platform's own install instructions"),
    ("changing vLLM's settings", "retrying unchanged"),
)

SLEEP_ALLOCATOR = Advice(
    "Sleep mode (--enable-sleep-mode, or enable_sleep_mode=True as RL frameworks set it) allocates GPU memory through "
    "a compiled allocator that this build lacks: vLLM's cumem_allocator (a source build without it), xpumem on XPU, "
    "or vllm-ascend's camem in vllm_ascend_C (a plugin built without its custom kernels).",
    ("a build with the allocator: vLLM's release wheels; vllm-ascend built with COMPILE_CUSTOM_KERNELS=1, or its "
     "release image", "or start without sleep mode (drop --enable-sleep-mode / enable_sleep_mode=False)"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

PACKAGE_REQUIRED = Advice(
    "vLLM needs a Python package for this model, loader or feature that its environment lacks, or has at a version "
    "it does not take; its message names the package (and the version). Some images leave such packages out: "
    "ROCm's vLLM images have no xformers, which Pixtral's Mistral format needed in vLLM 0.6-0.9.",
    ("install what the message names, at the version it asks for, in vLLM's own environment (the image, the venv, "
     "a Ray actor's runtime_env)", "or a way that does not need it: the model in another format (Pixtral's "
     "Transformers format, mistral-community/pixtral-12b), another loader or backend"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

PTXAS_ARCH = Advice(
    "The PTX assembler (ptxas) that compiles vLLM's Triton kernels, and torch.compile's, does not know this GPU's "
    "architecture: Triton bundles its own ptxas, older than a GPU newer than its release (DGX Spark's GB10 is "
    "sm_121a).",
    ("TRITON_PTXAS_PATH naming a CUDA toolkit's ptxas that knows the architecture (`ptxas --help` lists its "
     "--gpu-name values), such as /usr/local/cuda/bin/ptxas of a CUDA that supports the GPU; Triton 3.9 runs a "
     "second bundled ptxas for Hopper and newer GPUs and reads TRITON_PTXAS_BLACKWELL_PATH for it instead",
     "or a Triton (and vLLM) release made for the GPU",
     "--enforce-eager avoids torch.compile's kernels, not vLLM's own Triton ones"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

LIBCUDA_MISSING = Advice(
    "Triton, which compiles vLLM's kernels at start-up, looks the NVIDIA driver's library (libcuda.so.1) up in the "
    "linker cache (`/sbin/ldconfig -p`) and LD_LIBRARY_PATH, and did not find it: a container run without the "
    "driver's libraries (the NVIDIA runtime mounts them), a linker cache not refreshed since the driver was "
    "installed, or WSL2's /usr/lib/wsl/lib not in it.",
    ("`ldconfig -p | grep libcuda`: the library Triton looks for, and where it is",
     "`sudo ldconfig` after installing the driver; in a container, the NVIDIA runtime (--gpus all, "
     "runtimeClassName nvidia)", "TRITON_LIBCUDA_PATH naming the folder that holds libcuda.so.1"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

NCCL_GRAPH = Advice(
    "vLLM captures NCCL's collectives in CUDA graphs (tensor parallelism without --enforce-eager), and NCCL refuses "
    "the capture unless it was built with CUDA runtime 11.3 or later and runs on an NVIDIA driver R465 or later: the "
    "NCCL library vLLM loaded, or the driver, is older.",
    ("`nvidia-smi`: a driver of R465 or later", "the NCCL vLLM loads ('vLLM is using nccl==X'; VLLM_NCCL_SO_PATH) "
     "built for this CUDA: the nvidia-nccl wheel torch installs, not a system NCCL built for an older CUDA",
     "or --enforce-eager, which captures no graph (slower decoding)"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

GLIBC = Advice(
    "A compiled extension (vLLM's own vllm._C, or a kernel package) was built against a newer C library (glibc) than "
    "this operating system has, so the loader refuses it: a wheel for a newer Linux on an older one (Ubuntu 20.04 "
    "has glibc 2.31, CentOS 7 2.17).",
    ("vLLM's container image (vllm/vllm-openai) or a newer OS, whose glibc is at least the version named",
     "a vLLM release whose wheel was built for this glibc (its manylinux tag: `pip download vllm==X` shows it)",
     "or a build from source on this machine"),
    ("changing vLLM's settings", "retrying unchanged"),
)

NIXL_MISSING = Advice(
    "The NixlConnector (--kv-transfer-config, as disaggregated prefill with Dynamo or llm-d sets it) needs NIXL, and "
    "`from nixl._api import nixl_agent` failed in this environment (nixl_rocm on ROCm, vLLM 0.34): the package is "
    "not installed there, or it does not load (its native libraries, UCX, or a build for another CUDA). vLLM said "
    "so in a warning at import.",
    ("`python -c 'from nixl._api import nixl_agent'` in vLLM's environment: its error says what is missing",
     "the nixl package built for this CUDA or ROCm (`pip install nixl`, or the serving image's own)",
     "or a KV connector that needs no NIXL, or none"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

TORCH_SCHEMA = Advice(
    "PyTorch refused the type annotation of one of vLLM's custom ops as vLLM registered it at import: this vLLM (or "
    "a fork of it) was written for another torch release, whose schema inference accepts that annotation.",
    ("the torch release this vLLM pins (`pip install vllm==X` in a fresh virtual environment brings it)",
     "for a fork or a source build: the torch its requirements name, or a build of the fork for the installed torch"),
    ("changing vLLM's settings", "retrying unchanged"),
)

DEEP_GEMM = Advice(
    "vLLM called one of DeepGEMM's FP8 kernels, and the optional deep_gemm package is not installed or is older than "
    "this vLLM needs: an FP8 checkpoint's layers, DeepSeek's sparse-attention indexer, or the kernel warm-up some "
    "releases run at start even for models without FP8 layers.",
    ("deep_gemm built at the commit this vLLM pins (its tools/install_deepgemm.sh; the PyPI source package lacks "
     "its CUTLASS submodule)", "`python -c 'import deep_gemm'` in vLLM's environment: one installed that does not "
     "import (built for another CUDA, its libnvrtc missing) counts as missing",
     "for a model without FP8 layers: VLLM_DEEP_GEMM_WARMUP=skip, or VLLM_USE_DEEP_GEMM=0",
     "a vLLM image that ships deep_gemm"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

MLX_METALLIB = Advice(
    "MLX could not load its Metal kernels library (mlx.metallib): there is none next to the library or in its bundle "
    "(a source build that did not compile it, a package that left it out), or it was built for a newer macOS than "
    "this Mac runs (Metal says 'deployment target ... not supported on this OS').",
    ("a newer macOS, where Metal names a deployment target", "reinstall the plugin and mlx from wheels built for "
     "this macOS (pip install --force-reinstall mlx)", "for a source build: build the metallib as the plugin's "
     "instructions say"),
    ("changing vLLM's settings", "retrying unchanged"),
)

TORCH_NO_LIBUV = Advice(
    "PyTorch's TCPStore, which vLLM's distributed set-up starts, asked for its libuv backend (the default since torch "
    "2.4) in a torch built without libuv: the Windows wheels are. A native Windows build of vLLM runs with the torch "
    "it was built against.",
    ("USE_LIBUV=0 in vLLM's environment (PyTorch's own advice)", "the torch release the vLLM build names, or vLLM "
     "under WSL2 or Linux"),
    ("changing vLLM's memory or parallel settings", "retrying unchanged"),
)

VLLM_METADATA = Advice(
    "vLLM found no platform because its own package metadata is missing: its platform plugins ask importlib.metadata "
    "for vLLM's version, and a source tree run in place, or a fork's package installed under another name, has none.",
    ("install the build so that its metadata is there: `pip install -e .` in a source tree, or the fork's wheel as "
     "its instructions say", "check `pip show vllm` in the same environment"),
    ("changing vLLM's memory or parallel settings", "retrying unchanged"),
)

TRITON_CAPABILITY = Advice(
    "PyTorch's Inductor, which vLLM compiles with, generates Triton kernels, and Triton takes GPUs of compute "
    "capability 7.0 and later: this one is older (Pascal and before). --enforce-eager stops vLLM compiling the model, "
    "but vLLM also compiles some functions of its own with Inductor (with tensor parallelism, MoE routing), so the "
    "error may stay.",
    ("a community build for these GPUs (for Pascal: vllm-pascal with its patched Triton)",
     "a GPU of compute capability 7.0 or later",
     "--enforce-eager on a single GPU without MoE, where nothing else vLLM runs is compiled"),
    ("changing memory settings", "retrying unchanged"),
)

TRITON_LIBCUDA = Advice(
    "Triton (and FlashInfer's JIT) compiles a small CUDA helper and links it with -lcuda, which finds only a file "
    "named libcuda.so: the folder that holds the driver's libcuda.so.1 has no libcuda.so beside it, as in many "
    "containers, where the driver mounts only libcuda.so.1.",
    ("a libcuda.so link beside libcuda.so.1 (`ldconfig -p | grep libcuda` shows the folder; Triton's own advice is "
     "that link)", "TRITON_LIBCUDA_PATH set to a folder that holds libcuda.so (one with that link, or the CUDA "
     "toolkit's lib64/stubs)"),
    ("changing vLLM's memory or parallel settings", "retrying unchanged"),
)

VERSION_ADVICE: dict[str, Advice] = {
    "triton_libcuda": TRITON_LIBCUDA,
    "triton_capability": TRITON_CAPABILITY,
    "vllm_metadata": VLLM_METADATA,
    "torch_no_libuv": TORCH_NO_LIBUV,
    "mlx_metallib": MLX_METALLIB,
    "deep_gemm": DEEP_GEMM,
    "torch_schema": TORCH_SCHEMA,
    "sleep_allocator": SLEEP_ALLOCATOR, "nixl_missing": NIXL_MISSING, "nccl_graph": NCCL_GRAPH,
    "libcuda_missing": LIBCUDA_MISSING, "ptxas_arch": PTXAS_ARCH,
    "package_required": PACKAGE_REQUIRED, "glibc": GLIBC,
    "package_missing": PACKAGE_MISSING,
    "module_missing": MODULE_MISSING,
    "hip_gpu_arch": HIP_GPU_ARCH,
    "nvcc_missing": NVCC_MISSING,
    "remote_code_packages": REMOTE_CODE_PACKAGES,
    "processor_api": PROCESSOR_API,
    "bisheng_target": BISHENG_TARGET,
    "triton_kernels": TRITON_KERNELS,
    "flash_attn_build": FLASH_ATTN_BUILD,
    "extension_abi": EXTENSION_ABI,
    "gpu_arch": GPU_ARCH,
    "driver": DRIVER_TOO_OLD,
    "python_package": PYTHON_PACKAGE,
    "rope_format": ROPE_FORMAT,
    "vllm_api": VLLM_API,
    "numba_numpy": NUMBA_NUMPY,
    "plugin_version": PLUGIN_VERSION,
    "vllm_module": VLLM_MODULE,
    "vllm_not_installed": VLLM_NOT_INSTALLED,
    "cuda_toolkit_skew": CUDA_TOOLKIT_SKEW,
    "cann_function": CANN_FUNCTION,
    "c_headers": C_HEADERS,
    "op_missing": OP_MISSING,
    "extension_missing": EXTENSION_MISSING,
    "no_c_compiler": NO_C_COMPILER,
}
