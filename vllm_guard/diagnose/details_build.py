"""What helps for a reading of `version_mismatch` (a Diagnosis's detail) where compiled code does not fit: vLLM's
extension or a kernel built for another GPU, torch or toolkit, or a compiler or header that a build or Triton's
launcher needs. The other installation readings are in details_versions.py."""

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

EXTENSION_MISSING = Advice(
    "vLLM's compiled extension (vllm._C) is not where Python looked: a vLLM source folder run in place (Python "
    "imports ./vllm from the current folder before the installed package), or a build from source that did not "
    "compile it.",
    ("start from another folder than a vLLM source tree", "a full build in the source tree (`pip install -e .`, "
     "which compiles the extension and needs the CUDA toolkit; in 0.4-0.5 VLLM_USE_PRECOMPILED builds none)",
     "a release wheel"),
    ("changing vLLM's settings", "retrying unchanged"),
)

NO_C_COMPILER = Advice(
    "Triton compiles a small C launcher for each kernel the first time it runs, with the system's C compiler, and "
    "none was found: an image or environment without gcc.",
    ("install a C compiler where vLLM runs (gcc: apt-get install build-essential, or the image's own)",
     "or name one in CC"), ("changing vLLM's settings", "retrying unchanged"),
)

NO_CXX_COMPILER = Advice(
    "torch.compile's Inductor builds C++ code with the system's C++ compiler (vLLM's CPU backend compiles its model "
    "so at start), and none was found: an image or environment without g++.",
    ("install a C++ compiler where vLLM runs (g++: apt-get install build-essential, or the image's own)",
     "or name one in CXX"), ("changing vLLM's settings", "retrying unchanged"),
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

TRITON_KERNELS = Advice(
    "vLLM could not import OpenAI's triton_kernels package, which its MXFP4 and other FP4 mixture-of-experts paths "
    "use (gpt-oss, DeepSeek's FP4 checkpoints): the package is missing, or its version is not the one this vLLM was "
    "written for (triton_kernels 3.8 moved matmul_ogs to matmul). vLLM logs this and goes on, so the start fails here "
    "only for a model that needs the kernels.",
    ("the triton and triton_kernels versions against those this vLLM release pins (its requirements, or its "
     "Docker image)", "a vLLM image built with the kernels, or a vLLM release that matches the installed Triton"),
    ("changing memory settings", "retrying unchanged"),
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

MLX_METALLIB = Advice(
    "MLX could not load its Metal kernels library (mlx.metallib): there is none next to the library or in its bundle "
    "(a source build that did not compile it, a package that left it out), or it was built for a newer macOS than "
    "this Mac runs (Metal says 'deployment target ... not supported on this OS').",
    ("a newer macOS, where Metal names a deployment target", "reinstall the plugin and mlx from wheels built for "
     "this macOS (pip install --force-reinstall mlx)", "for a source build: build the metallib as the plugin's "
     "instructions say"),
    ("changing vLLM's settings", "retrying unchanged"),
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

XFORMERS_FA3_ARCH = Advice(
    "xformers ran FlashAttention 3's kernels on a GPU they are not built for, and their launch failed: xformers "
    "builds them for Hopper (and, from 0.0.31, the A100), yet before 0.0.33 took any GPU from capability 9.0 up for "
    "them (8.0 from 0.0.31), Blackwell GPUs included. vLLM 0.10 and earlier run many multimodal models' vision "
    "encoders through xformers, and on a Blackwell GPU (RTX PRO 6000, RTX 50, B200) they meet this.",
    ("vLLM 0.11 or later, which runs vision encoders with PyTorch's SDPA on Blackwell GPUs (unless "
     "VLLM_ATTENTION_BACKEND names XFORMERS, which 0.11 applies to them too)",
     "xformers 0.0.33 or later, which does not take Blackwell GPUs for FlashAttention 3, if this vLLM accepts it"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

BUILD_ADVICE: dict[str, Advice] = {
    "triton_libcuda": TRITON_LIBCUDA,
    "triton_capability": TRITON_CAPABILITY,
    "mlx_metallib": MLX_METALLIB,
    "ptxas_arch": PTXAS_ARCH,
    "hip_gpu_arch": HIP_GPU_ARCH,
    "nvcc_missing": NVCC_MISSING,
    "bisheng_target": BISHENG_TARGET,
    "triton_kernels": TRITON_KERNELS,
    "flash_attn_build": FLASH_ATTN_BUILD,
    "extension_abi": EXTENSION_ABI,
    "gpu_arch": GPU_ARCH,
    "cuda_toolkit_skew": CUDA_TOOLKIT_SKEW,
    "c_headers": C_HEADERS,
    "op_missing": OP_MISSING,
    "extension_missing": EXTENSION_MISSING,
    "no_c_compiler": NO_C_COMPILER,
    "no_cxx_compiler": NO_CXX_COMPILER,
    "xformers_fa3_arch": XFORMERS_FA3_ARCH,
}
