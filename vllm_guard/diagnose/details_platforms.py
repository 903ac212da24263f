"""The advice for settings readings that belong to one platform or its plugin: Ascend's HCCL port and graph modes
(vllm-ascend), Gaudi's collectives, ROCm's AITER kernels and device variables, an activation only some platforms
run, AWS Neuron cores another process holds. Part of details.DETAIL_ADVICE."""

from __future__ import annotations

from vllm_guard.diagnose.knowledge import Advice

HCCL_PORT = Advice(
    "HCCL (Ascend's collectives) could not listen on its port: another process on the node holds it, most often "
    "another vLLM instance started with the same base port (HCCL_IF_BASE_PORT, 60000 by default) or the same KV "
    "connector port.",
    ("a different HCCL_IF_BASE_PORT (and KV connector port) for each instance on the node",
     "`ss -ltnp` to see who holds the port"),
    ("retrying while the other instance runs",),
)

AITER_MLA_HEADS = Advice(
    "ROCm's AITER MLA attention kernel takes 16 or 128 attention heads per GPU, and the tensor-parallel size leaves "
    "another count (DeepSeek's 128 heads over 4 GPUs: 32 each).",
    ("a tensor-parallel size that leaves 16 or 128 heads per GPU (for 128 heads: 1 or 8), with data or pipeline "
     "parallelism for the other GPUs", "VLLM_ROCM_USE_AITER_MLA=0: another MLA backend"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

AITER_MOE = Advice(
    "ROCm's AITER kernels, which run this model's MoE layers, have no kernel for its combination of MXFP4 weights "
    "with this activation, weight layout or expert parallelism, and refused it as the model first ran.",
    ("VLLM_ROCM_USE_AITER_MOE=0: vLLM's own MoE kernels, AITER kept for the rest", "--moe-backend triton (vLLM "
     "0.20 and later) for an MXFP4 model", "without --enable-expert-parallel where the message names expert "
     "parallelism", "an AITER release with a kernel for the combination"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

NEURON_BUSY = Advice(
    "Another process holds the NeuronCores this start asked for: AWS Neuron's runtime reserves a core whole for one "
    "process until it exits (a previous vLLM or its container, a notebook's kernel, a test run beside it).",
    ("`neuron-ls` or `neuron-top`: the processes holding each core; stop the one that holds them, or wait for it",
     "NEURON_RT_VISIBLE_CORES naming free cores, one vLLM per set of cores"),
    ("changing vLLM's memory settings", "retrying at once"),
)

MOE_ACT_PLATFORM = Advice(
    "This model's MoE experts are not gated (is_act_and_mul=False, such as Nemotron-H's relu2 experts), and this "
    "vLLM's fused-MoE layer runs such experts only on the platforms its message names.",
    ("a GPU of a platform the message names", "a newer vLLM, whose list of platforms may include this one"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

HPU_LAZY_COLLECTIVES = Advice(
    "On Gaudi in lazy mode vLLM captures HPU graphs while it warms the model up, and with tensor parallelism the "
    "collectives inside them need PT_HPU_ENABLE_LAZY_COLLECTIVES=true. vllm-gaudi sets it when it is unset (a false "
    "set by hand keeps it off), and vLLM 0.6.6-0.9's own HPU path always set it; a fork or a script that starts "
    "without it fails so.",
    ("PT_HPU_ENABLE_LAZY_COLLECTIVES=true in vLLM's environment, every Ray worker's too (Ray's runtime_env)",
     "or --enforce-eager, which captures no HPU graphs (slower decoding)"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

ROCR_VISIBLE_DEVICES = Advice(
    "Ray, which vLLM imports, refuses ROCR_VISIBLE_DEVICES without HIP_VISIBLE_DEVICES: Slurm sets the former on "
    "ROCm clusters (srun --gpus, --gpu-bind).",
    ("export HIP_VISIBLE_DEVICES=$ROCR_VISIBLE_DEVICES and unset ROCR_VISIBLE_DEVICES before vLLM starts (in the job "
     "script, or the container's entry point)",),
    ("changing vLLM's settings", "retrying unchanged"),
)

# vllm-ascend 0.9.0rc1-0.10.2rc1 ascend_config.py check_ascend_config; the key is its additional_config's
ACL_GRAPH = Advice(
    "vllm-ascend's ACL graph mode, which it uses unless eager mode is set, does not run DeepSeek models (its "
    "releases 0.9.0rc1-0.10.x refuse them at start).",
    ("--enforce-eager", "torchair graph mode, which runs DeepSeek models: --additional-config "
     "'{\"torchair_graph_config\": {\"enabled\": true}}' (without --enforce-eager)"),
    ("changing memory settings", "retrying unchanged"),
)

TORCHAIR_GRAPH = Advice(
    "vllm-ascend's torchair graph mode runs only the model types it lists (DeepSeek alone in 0.9.x) and never "
    "together with eager mode; its check refused this combination at start.",
    ("leave torchair_graph_config off for other models (ACL graph mode is the default)",
     "drop --enforce-eager where torchair graph mode is wanted"),
    ("changing memory settings", "retrying unchanged"),
)

NPU_TASK_QUEUE = Advice(
    "torch_npu refuses to capture an NPU graph while TASK_QUEUE_ENABLE=2 (its second-level task queue), and "
    "vllm-ascend captures graphs unless eager mode is set; its message names the fix.",
    ("TASK_QUEUE_ENABLE=1 (or 0) in the environment: the profile's [env] table",
     "--enforce-eager, where graphs are not wanted (no capture, slower decoding)"),
    ("changing memory settings", "retrying unchanged"),
)

SPYRE_WARMUP = Advice(
    "vllm-spyre (0.3.1-0.9.x) compiles the model for the warmup shapes in VLLM_SPYRE_WARMUP_PROMPT_LENS, "
    "VLLM_SPYRE_WARMUP_NEW_TOKENS and VLLM_SPYRE_WARMUP_BATCH_SIZES, and refuses a shape whose prompt length plus "
    "new tokens is longer than --max-model-len.",
    ("warmup prompt lengths plus new tokens no longer than --max-model-len",
     "a higher --max-model-len, up to the model's own maximum"),
    ("changing memory settings", "retrying unchanged"),
)

PLATFORM_ADVICE: dict[str, Advice] = {
    "rocr_visible_devices": ROCR_VISIBLE_DEVICES, "moe_act_platform": MOE_ACT_PLATFORM, "acl_graph": ACL_GRAPH,
    "torchair_graph": TORCHAIR_GRAPH, "hpu_lazy_collectives": HPU_LAZY_COLLECTIVES, "aiter_mla_heads": AITER_MLA_HEADS,
    "hccl_port": HCCL_PORT, "npu_task_queue": NPU_TASK_QUEUE,
    "spyre_warmup": SPYRE_WARMUP, "aiter_moe": AITER_MOE, "neuron_busy": NEURON_BUSY,
}
