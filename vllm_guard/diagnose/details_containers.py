"""The advice for the readings of what the platform around vLLM reports: Kubernetes and the container runtime (the
kubelet's startup probe, the scheduler that places no pod, the runtime that cannot give the container its GPU) and a
TPU's runtime (a TPU another process holds, XLA's compiler out of on-chip memory). Part of details.DETAIL_ADVICE."""

from __future__ import annotations

from vllm_guard.diagnose.knowledge import Advice

STARTUP_PROBE = Advice(
    "The kubelet killed the container: its startup probe failed failureThreshold times in a row, periodSeconds "
    "apart, before vLLM was ready. Loading a large model's weights, profiling and capturing CUDA graphs take "
    "longer than that budget; the kill reaches vLLM as SIGTERM (its log may end in 'KeyboardInterrupt: "
    "terminated').",
    ("a startupProbe budget (failureThreshold x periodSeconds) above the longest start, weights download included",
     "a probe on the port and path the server answers (vLLM's /health on its --port): one that never can fails too",
     "`vllm-guard manifest PROFILE`: probes on the guard's status endpoint, sized from the profile's start budget "
     "(docs/kubernetes.md)", "the container's previous log (`kubectl logs --previous`) for how far the start got"),
    ("changing vLLM's memory settings", "a longer liveness or readiness delay: they wait for the startup probe"),
)

K8S_UNSCHEDULABLE = Advice(
    "Kubernetes' scheduler found no node with the GPUs the pod requests free, so the pod stays Pending and vLLM "
    "never starts: other pods hold them (another vLLM, or the previous pod of a rolling update), or no node has "
    "that many.",
    ("`kubectl describe node`: each node's nvidia.com/gpu under Allocatable and Allocated resources",
     "a Deployment with `strategy: Recreate`, so the old pod frees its GPUs before the new one asks (`vllm-guard "
     "manifest` writes it so)", "fewer GPUs in resources.limits (a smaller tensor-parallel size), or a node with "
     "more"),
    ("changing vLLM's settings: the container never started", "retrying unchanged"),
)

CDI_DEVICE = Advice(
    "The container runtime was asked for a GPU through CDI (the Container Device Interface) by a name no CDI spec on "
    "this node defines, so the container never started and vLLM never ran: the NVIDIA CDI spec was not generated, "
    "is stale (made before a driver change, or for other GPUs), or the device name is wrong.",
    ("`nvidia-ctk cdi list` on the node: the names its specs define (nvidia.com/gpu=0, =all, by UUID)",
     "`nvidia-ctk cdi generate --output=/etc/cdi/nvidia.yaml` after each driver change (recent toolkits' "
     "nvidia-cdi-refresh units do it when the driver changes)",
     "in Kubernetes: the device plugin's or GPU Operator's CDI setting and the node's spec agree on the names"),
    ("retrying unchanged: the same runtime refuses the same name", "changing vLLM's settings"),
)

TPU_BUSY = Advice(
    "Another process holds the TPU: its device (/dev/vfio/N, or /dev/accelN on older TPU VMs) opened busy, so this "
    "start could not initialise it. A TPU is held whole by one process: a previous vLLM, a notebook's kernel, a "
    "test run beside it.",
    ("`sudo lsof -w /dev/vfio/* /dev/accel*`: the process that holds it; stop it, or wait for it to finish",
     "one vLLM per TPU host (or per slice of chips it is given, TPU_VISIBLE_CHIPS)"),
    ("changing vLLM's memory settings", "retrying at once"),
)

HPU_ACQUIRED = Advice(
    "Another process holds the Gaudi this start asked for: Habana's runtime gives a device to one process whole (a "
    "previous vLLM, a notebook's kernel, a second server on the same card).",
    ("`hl-smi` lists the processes on each Gaudi; stop the one that holds it, or wait for it to finish",
     "HABANA_VISIBLE_MODULES naming only free modules, one vLLM per set of modules"),
    ("changing vLLM's memory settings", "retrying at once"),
)

