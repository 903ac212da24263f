"""What helps for a reading about the model's files (a Diagnosis's detail): the Hub that cannot be reached or refuses,
a missing config.json, weights that are missing, cut or unreadable, a tokenizer file the model lacks. The rules are
rules_files.py and rules_network.py."""

from __future__ import annotations

from vllm_guard.diagnose.knowledge import Advice

NGC_UNREACHABLE = Advice(
    "NVIDIA's NIM, which runs vLLM, could not reach NGC (api.ngc.nvidia.com) to fetch the model's files: no network "
    "from the container, DNS, a firewall or proxy, or TLS inspection. An HTTP refusal (a key without access) would "
    "read as a status instead.",
    ("the container's egress to api.ngc.nvidia.com and NGC's download hosts (`curl -sI https://api.ngc.nvidia.com` "
     "from inside the pod)", "HTTPS_PROXY and NO_PROXY in the container's environment where a proxy is needed",
     "the model's files cached in NIM_CACHE_PATH on a persistent volume, filled where NGC can be reached"),
    ("changing vLLM's memory settings", "retrying before the network is fixed"),
)

HUB_UNREACHABLE = Advice(
    "The Hugging Face Hub could not be reached: offline mode (HF_HUB_OFFLINE=1), no network, a proxy or a firewall. "
    "vLLM resolves a model id on the Hub even when the files are cached (vllm #3719).",
    ("the model's local path instead of its id (`hf download ID --local-dir DIR`, then --model DIR)",
     "HF_HUB_OFFLINE=1 only once the config, tokenizer and weights are all in the cache",
     "HF_ENDPOINT for a mirror, HTTPS_PROXY for a proxy"),
    ("raising timeouts before the Hub answers at all", "changing vLLM's memory settings"),
)

CONFIG_MISSING = Advice(
    "The model repository or folder has no config.json where vLLM looked: a wrong id or path, or the model lives on "
    "another revision or in a subfolder.",
    ("check the id and the files on the Hub", "--revision (and --tokenizer-revision) for a model on another branch",
     "a local folder that holds config.json itself"), ("a token, when the Hub answered 404 rather than 401/403",),
)

HUB_REFUSED = Advice(
    "The Hugging Face Hub answered but refused (429: too many requests), failed (5xx), or answered too slowly (a "
    "read timeout): the network reaches it.",
    ("for 429: HF_TOKEN (authenticated requests have a higher limit), then wait", "for 5xx: start again later",
     "for a read timeout: HF_HUB_ETAG_TIMEOUT / HF_HUB_DOWNLOAD_TIMEOUT of a minute",
     "download once with `hf download` and serve the local folder"), ("changing vLLM's memory settings",),
)

