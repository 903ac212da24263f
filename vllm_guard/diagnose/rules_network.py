"""The failure rules about connections and process groups: NCCL's, Gloo's and torch.distributed's rendezvous between
ranks, the engine core's handshake with its front-end, vLLM's process groups made twice or for another world size,
nodes' addresses under Ray, the Hugging Face Hub that cannot be reached or refuses, and a port another process
holds. Read in their place in rules.RULES."""

from __future__ import annotations

import re

from vllm_guard.diagnose import conditions
from vllm_guard.diagnose.catalogue import SOURCES
from vllm_guard.diagnose.figures import numbers_of
from vllm_guard.diagnose.markers import BEFORE_START
from vllm_guard.diagnose.rule import Rule

NETWORK_RULES: tuple[Rule, ...] = (
    # Binding to an address that is not one of this host's (EADDRNOTAVAIL): ZMQ's data-parallel and handshake
    # sockets on --data-parallel-address (blind101/b101-007), a headless node binding the master's (b101-008),
    # torch's TCPStore server on MASTER_ADDR / VLLM_HOST_IP, uvicorn's API socket on --host. Not a client's connect
    # that fails so (torch's routine "The client socket has failed to connect ... (errno: 99 ...)" while it tries
    # IPv6 first, urllib3's retried NewConnectionError): those go on or say more later.
    Rule("network", re.compile(r"ZMQError: Cannot assign requested address|The server socket has failed to bind to "
                               r"\S{1,300} \(errno: 99\b|\[Errno 99\] error while attempting to bind on address"),
         BEFORE_START, detail="bind_address", when=conditions.never_ready, source=SOURCES["bind_address"]),
    # NCCL finding two ranks of one communicator on the same GPU (init.cc): a launch that gave two data-parallel or
    # tensor-parallel processes one device (CUDA_VISIBLE_DEVICES set alike; blind101/b101-001: TRL's DP vllm-serve).
    Rule("network", re.compile(r"NCCL WARN Duplicate GPU detected ?: rank \d{1,6} and rank \d{1,6} both on CUDA "
                               r"device"),
         BEFORE_START, detail="nccl_duplicate_gpu", when=conditions.never_ready, source=SOURCES["nccl_duplicate_gpu"]),
    # NCCL and Gloo across nodes: the wrong interface or IP, or a firewall (vllm #7815; torch's messages). NCCL
    # 2.19+'s misc/socket.cc gives up on a connect as "socketStartConnect: Connect to ADDR failed : REASON" (also as an
    # exception's "Last error:"; blind161/b161-013, an OpenRLHF vLLM actor), "socketPollConnect: Connect to ADDR
    # returned N(...)", or "socket{Start,Poll}Connect: exceeded retries (N)" (refused: a closed port, a firewall) and
    # "exceeded timeouts (N)".
    Rule("network", re.compile(r"Watchdog caught collective operation timeout|ncclRemoteError|remote process exited "
                               r"or there was a network error|NCCL WARN (?:NET|Net)/Socket ?: ?[Cc]onnect"
                               r"|socketStartConnect: (?:Connect to \S{1,300} failed|exceeded (?:retries|timeouts))"
                               r"|socketPollConnect: (?:Connect to \S{1,300} returned|exceeded (?:retries|timeouts))"),
         detail="nccl", source=SOURCES["nccl"]),
    # (not "Connection closed by peer" or "reset by peer": pair.cc's words when the peer process went away, most
    # often because it failed first; blind114/b114-008, a rank whose Neuron compile failed)
    Rule("network", re.compile(r"Gloo connectFullMesh failed|gloo/transport/tcp/\w{1,32}\.cc:\d{1,6}\] "
                               r"(?:[Cc]onnect(?!ion (?:closed|reset) by peer)|[Tt]imed out|[Tt]imeout)"),
         detail="gloo", source=SOURCES["gloo"]),
    # Gloo's TCP device looking up the interface it was told to use (GLOO_SOCKET_IFNAME, or the one its host name
    # resolves to) on a node that has no such interface (gloo/transport/tcp/device.cc lookupAddrForIface;
    # blind41/b41-008: "eth0" on one node of a two-node Ray cluster)
    Rule("network", re.compile(r"gloo/transport/tcp/device\.cc:\d{1,6}\] ifa != nullptr\. Unable to find address "
                               r"for: (?P<interface>\S{1,64})"), BEFORE_START, detail="gloo_interface",
         source=SOURCES["gloo_interface"]),
    # Ray's core worker that cannot reach the cluster's control store (src/ray/gcs/gcs_client/gcs_rpc_client.h:
    # "Failed to connect to GCS within N seconds. GCS may have been killed."; blind47/b47-009)
    # Not when another error came first: Ray's workers print it as they go down after the driver's failure.
    Rule("network", re.compile(r"Failed to connect to GCS within (?P<waited_s>\d{1,6}) seconds"), BEFORE_START,
         detail="ray_gcs", numbers=lambda m: numbers_of(m, "waited_s"), when=conditions.first_error,
         source=SOURCES["ray_gcs"]),
    # Ray's driver (vLLM's Ray executor calling ray.init on a running cluster) that finds no Ray node on its own host:
    # no raylet here, or one registered under another address (ray/_private/services.py
    # get_node_to_connect_for_driver, Ray 2.x; blind73/b73-001: GPUStack's containers)
    Rule("network", re.compile(r"No node info found matching attributes: '[^']{0,200}' when trying to resolve node to "
                               r"connect to"), BEFORE_START, detail="ray_local_node", source=SOURCES["ray_local_node"]),
    # Mooncake's store client (a KV-cache pool for vLLM, vLLM-Ascend, LMCache) that cannot mount its memory segment
    # because its RPC to the master failed or timed out: the store's set-up ends there (real_client.cpp "Failed to
    # mount segment: RPC_FAIL", client_service.cpp "mount_segment_to_master_failed ... error=RPC_FAIL"). Not
    # master_client.cpp's own "RPC call failed:" alone: every RPC logs it, the heartbeat's too, which the client
    # survives with a remount. In a start never ready (blind71/b71-001: vllm-ascend's MooncakeStore across 8 nodes)
    Rule("network", re.compile(r"Failed to mount segment: RPC_(?:FAIL|TIMEOUT)\b|mount_segment_to_master_failed "
                               r".{0,300}?error=RPC_(?:FAIL|TIMEOUT)\b"),
         BEFORE_START, detail="mooncake_master", when=conditions.never_ready, source=SOURCES["mooncake_master"]),
    # vLLM's custom all-reduce kernels failing a CUDA call between the GPUs (csrc/custom_all_reduce.cuh's CUDACHECK,
    # 0.3-0.33: "Failed: Cuda error /workspace/csrc/custom_all_reduce.cuh:164 'invalid argument'"): its IPC
    # buffers, which NCCL's own all-reduce does not need (blind49/b49-009). Not CUDA's sticky errors (an illegal
    # access, a launch failure), which the next checked call reports whichever kernel caused them, nor an OOM; and
    # only in a start that never got ready.
    Rule("network", re.compile(r"Failed: Cuda error \S{0,300}custom_all_reduce\.cuh:\d{1,6} '(?!an illegal memory|"
                               r"unspecified launch|out of memory|misaligned address)(?P<reason>[^']{1,100})'"),
         detail="custom_allreduce", when=conditions.never_ready, source=SOURCES["custom_allreduce_cuda"]),
    # NCCL failing a system or CUDA call while it connects the ranks: "NCCL error: unhandled system error" (vLLM's
    # own pynccl wrapper, distributed/device_communicators/pynccl_wrapper.py NCCL_CHECK, 0.4-0.33) or torch's
    # "NCCL error in: .../ProcessGroupNCCL.cpp:N, unhandled system error, NCCL version ..." (c10d). The words do not
    # say which call (a socket on the nodes' network, /dev/shm, P2P between the GPUs; NCCL_DEBUG=INFO does), and
    # real reports label them network when nothing else says which (blind3/b3-021, b3-022, blind4/b4-011,
    # blind5/b5-012, b5-013, blind23/b23-007, blind31/b31-007, blind36/b36-002, b36-014, blind53/b53-001): a warning,
    # said only when no decisive line, no signal and no function that raises one failure says more (a /dev/shm
    # message beside it decides shm_exhausted: failures/028, collected/c042), and not when NCCL's own lines name
    # CUDA's out-of-memory as the cause. A paste may cut its last words (blind5/b5-012: "unhandled syst").
    # With NCCL_DEBUG=INFO, NCCL traces the failed call's result code up its stack ("init.cc:1032 -> 1", checks.h's
    # INFO_LOC; "init.cc:1032 (ncclCommInitRankFunc) -> 1" from 2.30.7): 1 is ncclUnhandledCudaError and 2
    # ncclSystemError (nccl.h), the same errors before vLLM words them (blind73/b73-004: a paste that ends in those
    # traces under WSL2).
    Rule("network", re.compile(r"NCCL error(?:: | in: \S{1,300}, )unhandled "
                               r"(?:system error|cuda error|[sc][a-z ]{0,11}$)"
                               r"|NCCL INFO \S{1,300}\.cc:\d{1,6}(?: \(\w{1,64}\))? -> [12]\b"),
         detail="nccl_unhandled", when=conditions.nccl_cause_unnamed, warning=True, source=SOURCES["nccl_unhandled"]),
    # openai-harmony (gpt-oss's chat format) fetching its tiktoken vocabulary (o200k_base.tiktoken from
    # openaipublic.blob.core.windows.net): a host without egress, a proxy, or TLS interception (openai/harmony#46, #95;
    # blind92/b92-001). vLLM's API server loaded it as it started up to 0.20 (serving_chat's and serving_responses'
    # __init__); 0.33 loads it at the first request, after the server is ready, which is no start-up failure.
    Rule("network", re.compile(r"HarmonyError: error downloading or loading vocab file"), detail="harmony_vocab",
         when=conditions.never_ready, source=SOURCES["harmony_vocab"]),
    # NVSHMEM (DeepEP's and pplx's all-to-all for expert parallelism) that started no transport: init.cu's
    # nvshmemi_transport_init failed ("nvshmem detect topo failed", after "Unable to initialize any transports"):
    # over InfiniBand without nvidia_peermem (IBRC, IBGDA), on AWS EFA without the libfabric provider
    # (blind91/b91-012, llm-d's wide-EP prefill pod).
    Rule("network", re.compile(r"non-zero status: \d{1,4} nvshmem detect topo failed|nvshmemi_transport_init:\d{1,6}: "
                               r"Unable to initialize any transports"), BEFORE_START, detail="nvshmem_transport",
         when=conditions.never_ready, warning=True, source=SOURCES["nvshmem_transport"]),
    # NCCL's internal error (ncclInternalError, 3): "an internal check failed", which vLLM's workers meet as they
    # connect across nodes (an older NCCL's proxy that could not connect to another rank: "Proxy Call to rank N
    # failed (Connect)"); real reports label it network, all three (blind9/b9-019, blind73/b73-005, b73-008). Said
    # as the unhandled errors are: a warning, when nothing decisive follows and NCCL names no out-of-memory.
    Rule("network", re.compile(r"NCCL error(?:: | in: \S{1,300}, )internal error|NCCL Error 3: internal error"
                               r"|ncclInternalError: Internal check failed|Proxy Call to rank \d{1,6} failed "
                               r"\(Connect\)|NCCL INFO \S{1,300}\.cc:\d{1,6}(?: \(\w{1,64}\))? -> 3\b"),
         detail="nccl_internal", when=conditions.nccl_cause_unnamed, warning=True, source=SOURCES["nccl_internal"]),
    # vLLM's Ray executor, when the IP addresses of the driver and the workers are not one per node: fewer when nodes
    # report one address (VLLM_HOST_IP set alike on every node: blind59/b59-001, a shared .env), more when the
    # driver's differs from its node's (several interfaces). A setting to change, not the network's reach. The
    # first sentence is vLLM's alone; a paste may wrap after it.
    Rule("usage_error", re.compile(r"Every node should have a unique IP address\.(?:\s{0,4}Got (?P<nodes>\d{1,6}) "
                                   r"nodes with(?:\s{0,4}node ids \[[^\]]{0,2000}\] and (?P<ips>\d{1,6}) "
                                   r"unique IP)?)?"),
         BEFORE_START, detail="ray_node_ip", numbers=lambda m: numbers_of(m, "nodes", "ips"),
         source=SOURCES["ray_node_ip"]),
    # The engine core waiting for its front-end's answer to its handshake (v1/engine/core.py startup_handshake,
    # 0.9-0.34): the front-end failed, is busy, or cannot be reached across nodes (blind60/b60-003, a disaggregated
    # deployment on Ascend whose start "got stuck")
    Rule("startup_timeout", re.compile(r"Did not receive response from front-end process within "
                                       r"(?P<waited_min>\d{1,4}) minute"), BEFORE_START, detail="engine_handshake",
         numbers=lambda m: numbers_of(m, "waited_min"), source=SOURCES["engine_handshake"]),
    # The process group is bigger than tensor x pipeline parallel: the script was started under torchrun (or with
    # WORLD_SIZE set) and each process made an engine (vLLM V0 distributed/parallel_state.py
    # initialize_model_parallel; blind28/b28-009)
    Rule("usage_error", re.compile(r"world_size \((?P<world_size>\d{1,6})\) is not equal to "
                                   r"tensor_model_parallel_size \((?P<tp_size>\d{1,6})\) x "
                                   r"pipeline_model_parallel_size \((?P<pp_size>\d{1,6})\)"),
         BEFORE_START, detail="process_group_size",
         numbers=lambda m: numbers_of(m, "world_size", "tp_size", "pp_size"), source=SOURCES["process_group_size"]),
    # vLLM's process groups are made once per process: a second engine in the same process (a notebook cell run
    # again, a framework that builds two; blind61/b61-002 through LangChain) finds the first's
    Rule("usage_error", re.compile(r"\b(?:tensor model|pipeline model|data|expert|decode context model|prefill context|"
                                   r"engram data) parallel group is already initialized|\bEPLB group is already "
                                   r"initialized|\b(?:tensor|pipeline|prefill context|decode context) parallel group "
                                   r"already initialized, but of unexpected size|\bworld group already initialized"),
         BEFORE_START, detail="second_engine",
         source=SOURCES["second_engine"]),
    # The store's own side: the first rank waited and the others never connected (they may have failed or hung).
    Rule("network", re.compile(r"DistStoreError: Timed out after (?P<waited_s>\d+) seconds waiting for clients\. "
                               r"(?P<joined>\d+)/(?P<ranks>\d+) clients joined"), detail="ranks_missing",
         numbers=lambda m: numbers_of(m, "waited_s", "joined", "ranks"), source=SOURCES["ranks_missing"]),
    # Not a bare DistNetworkError: a busy local port (EADDRINUSE) raises it too, and that is no network's fault.
    Rule("network", re.compile(r"(?:DistNetworkError|DistStoreError): .{0,300}?(?:[Tt]imed out|Connection refused"
                               r"|No route to host)"), detail="rendezvous", source=SOURCES["rendezvous"]),
    # torch.distributed's TCPStore client giving up on the rendezvous address (c10d socket.cpp, PyTorch 2.2+): the
    # address picked for this start is not reachable from here (blind25/b25-003).
    Rule("network", re.compile(r"The client socket has failed to connect to any network address of \("
                               r"|TCP client failed to connect/validate to host \S{1,300} - timed out"),
         BEFORE_START, detail="rendezvous", source=SOURCES["c10d_socket"]),
    # Its warnings while it retries, the start never ready and nothing decisive after them (blind25/b25-002: retried
    # until a person pressed ^C; blind11/b11-012: Windows' "address is not valid in its context").
    Rule("network", re.compile(r"\[c10d\] (?:The client socket has failed to connect to \S"
                               r"|The server socket on \S{1,300} has timed out, will retry"
                               r"|TCP client failed to connect/validate to host \S{1,300} - retrying)"),
         BEFORE_START, detail="rendezvous", when=conditions.never_ready, warning=True, source=SOURCES["c10d_socket"]),
    # The Hub cannot be reached: offline mode, no network, a proxy. vLLM resolves a model id on the Hub even when
    # the files are cached (vllm #3719: HF_HUB_OFFLINE=1 and an id, not a path).
    Rule("network", re.compile(r"OfflineModeIsEnabled|outgoing traffic has been disabled"
                               r"|cannot find the requested files in the (?:local|disk) cache"
                               # transformers' cached_file (one file) and, later and in 5.x, cached_files ("the files")
                               r"|We couldn't connect to '?https?://[^\s']{1,200}'? to load (?:this file|the files)"
                               # the host quoted as an exception's repr inside another's prints \'huggingface.co\'
                               r"|HTTPSConnectionPool\(host=\\?'(?:[\w-]{1,63}\.){0,4}(?:huggingface\.co|hf\.co|"
                               r"hf-mirror\.com)\\?'.{0,300}?Max retries exceeded"), BEFORE_START, detail="hub",
         when=conditions.not_retried, source=SOURCES["hub_unreachable"]),
    # NVIDIA's NIM (its LLM containers run vLLM) fetching the model's files from NGC: its hub client (Rust's reqwest,
    # in nim_sdk) could not send the request at all (DNS, connection, TLS, timeout; an HTTP status reads otherwise).
    # Only where the start got no further and no other failure follows: NIM may go on from its cache and fail for
    # another reason.
    # blind186/b186-002: a 70B NIM's pod under NVIDIA's nim-deploy chart.
    Rule("network", re.compile(r"error sending request for url \(https?://(?:[\w-]{1,63}\.){0,4}(?:ngc\.nvidia\.com|"
                               r"nvcr\.io)/"), BEFORE_START, detail="ngc_unreachable",
         when=conditions.ngc_went_no_further, source=SOURCES["ngc_unreachable"]),
    # The Hub answered, but refused (429) or failed (5xx), or too slowly: not the network's reach.
    Rule("network", re.compile(r"\b(?:429 Client Error|50[0234] Server Error): [\w .-]{1,40} for url: https?://"
                               r"(?:[\w-]{1,63}\.){0,4}(?:huggingface\.co|hf\.co|hf-mirror\.com)/"
                               r"|HTTPSConnectionPool\(host=\\?'(?:[\w-]{1,63}\.){0,4}(?:huggingface\.co|hf\.co|"
                               r"hf-mirror\.com)\\?'.{0,300}?Read timed out"
                               # huggingface_hub 1.x raises httpx's wording: "Server error '503 Service Unavailable'
                               # for url 'https://huggingface.co/...'"
                               r"|(?:Client error '429|Server error '50[0234]) [\w .-]{1,40}' for url 'https?://"
                               r"(?:[\w-]{1,63}\.){0,4}(?:huggingface\.co|hf\.co|hf-mirror\.com)/"),
         BEFORE_START, detail="hub_refused", when=conditions.not_retried, source=SOURCES["hub_refused"]),
    # EADDRINUSE is 98 on Linux and 48 on macOS and the BSDs (vllm-metal on a Mac: blind35/b35-001)
    Rule("port_in_use", re.compile(r"\[(?:Errno 98|Errno 48)\] error while attempting to bind on address "
                                   r"\('?[^,]{0,255}?'?, (?P<port>\d+)\): (?:\[errno (?:98|48)\] )?address already in "
                                   r"use"), BEFORE_START,
         numbers=lambda m: numbers_of(m, "port"), when=conditions.api_bind(r"address \('?[^,]{0,255}?'?, (\d+)\)"),
         source=SOURCES["uvicorn_bind"]),
    Rule("port_in_use", re.compile(r"OSError: \[(?:Errno 98|Errno 48)\] Address already in use"), BEFORE_START,
         when=conditions.api_bind(r"(?!x)x"), source=SOURCES["cpython_bind"]),
    # torch.distributed's TCPStore (vLLM's process group, or the framework's that drives it) could not bind: a port
    # other than the API's, taken between being picked and being bound (torch 2.2+ c10d socket.cpp; before: "has
    # failed to bind to [::]:P (errno: 98 - Address already in use)").
    Rule("port_in_use", re.compile(r"has failed to listen on any local network address\..{0,200}?(?:EADDRINUSE|"
                                   r"address already in use)|has failed to bind to \S{1,300} \(errno: 98 - Address "
                                   r"already in use\)"), BEFORE_START, detail="internal_port",
         source=SOURCES["tcpstore_bind"]),
    # A ZMQ socket's bind on a port in use: vLLM's own (data parallel, the engine handshake) or a KV connector's on
    # a port its config fixes (blind169/b169-004: Mooncake's kv_port inside the range Ascend's transport picks from).
    # Not the API's, which uvicorn binds. pyzmq names the address; a connect never fails so. The stage is the start's:
    # vLLM and the connectors bind at several points of it. vLLM picks most of these ports itself (one retry picks
    # another, as for torch's store), but some are fixed by a setting (data_parallel_rpc_port = 29550, a connector's
    # kv_port, VLLM_NIXL_SIDE_CHANNEL_PORT): its own advice says which (two reviews).
    Rule("port_in_use", re.compile(r"ZMQError: Address already in use(?: \(addr='tcp://[^']{0,300}?:(?P<port>\d{1,5})"
                                   r"'\))?"),
         detail="zmq_port", numbers=lambda m: numbers_of(m, "port"), when=conditions.never_ready,
         source=SOURCES["zmq_bind"]),
    # HCCL (Ascend's collectives, under vllm-ascend) that cannot listen on its port: another process on the node holds
    # it, most often a second instance with the same HCCL_IF_BASE_PORT or KV connector port (blind50/b50-006,
    # b50-008)
    Rule("port_in_use", re.compile(r"Failed to bind the IP port\. Reason: The IP address and port have been bound "
                                   r"already|listen on ip\[[^\]]{1,64}\] and specific port\[(?P<port>\d{1,5})\] fail"),
         BEFORE_START, detail="hccl_port", numbers=lambda m: numbers_of(m, "port"), source=SOURCES["hccl_port"]),
)
