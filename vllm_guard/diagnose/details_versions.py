"""What helps for a reading of `version_mismatch` (a Diagnosis's detail): the installed pieces (vLLM, torch,
the driver, a plugin, a package) do not belong together. Compiled code that does not fit (an extension, a kernel, a
toolchain) is details_build.py. The rules are rules_versions.py."""

from __future__ import annotations

from vllm_guard.diagnose.knowledge import Advice

CANN_FUNCTION = Advice(
    "torch_npu called a function of Huawei's CANN (ACL) that the installed CANN does not have: the CANN toolkit is "
    "older than the one this torch_npu and vllm-ascend release were built for (ACL graph capture is the first to "
    "need the newer functions).",
    ("the CANN version the vllm-ascend release names (its installation page), or vllm-ascend's image that ships it",
     "`cat /usr/local/Ascend/ascend-toolkit/latest/*/ascend_toolkit_install.info` for the installed one",
     "--enforce-eager skips graph capture, where the missing function is graph capture's"),
    ("changing memory settings", "retrying unchanged"),
)

CANN_KERNELS = Advice(
    "CANN's operator library found no kernel binaries for an operator torch_npu called: the CANN kernels package for "
    "this chip (Ascend-cann-kernels) is not installed, or ASCEND_OPP_PATH does not lead to it.",
    ("install the kernels package of the same CANN version for this chip, or use vllm-ascend's image that ships it",
     "`source /usr/local/Ascend/ascend-toolkit/set_env.sh` in the environment vLLM starts in (it sets "
     "ASCEND_OPP_PATH)"),
    ("changing memory settings", "retrying unchanged"),
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

MOCK_RESOLUTION = Advice(
    "vLLM's compile step patches a torch module by its dotted name, and Python 3.10 and earlier resolve that name to "
    "the function torch defines under the same name (torch._inductor.standalone_compile), which has nothing to patch: "
    "a fault of this vLLM build under Python 3.10, not of the torch release.",
    ("run vLLM under Python 3.11 or later", "or a vLLM that patches the module itself (vLLM 0.20.2-0.34 do)"),
    ("reinstalling torch", "changing vLLM's memory settings"),
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

VLLM_NOT_INSTALLED = Advice(
    "The environment the start ran in has no vLLM: the shell found no `vllm` command, or Python no `vllm` package. "
    "vLLM went into another virtual or conda environment than the one the job, unit, container or Ray node uses, "
    "or that environment's bin folder is not on PATH.",
    ("activate the environment vLLM is installed in inside the job or unit itself (`source .../activate`, or the "
     "environment's own `.../bin/vllm` path)", "`python -c 'import vllm; print(vllm.__file__)'` with the same "
     "interpreter the start uses", "on a Ray cluster, the same vLLM on every node (or a runtime_env)"),
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

GAUDI_BUILD = Advice(
    "vllm-gaudi reads the installed Habana software's build from habana-torch-plugin's version and checks it is four "
    "numbers (1.23.0.0); a PEP 440 version such as 1.23.0.post1 failed that check before vllm-gaudi #1351 (2026-04).",
    ("VLLM_BUILD set to the build in four numbers (1.23.0.0), the check's own hint", "a vllm-gaudi with #1351"),
    ("changing vLLM's memory or parallel settings", "retrying unchanged"),
)

TRITON_TORCH = Advice(
    "The installed Triton is newer than this torch's Inductor knows: torch 2.5 reads the fields of Triton's "
    "AttrsDescriptor as it imports, and Triton 3.2's is no longer a dataclass. Anything that imports Inductor (vLLM's "
    "compile path, Habana's and other plugins' backends) fails at import.",
    ("the Triton release the torch wheel requires (`pip show torch` names it: 3.1.0 for torch 2.5)",
     "upgrade torch and Triton together, never Triton alone"),
    ("changing vLLM's memory or parallel settings", "retrying unchanged"),
)

IMAGE_PROCESSOR_SIZE = Advice(
    "transformers 4.50 and later take a Qwen2-VL-family image processor's `size` as {shortest_edge, longest_edge}, "
    "and this checkpoint's preprocessor_config.json gives it the older {min_pixels, max_pixels} form, which 4.49 "
    "and earlier read: the transformers installed is newer than the checkpoint's files.",
    ("in preprocessor_config.json: drop `size` and keep `min_pixels` and `max_pixels` at its top level (transformers "
     "reads them), or rename size's keys to shortest_edge (min pixels) and longest_edge (max pixels)",
     "or transformers 4.49, if this vLLM accepts it", "the model maker's updated preprocessor_config.json",
     "a `size` given in --mm-processor-kwargs: the same two keys, shortest_edge and longest_edge"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

TOKENIZERS_FORMAT = Advice(
    "The tokenizers library could not read the model's tokenizer.json: it was written by a later tokenizers release "
    "than the one installed (tokenizers 0.20 and later write BPE merges as pairs, which earlier releases refuse so).",
    ("a tokenizers release as new as the one that wrote the file (and the transformers that accepts it), in the "
     "environment or image that runs vLLM", "or a tokenizer.json re-saved with the installed release"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

VERSION_ADVICE: dict[str, Advice] = {
    "triton_torch": TRITON_TORCH,
    "image_processor_size": IMAGE_PROCESSOR_SIZE,
    "tokenizers_format": TOKENIZERS_FORMAT,
    "gaudi_build": GAUDI_BUILD,
    "cann_kernels": CANN_KERNELS,
    "vllm_metadata": VLLM_METADATA,
    "torch_no_libuv": TORCH_NO_LIBUV,
    "deep_gemm": DEEP_GEMM,
    "torch_schema": TORCH_SCHEMA,
    "sleep_allocator": SLEEP_ALLOCATOR,
    "nixl_missing": NIXL_MISSING,
    "nccl_graph": NCCL_GRAPH,
    "libcuda_missing": LIBCUDA_MISSING,
    "package_required": PACKAGE_REQUIRED,
    "glibc": GLIBC,
    "package_missing": PACKAGE_MISSING,
    "module_missing": MODULE_MISSING,
    "remote_code_packages": REMOTE_CODE_PACKAGES,
    "processor_api": PROCESSOR_API,
    "driver": DRIVER_TOO_OLD,
    "python_package": PYTHON_PACKAGE,
    "mock_resolution": MOCK_RESOLUTION,
    "rope_format": ROPE_FORMAT,
    "vllm_api": VLLM_API,
    "numba_numpy": NUMBA_NUMPY,
    "plugin_version": PLUGIN_VERSION,
    "vllm_module": VLLM_MODULE,
    "vllm_not_installed": VLLM_NOT_INSTALLED,
    "cann_function": CANN_FUNCTION,
}