NO_WEIGHTS = Advice(
    "The model folder or repository has no weight file vLLM can load: only the config and tokenizer arrived (a "
    "download stopped, an upload not finished), or the weights are in a format --load-format does not read.",
    ("list the folder: *.safetensors (or *.bin) shards as model.safetensors.index.json names them",
     "download again (`hf download`), or point --load-format at the format the files are in"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

MODELSCOPE_MISSING = Advice(
    "ModelScope does not have that model, revision or file: with VLLM_USE_MODELSCOPE=True vLLM fetches from "
    "modelscope.cn, whose ids are not always the Hugging Face Hub's (many models there have no copy, or another "
    "owner's name) and whose repositories' default branch is master.",
    ("the model's ModelScope id, as modelscope.cn shows it", "VLLM_USE_MODELSCOPE unset, to fetch from the Hugging "
     "Face Hub", "a --revision the ModelScope repository has", "a local folder (`modelscope download`) as the model"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

STREAMER_ACCESS = Advice(
    "The Run:ai Model Streamer could not read one of the model's files ('File access error'): the path or object "
    "does not exist there, or this process may not read it (the object store's credentials, region or endpoint, "
    "or a local file's permissions).",
    ("list the path as vLLM's process would (`aws s3 ls s3://BUCKET/PREFIX/`): the config and every shard",
     "credentials and region in vLLM's environment (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a role; "
     "AWS_REGION; AWS_ENDPOINT_URL for an S3-compatible store)", "for an S3-compatible store (MinIO and the "
     "like): RUNAI_STREAMER_S3_USE_VIRTUAL_ADDRESSING=0, which `aws s3 ls` does not need", "one more start: an "
     "object store under load fails a read now and then"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

WEIGHTS_UNREADABLE = Advice(
    "A weight file is not a whole checkpoint: a download cut short (MetadataIncompleteBuffer, PyTorch's zip "
    "reader), or a git-lfs pointer or HTML page saved in its place (HeaderTooLarge).",
    ("compare the file sizes with the repository's; `git lfs pull` in a git clone", "download the shards again"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

REMOTE_GGUF = Advice(
    "The model was given as a .gguf file inside a Hugging Face repository (REPO/FILE.gguf), which vLLM reads neither "
    "as a repository id nor as a local folder: before 0.13 vLLM loads a GGUF only from a local file.",
    ("download the file (`huggingface-cli download REPO FILE.gguf --local-dir DIR`) and pass the .gguf file's path, "
     "with --tokenizer the original model's repository", "vLLM 0.13 and later: the model as REPO:QUANT_TYPE (for "
     "example unsloth/...-GGUF:Q4_K_M)"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

WEIGHTS_MISSING = Advice(
    "The checkpoint lacks weights its config declares: a shard missing from the download, or an export that left a "
    "tensor out (an lm_head with tie_word_embeddings false).",
    ("the model's safetensors index against the files there", "download again; for a broken export, the model's own "
     "fix or a config that matches its weights"), ("changing memory settings", "retrying unchanged"),
)

MTP_WEIGHTS_MISSING = Advice(
    "The weights missing are a multi-token-prediction (MTP) layer's, which speculative decoding with method mtp loads "
    "as its draft: the checkpoint has no such layer (quantized and pruned exports often leave it out), or the "
    "installed vLLM's loader does not map the names the checkpoint gives it.",
    ("the checkpoint's safetensors index: an MTP layer is model.layers.N with N = num_hidden_layers (or mtp.*)",
     "start without --speculative-config, or use a checkpoint that keeps the MTP layer",
     "where the index has the layer: a newer vLLM, whose loader maps it"),
    ("downloading the same checkpoint again", "changing memory settings"),
)

TOWER_WEIGHTS_MISSING = Advice(
    "The checkpoint has no vision (or audio) tower, while vLLM's class for its architecture builds one: a text-only "
    "export of a multimodal model. vLLM builds a tower while any medium it reads is accepted, and a medium left out "
    "of --limit-mm-per-prompt keeps a limit of 999.",
    ("--language-model-only, or --limit-mm-per-prompt with every medium at 0 (images and videos for most models)",
     "a text-only architecture for the checkpoint (--hf-overrides), where vLLM has one"),
    ("downloading the model again", "changing memory settings"),
)

TOKENIZER_MISSING = Advice(
    "The model's tokenizer class reads a SentencePiece file (tokenizer.model) that its folder or repository does not "
    "have, and there is no tokenizer.json to use instead: transformers handed sentencepiece no file at all.",
    ("list the model's files: tokenizer.json or tokenizer.model must be there beside config.json",
     "--tokenizer naming the repository the checkpoint was made from (a quantized copy often leaves them out)"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

MISTRAL_TOKENIZER = Advice(
    "vLLM loaded the model's tokenizer as a Mistral-format one, and the folder has no Mistral tokenizer file "
    "(tekken.json or tokenizer.model.vN): either the files are incomplete, or the model is not a Mistral-format one "
    "and the Mistral tokenizer was chosen for it.",
    ("--tokenizer-mode hf (or auto) for a model with a Hugging Face tokenizer (tokenizer.json)",
     "for a Mistral model: download it whole, tekken.json included"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

SHARDS_MISSING = Advice(
    "The checkpoint's index (model.safetensors.index.json) names weight shards that the folder does not hold: a "
    "download cut short or a partial copy (config.json and the index arrive first, so the folder looks complete).",
    ("download the model again into the same folder (`hf download ID --local-dir DIR` fetches what is missing)",
     "compare the shards the index names with the folder's files"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

DOWNLOAD_INTEGRITY = Advice(
    "A downloaded weight file failed its checksum: the download was cut, or several processes downloaded into the "
    "same cache at once (with VLLM_USE_MODELSCOPE and tensor parallelism each worker may fetch the model).",
    ("download the model once before starting (`modelscope download` or `hf download`) and pass its local path",
     "delete the partial file from the cache and start again"),
    ("changing vLLM's memory settings",),
)

NO_MODEL_TYPE = Advice(
    "transformers read a config.json without a model_type: the folder is not a whole model (a LoRA adapter, a GGUF "
    "folder, a download cut short), or the process cannot read the model's files (a container user without "
    "permission on a mounted cache reads nothing useful).",
    ("point --model at the base model's folder or Hub id (an adapter goes in --lora-modules)",
     "check that the user vLLM runs as can read the files (podman: --userns=keep-id; Kubernetes: fsGroup)",
     "download the model again if its config.json is short"),
    ("retrying unchanged",),
)

TOKENIZER_OLD = Advice(
    "vLLM 0.1-0.2 could not load the model's tokenizer (it re-raises whatever transformers raised): tokenizer files "
    "missing from a merged or converted checkpoint, or a LLaMA tokenizer that needs sentencepiece and protobuf.",
    ("--tokenizer hf-internal-testing/llama-tokenizer for a LLaMA-based model, as vLLM's message says, or the base "
     "model's tokenizer", "pip install sentencepiece protobuf", "a vLLM release that names the underlying error"),
    ("retrying unchanged",),
)

REPO_FILE_MISSING = Advice(
    "The model's repository (or folder) lacks a file that its config or a loader asks for: a remote-code file the "
    "config's auto_map names (configuration_*.py, modeling_*.py) that the uploader left out, or a tokenizer or "
    "processor file.",
    ("the repository's file list (the URL the message gives) against the file named",
     "the model's own fix (a quantized copy often leaves the original's code files out: copy them from the "
     "original repository into a local folder and serve that), or --revision naming a commit that has them"),
    ("downloading the same revision again", "changing memory settings"),
)

CONFIG_NOT_JSON = Advice(
    "The file transformers read as the model's config is not JSON: a .gguf file given where a vLLM without GGUF "
    "support (before 0.5.5) looks for config.json, or a config.json that is an HTML error page, a git-lfs pointer or "
    "a download cut short.",
    ("the file the message names: `head -c 200 FILE` shows what it holds",
     "for a .gguf: vLLM 0.5.5 or newer, the local path of the .gguf, and --tokenizer naming the original model",
     "for a broken config.json: download the model again"),
    ("changing memory settings", "retrying unchanged"),
)

VOCAB_UNREADABLE = Advice(
    "The tokenizer's class could not read its vocabulary file: the file is missing, cut short or a git-lfs pointer, "
    "or is in a format this class does not read (a tiktoken vocabulary under a class that expects SentencePiece).",
    ("list the model's tokenizer files (tokenizer.json, tokenizer.model, vocab.*, *.tiktoken) and their sizes",
     "download the tokenizer files again, or --tokenizer naming the repository the checkpoint came from",
     "for a tokenizer that loads tiktoken files: pip install tiktoken, and --trust-remote-code where the model "
     "card asks for it"),
    ("changing memory settings", "retrying unchanged"),
)

LORA_MODULES = Advice(
    "The LoRA adapter targets modules that vLLM's LoRA layers do not take for this model (the error lists both): an "
    "adapter trained with another tool's module names, on another model, or on layers vLLM does not apply LoRA to.",
    ("the adapter's adapter_config.json target_modules against the modules the error lists",
     "merge the adapter into the model's weights and serve the merged model", "an adapter trained on those modules"),
    ("changing memory settings", "retrying unchanged"),
)

HARMONY_VOCAB_FILE = Advice(
    "openai-harmony, which vLLM loads for gpt-oss's chat format, could not read the tiktoken vocabulary file it "
    "expects, or read another: with TIKTOKEN_ENCODINGS_BASE set, the o200k_base.tiktoken in that folder (missing, or "
    "not the right file: a hash of e3b0c442... is an empty file); without it, its download cache "
    "(TIKTOKEN_RS_CACHE_DIR, by default tiktoken-rs-cache in the temporary folder), whose write is not atomic when "
    "several vLLM processes fetch it at once.",
    ("put the real o200k_base.tiktoken (openaipublic.blob.core.windows.net/encodings/) in TIKTOKEN_ENCODINGS_BASE's "
     "folder on every node", "delete the cached file and start one replica first, or load the encoding once before "
     "starting several (openai_harmony.load_harmony_encoding)"),
    ("changing vLLM's memory or parallel settings", "retrying while the file stays as it is"),
)

TRANSFORMERS_MODEL_TYPE = Advice(
    "The installed transformers does not know the model type the checkpoint's config.json names, so vLLM cannot read "
    "the config: the model is newer than this transformers, and often than this vLLM, whose releases pin the "
    "transformers they were tested with.",
    ("a vLLM release that lists the model's architecture (vLLM's supported-models page), with the transformers it "
     "installs", "for a model transformers knows but this vLLM's pin predates: the transformers release that adds "
     "it, if this vLLM accepts it", "check config.json's model_type for a typo or an export tool's own name"),
    ("changing vLLM's memory or parallel settings", "--trust-remote-code for a checkpoint without its own code"),
)

MLX_MODEL_TYPE = Advice(
    "mlx-lm (mlx-vlm for a multimodal model), which vLLM's Metal plugin (vllm-metal) builds the model with, has no "
    "module for the model's type: the model is newer than the installed library (their PyPI releases can lag their "
    "main branches by months). The name shown is after the library's own renaming of some types.",
    ("an mlx-lm (or mlx-vlm) release, or a vllm-metal that pins one, that lists the model type",
     "check config.json's model_type for a typo or an export tool's own name"),
    ("changing vLLM's memory or parallel settings", "--trust-remote-code"),
)

TRANSFORMERS_BACKEND_MM = Advice(
    "vLLM has no class of its own for this multimodal model, and its Transformers backend, which stands in for one, "
    "counts an image's tokens through the model's processor (`_get_num_multimodal_tokens`): transformers gives that "
    "method only to the processors of models its vLLM backend runs, and this model's processor (most often its own "
    "code, run with --trust-remote-code) has none.",
    ("a vLLM release with its own class for the model (vLLM's supported-models page; a model maker may name a "
     "nightly)", "the model maker's own serving instructions (a fork or image they publish)",
     "where the processor is transformers' own: a transformers release whose processor for it has the method"),
    ("changing vLLM's memory or parallel settings", "retrying unchanged"),
)

DOWNLOAD_RESUME = Advice(
    "The Hub refused to resume a download from where the cache's partial file ends: that file is as long as the "
    "whole file or longer, left by a cut download or by several processes downloading into one cache at once "
    "(each worker of a multi-GPU start can fetch the model).",
    ("delete the model's partial files (`*.incomplete` under the cache's blobs/ folder) and download once before "
     "starting (`hf download`), then pass the local path",), ("changing vLLM's memory settings", "retrying unchanged"),
)

FILE_ADVICE: dict[str, Advice] = {
    "download_resume": DOWNLOAD_RESUME,
    "transformers_model_type": TRANSFORMERS_MODEL_TYPE,
    "mlx_model_type": MLX_MODEL_TYPE, "transformers_backend_mm": TRANSFORMERS_BACKEND_MM,
    "harmony_vocab_file": HARMONY_VOCAB_FILE,
    "lora_modules": LORA_MODULES,
    "config_not_json": CONFIG_NOT_JSON,
    "repo_file_missing": REPO_FILE_MISSING,
    "vocab_unreadable": VOCAB_UNREADABLE,
    "tokenizer_old": TOKENIZER_OLD,
    "no_model_type": NO_MODEL_TYPE,
    "hub": HUB_UNREACHABLE, "ngc_unreachable": NGC_UNREACHABLE,
    "config_missing": CONFIG_MISSING,
    "hub_refused": HUB_REFUSED,
    "no_weights": NO_WEIGHTS,
    "modelscope_missing": MODELSCOPE_MISSING,
    "streamer_access": STREAMER_ACCESS,
    "weights_unreadable": WEIGHTS_UNREADABLE,
    "weights_missing": WEIGHTS_MISSING,
    "remote_gguf": REMOTE_GGUF,
    "tower_weights_missing": TOWER_WEIGHTS_MISSING,
    "mtp_weights_missing": MTP_WEIGHTS_MISSING,
    "tokenizer_missing": TOKENIZER_MISSING,
    "mistral_tokenizer": MISTRAL_TOKENIZER,
    "shards_missing": SHARDS_MISSING,
    "download_integrity": DOWNLOAD_INTEGRITY,
}
