"""The advice for the readings about connections between vLLM's processes and nodes: NCCL's and Gloo's failures, the
engine core's handshake with its front-end, Ray's driver without a node on its host, Mooncake's store client without
its master. Part of details.DETAIL_ADVICE."""

from __future__ import annotations

from vllm_guard.diagnose.knowledge import Advice

GLOO_INTERFACE = Advice(
    "Gloo was told to use a network interface this node does not have: GLOO_SOCKET_IFNAME names one of another "
    "machine's interfaces (names differ between machines: eth0, ens5, enp1s0f0, bond0), so the CPU process group "
    "vLLM makes beside NCCL's cannot start.",
    ("`ip -br addr` on each node, and GLOO_SOCKET_IFNAME (and NCCL_SOCKET_IFNAME) set per node to that node's "
     "interface on the network the nodes share, before `ray start` (docs/ray.md)",),
    ("retrying unchanged", "changing vLLM's memory settings"),
)

NCCL_UNHANDLED = Advice(
    "NCCL failed a system or CUDA call while it connected vLLM's workers, and its error does not say which: a "
    "socket on the nodes' network (the wrong interface, a firewall), its shared-memory transport (/dev/shm, 64 MiB "
    "in Docker by default), or P2P between the GPUs (IOMMU, a VM, consumer GPUs).",
    ("NCCL_DEBUG=INFO: NCCL's own WARN line names the call that failed",
     "in a container: --ipc=host or --shm-size of several GiB (docs/docker.md)",
     "NCCL_P2P_DISABLE=1 for one start tests P2P; NCCL_SOCKET_IFNAME names the interface between nodes",
     "on NVSwitch systems (HGX H100/H200), NCCL_NVLS_ENABLE=0 for one start tests NVLink SHARP"),
    ("lowering memory settings", "retrying unchanged"),
)

ENGINE_HANDSHAKE = Advice(
    "The engine core process waited 5 minutes (vLLM's fixed HANDSHAKE_TIMEOUT_MINS) for its front-end to answer its "
    "handshake: the front-end (the API server, or with data parallelism across nodes the head node's) failed or is "
    "still busy, or its address cannot be reached from this node.",
    ("the front-end's own lines (APIServer, DP coordinator) before the timeout: a front-end that failed says why "
     "there", "across nodes: --data-parallel-address and --data-parallel-rpc-port reachable from every node (no "
     "firewall between them), and the same vLLM on every node"),
    ("changing vLLM's memory settings", "a larger guard stall timeout: vLLM's own limit is fixed"),
)

