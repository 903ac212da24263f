"""Make the real-vLLM tier's model: a tiny random-weight Llama, written locally, nothing downloaded.

Run with the real-vLLM environment's Python (it has torch, safetensors, tokenizers):
    python make_tiny_model.py OUT_DIR

The model: hidden size 128, 2 layers, 4 attention heads, 2 KV heads (head size 32), max_position_embeddings
2048, float32 on disk and float16 as the tier serves it (BASE_VLLM in test_real_vllm.py says why not the CPU
build's default bfloat16). Its KV cache costs 2 (K and V) x 2 layers x 2 KV heads
x 32 x 2 bytes = 512 bytes per token, so a KV cache of a few hundred KiB is too small on purpose. The tokenizer
is a byte-level BPE trained on a few sentences here, its vocabulary padded to the config's vocab size, with a
chat template, so /v1/chat/completions works too.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

VOCAB = 512
CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 128,
    "intermediate_size": 256,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 32,
    "max_position_embeddings": 2048,
    "vocab_size": VOCAB,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "hidden_act": "silu",
    "tie_word_embeddings": False,
    "torch_dtype": "float32",
    "bos_token_id": 1,
    "eos_token_id": 2,
    "pad_token_id": 0,
}
CHAT_TEMPLATE = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}</s>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
TEXT = [
    "vllm-guard checks whether a model fits before vLLM loads it.",
    "The KV cache holds the keys and values of every token in flight.",
    "A supervisor stops the whole process group and leaves nothing behind.",
    "Hello, how are you today? I am a tiny random model and I say nothing useful.",
]


def make(out: Path) -> None:
    import torch
    from safetensors.torch import save_file
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    out.mkdir(parents=True, exist_ok=True)
    (out / "config.json").write_text(json.dumps(CONFIG, indent=1))
    (out / "generation_config.json").write_text(json.dumps({"bos_token_id": 1, "eos_token_id": 2}))

    torch.manual_seed(0)
    h, inter, layers = CONFIG["hidden_size"], CONFIG["intermediate_size"], CONFIG["num_hidden_layers"]
    head = CONFIG["head_dim"]
    q, kv = CONFIG["num_attention_heads"] * head, CONFIG["num_key_value_heads"] * head
    shapes = {"model.embed_tokens.weight": (VOCAB, h), "model.norm.weight": (h,), "lm_head.weight": (VOCAB, h)}
    for i in range(layers):
        p = f"model.layers.{i}."
        shapes |= {
            p + "self_attn.q_proj.weight": (q, h), p + "self_attn.k_proj.weight": (kv, h),
            p + "self_attn.v_proj.weight": (kv, h), p + "self_attn.o_proj.weight": (h, q),
            p + "mlp.gate_proj.weight": (inter, h), p + "mlp.up_proj.weight": (inter, h),
            p + "mlp.down_proj.weight": (h, inter),
            p + "input_layernorm.weight": (h,), p + "post_attention_layernorm.weight": (h,),
        }
    tensors = {name: (torch.ones(shape) if len(shape) == 1 else torch.randn(shape) * 0.02)
               for name, shape in shapes.items()}
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})

    specials = ["<pad>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|system|>"]
    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(TEXT * 4, trainer=trainer)
    # Pad the vocabulary to exactly the config's size, so that every id the model can sample decodes.
    n = tok.get_vocab_size()
    if n < VOCAB:
        tok.add_tokens([f"<extra_{i}>" for i in range(VOCAB - n)])
    tok.save(str(out / "tokenizer.json"))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "bos_token": "<s>", "eos_token": "</s>",
        "pad_token": "<pad>", "model_max_length": CONFIG["max_position_embeddings"],
        "chat_template": CHAT_TEMPLATE,
    }, indent=1))
    (out / "special_tokens_map.json").write_text(json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "pad_token": "<pad>"}))


if __name__ == "__main__":
    make(Path(sys.argv[1]))
