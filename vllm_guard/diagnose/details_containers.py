"""The advice for the readings of what Kubernetes and the container runtime report about a vLLM container: the
kubelet's startup probe, the scheduler that places no pod, the runtime that cannot give the container its GPU. Part
of details.DETAIL_ADVICE."""

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

CONTAINER_ADVICE: dict[str, Advice] = {
    "startup_probe": STARTUP_PROBE,
    "k8s_unschedulable": K8S_UNSCHEDULABLE,
    "cdi_device": CDI_DEVICE,
}