MOONCAKE_MASTER = Advice(
    "Mooncake's store client (the KV-cache pool a Mooncake connector uses) could not reach its master service: the "
    "RPC to the master address failed or timed out, so the client could not mount its memory segment and the worker "
    "stopped. The master is a separate process (mooncake_master) at master_server_address in the connector's "
    "Mooncake config.",
    ("check that mooncake_master runs and that its address and port (master_server_address) are reachable from "
     "every node: a firewall, the wrong interface, a pod not yet up", "with many nodes: the master's own limits "
     "and its log, since each node mounts a segment of global_segment_size"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

NCCL_INTERNAL = Advice(
    "NCCL reported an internal error while it connected vLLM's workers. Its own words blame a failed internal check, "
    "but in vLLM's start-up across nodes it is most often a connection NCCL could not make: its proxy's connect to "
    "another rank, the InfiniBand or RoCE set-up, or the interface it chose.",
    ("NCCL_DEBUG=INFO: NCCL's WARN lines just before it name the call that failed",
     "NCCL_SOCKET_IFNAME naming the interface between the nodes; NCCL_IB_HCA (or NCCL_IB_DISABLE=1 for one start, "
     "to test InfiniBand)", "the same NCCL on every node (vLLM logs 'vLLM is using nccl==X')"),
    ("lowering memory settings", "retrying unchanged"),
)

RAY_LOCAL_NODE = Advice(
    "vLLM's Ray executor joined the Ray cluster, but Ray found no node of that cluster on this host: a driver "
    "attaches to a raylet on its own machine, found by the host's address. Either `ray start` did not run here (or "
    "ran in another container or network namespace), or this host's raylet registered under another address.",
    ("`ray status` on the head: is this host among the nodes, with the address vLLM's host resolves?",
     "`ray start --address=HEAD:PORT --node-ip-address=THIS_HOST` in the same container as vLLM, before it starts",
     "VLLM_HOST_IP the same as the Ray node's address (docs/ray.md)"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

HARMONY_VOCAB = Advice(
    "openai-harmony, which vLLM loads for gpt-oss's chat format, could not fetch or read its tiktoken vocabulary "
    "(o200k_base.tiktoken, from openaipublic.blob.core.windows.net): a host or container without egress, a proxy, or "
    "a TLS-intercepting network whose certificate the library does not trust.",
    ("download o200k_base.tiktoken and cl100k_base.tiktoken from openaipublic.blob.core.windows.net/encodings/ into "
     "a folder and set TIKTOKEN_ENCODINGS_BASE to it, in every vLLM process's environment (each node, each pod)",
     "or let the host reach openaipublic.blob.core.windows.net (HTTPS_PROXY where a proxy is the way out)"),
    ("changing vLLM's memory or parallel settings", "HF_HUB_OFFLINE, which the library does not read"),
)

NVSHMEM_TRANSPORT = Advice(
    "NVSHMEM, which the DeepEP and pplx all-to-all kernels of expert parallelism start, found no transport it could "
    "use between the GPUs: over InfiniBand its IBRC and IBGDA transports need the nvidia_peermem kernel module (or "
    "DMA-BUF); on AWS EFA it needs the libfabric transport; in a container, the RDMA devices themselves.",
    ("NVSHMEM_DEBUG=INFO names each transport and why it did not start",
     "lsmod | grep nvidia_peermem on each node (modprobe nvidia_peermem as root where it is missing)",
     "on EFA: NVSHMEM_REMOTE_TRANSPORT=libfabric and NVSHMEM_LIBFABRIC_PROVIDER=efa",
     "--all2all-backend allgather_reducescatter (vLLM 0.11+; 0.33's default), which does not use NVSHMEM"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

BIND_ADDRESS = Advice(
    "A process bound a socket to an address that is not one of this host's: vLLM's data-parallel or engine sockets on "
    "--data-parallel-address, a headless node binding the master's address, or the process group's store on "
    "MASTER_ADDR or VLLM_HOST_IP. In a pod, the address may be another pod's, or this pod's from an earlier start.",
    ("`ip -brief addr` on the node that failed: the address must be among them where that node binds",
     "--data-parallel-address the master node's own address, given to the master; VLLM_HOST_IP each node's own",
     "in Kubernetes: the pod's current IP (status.podIP), or a headless service's name that resolves to it"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

NCCL_DUPLICATE_GPU = Advice(
    "NCCL found two ranks of one communicator on the same GPU: the launch gave two data-parallel or tensor-parallel "
    "processes one device (CUDA_VISIBLE_DEVICES set alike for each, or a framework's device map).",
    ("each process's CUDA_VISIBLE_DEVICES (or device map) names its own GPUs, disjoint from the others'",
     "nvidia-smi while it starts: each GPU should show one process of the start"),
    ("changing vLLM's memory settings", "retrying unchanged"),
)

INTERNAL_PORT = Advice(
    "A port other than the API's could not be bound: torch.distributed's store for the workers' process group "
    "(vLLM's, or the framework's that drives it). vLLM picks a free port and binds it later, so another job on the "
    "host can take it in between; or MASTER_PORT / VLLM_PORT names a port in use.",
    ("start once more (a race picks another port)", "VLLM_PORT (or the framework's MASTER_PORT) set to a free range "
     "per job on a shared host"), ("changing --port: the API port was not the one taken",),
)
ZMQ_PORT = Advice(
    "A ZMQ socket could not bind its port: another process holds it. vLLM picks most of its ZMQ ports itself and binds "
    "them later (older releases' shared-memory broadcast and engine handshake), so another job can take one in "
    "between, and one more start picks another. Some are fixed by a setting: --data-parallel-rpc-port (29550 unless "
    "set), a KV connector's ports in --kv-transfer-config, VLLM_NIXL_SIDE_CHANNEL_PORT (5600): a second instance on "
    "the host with the same one fails every time.",
    ("start once more: vLLM picks its own ports afresh", "failing again: find who holds the port (`ss -ltnp | grep "
     ":PORT`), and set --data-parallel-rpc-port, the connector's ports or VLLM_NIXL_SIDE_CHANNEL_PORT apart per "
     "instance"),
    ("changing --port: the API port was not the one taken",),
)

NETWORK_ADVICE: dict[str, Advice] = {
    "zmq_port": ZMQ_PORT,
    "internal_port": INTERNAL_PORT,
    "bind_address": BIND_ADDRESS,
    "nccl_duplicate_gpu": NCCL_DUPLICATE_GPU,
    "harmony_vocab": HARMONY_VOCAB,
    "nvshmem_transport": NVSHMEM_TRANSPORT,
    "ray_local_node": RAY_LOCAL_NODE,
    "nccl_internal": NCCL_INTERNAL,
    "mooncake_master": MOONCAKE_MASTER,
    "gloo_interface": GLOO_INTERFACE,
    "nccl_unhandled": NCCL_UNHANDLED,
    "engine_handshake": ENGINE_HANDSHAKE,
}
