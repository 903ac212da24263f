"""The advice for the readings about the start's own settings: LoRA on a model class without it, a speculative
decoding set-up this vLLM refuses, a RoPE scaling type, a folder the start cannot write. Part of
details.DETAIL_ADVICE."""

from __future__ import annotations

from vllm_guard.diagnose.knowledge import Advice

LORA_MODEL = Advice(
    "LoRA is enabled, and the model's class in this vLLM has no LoRA support (it was added model by model).",
    ("serve without --enable-lora: merge the adapter into the weights, or serve the base model alone",
     "a vLLM release that lists LoRA for the architecture (docs: supported models, the LoRA column)"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

SPEC_CONFIG = Advice(
    "The speculative-decoding settings are ones this vLLM refuses: a separate draft model where its engine had none "
    "(V1 before 0.14), or a draft model's settings that do not fit it (num_speculative_tokens not given, or more "
    "than a speculator predicts).",
    ("another method this vLLM has (ngram, EAGLE, Medusa, MTP), or a release that runs draft models",
     "num_speculative_tokens given with the draft model, and no larger than it predicts (an MLPSpeculator's "
     "n_predict)"),
    ("retrying unchanged",),
)

SPEC_CUDAGRAPH = Advice(
    "With speculative decoding, vLLM captures full decode CUDA graphs only for batch sizes that are multiples of "
    "num_speculative_tokens + 1, and with sequence parallelism also of the tensor-parallel size; no capture size "
    "fits both, or none rounds up to such a multiple under the largest capture size.",
    ("a num_speculative_tokens whose + 1 divides the tensor-parallel size or is divided by it (1, 3 or 7 at TP 4), "
     "or sequence parallelism off in --compilation-config",
     "a --max-cudagraph-capture-size (or cudagraph_capture_sizes) reaching a multiple of num_speculative_tokens + 1",
     "a newer vLLM: the shared-multiple check was dropped after 0.30"),
    ("--enforce-eager to get past it: it drops every CUDA graph, the speed speculative decoding was for",
     "retrying unchanged"),
)

ROPE_TYPE = Advice(
    "The RoPE scaling type is one no vLLM knows: a --rope-scaling (or --hf-overrides) value with a typo, or a "
    "config.json written for another program.",
    ("a type vLLM knows: linear, dynamic, yarn, llama3, longrope, ntk (each release's rotary_embedding lists them)",
     "drop the override and let the model's own config.json decide"),
    ("retrying unchanged",),
)

ROPE_NEWER = Advice(
    "The model's config.json names a RoPE scaling type a later vLLM knows and this one does not (Llama 3.1's "
    "llama3 before vLLM 0.5.3, YaRN or LongRoPE before theirs).",
    ("a vLLM release that supports the model",),
    ("--max-model-len: the type is read whatever the length asked", "retrying unchanged"),
)

PERMISSION = Advice(
    "The start cannot write a folder it needs (its cache under $HOME, the Hugging Face cache, torch.compile's cache), "
    "or the container's user cannot run vllm at all: most often an image run as an arbitrary user (OpenShift) whose "
    "HOME is / or whose files belong to root.",
    ("HOME, HF_HOME and VLLM_CACHE_ROOT set to a folder the user can write (an emptyDir or a volume)",
     "an image built for arbitrary users (group 0 with group-write on its folders and its virtual environment)"),
    ("changing vLLM's settings", "retrying unchanged"),
)

CUSTOM_ALLREDUCE = Advice(
    "vLLM's custom all-reduce kernels failed a CUDA call between the GPUs: they share buffers over CUDA IPC, which "
    "some set-ups refuse (GPUs without P2P between them, a container without IPC, a driver or virtualisation that "
    "blocks it). NCCL's own all-reduce does not need it.",
    ("--disable-custom-all-reduce", "`nvidia-smi topo -m` and the guard's P2P probe (`vllm-guard check`) show "
     "whether the GPUs reach each other"),
    ("changing vLLM's memory settings",),
)

RAY_NODE_IP = Advice(
    "vLLM's Ray executor counts one IP address per node (the driver's and the workers') and got another count: fewer "
    "when nodes report one and the same address (VLLM_HOST_IP set alike on every node by a shared .env file or "
    "image, containers sharing one address), more when vLLM on a node took another address than Ray registered "
    "the node under (several network interfaces).",
    ("on each node, VLLM_HOST_IP = the address Ray registered that node under (`ray list nodes` shows it; "
     "docs/ray.md), or unset where one value was set for all", "`ray start --node-ip-address` with that same address",
     "on every node, containers on the host's network (`--network host`)"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

SECOND_ENGINE = Advice(
    "vLLM makes its process groups once per process, and this process already has them: a second engine in the same "
    "process (a notebook cell run again, a framework or script that builds a second LLM).",
    ("one engine per process: restart the process (the notebook's kernel) before building another",
     "to replace an engine in one process: delete the first and call "
     "vllm.distributed.parallel_state.destroy_model_parallel() before the next"),
    ("changing vLLM's memory settings", "retrying in the same process"),
)

CLI_FLAGS = Advice(
    "vllm serve's own check of its flags refused a combination: a flag that needs another (its message names "
    "both), two that this release does not take together, or a value out of range.",
    ("add the flag the message names as required, or drop the one it refuses (later releases allow some "
     "combinations, such as tool choice with reasoning)",), ("changing vLLM's memory settings", "retrying unchanged"),
)

LORA_VOCAB = Advice(
    "vLLM's LoRA kernels for the logits take a vocabulary up to a bound this release sets (its message names it), "
    "and this model's vocabulary is larger.",
    ("merge the adapter into the weights and serve without --enable-lora",
     "a newer vLLM: the bound was 128,512 tokens in 0.4, 257,024 from 0.5 and 258,048 from 0.20"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

BACKEND_NAME = Advice(
    "VLLM_ATTENTION_BACKEND names no attention backend this vLLM has (an empty value counts: a variable set to "
    "nothing by a script or an image); the message lists the names it takes.",
    ("unset VLLM_ATTENTION_BACKEND to let vLLM choose, or set it to one of the names the message lists",),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

RAY_PLATFORM = Advice(
    "The start runs its workers through Ray (--distributed-executor-backend ray, --data-parallel-backend ray, or a "
    "start inside a Ray placement group), and this platform has no device Ray can place workers on (vLLM's CPU "
    "backend, Apple's Metal through vllm-metal).",
    ("drop --distributed-executor-backend ray, or set it to mp (one machine's processes); likewise "
     "--data-parallel-backend mp", "start vLLM outside a Ray job on this platform"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

MAMBA_ALIGN = Advice(
    "Prefix caching on a hybrid model with Mamba layers caches their state in 'align' mode, and that mode needs "
    "chunked prefill, which is off for this start (turned off, or off by default for a pooling model).",
    ("enable chunked prefill (--enable-chunked-prefill)", "or turn off prefix caching (--no-enable-prefix-caching)"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

BATCH_INVARIANT = Advice(
    "VLLM_BATCH_INVARIANT=1 asks for batch-invariant kernels, and this vLLM has none for this model's attention or "
    "for the attention backend it would use (the message names which).",
    ("unset VLLM_BATCH_INVARIANT", "where the message lists backends: --attention-backend one of them"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

WINDOW_LAYERS = Advice(
    "The model's config turns sliding-window attention on (use_sliding_window) for only some layers "
    "(max_window_layers), and this vLLM's class for it (Qwen2's, which Qwen2.5 uses) runs a window on all layers or "
    "none. vLLM 0.4-0.8 refuse any such config that sets max_window_layers, even one equal to the number of layers.",
    ("in the model's config.json (a local copy): use_sliding_window false, as Qwen2.5's published configs have it "
     "(or, from vLLM 0.9, max_window_layers equal to num_hidden_layers); from 0.10 only the file works, since "
     "transformers derives the layers' attention types when it reads it",
     "vLLM 0.4-0.9: --disable-sliding-window (full attention on every layer; vLLM caps max-model-len to the window "
     "then), or from 0.6 --hf-overrides '{\"use_sliding_window\": false}'"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

V1_UNSUPPORTED = Advice(
    "VLLM_USE_V1=1 asks for the V1 engine, and this vLLM (0.8-0.10) does not run V1 with the feature or device its "
    "message names; with the variable unset it would have fallen back to V0 by itself and said so in a warning.",
    ("unset VLLM_USE_V1, or VLLM_USE_V1=0, where this vLLM still has V0", "or without the feature named",
     "or a newer vLLM whose V1 engine runs it"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

ENGINE_CHOICE = Advice(
    "The engine class that was built (most often by a framework calling AsyncLLM.from_vllm_config or LLMEngine "
    "directly) is not the one VLLM_USE_V1 names in that process. vLLM 0.8-0.10 sets VLLM_USE_V1=0 itself when the "
    "variable is unset and a setting V1 lacks falls back to V0 (its warning says '... is not supported by the V1 "
    "Engine. Falling back to V0.'); or the variable differs in the process that builds the engine (a Ray actor).",
    ("set VLLM_USE_V1 explicitly in the process that builds the engine (for a Ray actor, its runtime_env's "
     "env_vars), as vLLM's message advises", "drop the setting the fallback warning names, so that V1 runs it",
     "or a framework release made for this vLLM"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

ENCODER_ATTENTION = Advice(
    "The model has encoder attention (an encoder-decoder's cross-attention, such as Llama 3.2 Vision's or "
    "Whisper's, or an encoder-only model's), and the attention backend vLLM chose, the one the message names, does "
    "not implement it. Which backends do depends on the platform and the vLLM release.",
    ("an attention backend of this vLLM that implements encoder attention, where the platform has one "
     "(--attention-backend from vLLM 0.13, VLLM_ATTENTION_BACKEND before)",
     "the platform's or vLLM's release notes for this model: a release or plugin that supports it"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

SOFTCAP_XFORMERS = Advice(
    "Gemma-2 soft-caps its attention logits, which vLLM 0.5.5's XFormers backend cannot do; vLLM falls back to "
    "XFormers where FlashAttention cannot run: a GPU before Ampere (V100, T4), a dtype other than float16 or "
    "bfloat16, an fp8 KV cache, a block size not a multiple of 16, or a build without vllm_flash_attn.",
    ("on an Ampere or newer GPU: --dtype float16 or bfloat16 and the default KV-cache dtype, so that FlashAttention "
     "(which soft-caps) is chosen", "VLLM_ATTENTION_BACKEND=FLASHINFER where FlashInfer is installed and runs on "
     "this GPU"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

ENV_CHOICE = Advice(
    "An environment variable of vLLM's holds a value this vLLM does not take (an empty value counts); the message "
    "names the variable and lists the values it takes.",
    ("unset the variable, or set it to one of the listed values",), ("retrying unchanged",),
)

TRANSFORMERS_NO_TP = Advice(
    "vLLM has no class of its own for this architecture and runs it through its Transformers backend, and "
    "transformers' class for it declares no tensor-parallel plan: the model cannot be split across GPUs this way.",
    ("--tensor-parallel-size 1 where the model fits one GPU (with --pipeline-parallel-size to spread its layers)",
     "a vLLM release with a class of its own for the architecture (the supported-models list)"),
    ("changing memory settings", "retrying unchanged"),
)

POOLING_CHECKPOINT = Advice(
    "The checkpoint holds a base model's weights (embed_tokens, layers, norm, without a causal LM's \"model.\" prefix "
    "or head): an embedding or reranking model, which vLLM started as a text generator because its architecture is a "
    "causal LM's.",
    ("start it as a pooling model: --runner pooling (vLLM 0.10+, with --convert embed where needed), or --task embed "
     "(0.7-0.11)", "the model card's own vLLM command"),
    ("downloading the model again", "changing memory settings"),
)

MAMBA_BLOCKS = Advice(
    "The model is a hybrid (Mamba, gated delta net or KDA layers beside attention): each decode sequence holds one "
    "state block, and the memory left after the weights holds fewer blocks than --max-num-seqs, which vLLM's full "
    "CUDA graphs are captured for.",
    ("--max-num-seqs at most the number of blocks vLLM gives", "a higher --gpu-memory-utilization where the GPU has "
     "room (more blocks)"),
    ("a shorter --max-model-len alone", "retrying unchanged"),
)

MAMBA_GROUPS = Advice(
    "Mamba2's mixer splits its groups across tensor-parallel ranks, and this tensor-parallel size does not divide the "
    "model's number of groups (ssm n_groups): only a model with a single group runs at any size.",
    ("--tensor-parallel-size dividing the config's n_groups, with --pipeline-parallel-size (or data parallelism) for "
     "the other GPUs", "a vLLM release that replicates the groups across ranks, where there is one"),
    ("changing memory settings", "retrying unchanged"),
)

LMCACHE_MAMBA = Advice(
    "LMCache keeps a hybrid model's Mamba state only in vLLM's 'align' mode (reusable state snapshots), and this start "
    "runs the Mamba groups another way: 'none' without prefix caching, or 'all', which vLLM 0.16-0.30 choose with "
    "prefix caching for models that support Mamba prefix caching (Nemotron-H, Jamba, Bamba, Granite 4 and others).",
    ("--enable-prefix-caching with --mamba-cache-mode align (vLLM 0.16+; 0.33 has no 'all', so prefix caching "
     "alone gives 'align')", "an LMCache release that serves Mamba groups in the mode vLLM runs"),
    ("changing memory settings", "retrying unchanged"),
)

EPLB_UNSUPPORTED = Advice(
    "vllm-ascend's expert-parallel load balancer (EPLB) has no support for this model in this release.",
    ("start without EPLB (drop dynamic_eplb from --additional-config, or --enable-eplb)",
     "a vllm-ascend release whose notes list EPLB for the model"),
    ("changing memory settings", "retrying unchanged"),
)

MRV2_UNSUPPORTED = Advice(
    "vLLM's second model runner (Model Runner V2) does not run a feature this start asks for; vLLM names it.",
    ("VLLM_USE_V2_MODEL_RUNNER=0 in the profile's environment, which runs the first model runner (vLLM 0.20-0.33; "
     "0.34 has no other runner)", "or start without the feature named"),
    ("changing memory settings", "retrying unchanged"),
)

LORA_MOE = Advice(
    "LoRA on a mixture-of-experts model needs the model's class to map its experts (get_expert_mapping), and this "
    "vLLM's class for the model has none.",
    ("start without --enable-lora, or merge the adapter into the weights", "a vLLM release whose class for the "
     "model supports LoRA on its experts"),
    ("changing memory settings", "retrying unchanged"),
)

KV_PAGE_SIZE = Advice(
    "The model's layers keep KV cache pages of sizes this vLLM cannot make one: it grows the smaller pages' block "
    "size to the largest page, which works only when that page is a multiple of each smaller one. A KV cache dtype or "
    "quantization some layers take and others do not, a draft model's layers, a sparse indexer's cache, or a hybrid "
    "model's state layers make the sizes differ.",
    ("a newer vLLM (0.30 and later also pad attention layers' pages, though not MLA's)",
     "--kv-cache-dtype auto, where a KV cache dtype is set (every layer's page then has the same element size)",
     "start without the speculative draft model, where one is set"),
    ("changing memory settings", "retrying unchanged"),
)

HYBRID_KV_DISABLED = Advice(
    "The model's layers keep KV caches of different kinds (Mamba or linear attention beside attention, sliding "
    "windows beside full attention) that only vLLM's hybrid KV cache manager keeps apart, and this start turned "
    "that manager off: a KV connector does so unless it supports hybrid models (--kv-transfer-config: LMCache, "
    "NIXL and others), as do --disable-hybrid-kv-cache-manager and platforms without it.",
    ("start without --kv-transfer-config, or with a connector release that supports hybrid models",
     "drop --disable-hybrid-kv-cache-manager", "a vLLM release whose connector supports this model"),
    ("changing memory settings", "retrying unchanged"),
)

SPEC_VOCAB = Advice(
    "Speculative decoding needs the draft model to share the target's vocabulary, and this draft's vocabulary size "
    "differs (another family, or a tokenizer with added tokens on one side).",
    ("a draft from the target's own family and tokenizer (the same vocab_size in both configs)",
     "start without --speculative-model"), ("changing memory settings", "retrying unchanged"),
)

KV_PAGE_PADDING = Advice(
    "The model's layers keep KV cache pages of sizes vLLM cannot make one, and the layer it names is of a kind whose "
    "page it cannot pad (MLA attention, a sparse indexer's cache): a draft model's or a feature's layers beside the "
    "model's own, or a KV cache dtype some layers take and others do not, make the sizes differ. Newer vLLM releases "
    "pad only non-MLA attention pages.",
    ("start without the speculative draft model or the feature that adds the layers of another kind, where one is set",
     "report the combination to vLLM with the layer names the message gives"),
    ("changing memory settings", "retrying unchanged"),
)

CUTLASS_CAPABILITY = Advice(
    "This vLLM build compiled no CUTLASS kernels for the checkpoint's quantized MoE (or FP8) layers, and this GPU's "
    "start asked for one: the message prints the GPU's compute capability and the architectures this release's "
    "source can build, not those the build holds.",
    ("a vLLM release or build compiled for this GPU's architecture (an official wheel for it, or a source build with "
     "it in TORCH_CUDA_ARCH_LIST)", "an unquantized or otherwise quantized checkpoint"),
    ("changing memory settings", "retrying unchanged"),
)

BNB_TP = Advice(
    "A checkpoint saved already quantized by bitsandbytes keeps quantization states per weight that tensor "
    "parallelism cannot split: vLLM refuses it under --tensor-parallel-size above 1.",
    ("--pipeline-parallel-size for the GPUs instead (vLLM's own advice)", "a checkpoint quantized otherwise (AWQ, "
     "GPTQ, FP8), or the unquantized one with --quantization bitsandbytes"),
    ("retrying unchanged",),
)

ENGINE_KWARG = Advice(
    "The program that starts vLLM passed it an option in its command-line spelling (with hyphens) as a keyword: "
    "vLLM's engine arguments are spelled with underscores, and some of the server's options (tool-call parsers, chat "
    "templates) are not engine arguments at all.",
    ("the option with underscores where the program passes engine arguments (max_model_len; reasoning_parser from "
     "0.11)", "the program's own setting for the server's options, or vllm serve's command line"),
    ("retrying unchanged",),
)

USAGE_CUT = Advice(
    "vLLM's command-line parser printed its usage text, which it prints before 'error: ...' and exit status 2: the "
    "paste stops inside it, before the error line that names the option it refused.",
    ("the lines after the usage text: 'error: unrecognized arguments' or 'invalid choice' names the option",
     "vllm serve --help for the options this release takes (a model path is positional for vllm serve, --model for "
     "the api_server module)"),
    ("retrying unchanged",),
)

SETTINGS_ADVICE: dict[str, Advice] = {
    "cutlass_capability": CUTLASS_CAPABILITY, "bnb_tp": BNB_TP, "engine_kwarg": ENGINE_KWARG, "usage_cut": USAGE_CUT,
    "kv_page_size": KV_PAGE_SIZE, "kv_page_padding": KV_PAGE_PADDING, "mrv2_unsupported": MRV2_UNSUPPORTED,
    "lora_moe": LORA_MOE, "eplb_unsupported": EPLB_UNSUPPORTED, "mamba_blocks": MAMBA_BLOCKS,
    "mamba_groups": MAMBA_GROUPS, "lmcache_mamba": LMCACHE_MAMBA, "pooling_checkpoint": POOLING_CHECKPOINT,
    "transformers_no_tp": TRANSFORMERS_NO_TP, "softcap_xformers": SOFTCAP_XFORMERS, "env_choice": ENV_CHOICE,
    "batch_invariant": BATCH_INVARIANT, "encoder_attention": ENCODER_ATTENTION, "engine_choice": ENGINE_CHOICE,
    "v1_unsupported": V1_UNSUPPORTED, "window_layers": WINDOW_LAYERS, "hybrid_kv_disabled": HYBRID_KV_DISABLED,
    "spec_vocab": SPEC_VOCAB, "lora_vocab": LORA_VOCAB, "backend_name": BACKEND_NAME, "cli_flags": CLI_FLAGS,
    "second_engine": SECOND_ENGINE, "ray_node_ip": RAY_NODE_IP, "custom_allreduce": CUSTOM_ALLREDUCE,
    "lora_model": LORA_MODEL, "spec_config": SPEC_CONFIG, "spec_cudagraph": SPEC_CUDAGRAPH, "rope_type": ROPE_TYPE,
    "rope_newer": ROPE_NEWER, "permission": PERMISSION, "ray_platform": RAY_PLATFORM, "mamba_align": MAMBA_ALIGN,
}
