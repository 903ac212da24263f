"""Where each failure message the rules match comes from: the program, its file, and the releases it was read in.

A rule of rules.py names one of these as its `source`; `explain` shows it as the template that matched. The
vLLM 0.33 locations are from shared/docs/vllm-reference.md (read in vLLM's source at 0.33); the older ones are the
files and functions in the tracebacks of the real logs (tests/data/real-logs, whose index.json names the
version where the paste gives it), from 0.2 (V0 engine) through 0.6-0.10 (V0 and V1) to 0.11-0.33 (V1).
A message whose wording changed across releases has one rule per wording, each citing its own.
"""

from __future__ import annotations

from vllm_guard.diagnose.catalogue_devices import DEVICE_SOURCES
from vllm_guard.diagnose.catalogue_settings import SETTINGS_SOURCES
from vllm_guard.diagnose.catalogue_versions import VERSION_SOURCES

SOURCES: dict[str, str] = {
    "usage_error": "argparse (vllm serve's parser, entrypoints/cli/serve.py; exit status 2), all releases",
    "cpu_node_memory": "vLLM CPU build 0.30-0.32, v1/worker/cpu_worker.py init_device: 'Available memory on node N "
                       "... on startup is less than desired CPU memory utilization' (0.33 checks the KV cache instead)",
    "gpu_busy": "vLLM 0.9-0.33 request_memory (v1/worker/utils.py at 0.33; v1/worker/gpu_worker.py init_device "
                "in 0.9-0.11): 'Free memory on device ... on startup is less than desired GPU memory utilization'",
    "kv_too_small": "vLLM 0.8-0.33 _check_enough_kv_cache_memory (v1/core/kv_cache_utils.py; "
                    "v1/core/kv_cache_planning.py at 0.33): 'To serve at least one request with the model's max "
                    "seq len ...'",
    "kv_too_small_v0": "vLLM 0.2-0.7 (V0) raise_if_cache_size_invalid (worker/worker.py): 'The model's max seq len "
                       "(N) is larger than the maximum number of tokens that can be stored in KV cache (M)'",
    "no_kv_memory": "vLLM 'No available memory for the cache blocks': V0 worker/worker.py "
                    "raise_if_cache_size_invalid (0.2-0.7), V1 v1/core/kv_cache_utils.py "
                    "check_enough_kv_cache_memory (0.8-0.33); 0.33's auto-fit: 'Cannot auto-fit max_model_len'",
    "negative_kv": "vLLM 0.10-0.11 v1/worker/gpu_worker.py determine_available_memory: 'Available KV cache memory: "
                   "-N GiB'",
    "negative_kv_summary": "vLLM 0.6.5-0.9 profiling summary (V0 worker/worker.py determine_num_available_blocks, V1 "
                           "v1/worker/gpu_worker.py 0.8-0.9): 'the rest of the memory reserved for KV Cache is -N GiB'",
    "profiling_assertion": "vLLM 0.6-0.33 determine_available_memory (v1/worker/gpu_worker.py; V0 worker.py "
                           "determine_num_available_blocks): 'Error in memory profiling. Initial free memory ...'",
    "load_oom": "vLLM 0.5.1-0.7 (V0) model_runner.py load_model: 'Failed to load model - not enough GPU memory' "
                "(vllm #5714)",
    "sampler_oom": "vLLM 0.8-0.33 v1/worker/gpu_model_runner.py _dummy_sampler_run: 'CUDA out of memory occurred "
                   "when warming up sampler with N dummy requests'",
    "torch_oom": "PyTorch's CUDA caching allocator: 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                 "...' (2.1+; torch.cuda.OutOfMemoryError before), HIP on ROCm, the XPU allocator's 'XPU out of "
                 "memory. Tried to allocate' (Intel GPUs), torch_npu's 'NPU out of memory. Tried to allocate' (Ascend, "
                 "vllm-ascend), Habana's 'FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::N' (Gaudi), "
                 "CUBLAS_STATUS_ALLOC_FAILED, XLA's 'RESOURCE_EXHAUSTED: Out of memory while trying to "
                 "allocate', 'Error loading program: Attempting to reserve' and 'CompileTimeHbmOom' (TPU)",
    "shm_vllm": "vLLM distributed/device_communicators/shm_broadcast.py: 'Insufficient space in /dev/shm: N MiB "
                "required, M MiB free.' (0.27-0.30), 'Insufficient space in /dev/shm for X: ...' (0.33-0.34)",
    "shm_other": "vLLM's worker bus-error handler ('Unexpected bus error encountered in worker'), NCCL shmutils.cc "
                 "('Error while creating shared memory segment'), the kernel's SIGBUS",
    "tp_heads": "vLLM 0.1-0.33 verify_with_parallel_config (config.py; config/model.py at 0.33): 'Total number of "
                "attention heads (N) must be divisible by tensor parallel size (T)'",
    "tp_group": "vLLM 0.33 distributed/utils.py: 'Weight ... is not divisible by group_size=N'",
    "fp8_block_tp": "vLLM 0.7-0.33 model_executor/layers/quantization/utils/fp8_utils.py "
                    "validate_fp8_block_shape(_moe): 'Weight output_partition_size = N is not divisible by weight "
                    "quantization block_n = B.', 'The output_size of gate's and up's weight = N is not divisible by "
                    "weight quantization block_n = B.' (and block_k for the input side)",
    "tp_kv_heads": "vLLM model_executor/layers/linear.py, distributed/utils.py divide(): 'AssertionError: N is not "
                   "divisible by M'",
    "bf16": "vLLM 0.1-0.33 _check_if_gpu_supports_dtype (V0 worker/worker.py; platforms/cuda.py at 0.33): "
            "'Bfloat16 is only supported on GPUs with compute capability of at least 8.0'",
    "model_dtype": "vLLM 0.7-0.33 ModelConfig dtype resolution (config.py _FLOAT16_NOT_SUPPORTED_MODELS; "
                   "config/model.py at 0.33): 'The model type X does not support float16. Reason: ...'",
    "quant_dtype": "vLLM config verification: 'X is not supported for quantization method Y. Supported dtypes'",
    "quant_capability": "vLLM 0.2-0.33 quantization checks (config.py _verify_quantization / model_loader; "
                        "compressed_tensors.py _check_scheme_supported): 'The quantization method X is not "
                        "supported for the current GPU. Minimum capability: N' / 'Quantization scheme is not "
                        "supported ...'",
    "fp8_kv_backend": "vLLM 0.30-0.34 v1/attention/backends/triton_attn.py and mla/triton_mla.py: 'FP8 KV cache is "
                      "not supported by the Triton attention backend' ('Triton MLA backend') 'on X (compute capability "
                      "N)'",
    "no_backend": "vLLM 0.11-0.33 platforms/cuda.py and rocm.py get_attn_backend_cls: 'No valid attention backend "
                  "found for cuda with AttentionSelectorConfig(...). Reasons: {BACKEND: [kv_cache_dtype not "
                  "supported, compute capability not supported, ...]}' (the reasons: v1/attention/backend.py "
                  "validate_configuration)",
    "softcap_backend": "vLLM 0.5.1-0.6 attention/backends/flash_attn.py and xformers.py (metadata build, in the "
                       "profiling run): 'ValueError: Please use Flashinfer backend for models with logits_soft_cap "
                       "(i.e., Gemma-2). ... export VLLM_ATTENTION_BACKEND=FLASHINFER.'",
    "softcap_xformers": "vLLM 0.5.5 attention/backends/xformers.py XFormersImpl.__init__ (as the model is built): "
                        "'ValueError: XFormers does not support attention logits soft capping.'",
    "selected_backend": "vLLM 0.11-0.33 platforms/cuda.py get_attn_backend_cls: 'Selected backend X is not valid for "
                        "this configuration. Reason: [...]' (--attention-backend or VLLM_ATTENTION_BACKEND)",
    "nvfp4_moe_dp": "vLLM 0.10-0.11 model_executor/layers/quantization/utils/flashinfer_fp4_moe.py "
                    "select_nvfp4_gemm_impl: 'CutlassExpertsFp4 doesn't support DP. Use flashinfer CUTLASS Fused MoE "
                    "backend instead (set VLLM_USE_FLASHINFER_MOE_FP4=1)'",
    "bnb_model": "vLLM 0.5-0.26 model_executor/model_loader/loader.py (later bitsandbytes_loader.py) "
                 "BitsAndBytesModelLoader: 'AttributeError: Model X does not support BitsAndBytes quantization yet.' "
                 "(\"No 'packed_modules_mapping' found.\", 'MoE Model X ...')",
    "max_len": "vLLM 0.2-0.33 _get_and_verify_max_len (config.py; config/model.py at 0.33): 'User-specified "
               "max_model_len (N) is greater than the derived max_model_len'",
    "world_size": "vLLM config/parallel.py, the executor's choice: 'World size (N) is larger than the number of "
                  "available GPUs (M) in this node' (0.13-0.34), 'Tensor parallel size (N) cannot be larger than the "
                  "number of available GPUs (M)' (0.11)",
    "dp_rank": "vLLM V1 data parallel: 'DP adjusted local rank N is out of bounds for M devices'",
    "ray_infeasible": "Ray's autoscaler (autoscaler/_private/autoscaler.py, its event summary): 'Error: No available "
                      "node types can fulfill resource request {..., 'GPU': 1.0}. Add suitable node types to this "
                      "cluster to resolve this issue.' (a bundle of vLLM's placement group no node can hold)",
    "ray_required_gpus": "vLLM 0.4-0.34 (v1/)executor/ray_utils.py initialize_ray_cluster: 'The number of required "
                         "GPUs exceeds the total number of available GPUs in the placement group|cluster' (TPUs: TPU)",
    "ray_head_gpu": "vLLM v1/executor/ray_utils.py initialize_ray_cluster: 'Current node has no GPU available ... "
                    "vLLM engine cannot start without GPU' (vllm-ascend: NPU; TPUs: TPU)",
    "ray_pg_timeout": "vLLM (v1/)executor/ray_utils.py _wait_until_pg_ready: 'Cannot provide a placement group of "
                      "placement_group_specs=... within N seconds' (0.5-0.34), and 0.11-0.34's 'Cannot provide a "
                      "placement group requiring N GPUs (placement_group_specs=...) within N seconds'",
    "ray_driver_gpu": "vLLM 0.6-0.10 (V0) executor/ray_distributed_executor.py _init_workers_ray: 'Ray does not "
                      "allocate any GPUs on the driver node'",
    "ray_bundle": "Ray util/placement_group.py check_placement_group_index: 'placement group bundle index N is "
                  "invalid'",
    "ray_version": "Ray _private/utils.py check_version_info: 'Version mismatch: The cluster was started with ...'",
    "nccl": "PyTorch ProcessGroupNCCL.cpp watchdog ('Watchdog caught collective operation timeout'), NCCL "
            "('ncclRemoteError', 'NET/Socket : Connect', 2.19+ 'socketStartConnect: Connect to ADDR failed')",
    "nccl_unhandled": "vLLM 0.4-0.33 distributed/device_communicators/pynccl_wrapper.py NCCL_CHECK: 'NCCL error: "
                      "unhandled system error' / 'unhandled cuda error'; PyTorch c10d NCCLUtils: 'NCCL error in: "
                      "FILE:N, unhandled system error, NCCL version X'; NCCL's own trace of the result, with "
                      "NCCL_DEBUG=INFO (checks.h): 'NCCL INFO init.cc:N -> 1' (or 2)",
    "nccl_internal": "NCCL's ncclGetErrorString (init.cc) for ncclInternalError, as vLLM's pynccl_wrapper.py and "
                     "PyTorch's c10d word it: 'NCCL error: internal error - please report this issue to the NCCL "
                     "developers' (cupy's 'NCCL Error 3: internal error'); NCCL 2.1x proxy.cc: 'Proxy Call to rank N "
                     "failed (Connect)'; its trace 'NCCL INFO FILE.cc:N -> 3'",
    "remote_gguf": "vLLM 0.9-0.11 transformers_utils/config.py get_config: 'Invalid repository ID or local directory "
                   "specified: 'X'. ... 3. For GGUF: pass the local path of the GGUF checkpoint. Loading GGUF from a "
                   "remote repo directly is not yet supported.' (0.13+ also reads REPO:QUANT_TYPE, gguf_utils.py)",
    "dp_placement": "vLLM 0.9-0.34 v1/engine/utils.py CoreEngineActorManager.create_dp_placement_groups: 'Not enough "
                    "resources to allocate N placement groups, only created M placement groups. Available resources: "
                    "{...}' and 'Not enough resources to allocate N DP ranks on DP master node A, possible to fit M'",
    "flashinfer_moe_model": "vLLM 0.10-0.13 model_executor/layers/quantization/utils/flashinfer_utils.py "
                            "apply_flashinfer_per_tensor_scale_fp8: 'AssertionError: FusedMoE flashinfer kernels are "
                            "only supported for Llama4'",
    "second_engine": "vLLM 0.1-0.34 distributed/parallel_state.py initialize_model_parallel (model_executor/"
                     "parallel_utils before 0.4): 'AssertionError: tensor model parallel group is already "
                     "initialized' (and the data, pipeline, expert groups' wordings)",
    "cli_flags": "vLLM 0.6-0.34 entrypoints/openai/cli_args.py (launchers/ at 0.30, common/ at 0.33) "
                 "validate_parsed_serve_args: 'TypeError: Error: --enable-auto-tool-choice requires "
                 "--tool-call-parser', '... --enable-reasoning requires --reasoning-parser', '... cannot be enabled "
                 "at the same time', 'ValueError: Error: --sse-keep-alive-interval must be ...'",
    "engine_handshake": "vLLM 0.9-0.34 v1/engine/core.py EngineCoreProc.startup_handshake: 'RuntimeError: Did not "
                        "receive response from front-end process within 5 minutes' (HANDSHAKE_TIMEOUT_MINS)",
    "gloo": "Gloo transport/tcp: 'Gloo connectFullMesh failed', connect/timeout",
    "gloo_interface": "Gloo transport/tcp/device.cc (lookupAddrForIface, through torch.distributed's "
                      "ProcessGroupGloo): '[enforce fail at .../gloo/transport/tcp/device.cc:N] ifa != nullptr. Unable "
                      "to find address for: IFACE'",
    "ranks_missing": "PyTorch c10d TCPStore (torch/csrc/distributed/c10d/TCPStore.cpp, waitForWorkers, the store "
                     "server on the first rank): 'DistStoreError: Timed out after N seconds waiting for clients. K/M "
                     "clients joined.'",
    "rendezvous": "PyTorch c10d: DistNetworkError/DistStoreError timed out, connection refused, no route to host",
    "uvicorn_bind": "uvicorn server.py startup: '[Errno 98] error while attempting to bind on address (host, port): "
                    "address already in use' (errno 48 on macOS and the BSDs)",
    "cpython_bind": "CPython socket.bind in vLLM's API server (entrypoints/openai/api_server.py run_server / "
                    "launcher.py create_server_socket): 'OSError: [Errno 98] Address already in use' (48 on macOS)",
    "disk": "the OS: 'OSError: [Errno 28] No space left on device'",
    "disk_quota": "the OS (Linux errno.h EDQUOT): 'OSError: [Errno 122] Disk quota exceeded', a write past the user's "
                  "or project's quota on that filesystem",
    "numa_bind": "vLLM 0.32 utils/numa_utils.py: 'NUMA binding was requested, but vLLM could not detect the "
                 "GPU-to-NUMA topology automatically. Pass --numa-bind-nodes explicitly or disable --numa-bind.'",
    "mistral_tokenizer": "transformers tokenization_mistral_common.py MistralCommonBackend.from_pretrained (the "
                         "Mistral tokenizer vLLM 0.12+ loads for --tokenizer-mode mistral): 'No tokenizer file found "
                         "in directory: PATH' (no tekken.json, no tokenizer.model.vN)",
    "process_group_size": "vLLM V0 distributed/parallel_state.py initialize_model_parallel (not in 0.32): 'world_size "
                          "(N) is not equal to tensor_model_parallel_size (T) x pipeline_model_parallel_size (P)'",
    "quant_choice": "argparse in vllm serve's parser, where --quantization's choices are the registered methods "
                    "(engine/arg_utils.py): \"vllm serve: error: argument --quantization/-q: invalid choice: 'X' "
                    "(choose from ...)\"",
    "c10d_socket": "PyTorch 2.2+ torch/csrc/distributed/c10d/socket.cpp and TCPStore.cpp: 'The client socket has "
                   "failed to connect to any network address of (H, P).', 'TCP client failed to connect/validate to "
                   "host H:P - timed out', and their retry warnings ('[c10d] The client socket has failed to connect "
                   "to ...', 'The server socket on ... has timed out, will retry.')",
    "quant_config_missing": "vLLM get_quant_config (model_executor/weight_utils.py 0.2-0.4, model_executor/"
                            "model_loader/weight_utils.py 0.5-0.33): 'Cannot find the config file for X' (no "
                            "quantization_config in config.json, and no quant_config.json or the method's own file)",
    "fork_cuda": "PyTorch torch/cuda/__init__.py _lazy_init: 'Cannot re-initialize CUDA in forked subprocess. To use "
                 "CUDA with multiprocessing, you must use the 'spawn' start method'; torch_npu's npu/__init__.py "
                 "_lazy_init the same with NPU",
    "sentencepiece_file": "sentencepiece's SWIG extension (_sentencepiece.SentencePieceProcessor_LoadFromFile, called "
                          "from sentencepiece/__init__.py LoadFromFile): 'TypeError: not a string' for a model file of "
                          "None, as transformers 4.x LlamaTokenizer.get_spm_processor passes it when the model has no "
                          "tokenizer.model",
    "download_integrity": "ModelScope hub file_download.py file_integrity_validation: 'modelscope.hub.errors."
                          "FileIntegrityError: File X integrity check failed, expected sha256 signature is ..., the "
                          "download may be incomplete, please try again'",
    "shards_missing": "vLLM 0.32 model_executor/model_loader/weight_utils.py filter_duplicate_safetensors_files: "
                      "'FileNotFoundError: Weight files referenced in index but missing: {...}'",
    "cuda_runtime_oom": "the CUDA runtime's string for cudaErrorMemoryAllocation as PyTorch raises it ('RuntimeError: "
                        "CUDA error: out of memory', c10/cuda/CUDAException.h), and vLLM 0.7-0.33 "
                        "csrc/cumem_allocator.cpp's CUDA_CHECK for sleep mode ('CUDA Error: out of memory at "
                        ".../cumem_allocator.cpp:N'), and the driver API's as torch raises it ('CUDA driver error: "
                        "out of memory', C10_CUDA_DRIVER_CHECK in c10/cuda/driver_api.h)",
    "ray_driver_bundle": "vLLM 0.4-0.10 executor/ray_utils.py _verify_bundles: 'driver node id X is not included in a "
                         "placement group P. ... You don't have enough GPUs available in a current node.'",
    "v0_zero_blocks": "vLLM 0.2-0.10 V0 executor determine_num_available_blocks: '# GPU blocks: 0, # CPU blocks: N', "
                      "before worker.py raise_if_cache_size_invalid's 'No available memory for the cache blocks'",
    "sleep_mode_platform": "vLLM 0.32-0.33 device_allocator/__init__.py get_mem_allocator_instance: 'Sleep mode "
                           "allocator is not available on platform X (device_type=...)'",
    "triton_fp8e4nv": "Triton 3.x language/semantic.py (its fp8 type check at compile time): 'type fp8e4nv not "
                      "supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')' on "
                      "compute capability below 8.9 (('fp8e5',) on ROCm's gfx90a); torch.float8_e4m3fn is Triton's "
                      "fp8e4nv",
    "hub_access": "huggingface_hub / transformers: GatedRepoError, 401/403 Client Error, RepositoryNotFoundError; "
                  "huggingface_hub 1.x's httpx wording (\"Client error '401 Unauthorized' for url 'https://"
                  "huggingface.co/...'\", httpx _models.py raise_for_status); vLLM 0.8+ 'Invalid repository ID or "
                  "local directory specified'",
    "ngc_unreachable": "NVIDIA NIM's hub client (nim_sdk::hub, Rust's reqwest): 'error sending request for url "
                       "(https://api.ngc.nvidia.com/v2/org/nim/...)', reqwest's words for a request that could not be "
                       "sent (an HTTP status is 'HTTP status client error (401 ...)' instead)",
    "hub_unreachable": "huggingface_hub utils/_http.py OfflineModeIsEnabled ('Cannot reach URL: offline mode is "
                       "enabled', 0.20+), file_download.py LocalEntryNotFoundError ('... cannot find the requested "
                       "files in the local cache ...'), snapshot_download ('outgoing traffic has been disabled'); "
                       "transformers utils/hub.py cached_file ('We couldn't connect to ... to load this file'; "
                       "cached_files, in later releases and 5.x: '... to load the files'); "
                       "urllib3's 'HTTPSConnectionPool(host=huggingface.co ...): Max retries exceeded'",
    "hub_config_missing": "huggingface_hub 404 for the model's config.json ('404 Client Error: Not Found for url: "
                          ".../resolve/REV/config.json', 1.x: \"Client error '404 Not Found' for url '...'\", "
                          "EntryNotFoundError, RevisionNotFoundError); transformers utils/hub.py cached_file: 'does "
                          "not appear to have a file named config.json'",
    "no_kernel": "vLLM 0.6-0.33 choose_*_linear_kernel (model_executor/kernels/linear/__init__.py at 0.32): 'Failed to "
                 "find a kernel that can implement the ScaledMM|WNA16|NVFP4|MXFP4 linear layer. Reasons: ...'; "
                 "fused_moe/oracle/mxfp4.py: 'Unsupported mxfp4_backend for Mxfp4MoEMethod: ...'; fused_moe/oracle/"
                 "*.py 0.16-0.34: 'No FP8|MXFP4|NvFp4|Int8|WNA16|W4A8 MoE backend supports the deployment "
                 "configuration'",
    "exclusive_gpu": "the CUDA runtime, cudaErrorDevicesUnavailable: 'CUDA-capable device(s) is/are busy or "
                     "unavailable' (a GPU in Exclusive Process compute mode that another process holds)",
    "download_resume": "huggingface_hub utils/_http.py hf_raise_for_status: 'HfHubHTTPError: 416 Client Error: "
                       "Requested Range Not Satisfiable for url: ...' (a resumed download's Range past the file)",
    "quant_mismatch": "vLLM 0.2-0.33 ModelConfig._verify_quantization (config.py; config/model.py at 0.33): "
                      "'Quantization method specified in the model config (X) does not match the quantization "
                      "method specified in the `quantization` argument (Y)'",
    "hub_path": "huggingface_hub validators (vLLM 0.32-0.33 through transformers): 'Repo id must be in the form "
                "...' for a local path that does not exist",
    "remote_code": "transformers dynamic_module_utils.py resolve_trust_remote_code ('requires you to execute the "
                   "configuration file', 'pass(ing) the argument trust_remote_code=True', 'contains custom code "
                   "which must be executed'); vLLM 0.33 'Failed to load the model config'",
    "architecture": "vLLM 0.1-0.33 model_executor/models/registry.py: 'Model architectures [...] are not supported "
                    "for now' (0.4-0.9 model_loader/neuron.py: '... are not supported on Neuron for now'); "
                    "transformers auto_factory.py's 'Unrecognized configuration class ... for this kind of "
                    "AutoModel' (vLLM's Transformers fallback)",
    "pp_layers": "vLLM V0 config.py ModelConfig.verify_with_parallel_config (the releases before layers could be "
                 "split unevenly across pipeline stages): 'Total number of hidden layers (N) must be divisible by "
                 "pipeline parallel size (P).'",
    "batched_tokens": "vLLM SchedulerConfig._verify_args (config.py, 0.2-0.10; config/scheduler.py:318-345 at 0.33): "
                      "'max_num_batched_tokens (N) is smaller than max_model_len (M).' (chunked prefill off) and "
                      "'max_num_batched_tokens (N) must be greater than or equal to max_num_seqs (S).'",
    "mm_budget": "vLLM V1 v1/core/encoder_cache_manager.py, the encoder budget: 'Chunked MM input disabled but "
                 "max_tokens_per_mm_item (N) is larger than max_num_batched_tokens (M). Please increase "
                 "max_num_batched_tokens.'",
    "tool_parser": "vLLM entrypoints/openai/cli_args.py validate_parsed_serve_args: 'TypeError: Error: "
                   "--enable-auto-tool-choice requires --tool-call-parser'; api_server.py run_server / "
                   "validate_api_server_args: \"KeyError: 'invalid tool call parser: X (chose from { ... })'\" and "
                   "the same for the reasoning parser (0.6-0.33); the parser managers' \"KeyError: \"Reasoning "
                   "parser 'X' not found. Available parsers: ...\"\" and \"Tool parser 'X' not found.\" (0.11-0.34)",
    "chat_template": "vLLM entrypoints/chat_utils.py: validate_chat_template, called by cli_args.py "
                     "validate_parsed_serve_args before anything loads: 'ValueError: The supplied chat template string "
                     "(X) appears path-like, but doesn't exist!' (a value with none of '{', '}' or a newline that "
                     "names no file; 'FileNotFoundError: the supplied chat template path doesn't exist' for a Path); "
                     "load_chat_template: 'The supplied chat template (X) looks like a file path, but "
                     "it failed to be opened. Reason: ...'",
    "gpu_utilization_range": "vLLM V0 CacheConfig._verify_args (config.py): 'GPU memory utilization must be less "
                             "than 1.0. Got X.'",
    "unknown_quant": "vLLM ModelConfig._verify_quantization (config.py; config/model.py in later releases): "
                     "'Unknown quantization method: X. Must be one of [...]' (a method this build does not have)",
    "no_gpu": "PyTorch's c10/cuda (torch.cuda._lazy_init): 'RuntimeError: No CUDA GPUs are available' (the process "
              "sees no GPU: a container without --gpus, CUDA_VISIBLE_DEVICES empty, a Ray actor given none)",
    "device_ordinal": "the CUDA runtime (HIP alike) under torch.cuda.set_device: 'CUDA error: invalid device ordinal' "
                      "(cudaErrorInvalidDevice: a GPU index past the devices CUDA_VISIBLE_DEVICES lets it see); "
                      "PyTorch's 'device >= 0 && device < num_gpus INTERNAL ASSERT FAILED' (CUDAContext.cpp); "
                      "Ascend's CANN runtime: 'rtSetDevice execute failed, reason=[device id error]', and a later "
                      "CANN's 'Invalid_Argument(EE1001): ... Failed to set visible device. The invalid device is N'",
    "transformers_files": "transformers 4.3x-4.5x, files not found at the id or path given: configuration_utils.py "
                          "'Can't load the configuration of 'X'', utils/hub.py cached_file 'Incorrect "
                          "path_or_model_id: 'X'. Please provide either the path to a local folder or the repo_id of a "
                          "model on the Hub.', tokenization_utils_base.py 'Can't load tokenizer for 'X''",
    "no_config_format": "vLLM 0.6.3-0.9 transformers_utils/config.py get_config: 'ValueError: No supported config "
                        "format found in X' (no config.json or params.json visible there: a wrong id or path, or a "
                        "gated repository read without a token); 0.8.5-0.33: 'Could not detect config format for no "
                        "config file found.'",
    "tcpstore_bind": "PyTorch 2.2+ c10d socket.cpp (TCPStore's server socket): 'The server socket has failed to "
                     "listen on any local network address. port: P, useIpv6: 0, code: -98, name: EADDRINUSE'; before "
                     "2.2: 'has failed to bind to [::]:P (errno: 98 - Address already in use)'",
    "zmq_bind": "pyzmq 22+ zmq/sugar/socket.py Socket.bind, which adds the address to libzmq's EADDRINUSE: "
                "'ZMQError: Address already in use (addr='tcp://H:P')' (vLLM's data-parallel and handshake sockets, "
                "KV connectors' such as Mooncake's and P2pNccl's)",
    "mmap_enomem": "PyTorch c10 MapAllocator.cpp (safetensors' safe_open maps each shard): 'unable to mmap N bytes "
                   "from file <F>: Cannot allocate memory (12)' (ENOMEM: host memory, a container's limit or "
                   "vm.overcommit_memory refused the mapping)",
    "transformers_fp8": "transformers 4.45-4.5x quantizers (quantizer_fbgemm_fp8.py, quantizer_finegrained_fp8.py "
                        "validate_environment): 'ValueError: FP8 quantized models is only supported on GPUs with "
                        "compute capability >= 9.0 (e.g H100)' (8.9 in later releases, which warn and dequantize)",
    "ray_serve_unscheduled": "Ray Serve 2.x serve/_private/deployment_state.py: 'Deployment X ... N replicas that "
                             "have taken more than 30s to be scheduled ... Resources required for each replica: "
                             "[...GPU...], total resources available: {...}' with no GPU among them",
    "compressed_tensors_scheme": "vLLM 0.5-0.33 compressed_tensors.py _get_scheme_from_parts: "
                                 "'NotImplementedError: No compressed-tensors compatible scheme was found.'",
    "minicpmv_version": "vLLM 0.5-0.10 model_executor/models/minicpmv.py MiniCPMV.__new__: 'Currently, MiniCPMV only "
                        "supports versions 2.0, 2.5, and 2.6'",
    "not_multimodal": "vLLM 0.6-0.10 config.py ModelConfig._init_multimodal_config: '`limit_mm_per_prompt` is only "
                      "supported for multimodal models.' (and the same for mm_processor_kwargs)",
    "weights_missing": "vLLM 0.6.4-0.33 model_loader DefaultModelLoader.load_weights: 'ValueError: Following weights "
                       "were not initialized from checkpoint: {...}'",
    "mtp_weights_missing": "vLLM 0.20-0.34 model_executor/models/deepseek_mtp.py DeepSeekMTP.load_weights: 'MTP "
                           "speculative decoding layer N weights missing from checkpoint. The checkpoint may have been "
                           "quantized without including the MTP layers.' (bailing_moe_mtp.py alike); step3p5_mtp.py "
                           "(0.16-0.34): 'Some parameters like X are not in the checkpoint and will falsely use random "
                           "initialization'",
    "no_weights": "vLLM 0.2-0.33 weight_utils.py prepare_hf_model_weights, later model_loader/default_loader.py "
                  "_prepare_weights: 'RuntimeError: Cannot find any model weights with `X`' (no *.safetensors, *.bin "
                  "or *.pt the load format accepts)",
    "modelscope_missing": "ModelScope's hub under VLLM_USE_MODELSCOPE=True: 'NotExistError: The model: X has no "
                          "revision: Y !' (modelscope.hub, modelscope_hub from 1.38), 'The request model: X does not "
                          "exist!' (1.15-1.37), 'Repo X not exists on either ...' (1.24-1.37), requests' '404 Client "
                          "Error' for modelscope.cn/api/v1/models/ (to 1.14)",
    "streamer_access": "Run:ai Model Streamer (runai-model-streamer, libstreamer.py): 'Could not send runai_request to "
                       "libstreamer due to: b'File access error'', 'Could not receive runai_response from ...'",
    "weights_unreadable": "safetensors (Rust) SafeTensorError: 'Error while deserializing header: HeaderTooLarge' "
                          "(the file is not safetensors: a git-lfs pointer, an HTML page), 'MetadataIncompleteBuffer' "
                          "(the file is shorter than its header says); PyTorch's 'PytorchStreamReader failed reading "
                          "zip archive' for a truncated .bin",
    "transformers_fallback": "vLLM 0.8-0.33 resolve_transformers_arch (model_loader/utils.py; the registry later): "
                             "'X has no vLLM implementation and the Transformers implementation is not compatible "
                             "with vLLM.', with --model-impl transformers 'The Transformers implementation of X is "
                             "not compatible with vLLM.', and 'Cannot find model module. 'X' is not a registered model "
                             "in the Transformers library ...' (0.9+)",
    "transformers_backend_mm": "vLLM 0.10-0.34's Transformers backend (model_executor/models/transformers.py; "
                               "transformers/multimodal.py by 0.11.2) get_max_image_tokens and its processor: "
                               "'processor._get_num_multimodal_tokens(...)', which a processor without it fails "
                               "with \"AttributeError: 'XProcessor' object has no attribute "
                               "'_get_num_multimodal_tokens'\"",
    "gguf_architecture": "transformers modeling_gguf_pytorch_utils.py load_gguf_checkpoint (vLLM's GGUF loader reads "
                         "the config through it): 'GGUF model with architecture X is not supported yet.' (4.4x), "
                         "'Architecture X not supported' (earlier)",
    "pp_unsupported": "vLLM 0.6-0.33 ModelConfig.verify_with_parallel_config (config.py; config/model.py at 0.33): "
                      "'Pipeline parallelism is not supported for this model. Supported models implement the "
                      "`SupportsPP` interface.' (also raised for a speculative draft or MTP head)",
    "lora_rank": "vLLM LoRAConfig (config.py; config/lora.py in later releases): 'max_lora_rank (N) must be one of "
                 "(8, 16, ...)'",
    "quant_tp_shape": "vLLM's quantized linear layers (gptq.py, awq.py, aqlm.py create_weights): 'The input size is "
                      "not aligned with the quantized weight shape. This can be caused by too large tensor parallel "
                      "size.'; Marlin's shape check (marlin_utils.py verify_marlin_supports_shape): 'Weight "
                      "output_size_per_partition = N is not divisible by min_thread_n = 64.'",
    "quant_platform": "vLLM 0.6-0.33 platforms/interface.py verify_quantization (config.py's ROCm list before): "
                      "'X quantization is currently not supported in ROCm|XPU|npu|...'",
    "hub_refused": "huggingface_hub 0.x utils/_http.py hf_raise_for_status (requests): '429 Client Error: Too Many "
                   "Requests for url: https://huggingface.co/...' and the Hub's 5xx answers; urllib3 'Read timed "
                   "out' for the Hub's host; huggingface_hub 1.x's httpx wording (\"Server error '503 Service "
                   "Unavailable' for url 'https://huggingface.co/...'\", httpx _models.py raise_for_status)",
    "argparse_inline": "argparse's 'PROG: error: unrecognized arguments: ...' quoted inside a sentence (vllm serve's "
                       "parser, exit status 2)",
    "hub_validation": "huggingface_hub utils/_validators.py validate_repo_id: 'HFValidationError: Repo id must be in "
                      "the form ...' / 'Repo id must use alphanumeric chars ...' (a model name that is neither a "
                      "folder nor a valid Hub id)",
    "startup_timeout": "vLLM V1 v1/engine/utils.py wait_for_engine_startup / core_client.py: 'Timed out waiting "
                       "for engine core processes to start' (0.8-0.10: 'for engines to send initial message')",
    "omni_stage_timeout": "vllm-omni's engine/async_omni_engine.py (2026, as its log names it): 'TimeoutError: Timed "
                          "out waiting for READY from StageEngineCoreProc after Ns. This typically indicates model "
                          "loading or initialization is taking too long.' (--stage-init-timeout, 300 s by default); "
                          "vllm-omni 0.30 engine/omni_engine_base.py: 'TimeoutError: Orchestrator did not become "
                          "ready within Ns' (--init-timeout)",
    "local_world_size": "vLLM 0.11-0.33 v1/worker/gpu_worker.py init_device: 'AssertionError: local_world_size (N) "
                        "must be less than or equal to the number of visible devices (M).'",
    "mooncake_master": "Mooncake's store client, mooncake-store/src/real_client.cpp: 'Failed to mount segment: "
                       "RPC_FAIL' (client_service.cpp: 'mount_segment_to_master_failed ... error=RPC_FAIL'), after "
                       "master_client.cpp's 'RPC call failed: MSG' / 'RPC call timed out: MSG'",
    "ray_local_node": "Ray 2.x ray/_private/services.py get_node_to_connect_for_driver: 'RuntimeError: No node info "
                      "found matching attributes: 'X' when trying to resolve node to connect to.'",
    "ray_gcs": "Ray's gcs_rpc_client.h: 'Failed to connect to GCS within N seconds. GCS may have been killed.'",
    "flashinfer_mla_kv": "FlashInfer's MLA planner (mla plan()): 'MLA kv_data_type torch.X is not supported. "
                         "Supported dtypes: [...]'",
    "flex_attention": "vLLM 0.9-0.33 v1/attention/backends/flex_attention.py: 'NotImplementedError: FlexAttention "
                      "does not support sliding window yet.' (alibi slopes, logits soft cap, kv sharing, other "
                      "attention types)",
    "harmony_vocab": "openai-harmony (Rust, tiktoken_ext/public_encodings.rs) load_harmony_encoding: 'HarmonyError: "
                     "error downloading or loading vocab file: failed to download or load vocab file' (the "
                     "o200k_base.tiktoken download, or TIKTOKEN_ENCODINGS_BASE's file)",
    "nvshmem_transport": "NVSHMEM host/init/init.cu nvshmemi_common_init: 'non-zero status: N nvshmem detect topo "
                         "failed' after host/transport/transport.cpp 'Unable to initialize any transports'",
    "repo_file_missing": "transformers utils/hub.py cached_file: 'OSError: X does not appear to have a file named Y. "
                         "Checkout 'https://huggingface.co/X/tree/main' for available files.'",
    "bind_address": "EADDRNOTAVAIL on a bind: pyzmq's 'zmq.error.ZMQError: Cannot assign requested address (addr=...)' "
                    "(vLLM's data-parallel and engine sockets), torch c10d's 'The server socket has failed to bind to "
                    "X (errno: 99 - Cannot assign requested address)', uvicorn's '[Errno 99] error while attempting to "
                    "bind on address (...): cannot assign requested address'",
    "nccl_duplicate_gpu": "NCCL init.cc: 'NCCL WARN Duplicate GPU detected : rank N and rank M both on CUDA device X'",
    "lora_modules": "vLLM 0.4-0.34 lora/models.py (lora_model.py from 0.13): 'While loading X, expected target modules "
                    "in [...] (a set from 0.13) but received [...]. Please verify that the loaded LoRA module is "
                    "correct'",
    "config_not_json": "transformers configuration_utils.py (and processing_utils.py) _dict_from_json_file: "
                       "\"OSError: It looks like the config file at 'X' is not a valid JSON file.\"",
    "vocab_unreadable": "transformers tokenization_utils_base.py _from_pretrained: 'OSError: Unable to load vocabulary "
                        "from file. Please check that the provided vocabulary is accessible and not corrupted.' (the "
                        "tokenizer class's own OSError)",
    **SETTINGS_SOURCES,
    **DEVICE_SOURCES,
    **VERSION_SOURCES,
    "k8s_unschedulable": "Kubernetes' scheduler (pkg/scheduler framework FitError, noderesources fit.go), the "
                         "FailedScheduling event: '0/N nodes are available: M Insufficient nvidia.com/gpu. ...'",
    "startup_probe": "the kubelet's event when a startup probe used its failureThreshold (Kubernetes 1.16+, "
                     "pkg/kubelet/kuberuntime computePodActions): 'Container NAME failed startup probe, will be "
                     "restarted'",
}
