"""Why the ladder stops: for each failure class, and for each reading within a class (Diagnosis.detail) that says
more, the reason no change of vLLM's settings helps, in words a person can act on. Data, read by ladder.next_step."""

from __future__ import annotations

NOT_RELAXABLE = {
    "oom_loading": "the weights do not fit the GPU: no context or batch setting shrinks them",
    "host_oom": "host memory ran out while loading: no vLLM option changes that",
    "shm_exhausted": "/dev/shm is too small: that is the container's or host's setting, not vLLM's",
    "tp_indivisible": "the tensor-parallel layout is invalid for this model: change -tp in the profile",
    "dtype_unsupported": "the dtype is not supported on this GPU: change --dtype in the profile",
    "quant_unsupported": "the checkpoint's quantization is not supported on this GPU",
    "too_few_gpus": "the layout needs more GPUs than vLLM can see (or the Ray cluster can give)",
    "network": "NCCL or Gloo could not connect the workers: a network or interface setting on the nodes",
    "version_mismatch": "the installed versions do not fit together (vLLM, torch, transformers, CUDA or, on a "
                        "cluster, the nodes'): install matching ones, no setting helps",
    "port_in_use": "the API port is taken by another process",
    "disk_full": "the disk (or the quota) is full where vLLM writes its caches and the weights",
    "model_access": "the model cannot be read: a wrong id, a gated repository or a missing token",
    "remote_code_required": "the model needs --trust-remote-code, which the guard never adds on its own",
    "unsupported_architecture": "this vLLM does not support the model's architecture",
    "gpu_oom": "the GPU ran out of memory at a stage the log does not show: the change depends on the stage",
    "preflight_failed": "the guard's preflight refused to start vLLM: apply the failed checks' fixes to the profile",
    "first_request_failed": "vLLM answered /health but not its first request (see the evidence): no setting "
                            "the ladder changes fixes that",
    "usage_error": "vLLM refused its command line (an unknown option or a bad value): fix the profile or the "
                   "command line",
    "unknown": "the failure is not understood well enough to change anything safely",
}
# A reading within a class (Diagnosis.detail) whose reason differs from the class's own.
NOT_RELAXABLE_DETAIL = {
    "ray_node_ip": "vLLM's Ray executor did not find one IP address per node: VLLM_HOST_IP and Ray's node address, "
                   "set per node, not a vLLM option",
    "remote_gguf": "the model is a .gguf file in a Hub repository: a local .gguf path (REPO:QUANT_TYPE on vLLM 0.13+)",
    "dp_placement": "the Ray cluster has fewer free GPUs than data x tensor x pipeline parallel asks",
    "flashinfer_moe_model": "FlashInfer's FP8 MoE kernels take only Llama 4: VLLM_USE_FLASHINFER_MOE_FP8=0",
    "aiter_mla_heads": "AITER's MLA kernel needs 16 or 128 heads per GPU: another tensor-parallel size, or "
                       "VLLM_ROCM_USE_AITER_MLA=0",
    "second_engine": "a second engine in one process: one engine per process",
    "lora_vocab": "the model's vocabulary is larger than this vLLM's LoRA kernels take: a merged adapter or a newer "
                  "vLLM",
    "ray_platform": "this platform has no device for Ray: drop --distributed-executor-backend ray (or set mp)",
    "mamba_align": "prefix caching on this hybrid model needs chunked prefill: enable it, or turn prefix caching off",
    "mock_resolution": "this vLLM's compile step cannot patch torch under Python 3.10: Python 3.11+, or a fixed vLLM",
    "mlx_model_type": "the installed mlx-lm (or mlx-vlm) has no module for this model type: a release that lists it",
    "transformers_backend_mm": "vLLM's Transformers backend cannot run this multimodal model's processor: a vLLM "
                               "with its own class for the model",
    "backend_name": "VLLM_ATTENTION_BACKEND names no backend of this vLLM: unset it or use a listed name",
    "batch_invariant": "VLLM_BATCH_INVARIANT=1 where this vLLM has no batch-invariant kernel for the model or backend",
    "cdi_device": "the container runtime knows no CDI device of that name: generate the node's CDI spec",
    "hpu_lazy_collectives": "Gaudi's HPU graphs with tensor parallelism need PT_HPU_ENABLE_LAZY_COLLECTIVES=true in "
                            "vLLM's environment",
    "window_layers": "the model's config puts a sliding window on some layers, which this vLLM's class for it "
                     "does not run",
    "v1_unsupported": "VLLM_USE_V1=1 with a feature or device this vLLM's V1 does not run: unset it, or set it to 0",
    "engine_choice": "the engine built is not the one VLLM_USE_V1 names in its process: set it there explicitly",
    "encoder_attention": "the attention backend vLLM chose has no encoder attention, which this model needs",
    "moe_act_platform": "this vLLM runs the model's ungated MoE experts only on the platforms it names",
    "softcap_xformers": "vLLM 0.5.5's XFormers backend cannot soft-cap Gemma-2: a dtype or GPU FlashAttention runs",
    "env_choice": "an environment variable of vLLM's holds a value it does not take: unset it or use a listed value",
    "cli_flags": "vllm serve refused a combination of its flags: the profile's flags, as the message names them",
    "mooncake_master": "Mooncake's store client cannot reach its master service: no vLLM setting changes that",
    "ray_local_node": "no Ray node of the cluster runs on this host (or under its address): no vLLM setting changes "
                      "that",
    "nccl_internal": "NCCL's internal error as it connected the workers (NCCL_DEBUG=INFO names the call): no vLLM "
                     "memory setting changes that",
    "nccl_unhandled": "NCCL failed a system or CUDA call (a socket, /dev/shm or P2P; NCCL_DEBUG=INFO names which): no "
                      "vLLM memory setting changes that",
    "hub": "the Hugging Face Hub cannot be reached (offline mode, the network or a proxy): no vLLM setting "
           "changes that",
    "config_missing": "the model has no config.json at the revision asked for: a wrong id, path or revision",
    "hccl_port": "HCCL's port is held by another process on the node: give each instance its own HCCL_IF_BASE_PORT",
    # not the ladder's own step: its disable-custom-all-reduce also sets NCCL_P2P_DISABLE (launch/remembered.py,
    # for a P2P hang), which a failed CUDA IPC call does not call for
    "custom_allreduce": "vLLM's custom all-reduce failed a CUDA call between the GPUs: disable-custom-all-reduce "
                        "in the profile (NCCL's all-reduce instead)",
    "deep_gemm": "the deep_gemm package is missing or too old: install it (a model without FP8 layers can skip "
                 "it with VLLM_DEEP_GEMM_WARMUP=skip in the profile's [env] table)",
    "xformers_fa3_arch": "xformers ran Hopper-only attention kernels on another GPU: vLLM 0.11 or xformers 0.0.33, no "
                         "setting",
    "image_processor_size": "transformers is newer than the checkpoint's preprocessor_config.json: edit its size, "
                            "no vLLM setting",
    "tokenizers_format": "tokenizer.json was written by a newer tokenizers than the one installed: upgrade it",
    "ngc_unreachable": "NGC cannot be reached from the container: the network, no vLLM setting",
    "extension_abi": "a compiled extension does not match the installed torch or CUDA: reinstall, no setting "
                     "helps",
    "gpu_arch": "the installed build has no kernels for this GPU: install one built for it",
    "download_resume": "the Hub refused to resume a partial download in the cache: delete it and download once",
    "acl_graph": "vllm-ascend's ACL graph mode does not run DeepSeek models, and the start is already eager: "
                 "torchair graph mode (additional-config) or another vllm-ascend release",
    "zmq_port": "a ZMQ socket's port was taken again: one a setting fixes is held by another process; free it, or "
                "give this instance another (--data-parallel-rpc-port, the KV connector's ports, "
                "VLLM_NIXL_SIDE_CHANNEL_PORT)",
    "npu_task_queue": "torch_npu captures no NPU graph with TASK_QUEUE_ENABLE=2: TASK_QUEUE_ENABLE=1 (or 0) in the "
                      "profile's [env] table, as its message says, or --enforce-eager",
    "torchair_graph": "vllm-ascend's torchair graph mode runs only the model types it lists, never with eager mode: "
                      "torchair_graph_config off in the profile's additional-config for other models, or no "
                      "--enforce-eager with it",
    "spec_vocab": "the draft model's vocabulary differs from the target's: a draft of the same vocabulary",
    "moe_quant": "this vLLM has no MoE kernels for the checkpoint's quantization: another format or vLLM",
    "fp8_moe_scales": "this vLLM's FP8 MoE kernels do not take the checkpoint's scale layout: another release or "
                      "checkpoint",
    "c_headers": "Triton's C launcher cannot be built: a header is missing (python3-dev, build-essential)",
    "op_missing": "vLLM's compiled extension lacks an op its Python code calls: one clean install or build",
    "quant_kernel_missing": "this build of vLLM has no kernel for the checkpoint's quantization: another format, or a "
                            "build that has it",
    "cann_function": "the installed CANN lacks a function torch_npu calls: the CANN release vllm-ascend names",
    "hybrid_kv_disabled": "the model needs the hybrid KV cache manager, which a KV connector or an option turned "
                          "off: start without it",
    "moe_backend": "--moe-backend names a backend this quantization's MoE kernels lack: one the message lists",
    "cuda_toolkit_skew": "nvcc and the CUDA headers are of different CUDA releases: pin them to one",
    "nvcc_missing": "FlashInfer found no CUDA toolkit to compile its kernels: an image with one",
    "rocr_visible_devices": "Ray refuses ROCR_VISIBLE_DEVICES: set HIP_VISIBLE_DEVICES from it before the start",
    "hip_gpu_arch": "the installed build has no code for this AMD GPU's gfx target: install one built for it",
    "driver": "the NVIDIA driver is older than the CUDA the build needs: update the driver or the build",
    "process_group_size": "the script runs as several processes (torchrun) against one engine's parallel sizes: "
                          "start it as one process",
    "quant_dtype": "the quantization method refuses this --dtype: set one it lists in the profile",
    "model_dtype": "this model type refuses the dtype asked for: change --dtype in the profile",
    "quantization_mismatch": "--quantization contradicts the checkpoint's own method: fix the profile",
    "pp_layers": "the layer count is not divisible by --pipeline-parallel-size: change it in the profile",
    "batched_tokens": "vLLM's scheduler refuses --max-num-batched-tokens against max-model-len or max-num-seqs: fix "
                      "the profile",
    "mm_budget": "one multimodal item needs more tokens than --max-num-batched-tokens: raise it in the profile",
    "tool_parser": "the tool-call or reasoning parser options are refused: fix the profile",
    "chat_template": "--chat-template names no file vLLM can read: fix the profile",
    "ranks_missing": "some ranks never joined the rendezvous: their own error comes first, no setting here helps",
    "mistral_quant": "vLLM's Mistral-format reader does not map this checkpoint's quantization: read its HF files",
    "unknown_method": "this vLLM does not know the quantization method named: fix --quantization",
    "no_gpu": "the process sees no GPU: the container's or host's GPU set-up, not a vLLM setting",
    "python_package": "an installed package does not match this vLLM or model: reinstall, no setting helps",
    "numba_numpy": "numba refuses the installed NumPy: install one in its range, no setting helps",
    "extension_missing": "vLLM's compiled extension is not there: start outside a vLLM source folder, or build "
                         "it",
    "vllm_not_installed": "the environment the start ran in has no vLLM: start it from the environment vLLM is "
                          "installed in",
    "vllm_module": "code importing vLLM (or vLLM's own CLI, partly installed) asks for a module this vLLM does not "
                   "have: install matching releases, no setting helps",
    "mistral_tokenizer": "the Mistral tokenizer found no tekken.json: the model's files, or --tokenizer-mode in the "
                         "profile",
    "quant_config_missing": "--quantization names a method the checkpoint has no config for: fix the profile",
    "plugin_version": "a vLLM plugin was written for another vLLM release: install the pair it pins",
    "fork_cuda": "CUDA was initialised before vLLM forked its workers: VLLM_WORKER_MULTIPROC_METHOD=spawn, not a "
                 "setting the ladder changes",
    "tokenizer_missing": "the model's files lack the tokenizer its class reads: add them, or point --tokenizer at "
                         "the base model",
    "fp8_e4m3": "this GPU cannot compile Triton's fp8 e4m3: an fp8 KV cache goes back to auto, and an FP8 "
                "checkpoint's kernels need a GPU of compute capability 8.9+",
    "package_missing": "an installed package imports a module that is not installed: install it, no setting "
                       "helps",
    "remote_code_packages": "the model's own code imports packages not installed: install them, no setting helps",
    "triton_kernels": "vLLM's MoE kernels could not import triton_kernels: install the version this vLLM pins",
    "harmony_vocab_file": "openai-harmony's vocabulary file is not the expected one: replace it (or the cache's copy) "
                          "on the node",
    "harmony_vocab": "openai-harmony could not fetch its vocabulary: set TIKTOKEN_ENCODINGS_BASE or let it reach "
                     "the network",
    "nvshmem_transport": "NVSHMEM started no transport: fix the RDMA set-up or choose another all-to-all backend",
    "mrv2_unsupported": "Model Runner V2 does not run a feature asked for: set VLLM_USE_V2_MODEL_RUNNER=0 or drop it",
    "lora_moe": "this vLLM has no LoRA for the model's experts: start without LoRA or merge the adapter",
    "lora_modules": "the LoRA adapter's modules are not ones vLLM takes for the model: another adapter, or merge it",
    "bind_address": "a socket was bound to an address that is not this host's: fix the address in the profile",
    "nccl_duplicate_gpu": "two ranks were given one GPU: fix the launch's device assignment",
    "eplb_unsupported": "this vllm-ascend has no EPLB for the model: start without it",
    "kv_page_size": "this vLLM cannot make the layers' KV cache pages one size: a KV cache dtype every layer takes, "
                    "or a newer vLLM",
    "kv_page_padding": "vLLM cannot pad the named layer's KV cache page to the others': start without the draft model "
                       "or feature that adds layers of another kind",
    "rbln_blocks": "vllm-rbln's compile ran out of NPU memory beside its KV cache blocks: --num-gpu-blocks-override "
                   "below their count in the profile",
    "triton_capability": "the GPU is older than Triton's compiler takes, and vLLM compiles functions with Inductor "
                         "even in eager mode: a build for these GPUs, or a newer GPU",
    "triton_libcuda": "the linker finds no libcuda.so beside the driver's libcuda.so.1: add the link on the node",
    "torch_no_libuv": "this torch has no libuv for its TCPStore: USE_LIBUV=0 in the environment, or another torch",
    "mlx_metallib": "MLX has no Metal library for this macOS: reinstall it, or update macOS",
    "cutlass_capability": "this vLLM build has no CUTLASS kernel for the checkpoint's quantization on this GPU",
    "bnb_tp": "a pre-quantized bitsandbytes checkpoint cannot be split by tensor parallelism: pipeline parallelism "
              "in the profile",
    "engine_kwarg": "the program passed an option in its command-line spelling: fix the program's settings",
    "usage_cut": "vLLM refused its command line (the error line is past the paste's end): fix the profile or flags",
    "mamba_groups": "the tensor-parallel size does not divide the model's Mamba groups: change -tp in the profile",
    "lmcache_mamba": "LMCache needs the Mamba state kept as 'align': prefix caching with mamba-cache-mode align in "
                     "the profile",
    "bisheng_target": "Triton-Ascend's compiler does not know this NPU: a newer Triton-Ascend or image",
    "mamba_blocks": "vLLM counted fewer Mamba cache blocks than max-num-seqs, and max-num-seqs is already no higher "
                    "than that count: more GPU memory for the blocks",
    "pooling_checkpoint": "the checkpoint is a pooling model's: start it with --runner pooling (or --task embed)",
    "processor_api": "the multimodal processor's API differs from what vLLM calls: install the transformers this "
                     "vLLM pins",
    "transformers_no_tp": "the Transformers backend cannot split this model for tensor parallelism: change the "
                          "profile's parallelism or vLLM",
    "repo_file_missing": "the model's repository lacks a file its config asks for: no setting helps",
    "config_not_json": "the model's config is not JSON: give vLLM a model it reads, no setting helps",
    "transformers_model_type": "the installed transformers does not know the model's type: a vLLM (and its "
                               "transformers) that supports the model",
    "vocab_unreadable": "the tokenizer's vocabulary file cannot be read: download it again",
    "module_missing": "the start imported a module that is not installed: install it (or the package's missing "
                      "part), no setting helps",
    "shards_missing": "the checkpoint's index names shards the folder does not hold: download them, no setting "
                      "helps",
    "no_attention_backend": "no attention backend of this vLLM runs the model on this GPU: another GPU or vLLM",
    "attention_backend": "the attention backend chosen refuses this model or GPU: drop it from the profile",
    "bnb_model": "this vLLM has no bitsandbytes support for the model's class: another format or vLLM",
    "nvfp4_moe_dp": "vLLM's NVFP4 MoE kernels refuse data parallelism: VLLM_USE_FLASHINFER_MOE_FP4=1 or tensor "
                    "parallelism, not a setting the ladder changes",
    "torch_schema": "this vLLM was written for another torch release: install the torch it pins, no setting helps",
    "softcap_backend": "this vLLM soft-caps Gemma-2's logits only on FlashInfer (VLLM_ATTENTION_BACKEND, Ampere or "
                       "later) or in a newer vLLM: not a setting the ladder changes",
    "download_integrity": "a downloaded weight file failed its checksum: download the model again, no setting helps",
    "package_required": "vLLM needs a package this environment lacks or has at another version: the message names "
                        "it",
    "ptxas_arch": "the PTX assembler does not know this GPU's architecture: a newer ptxas (TRITON_PTXAS_PATH, or "
                  "TRITON_PTXAS_BLACKWELL_PATH on Triton 3.9)",
    "libcuda_missing": "Triton finds no libcuda.so.1 (the driver's library): a linker cache or container set-up, not a "
                       "vLLM setting",
    "nccl_graph": "the NCCL library or the driver is too old for NCCL in a CUDA graph, even in eager mode: a newer one",
    "glibc": "a compiled extension needs a newer glibc than this OS has: no vLLM setting changes that",
    "nixl_missing": "the KV connector needs NIXL, which does not import in vLLM's environment",
    "sleep_allocator": "this build lacks the allocator sleep mode needs: a build with it, or no sleep mode in the "
                       "profile",
    "sleep_mode_platform": "this platform has no sleep-mode allocator: drop --enable-sleep-mode from the profile",
    "flash_attn_build": "this flash-attention build leaves out a case the model needs: another attention backend "
                        "or a full build, not a setting the ladder changes",
    "no_cxx_compiler": "torch.compile finds no C++ compiler to build its code: install one (g++) where vLLM runs",
    "no_c_compiler": "Triton finds no C compiler to build its kernels: install one (gcc) where vLLM runs",
    "numa_bind": "vLLM did not detect the GPUs' NUMA nodes for --numa-bind: drop it, or give --numa-bind-nodes",
    "quota": "the disk quota is full where vLLM writes its caches or the weights: move them or free space",
    "pp_unsupported": "this model cannot run with pipeline parallelism: use tensor parallelism in the profile",
    "lora_rank": "--max-lora-rank is not a rank vLLM supports: fix the profile",
    "platform": "this platform's vLLM does not run the checkpoint's quantization method",
    "inspection_failed": "vLLM could not import the model's class: the install (or this vLLM's support), not a "
                         "setting",
    "hub_refused": "the Hugging Face Hub refused or timed out: a token, a wait or a longer Hub timeout, not a vLLM "
                   "setting",
    "marlin_tile": "a quantized layer's width on one GPU is no multiple of Marlin's 64-wide tiles: change -tp (or "
                   "use pipeline parallelism) in the profile",
    "quant_group": "a quantized layer does not split evenly at this tensor-parallel size: change -tp or the kernel "
                   "in the profile",
    "vllm_api": "the program driving vLLM was written for another vLLM release: install the one it pins",
    "hpu_acquired": "another process holds the Gaudi: the guard cannot see it, so it does not wait for it",
    "hpu_not_found": "no Gaudi is free to this process: give the container one, or free one",
    "tpu_busy": "another process holds the TPU: the guard cannot see it, so it does not wait for it",
    "neuron_busy": "another process holds the NeuronCores: the guard cannot see them, so it does not wait for them",
    "aiter_moe": "AITER has no MoE kernel for this MXFP4 combination: VLLM_ROCM_USE_AITER_MOE=0 or another MoE "
                 "backend in the profile",
    "tpu_onchip": "XLA ran out of the TPU core's on-chip memory compiling a kernel: not the HBM a setting frees",
    "k8s_unschedulable": "no node of the cluster has the pod's GPUs free: the scheduler never starts the container",
    "platform_start": "the platform stopped waiting for the container's port before vLLM was ready: its start "
                      "budget, not a vLLM setting",
    "startup_probe": "the kubelet killed the container before vLLM was ready: the pod's startupProbe budget, not a "
                     "vLLM setting",
    "config_check": "vLLM's settings checks refused the combination given: change the setting the message names",
    "no_weights": "the model has no weight file vLLM can load: download it whole, no setting helps",
    "weights_unreadable": "a weight file is truncated or not the file itself (a git-lfs pointer): download it again",
    "internal_port": "an internal port was taken twice: set VLLM_PORT (or MASTER_PORT) to a free range",
    "mmap_enomem": "the host refused to map the weights into memory: raise the memory limit, no vLLM option helps",
    "not_multimodal": "this vLLM does not treat the model as multimodal: a newer vLLM, or no multimodal option",
    "weights_missing": "the checkpoint lacks weights its config declares: download it whole",
    "tower_weights_missing": "the checkpoint has no tower for the media still accepted: --language-model-only or "
                             "every medium at 0 in the profile",
    "mtp_weights_missing": "the checkpoint has no MTP layer for speculative decoding: start without "
                           "--speculative-config or with a checkpoint that keeps it",
    "no_kernel": "this build has no kernel for the checkpoint's format on this GPU: another checkpoint or build",
    "rope_format": "this vLLM (or the transformers beside it) does not know the model's rope_scaling: install a "
                   "matching pair",
}
