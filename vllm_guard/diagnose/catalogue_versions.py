"""Where the messages about the installed software come from (a compiled extension, a PyTorch build, a driver, a
Python package of another release than the GPU, vLLM or the model needs): part of catalogue.SOURCES, kept apart to
keep that file readable; the rules that cite them are rules_versions.py's."""

from __future__ import annotations

VERSION_SOURCES: dict[str, str] = {
    "nvcc_missing": "FlashInfer flashinfer/jit/cpp_ext.py get_cuda_path: \"RuntimeError: Could not find nvcc and "
                    "default cuda_home='/usr/local/cuda' doesn't exist\"",
    "cuda_toolkit_skew": "CCCL (the CUDA C++ core libraries) cuda/std/__cccl/cuda_toolkit.h: '#error \"CUDA compiler "
                         "and CUDA toolkit headers are incompatible, please check your include paths\"', in a JIT "
                         "compile (FlashInfer's, DeepGEMM's)",
    "hip_invalid_function": "PyTorch on ROCm, a HIP call's failure (c10/hip): 'RuntimeError: HIP error: invalid device "
                            "function' (hipErrorInvalidDeviceFunction: no code object for the GPU's gfx target) and "
                            "'HIP error: invalid kernel file' (hipErrorInvalidKernelFile)",
    "bisheng_target": "Triton-Ascend's BiSheng IR compiler (LLVM's option parser): \"bishengir-compile: for the "
                      "--target option: Cannot find option named 'X'!\"",
    "xformers_fa3_arch": "FlashAttention 3's launch check as xformers bundles it "
                         "(third_party/flash-attention/hopper/flash_fwd_launch_template.h CHECK_CUDA): 'CUDA error "
                         "(.../hopper/flash_fwd_launch_template.h:188): invalid argument'; xformers ops/fmha/flash3.py "
                         "took any capability from 9.0 (8.0 from 0.0.31) up for it until 0.0.33 bounded it above",
    "processor_api": "Python's AttributeError on a multimodal processor or feature extractor, raised where vLLM's "
                     "multimodal processing (multimodal/processing, 0.6-0.34) or transformers' processing_utils.py "
                     "calls it: \"AttributeError: 'XProcessor' object has no attribute 'y'\"",
    "remote_code_packages": "transformers dynamic_module_utils.py check_imports: 'ImportError: This modeling file "
                            "requires the following packages that were not found in your environment: X. Run `pip "
                            "install X`'",
    "triton_kernels": "vLLM 0.10-0.34 model_executor/layers/fused_moe (config.py, oracle/mxfp4.py, "
                      "gpt_oss_triton_kernels_moe.py), logger.error: 'Failed to import Triton kernels. Please make "
                      "sure your triton version is compatible. Error: ...' (triton_kernels 3.8 moved matmul_ogs to "
                      "matmul)",
    "deep_gemm": "vLLM 0.10-0.33 utils/deep_gemm.py _missing: 'RuntimeError: DeepGEMM backend is not available or "
                 "outdated. Please install or update the `deep_gemm` to a newer version to enable FP8 kernels.'; "
                 "0.30-0.34 sparse_attn_indexer.py and models' sparse_indexer.py: 'Sparse Attention Indexer CUDA op "
                 "requires DeepGEMM to be installed.' ('... DeepGEMM support in the current vLLM environment.'), "
                 "'X requires DeepGEMM >= 2.8 (fp8_fp4_sparse_mqa_logits not found).'",
    "rope_type_key": "vLLM transformers_utils/config.py patch_rope_scaling_dict (raised in 0.7.3, 0.10.1 and 0.11.0; "
                     "not in 0.32): \"rope_scaling should have a 'rope_type' key\"",
    "omni_version": "vLLM-Omni vllm_omni/version.py warn_if_misaligned_vllm_version: 'vLLM and vLLM-Omni appear to "
                    "have mismatched major/minor versions' (a RuntimeWarning at import)",
    "extension_missing": "Python's import error for vLLM's compiled extension, raised ('ModuleNotFoundError: No "
                         "module named 'vllm._C'' under 'from vllm._C import ops' in vLLM 0.2-0.4.0; 0.4.1-0.4.3's "
                         "_custom_ops.py: \"NameError: name 'vllm_ops' is not defined\"); 0.5-0.34 log it "
                         "as a warning (_custom_ops.py, platforms/*.py: 'Failed to import from vllm._C with ...')",
    "xformers_build": "xFormers xformers/ops/fmha (its dispatcher's reasons under 'No operator found for "
                      "`memory_efficient_attention_forward`'): \"xFormers wasn't build with CUDA support\"",
    "triton_mma_version": "Triton lib/Dialect/TritonGPU/Transforms/AccelerateMatmul.cpp getMMAVersionSafe: "
                          "'Assertion `false && \"computeCapability not supported\"' failed.'",
    "c_headers": "the C compiler Triton runs to build its launcher (triton/runtime/build.py): 'fatal error: Python.h: "
                 "No such file or directory' (stddef.h, cuda.h alike)",
    "op_missing": "PyTorch's torch.ops namespace for an op no loaded library registered: \"AttributeError: "
                  "'_OpNamespace' '_C' object has no attribute 'X'\" (vLLM 0.5-0.6 _custom_ops.py adds 'Possibly you "
                  "have built or installed an obsolete version of vllm')",
    "vllm_not_installed": "bash's 'vllm: command not found' and dash's 'vllm: not found' (exit 127); Python's "
                          "'No module named 'vllm'' (and 'Error while finding module specification for "
                          "'vllm.entrypoints...' (ModuleNotFoundError: No module named 'vllm')' of python -m)",
    "vllm_module": "the Python interpreter's import error for a module under vllm/ ('ModuleNotFoundError: No module "
                   "named 'vllm.transformers_utils.tokenizer'', a module vLLM 0.32 has as vllm/tokenizers/; "
                   "'vllm.prompt_adapter', gone in 0.10)",
    "numba_numpy": "numba's import check (numba/__init__.py _ensure_critical_deps): 'ImportError: Numba needs NumPy "
                   "X or less. Got NumPy Y.' (or 'or greater')",
    "infer_schema": "PyTorch 2.4+ torch/_library/infer_schema.py: 'infer_schema(func): Parameter X has unsupported "
                    "type T. The valid types are: ...', raised as vLLM registers its custom ops at import "
                    "(vllm/utils direct_register_custom_op)",
    "sleep_allocator": "vLLM 0.7-0.33 device_allocator/cumem.py CuMemAllocator.get_instance: 'assert cumem_available, "
                       "\"cumem allocator is not available\"' (vllm.cumem_allocator not built); xpumem.py (0.32+) "
                       "'xpumem allocator is not available'; vllm-ascend device_allocator/camem.py 'camem allocator is "
                       "not available' (vllm_ascend_C not built)",
    "flash_attn_build": "flash-attention 2.x csrc/flash_attn/flash_api.cpp set_params_fprop (also vLLM's "
                        "vllm-flash-attn fork and FA3 hopper/flash_api.cpp), built with FLASHATTENTION_DISABLE_UNEVEN_K"
                        " / _LOCAL / _DROPOUT: 'This flash attention build does not support headdim not being a "
                        "multiple of 32.' (local attention, dropout)",
    "no_cxx_compiler": "torch _inductor/exc.py (read at 2.13) InvalidCxxCompiler: 'No working C++ compiler found in "
                       "torch._inductor.config.cpp.cxx: (None, 'g++')' (Inductor's C++ code, vLLM's CPU backend's "
                       "torch.compile; the compiler is $CXX, else g++)",
    "no_c_compiler": "Triton 2.x-3.x runtime/build.py: 'RuntimeError: Failed to find C compiler. Please specify via CC "
                     "environment variable.' (3.9 adds 'or set triton.knobs.build.impl'; Triton compiles a small C "
                     "launcher for each kernel at first use)",
    "extension_abi": "the dynamic loader, importing a compiled extension (vllm._C, flash_attn_2_cuda, xformers) "
                     "built for another torch ('ImportError: ....so: undefined symbol: _ZN3c10...') or another "
                     "CUDA ('ImportError: libcudart.so.12: cannot open shared object file'), any release",
    "vllm_fa_missing": "vLLM 0.2x-0.33 vllm_flash_attn/__init__.py: 'ImportError: vllm.vllm_flash_attn requires the "
                       "CUDA flash attention extensions (_vllm_fa2_C or _vllm_fa3_C)' (a build without them)",
    "no_kernel_image": "the CUDA runtime, cudaErrorNoKernelImageForDevice: 'no kernel image is available for "
                       "execution on the device' (a torch or vLLM build without kernels for this GPU's compute "
                       "capability: sm_120 under a cu12.6 wheel), any release",
    "torch_capability": "PyTorch torch/cuda/__init__.py _check_cubins's warning, 1.x-2.x: '{GPU} with CUDA "
                        "capability sm_N is not compatible with the current PyTorch installation. The current "
                        "PyTorch install supports CUDA capabilities ...'",
    "ptx_target": "NVIDIA's PTX assembler (ptxas), run by Triton under torch.compile: 'PTX .version X.Y does not "
                  "support .target sm_N' (Triton wrote a PTX ISA version older than the GPU's target: PTX ISA 8.7 "
                  "added sm_120)",
    "driver_too_old": "PyTorch torch/cuda/__init__.py _lazy_init: 'The NVIDIA driver on your system is too old "
                      "(found version N)'; the CUDA runtime, cudaErrorInsufficientDriver: 'CUDA driver version is "
                      "insufficient for CUDA runtime version'",
    "cpu_torch": "PyTorch torch/cuda/__init__.py _lazy_init: 'Torch not compiled with CUDA enabled' (a CPU-only "
                 "torch under a CUDA vLLM)",
    "vllm_serve_command": "argparse in a program's own CLI (TRL's `trl`): \"error: argument command: invalid choice: "
                          "'vllm-serve'\" (its release predates the command; TRL 0.16 added it)",
    "rope_scaling": "transformers 4.36-4.42 LlamaConfig._rope_scaling_validation (configuration_llama.py): "
                    "'`rope_scaling` must be a dictionary with two fields, `type` and `factor`, got {...}' for a "
                    "config written for 4.43+ (Llama 3.1's rope_type llama3, yarn)",
    "rope_factor": "vLLM 0.2-0.6 config.py _get_and_verify_max_len: `assert \"factor\" in rope_scaling`, a bare "
                   "AssertionError, for a rope_scaling without a factor (0.6.1-0.6.x let mrope through, as su, "
                   "longrope and llama3; a transformers 4.45 development build rewrote Qwen2-VL's mrope to another "
                   "type: vllm #8281, #8388)",
    "config_registered": "transformers 4.x models/auto/configuration_auto.py AutoConfig.register / "
                         "_LazyConfigMapping.register: \"'KEY' is already used by a Transformers config, pick another "
                         "name.\" (vLLM 0.9.2 registering 'aimv2' for Ovis under transformers 4.56, blind15/b15-004; a "
                         "model's remote code registering its own type does the same)",
    "image_processor_size": "transformers 4.50+ models/qwen2_vl/image_processing_qwen2_vl.py (and its fast "
                            "processor) Qwen2VLImageProcessor.__init__: \"ValueError: size must contain "
                            "'shortest_edge' and 'longest_edge' keys.\" (4.49 had no such check)",
    "tokenizers_format": "the tokenizers library's tokenizer.json reader (Rust serde, its untagged ModelWrapper and "
                         "sibling enums): 'Exception: data did not match any variant of untagged enum ModelWrapper at "
                         "line N column M'",
    "tokenizers_backend": "transformers 4.x tokenization_auto.py AutoTokenizer.from_pretrained: 'Tokenizer class "
                          "TokenizersBackend does not exist or is not currently imported.' (transformers 5 writes that "
                          "class into tokenizer_config.json; vLLM 0.16+ transformers_utils hf.py notes it)",
    "cuda_driver_errors": "the CUDA runtime: cudaErrorUnsupportedPtxVersion (222) 'the provided PTX was compiled "
                          "with an unsupported toolchain' (a driver older than the build's CUDA) and "
                          "cudaErrorSystemDriverMismatch (803) 'system has unsupported display driver / cuda driver "
                          "combination' (the kernel module and the user libraries of two driver versions)",
    "torchvision_ops": "torchvision 0.15+ _meta_registrations.py: 'RuntimeError: operator torchvision::nms does not "
                       "exist' (its compiled ops were built for another torch and did not load)",
    "python_package": "the Python import system, importing a name that the installed transformers, torch or vLLM "
                      "does not have (too old or too new for this vLLM or model): \"ImportError: cannot import name "
                      "'X' from 'transformers'\", \"ModuleNotFoundError: No module named 'transformers.models.X'\", "
                      "\"AttributeError: module 'torch.library' has no attribute 'X'\"; any installed package "
                      "by its file (Python's import_from: \"cannot import name 'X' from 'pkg.mod' "
                      "(/.../site-packages/pkg/mod.py)\")",
    "container_cuda": "libnvidia-container's nvidia-container-cli: 'requirement error: unsatisfied condition: "
                      "cuda>=12.9, please update your driver to a newer version, or use an earlier cuda container'",
    "cuda_compat": "the CUDA runtime, cudaErrorCompatNotSupportedOnDevice (error 804): 'forward compatibility was "
                   "attempted on non supported HW' (the CUDA forward-compatibility package on a GPU it does not "
                   "support: the driver is older than the build's CUDA)",
    "rocblas_arch": "rocBLAS library/src/tensile_host.cpp: 'rocBLAS error: Cannot read .../TensileLibrary.dat: ... "
                    "for GPU arch : gfxNNNN' (no kernels for this GPU in the installed ROCm libraries)",
    "package_required": "vLLM 0.4-0.34's own ImportError naming a package to install: 'Please install timm', "
                        "'bitsandbytes version is wrong. Please install bitsandbytes>=X', 'Xformers is required for "
                        "Pixtral inference with the Mistral format' (models/pixtral.py 0.6-0.9), 'Using Ray backend "
                        "requires installation of ray', 'The package `amd-quark` is required to use ...'; Neural "
                        "Magic's nm-vllm 0.1-0.5 (layers/sparsity/__init__.py, parameters/lazy_compressed.py): "
                        "'ValueError: magic_wand is not available and required for sparsity support. Please install it "
                        "with `pip install nm-magic-wand`' (`magic_wand` in its first commits)",
    "ptxas_arch": "NVIDIA's PTX assembler (ptxas; Triton bundles one): 'ptxas fatal : Value 'sm_121a' is not defined "
                  "for option 'gpu-name'' (an assembler older than the GPU's architecture)",
    "libcuda_missing": "Triton's NVIDIA driver module, libcuda_dirs (triton/backends/nvidia/driver.py in 3.x): "
                       "'AssertionError: libcuda.so cannot found!' with 'Possible files are located at ...' or 'Please "
                       "make sure GPU is set up and then run \"/sbin/ldconfig\"'",
    "nccl_graph": "NCCL misc/strongstream.cc (2.1x): 'NCCL WARN NCCL cannot be captured in a graph if either it "
                  "wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.'",
    "glibc": "glibc's dynamic loader, importing a compiled extension (vllm._C, a kernel package): "
             "'ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.32' not found (required by ...)'",
    "nixl_missing": "vLLM 0.10-0.34 NixlConnector's worker (distributed/kv_transfer/kv_connector/v1/"
                    "nixl_connector.py; nixl/base_worker.py at 0.34): 'RuntimeError: NIXL is not available' when "
                    "`from nixl._api import nixl_agent` (nixl_rocm on ROCm at 0.34) failed at import, which it "
                    "logged as a warning, 'NIXL is not available'",
    "triton_libcuda": "GNU ld's 'cannot find -lcuda' as Triton compiles its CUDA helper module (triton/runtime/"
                      "build.py _build, backends/nvidia/driver.py libcuda_dirs, which reads TRITON_LIBCUDA_PATH or "
                      "ldconfig -p)",
    "triton_capability": "PyTorch's Inductor (torch/_inductor/exc.py GPUTooOldForTriton; scheduler.py before): "
                         "'Found X which is too old to be supported by the triton GPU compiler, which is used as the "
                         "backend. Triton only supports devices of CUDA Capability >= 7.0, but your device is of CUDA "
                         "capability N'",
    "torch_no_libuv": "PyTorch torch/csrc/distributed/c10d/TCPStore.cpp: 'use_libuv was requested but PyTorch was "
                      "built without libuv support, run with USE_LIBUV=0 to disable it.' (DistStoreError; earlier "
                      "'build without')",
    "mlx_metallib": "MLX's Metal backend (mlx/backend/metal/device.cpp, through mlx-c as 'MLX error: ...'): 'Failed "
                    "to load the default metallib.' with Metal's own reason ('library not found', 'This library is "
                    "using a deployment target (0x...) that is not supported on this OS'); older releases 'Failed to "
                    "load device library from <path>'",
    "cann_function": "torch_npu's ACL interface loading a CANN function the installed CANN lacks: 'RuntimeError: "
                     "Failed to find function aclmdlRICaptureBegin' with 'ERR00008 PTA resource not found' (ACL graph "
                     "capture under vllm-ascend)",
    "cann_kernels": "CANN's opbase (aclnn's NnopbaseCollecter, as torch_npu relays it: 'call aclnnX failed, detail:"
                    "EZ1001: ... Get path and read binary_info_config.json failed, please check if the opp_kernel "
                    "package is installed!')",
    "triton_torch": "torch 2.5 _inductor/runtime/hints.py at import: 'attr_desc_fields = {f.name for f in "
                    "fields(AttrsDescriptor)}', which Triton 3.2's AttrsDescriptor (no longer a dataclass) fails with "
                    "dataclasses' 'TypeError: must be called with a dataclass type or instance'",
    "gaudi_build": "vllm-gaudi extension/environment.py (its build check, before #1351) through validation.py regex: "
                   "\"build: 'X' doesn't match pattern '^\\d+\\.\\d+\\.\\d+\\.\\d+$'! You can override detected build "
                   "by specifying VLLM_BUILD env variable\"",
    "mlx_model_type": "mlx-lm mlx_lm/utils.py _get_classes (read at its 2026 main), and mlx-vlm's "
                      "get_model_and_args: 'ValueError: Model type X not supported.' where it has no module for the "
                      "config's model_type (vllm-metal loads models with mlx-lm, multimodal ones with mlx-vlm)",
    "transformers_model_type": "transformers models/auto/configuration_auto.py AutoConfig.from_pretrained (4.3x-5.x): "
                               "'KeyError' from CONFIG_MAPPING[config_dict[\"model_type\"]], re-raised as 'The "
                               "checkpoint you are trying to load has model type `X` but Transformers does not "
                               "recognize this architecture.'",
}
