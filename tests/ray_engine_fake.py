"""A stand-in for `vllm serve --distributed-executor-backend ray` as vLLM 0.33 behaves on Ray, as far as
the guard can see: it connects to the Ray cluster (RAY_ADDRESS, else the one started on this machine),
asks Ray for a real placement group of tensor x pipeline bundles of one GPU each (the first on its own
node, as vLLM does), waits for it and logs vLLM's wait message when it cannot have it, prints the start-up
lines (Ray workers with their ranks, weights, KV cache, the server), serves /health and a first request
once ready, and on SIGTERM removes its placement group and exits 0.

Its file name does not contain the single-machine fake's name on purpose: the serve tests check that no
process of that one outlives a test, and this one runs beside them.

Knobs (environment): RAY_ENGINE_FAKE_LOAD_S (seconds "loading weights", default 0), RAY_ENGINE_FAKE_PG_WAIT_S
(vLLM's first wait interval, 10 s in vLLM; default 1 here), RAY_ENGINE_FAKE_PG_TIMEOUT_S (vLLM's 1800).
"""

from __future__ import annotations

import argparse
import http.server
import os
import signal
import sys
import threading
import time

from fake_http import JsonHandler  # next to this script


def log(proc: str, level: str, where: str, msg: str) -> None:
    print(f"({proc} pid={os.getpid()}) {level} {time.strftime('%m-%d %H:%M:%S')} [{where}] {msg}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("command")
    parser.add_argument("model")
    parser.add_argument("--tensor-parallel-size", type=int, default=1)
    parser.add_argument("--pipeline-parallel-size", type=int, default=1)
    parser.add_argument("--distributed-executor-backend")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--host", default="127.0.0.1")
    args, _ = parser.parse_known_args()
    tp, pp = args.tensor_parallel_size, args.pipeline_parallel_size
    world = tp * pp
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())

    log("APIServer", "INFO", "startup.py:18", f"vLLM server version 0.33.0, serving model {args.model}")
    log("EngineCore", "INFO", "core.py:140", f"Initializing a V1 LLM engine (v0.33.0) with config: "
        f"model='{args.model}', tensor_parallel_size={tp}, pipeline_parallel_size={pp}")
    if args.distributed_executor_backend != "ray":
        log("APIServer", "ERROR", "parallel.py:1067", f"ValueError: World size ({world}) is larger than the number "
            "of available GPUs (0) in this node.")
        return 1
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    address = os.environ.get("RAY_ADDRESS") or "auto"
    log("EngineCore", "INFO", "ray_utils.py:351", f"Connecting to existing Ray cluster at address: {address}...")
    ray.init(address=address, log_to_driver=False, configure_logging=False)
    ip = ray.util.get_node_ip_address()
    # vLLM: one {"GPU": 1} bundle per rank, the first pinned to the driver's node by its node:<ip> resource.
    specs = [{"GPU": 1.0, f"node:{ip}": 0.001}] + [{"GPU": 1.0} for _ in range(world - 1)]
    if ray.cluster_resources().get("GPU", 0) < world:
        log("EngineCore", "WARNING", "ray_utils.py:315", "The number of required GPUs exceeds the total number of "
            "available GPUs in the placement group.")
    pg = placement_group(specs, strategy="PACK")
    ready_ref = pg.ready()
    started = time.monotonic()
    interval = float(os.environ.get("RAY_ENGINE_FAKE_PG_WAIT_S", "1"))
    timeout = float(os.environ.get("RAY_ENGINE_FAKE_PG_TIMEOUT_S", "1800"))
    while not stop.is_set():
        ready, _ = ray.wait([ready_ref], timeout=interval)
        if ready:
            break
        if time.monotonic() - started >= timeout:
            log("EngineCore", "ERROR", "core.py:842", f"ValueError: Cannot provide a placement group of "
                f"placement_group_specs={specs} within {int(timeout)} seconds. See `ray status` and `ray list nodes` "
                "to make sure the cluster has enough resources.")
            remove_placement_group(pg)
            return 1
        interval *= 2
        log("EngineCore", "INFO", "ray_utils.py:212", f"Waiting for creating a placement group of specs for "
            f"{int(time.monotonic() - started)} seconds. specs={specs}. Check `ray status` and `ray list nodes` to "
            "see if you have enough resources, and make sure the IP addresses used by ray cluster are the same as "
            "VLLM_HOST_IP environment variable specified in each node if you are running on a multi-node.")
    if stop.is_set():
        remove_placement_group(pg)
        return 0
    table = ray.util.placement_group_table(pg)
    nodes = table.get("bundles_to_node_id", {})
    for rank in range(world):  # each Ray worker imports vLLM first, then joins the process groups
        print(f"(RayWorkerWrapper pid={40000 + rank}, ip={ip}) INFO {time.strftime('%m-%d %H:%M:%S')} "
              "[__init__.py:239] Automatically detected platform cuda.", flush=True)
    for rank in range(world):
        prefix = f"(RayWorkerWrapper pid={40000 + rank}, ip={ip})"
        print(f"{prefix} INFO {time.strftime('%m-%d %H:%M:%S')} [parallel_state.py:1208] rank {rank} in world size "
              f"{world} is assigned as DP rank 0, PP rank {rank // tp}, TP rank {rank % tp}, EP rank 0 "
              f"(node {str(nodes.get(rank, '?'))[:6]})", flush=True)
    stop.wait(float(os.environ.get("RAY_ENGINE_FAKE_LOAD_S", "0")))
    if stop.is_set():
        remove_placement_group(pg)
        return 0
    log("EngineCore", "INFO", "gpu_model_runner.py:5089", "Model loading took 2.49 GiB memory and 0.100000 seconds")
    log("EngineCore", "INFO", "kv_cache_utils.py:1205", "GPU KV cache size: 100,000 tokens")
    log("APIServer", "INFO", "api_server.py:139", f"Starting vLLM server on http://{args.host}:{args.port}")

    class Handler(JsonHandler):
        def do_GET(self) -> None:
            if self.path == "/v1/models":  # the guard's first request asks which model is served
                self._json(200, {"data": [{"id": args.model}]})
            else:
                self._json(200 if self.path == "/health" else 404, {})

        def do_POST(self) -> None:
            self._json(200, {"choices": [{"index": 0, "text": " hi"}], "usage": {"completion_tokens": 1}})


    server = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print("INFO:     Application startup complete.", flush=True)
    stop.wait()
    server.shutdown()
    remove_placement_group(pg)  # vLLM's workers and their placement group end with its driver
    ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