HPU_NOT_FOUND = Advice(
    "Habana's runtime found no Gaudi it could acquire for this process: none is visible in the container (no "
    "--runtime=habana or HABANA_VISIBLE_DEVICES, no habana.ai/gaudi resource on the pod), or every visible one is "
    "already held by another process.",
    ("`hl-smi` inside the container: no device listed means none was given to it; devices with processes mean "
     "they are taken",
     "docker run --runtime=habana -e HABANA_VISIBLE_DEVICES=all (or the Kubernetes device plugin's habana.ai/gaudi "
     "limit)", "HABANA_VISIBLE_MODULES naming free modules where others are in use"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

TPU_ONCHIP = Advice(
    "XLA's compiler ran out of a TPU core's on-chip memory (vmem or smem) while it compiled one of vLLM's kernels "
    "for the shapes this start asks: not the HBM the weights and KV cache use, so gpu-memory-utilization does not "
    "help.",
    ("the kernel's block sizes for this TPU generation: a vLLM TPU release tuned for it (the kernel is named in the "
     "log)", "smaller shapes to compile: a lower --max-model-len (reports name 16k failing where 8k ran) or "
     "--max-num-batched-tokens"),
    ("a lower --gpu-memory-utilization: HBM is not what ran out", "retrying unchanged"),
)

RBLN_BLOCKS = Advice(
    "vllm-rbln allocated this many KV cache blocks, then compiling the model for its warm-up ran out of the "
    "Rebellions NPU's memory: the blocks do not fit beside the compiled model.",
    ("--num-gpu-blocks-override below the count the message names (vllm-rbln's own advice)",
     "a lower --max-model-len, --max-num-batched-tokens or --max-num-seqs, or a higher --tensor-parallel-size "
     "(vllm-rbln's later wording of the same failure)"),
    ("raising --gpu-memory-utilization", "retrying unchanged"),
)

RBLN_OOM = Advice(
    "The Rebellions NPU's runtime ran out of device memory, and the log does not show at which step: when it ends the "
    "warm-up's compile, vllm-rbln says so in its own words ('Not enough memory for N blocks of KV cache').",
    ("--num-gpu-blocks-override below the KV blocks vllm-rbln allocated", "a lower --max-model-len or "
     "--max-num-seqs, or a higher --tensor-parallel-size", "check that no other process holds the NPU (rbln-stat)"),
    ("retrying unchanged",),
)

PLATFORM_START = Advice(
    "The platform that runs the container stopped waiting for the server's port before vLLM was ready: downloading "
    "and loading the weights, profiling and capturing CUDA graphs took longer than its start timeout (or vLLM "
    "failed before listening; the container's own log says which).",
    ("the container's log (Cloud Run: `gcloud run services logs read`, or Logging) for how far the start got",
     "a longer start budget: the service's startupProbe (failureThreshold x periodSeconds, within the platform's "
     "limits: Cloud Run allows a periodSeconds of at most 240)",
     "the weights baked into the image or on a mounted volume, so that no download happens at start",
     "the server on the port the platform names ($PORT)"),
    ("changing vLLM's memory settings", "retrying unchanged with the same budget"),
)

CONTAINER_ADVICE: dict[str, Advice] = {
    "platform_start": PLATFORM_START,
    "rbln_oom": RBLN_OOM,
    "rbln_blocks": RBLN_BLOCKS,
    "tpu_busy": TPU_BUSY,
    "hpu_acquired": HPU_ACQUIRED,
    "hpu_not_found": HPU_NOT_FOUND,
    "tpu_onchip": TPU_ONCHIP,
    "startup_probe": STARTUP_PROBE,
    "k8s_unschedulable": K8S_UNSCHEDULABLE,
    "cdi_device": CDI_DEVICE,
}
