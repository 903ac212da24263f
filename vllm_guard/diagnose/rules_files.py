"""The failure rules about the model's files: the Hub's answers (access, a missing config.json), transformers' and
vLLM's words for an id or path that holds no config or no weights, and weight files that are not whole. Read in
their place in rules.RULES."""

from __future__ import annotations

import re

from vllm_guard.diagnose import conditions, conditions_weights
from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.figures import numbers_of
from vllm_guard.diagnose.markers import BEFORE_START, LOADING
from vllm_guard.diagnose.rule import Rule

FILE_RULES: tuple[Rule, ...] = (
    # A .gguf file inside a Hub repository given as the model (REPO/FILE.gguf): neither a repository id nor a local
    # folder. vLLM 0.9-0.11's message says so itself ("Loading GGUF from a remote repo directly is not yet
    # supported"); 0.13+ reads a Hub GGUF as REPO:QUANT_TYPE (transformers_utils/gguf_utils.py is_remote_gguf).
    # Before the Hub's rule below, which reads the same line as a model it cannot reach (blind60/b60-007).
    Rule("usage_error", re.compile(r"Invalid repository ID or local directory specified: '(?![/.~])[\w.-]{1,96}/"
                                   r"[\w.-]{1,96}/[^'\s]{1,300}\.gguf'"), BEFORE_START, detail="remote_gguf",
         source=SOURCES["remote_gguf"]),
    Rule("model_access", re.compile(r"GatedRepoError|Cannot access gated repo|You are trying to access a gated repo"
                                    r"|\b401 Client Error|\b403 Client Error|RepositoryNotFoundError"
                                    r"|Repository Not Found|Invalid repository ID or local directory specified"
                                    r"|is not a local folder and is not a valid model identifier"
                                    r"|Invalid user token|invalid credentials"
                                    # the Hub's own words for a gated repo, which huggingface_hub appends to
                                    # GatedRepoError (errors.py) and a paste may keep alone (blind140/b140-012)
                                    r"|Access to model [\w.-]{1,96}/[\w.-]{1,96} is restricted(?:\.| and you are not "
                                    r"in the authorized list)"
                                    # huggingface_hub 1.x (httpx): "Client error '401 Unauthorized' for url 'https://hf"
                                    r"|Client error '40[13] [\w ]{1,40}' for url 'https?://(?:[\w-]{1,63}\.){0,4}"
                                    r"(?:huggingface\.co|hf\.co|hf-mirror\.com)/"), BEFORE_START,
         source=SOURCES["hub_access"]),
    # Only config.json: vLLM cannot start without it, while it looks up optional files (generation_config.json,
    # params.json, a processor's config) and goes on when the Hub answers 404 for them.
    Rule("model_access", re.compile(r"404 Client Error.{0,300}?/resolve/[^/\s]{1,255}/config\.json\b"
                                    r"|Client error '404 Not Found' for url '[^']{0,300}?/resolve/[^/\s']{1,255}/"
                                    r"config\.json'"
                                    r"|(?:EntryNotFoundError|does not appear to have a file named) .{0,300}?"
                                    r"\bconfig\.json\b|RevisionNotFoundError"), BEFORE_START, detail="config_missing",
         source=SOURCES["hub_config_missing"]),
    # The same for any other file the config or a loader asks the repository for: a remote-code file the config's
    # auto_map names and the uploader left out (blind95/b95-007: configuration_phi3.py), a tokenizer or processor file
    # (transformers utils/hub.py cached_file).
    Rule("model_access", re.compile(r"does not appear to have a file named [\w.-]{1,255}"), BEFORE_START,
         detail="repo_file_missing", source=SOURCES["repo_file_missing"]),
    # transformers' own words when the files are not at that id or path (configuration_utils.py, utils/hub.py,
    # tokenization_utils_base.py, 4.3x-4.5x): the config, any file (an id that is neither a folder nor valid),
    # the tokenizer's files.
    Rule("model_access", re.compile(r"Can't load the configuration of '[^']{0,4096}'"), BEFORE_START,
         detail="config_missing", source=SOURCES["transformers_files"]),
    Rule("model_access", re.compile(r"Incorrect path_or_model_id: '[^']{0,4096}'|Can't load tokenizer for "
                                    r"'[^']{0,4096}'"), BEFORE_START, source=SOURCES["transformers_files"]),
    # sentencepiece's argument check (SentencePieceProcessor.LoadFromFile: "TypeError: not a string") when
    # transformers hands it no file: a SentencePiece tokenizer class (LlamaTokenizer.get_spm_processor) whose
    # tokenizer.model the model's files lack, reached also when the fast tokenizer has no tokenizer.json and is
    # converted from the slow one (transformers 4.x tokenization_utils_base.py; blind21/b21-011)
    Rule("model_access", re.compile(r"(?:^|\] )TypeError: not a string\s*$"), BEFORE_START, detail="tokenizer_missing",
         when=conditions.raised_in_sentencepiece, source=SOURCES["sentencepiece_file"]),
    # transformers' MistralCommonBackend (tokenization_mistral_common.py from_pretrained), which vLLM uses for
    # --tokenizer-mode mistral or when it takes a folder for a Mistral-format one: the folder has neither tekken.json
    # nor a tokenizer.model.vN (blind25/b25-007: Qwen3-Omni from a local folder; vllm #31444 after 0.11.2 -> 0.12)
    Rule("model_access", re.compile(r"No tokenizer file found in directory: \S"), BEFORE_START,
         detail="mistral_tokenizer", source=SOURCES["mistral_tokenizer"]),
    # vLLM 0.6.3-0.9 get_config: neither config.json nor params.json could be seen at the id, which a gated repo
    # without a token, a wrong id and a wrong path all give (file_or_path_exists answers False for each).
    Rule("model_access", re.compile(r"No supported config format found in \S"), BEFORE_START,
         source=SOURCES["no_config_format"]),
    # Its successor (0.8.5-0.33): the same two files looked for, the id or path not named.
    Rule("model_access", re.compile(r"Could not detect config format for no config file found"), BEFORE_START,
         detail="config_missing", source=SOURCES["no_config_format"]),
    # Host memory (or the container's limit, or vm.overcommit) refusing to map a weight shard: PyTorch's
    # MapAllocator "unable to mmap N bytes from file <F>: Cannot allocate memory (12)" under safetensors' safe_open.
    # (a paste may stop before the errno: "Cannot allocate memory (" at its end; blind117/b117-001)
    Rule("host_oom", re.compile(r"unable to mmap (?P<mmap_bytes>\d{1,20}) bytes from file <[^>]{0,4096}>: Cannot "
                                r"allocate memory(?: \(12\)| ?\(?$)"), LOADING, detail="mmap_enomem",
         numbers=lambda m: numbers_of(m, "mmap_bytes"), source=SOURCES["mmap_enomem"]),
    # The same check when every weight it lists is a vision or audio tower's: a text-only checkpoint of a multimodal
    # architecture (blind19/b19-012: Qwen3_5MoeForConditionalGeneration with images and audio at 0 but videos
    # still accepted, so vLLM built the tower, _mark_tower_model, and found none of its weights).
    Rule("usage_error", re.compile(r"Following weights were not initialized from checkpoint: \{"), LOADING,
         detail="tower_weights_missing", when=conditions_weights.only_tower_weights, source=SOURCES["weights_missing"]),
    # The same check when every weight it lists is a multi-token-prediction draft layer's: MTP speculative decoding
    # asked of a checkpoint without that layer (blind89/b89-003: GLM-OCR's mtp_block under --speculative-config).
    Rule("model_access", re.compile(r"Following weights were not initialized from checkpoint: \{"), LOADING,
         detail="mtp_weights_missing", when=conditions_weights.only_mtp_weights, source=SOURCES["weights_missing"]),
    # vLLM's MTP draft classes saying so themselves: deepseek_mtp.py (0.20+; bailing_moe_mtp.py's "Bailing MTP ...")
    # and step3p5_mtp.py, MiniMax-M3's mtp.py ("Some parameters like X ... will falsely use random initialization").
    Rule("model_access", re.compile(r"MTP speculative decoding layer \d{1,4} weights missing from checkpoint|Some "
                                    r"parameters like \S{1,300} are not in the checkpoint and will falsely use random"),
         LOADING, detail="mtp_weights_missing", source=SOURCES["mtp_weights_missing"]),
    # vLLM 0.6.4-0.33 DefaultModelLoader.load_weights (strict): the checkpoint lacks weights the model's config
    # declares (an export without lm_head while tie_word_embeddings is false, a shard missing).
    Rule("model_access", re.compile(r"Following weights were not initialized from checkpoint: \{"), LOADING,
         detail="weights_missing", source=SOURCES["weights_missing"]),
    # transformers reading a file that is not JSON as the model's config (or processor config): a .gguf path given
    # to a vLLM without GGUF (0.5.4: blind92/b92-007), an HTML error page or a cut download saved as config.json.
    Rule("model_access", re.compile(r"It looks like the config file at '[^']{1,4096}' is not a valid JSON file"),
         BEFORE_START, detail="config_not_json", source=SOURCES["config_not_json"]),
    # transformers' tokenizer class raising OSError on its vocabulary file (missing, cut, or in a format the class
    # does not read): blind92/b92-008, DBRX's tiktoken vocabulary.
    Rule("model_access", re.compile(r"Unable to load vocabulary from file\. Please check that the provided vocabulary"),
         BEFORE_START, detail="vocab_unreadable", source=SOURCES["vocab_unreadable"]),
    # The folder or repo has a config but no weights vLLM can load (vLLM 0.2-0.33: weight_utils / default_loader).
    # (the path in backticks; a runner that prints the exception's repr keeps the words: blind30/b30-004)
    # (or in quotes: a paste whose markdown ate the backticks, blind130/b130-010)
    Rule("model_access", re.compile(r"Cannot find any model weights with [`'\"/~.\w]"), LOADING, detail="no_weights",
         source=SOURCES["no_weights"]),
    # ModelScope's hub, where VLLM_USE_MODELSCOPE=True sends vLLM: NotExistError for a model, revision or file it does
    # not have (modelscope/hub/api.py "The model: X has no revision: main !", blind130/b130-004; modelscope_hub's from
    # 1.38), and its API's 404 for a model id, often one of the Hugging Face Hub's that ModelScope does not copy: in
    # requests' wording to 1.14 (blind130/b130-003: gpt2), "The request model: X does not exist!" in 1.15-1.37
    # (hub/errors.py handle_http_response), "Repo X not exists on either <site> or <site>" logged by 1.24-1.37's
    # hub/api.py before its 404 (a newcomer review read the releases' tags)
    Rule("model_access", re.compile(r"modelscope(?:\.hub|_hub)\.errors\.NotExistError"
                                    r"|404 Client Error: Not Found for url: https?://(?:www\.)?modelscope\.cn/api/v1/models/"
                                    r"|The request model: \S{1,300} does not exist!"
                                    r"|Repo \S{1,300} not exists on either https?://\S{0,100}modelscope"),
         BEFORE_START, detail="modelscope_missing", source=SOURCES["modelscope_missing"]),
    # The Run:ai Model Streamer (--load-format runai_streamer) that cannot read one of the model's files: libstreamer's
    # response "File access error" (runai_model_streamer/libstreamer/libstreamer.py raises it as "Could not send
    # runai_request to libstreamer due to: ...", blind130/b130-007: an s3:// path; and from its response side as
    # "Could not receive runai_response from libstreamer due to: ...")
    Rule("model_access", re.compile(r"Could not (?:send runai_request to|receive runai_response from) libstreamer due "
                                    r"to: b?'?File access error"),
         LOADING, detail="streamer_access", source=SOURCES["streamer_access"]),
    # openai-harmony (gpt-oss's chat format) reading a tiktoken vocabulary file that is not the one it expects
    # (src/tiktoken_ext/public_encodings.rs load_tiktoken_vocab, LoadError::InvalidTiktokenVocabFile): TIKTOKEN_
    # ENCODINGS_BASE's file, whose hash it checks ("hash mismatch: computed=e3b0c442...", an empty file;
    # blind116/b116-001), or a download cache file another process was writing ("could not split on ' ' at line N").
    # Only in a start that never got ready: 0.33 loads it at the first request.
    Rule("model_access", re.compile(r"HarmonyError: invalid tiktoken vocab file: "), detail="harmony_vocab_file",
         when=conditions.never_ready, source=SOURCES["harmony_vocab_file"]),
    # ModelScope's hub (VLLM_USE_MODELSCOPE) checking a downloaded file's sha256 (modelscope/hub/file_download.py
    # file_integrity_validation): a cut download, or workers downloading into one cache at once (blind36/b36-006)
    Rule("model_access", re.compile(r"FileIntegrityError: File \S{1,1000} integrity check failed"), LOADING,
         detail="download_integrity", source=SOURCES["download_integrity"]),
    # The Hub refusing a resumed download's byte range (huggingface_hub: "416 Client Error: Requested Range Not
    # Satisfiable for url"): a partial file in the cache as long as the file itself, often from several processes
    # downloading into one cache at once (blind154/b154-016, eight ROCm workers of a 405B model)
    Rule("model_access", re.compile(r"416 Client Error: Requested Range Not Satisfiable"), BEFORE_START,
         detail="download_resume", when=conditions.never_ready, source=SOURCES["download_resume"]),
    # vLLM 0.32 weight_utils.py filter_duplicate_safetensors_files: the checkpoint's model.safetensors.index.json
    # names shards the folder does not hold (a download cut short: config.json and the index arrive first;
    # blind32/b32-001)
    Rule("model_access", re.compile(r"Weight files referenced in index but missing: "), LOADING,
         detail="shards_missing", source=SOURCES["shards_missing"]),
    # A weight file that is not a whole checkpoint: safetensors' header checks (a git-lfs pointer or an HTML page
    # reads as HeaderTooLarge, a truncated download as MetadataIncompleteBuffer), PyTorch's zip reader for .bin.
    Rule("model_access", re.compile(r"SafetensorError: Error while deserializing header: (?P<safetensors_error>"
                                    r"HeaderTooLarge|HeaderTooSmall|MetadataIncompleteBuffer|"
                                    r"InvalidHeaderDeserialization|invalid JSON in header)"
                                    r"|PytorchStreamReader failed reading zip archive"),
         LOADING, detail="weights_unreadable", source=SOURCES["weights_unreadable"]),
    # vLLM 0.1-0.2's get_tokenizer re-raising any tokenizer failure (transformers_utils/tokenizer.py): the model's
    # tokenizer files, or a LLaMA tokenizer that needs protobuf or the fast conversion (blind52/b52-004, b52-005)
    Rule("model_access", re.compile(r"Failed to load the tokenizer\. If you are using a LLaMA-based model, use "
                                    r"'hf-internal-testing/llama-tokenizer'"), BEFORE_START, detail="tokenizer_old",
         source=SOURCES["tokenizer_old"]),
    # transformers' AutoConfig when config.json has no model_type (a model type it does not know is another message):
    # the folder is not a whole model (an adapter, a GGUF folder, a download cut short) or cannot be read (a
    # container user without the files' permissions: blind51/b51-001, Red Hat's own troubleshooting page)
    Rule("model_access", re.compile(r"Unrecognized model in \S{1,512}\. Should have a [`']?model_type[`']? key in "
                                    r"its config\.json"), BEFORE_START, detail="no_model_type",
         source=SOURCES["no_model_type"]),
    # transformers' AutoConfig when config.json names a model_type it does not know (configuration_auto.py, 4.3x-5.x:
    # the KeyError of CONFIG_MAPPING[config_dict["model_type"]] re-raised as a ValueError): the model is newer than
    # the installed transformers. Also the message's later sentence where a paste lost its start.
    Rule("unsupported_architecture", re.compile(r"model type `(?P<model_type>[\w.-]{1,100})` but Transformers does "
                                                r"not recognize|does not recognize this architecture|If this does not "
                                                r"work, and the checkpoint is very new, then there may not be a "
                                                r"release version that supports this model yet"), BEFORE_START,
         detail="transformers_model_type", source=SOURCES["transformers_model_type"]),
    # mlx-lm (or mlx-vlm, for a multimodal model), which vLLM's Metal plugin (vllm-metal model_lifecycle.py) builds
    # models with, importing no module for the config's model type (mlx_lm/utils.py _get_classes, mlx-vlm's
    # get_model_and_args: "Model type laguna not supported."; blind176/b176-008): the model is newer than the
    # installed library. The whole exception line alone (or under vLLM's logging prefix, as EngineCore logs its
    # traceback), in a start never ready: the words are common ones.
    Rule("unsupported_architecture", re.compile(r"(?:^|\] )ValueError: Model type (?P<model_type>[\w.-]{1,100}) not "
                                                r"supported\.$"), BEFORE_START, detail="mlx_model_type",
         when=conditions.never_ready, source=SOURCES["mlx_model_type"]),
    # The same KeyError where the paste stops before transformers re-raises it (blind139/b139-001: 'qwen2_vl' in
    # September 2024; blind8/b8-033: 'gemma3').
    Rule("unsupported_architecture", re.compile(r"^KeyError: '[\w.-]{1,100}'$"), BEFORE_START,
         detail="transformers_model_type", when=conditions.raised_at_config_mapping,
         source=SOURCES["transformers_model_type"]),
)
