"""Cases a newcomer's review of issue 26's twelfth round found, each reproduced before it was mended: a reading must
not be given to a log whose own later lines say otherwise, nor "no error" to a log that shows one."""

from __future__ import annotations

import pytest

from tests.conftest import blind_log, skipped_plugin_chain
from vllm_guard.diagnose.classify import classify

_LOAD = "INFO 10-17 16:49:15 [gpu_model_runner.py:2602] Starting to load model Qwen/Qwen3-0.6B...\n"
_OOM = ("(EngineCore_DP0 pid=300) INFO 10-17 16:50:20 [gpu_model_runner.py:2653] Model loading took 61.0 GiB and "
        "55.1 seconds\n"
        "(EngineCore_DP0 pid=300) ERROR 10-17 16:50:30 [core.py:708] Traceback (most recent call last):\n"
        "(EngineCore_DP0 pid=300) ERROR 10-17 16:50:30 [core.py:708]   File \"/x/vllm/v1/worker/gpu_worker.py\", "
        "line 263, in determine_available_memory\n"
        "(EngineCore_DP0 pid=300) ERROR 10-17 16:50:30 [core.py:708]     self.model_runner.profile_run()\n"
        "(EngineCore_DP0 pid=300) ERROR 10-17 16:50:30 [core.py:708] torch.OutOfMemoryError: CUDA out of memory. "
        "Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.02 GiB is free.\n")


def test_a_failed_scheduling_the_pod_got_past_is_no_failure() -> None:
    # kubectl describe keeps the old event; an autoscaler added a node and the pod started and served
    text = ("  Warning  FailedScheduling  6m12s  default-scheduler  0/2 nodes are available: 2 Insufficient "
            "nvidia.com/gpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.\n"
            "  Normal   Scheduled         3m40s  default-scheduler  Successfully assigned default/vllm-0 to gpu-3\n"
            "  Normal   Started           3m37s  kubelet            Started container vllm\n"
            + _LOAD + "(APIServer pid=1) INFO:     Application startup complete.\n")
    assert classify(text).detail != "k8s_unschedulable"
    assert classify(text.split("  Normal")[0]).detail == "k8s_unschedulable"


def test_a_mooncake_rpc_the_client_survived_does_not_hide_the_later_failure() -> None:
    text = ("(EngineCore_DP0 pid=300) E1017 16:49:14.123456   300 master_client.cpp:367] RPC call timed out: "
            "Timeout\n"
            "(EngineCore_DP0 pid=300) I1017 16:49:16.000001   300 client.cpp:512] Mount segment 0x7f00 success\n"
            + _OOM)
    assert classify(text).cls == "oom_profiling"


def test_an_install_message_chained_in_a_skipped_plugins_traceback_ends_nothing() -> None:
    text = skipped_plugin_chain('File "/x/vllm/plugins/__init__.py", line 41, in load_plugins_by_group',
                                "func = plugin.load()", "ImportError: Please install timm") + _OOM
    assert classify(text).cls == "oom_profiling"


@pytest.mark.parametrize("trace", ["init.cc:1903 (ncclCommInitRankDev) -> 1", "init.cc:1903 -> 1"])
def test_nccls_result_trace_in_both_formats(trace: str) -> None:
    # NCCL 2.30.7 writes the function's name beside the file and line
    text = ("(Worker_TP0 pid=401) INFO 10-17 16:49:14 [pynccl.py:103] vLLM is using nccl==2.30.7\n"
            f"(Worker_TP0 pid=401) host:401:401 [0] NCCL INFO {trace}\n")
    assert classify(text).detail == "nccl_unhandled"


@pytest.mark.parametrize("ending", [
    "Illegal instruction (core dumped)\n",
    "Segmentation fault (core dumped)\n",
    "Oct 17 16:49:20 host systemd[1]: vllm.service: Main process exited, code=exited, status=1/FAILURE\n",
    "vllm-1 exited with code 1\n",
    "host:401:401 [0] NCCL WARN Cuda failure 'peer access is not supported between these two devices'\n",
    "host:401:401 [0] NCCL INFO init.cc:1549 -> 5\n",
])
def test_a_log_that_shows_a_crash_or_an_exit_is_not_one_with_no_error(ending: str) -> None:
    d = classify(_LOAD + ending)
    assert d.detail != "no_error" and (d.hint is None or d.hint[0] != "startup_hang")


@pytest.mark.parametrize("text", [
    # an offline run of vLLM 0.5 that finished: no 'init engine' line with enforce_eager, but its output
    "INFO 09-01 10:00:05 gpu_executor.py:121] # GPU blocks: 127278, # CPU blocks: 7281\n"
    "Processed prompts: 100%|##########| 4/4 [00:00<00:00, 21.17it/s]\n"
    "Prompt: 'Hello, my name is', Generated text: ' Joel'\n",
    # the tail of a server that has served a while (`explain --unit` reads the journal's last 2,000 lines)
    "INFO 10-17 16:50:15 [loggers.py:123] Engine 000: Avg prompt throughput: 0.0 tokens/s\n"
    "INFO:     10.0.0.5:51234 - \"GET /health HTTP/1.1\" 200 OK\n",
])
def test_a_run_that_finished_or_serves_is_not_one_that_may_hang(text: str) -> None:
    d = classify(text)
    assert d.detail != "no_error" and (d.hint is None or d.hint[0] != "startup_hang")


# A second review's cases (after 962cb1f)

_P = "(EngineCore_DP0 pid=300) "
_SKIPPED = (f"{_P}ERROR 10-17 16:49:11 [__init__.py:45] Failed to load plugin lora_filesystem_resolver\n"
            f"{_P}Traceback (most recent call last):\n"
            f"{_P}  File \"/x/vllm/plugins/__init__.py\", line 41, in load_plugins_by_group\n"
            f"{_P}    func = plugin.load()\n"
            f"{_P}ModuleNotFoundError: No module named 'vllm.plugins.lora_resolvers'\n")


def test_a_skipped_plugin_does_not_hide_a_later_chained_error() -> None:
    e = f"{_P}ERROR 10-17 16:49:16 [core.py:708] "
    text = (_SKIPPED + f"{_P}INFO 10-17 16:49:15 [gpu_model_runner.py:2602] Starting to load model x-bnb-4bit...\n"
            f"{e}Traceback (most recent call last):\n"
            f"{e}  File \"/x/vllm/model_executor/model_loader/bitsandbytes_loader.py\", line 207, in _get_iter\n"
            f"{e}    import bitsandbytes\n"
            f"{e}ModuleNotFoundError: No module named 'bitsandbytes'\n{e}\n"
            f"{e}The above exception was the direct cause of the following exception:\n{e}\n"
            f"{e}Traceback (most recent call last):\n"
            f"{e}  File \"/x/vllm/model_executor/model_loader/bitsandbytes_loader.py\", line 215, in _get_iter\n"
            f"{e}    raise ImportError(\n"
            f"{e}ImportError: Please install bitsandbytes>=0.46.1 via `pip install bitsandbytes>=0.46.1` to use "
            "bitsandbytes quantizer.\n")
    assert classify(text).detail == "package_required"


def test_a_glibc_error_in_a_skipped_plugin_of_a_start_that_served_is_no_failure() -> None:
    text = ("ERROR 10-17 16:49:11 [__init__.py:45] Failed to load plugin some_kernels\n"
            "Traceback (most recent call last):\n"
            "  File \"/x/vllm/plugins/__init__.py\", line 41, in load_plugins_by_group\n"
            "    func = plugin.load()\n"
            "ImportError: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.34' not found (required by /x/k/_ops.so)\n"
            + _LOAD + "(APIServer pid=1) INFO:     Application startup complete.\n")
    assert classify(text).detail != "glibc"
    assert classify(text.replace("(APIServer pid=1) INFO:     Application startup complete.\n", _OOM)).cls \
        .startswith("oom")


@pytest.mark.parametrize("call", ["    hidden_states = torch_npu.npu_grouped_matmul(",  # another library's function
                                  "    self.embed = nnx.Embed("])  # a module-qualified class
def test_a_plugins_keyword_error_on_another_librarys_call_is_not_vllms_api(call: str) -> None:
    e = f"{_P}ERROR 10-17 16:50:30 [core.py:708] "
    text = (f"{e}Traceback (most recent call last):\n"
            f"{e}  File \"/vllm-workspace/vllm-ascend/vllm_ascend/ops/fused_moe.py\", line 120, in fused_experts\n"
            f"{e}{call}\n"
            f"{e}TypeError: npu_grouped_matmul() got an unexpected keyword argument 'group_list_type'\n")
    assert classify(text).detail != "vllm_api"


def test_rccls_long_source_paths_in_its_result_trace() -> None:
    path = "/long_pathname_so_that_rpms_can_package_the_debug_info/src/extlibs/rccl/build/hipify/src"
    text = ("(Worker_TP0 pid=401) INFO 10-17 16:49:14 [pynccl.py:70] vLLM is using nccl==2.21.5\n"
            f"(Worker_TP0 pid=401) host:401:420 [0] NCCL INFO {path}/transport/p2p.cc:342 -> 1\n"
            f"(Worker_TP0 pid=401) host:401:420 [0] NCCL INFO {path}/init.cc:1270 -> 1\n")
    assert classify(text).detail == "nccl_unhandled"


def test_rccls_routine_warning_keeps_a_quiet_log_quiet() -> None:
    text = ("INFO 10-17 16:49:10 [__init__.py:241] Automatically detected platform rocm.\n"
            "(Worker_TP0 pid=401) host:401:401 [0] /src/init.cc:213 NCCL WARN Missing \"iommu=pt\" from kernel "
            "command line which can lead to system instablity or hang!\n"
            "(Worker_TP0 pid=401) host:401:401 [0] NCCL INFO comm 0x55d0 rank 0 nranks 2 - Init COMPLETE\n"
            "(Worker_TP0 pid=401) INFO 10-17 16:49:20 [gpu_model_runner.py:2602] Starting to load model x...\n")
    assert classify(text).detail == "no_error"


@pytest.mark.parametrize(("ending", "detail"), [
    ("Process finished with exit code 137 (interrupted by signal 9: SIGKILL)\n", "sigkill"),  # PyCharm: 128+9
    ("Process finished with exit code 1\n", None),
    ("Command exited with non-zero status 1\n", None),  # GNU time
    ("vllm-server   Exited (137) 5 seconds ago\n", None),  # docker ps
])
def test_a_stated_exit_is_not_a_start_that_may_still_run(ending: str, detail: str | None) -> None:
    d = classify(_LOAD + ending)
    assert d.detail == detail


def test_jaxs_info_line_of_a_busy_tpu_after_the_server_served_is_no_failure() -> None:
    text = ("(APIServer pid=100) INFO:     Application startup complete.\n"
            "I1017 16:52:01.123456  5555 xla_bridge.py:897] Unable to initialize backend 'tpu': UNKNOWN: TPU "
            "initialization failed: open(/dev/vfio/0): Device or resource busy: Device or resource busy\n")
    assert classify(text).detail != "tpu_busy"


@pytest.mark.parametrize("line", [
    "jax.errors.JaxRuntimeError: RESOURCE_EXHAUSTED: E1001: CompileTimeScopedVmemOom: Ran out of memory in memory "
    "space vmem while allocating on stack for %ragged_paged_attention.1",
    "RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while allocating on stack for ragged_paged_attention",
])
def test_xlas_coded_on_chip_wordings(line: str) -> None:
    assert classify(line + "\n").detail == "tpu_onchip"


def test_libtpus_lockfile_names_the_process_that_holds_the_tpu() -> None:
    line = ("RuntimeError: Unable to initialize backend 'tpu': ABORTED: The TPU is already in use by process with "
            "pid 22589. Not attempting to load libtpu.so in this process.\n")
    assert (classify(line).detail, classify(line).numbers) == ("tpu_busy", {"pid": 22589})


def test_nccl_graph_with_eager_mode_forbidden_says_so() -> None:
    from vllm_guard.diagnose.ladder import Limits, Settings, Stop, next_step
    d = classify("host:1:1 [0] misc/strongstream.cc:53 NCCL WARN NCCL cannot be captured in a graph if either it "
                 "wasn't built with CUDA runtime >= 11.3 or if the installed CUDA driver < R465.\n")
    stop = next_step(d, Settings(), Limits(allow_enforce_eager=False))
    assert isinstance(stop, Stop) and "allow-enforce-eager is false" in stop.reason


# A third review's cases (after 436020f)

def test_a_served_start_stopped_by_docker_is_no_failure_and_the_earlier_one_is_diagnosed() -> None:
    text = ("vllm-1  | INFO 05-01 09:00:00 [api_server.py:1] vLLM API server version 0.9.2\n"
            "vllm-1  | INFO 05-01 09:00:30 [loader.py:1] Model loading took 14.99 GiB and 20.1 seconds\n"
            "vllm-1  | ERROR 05-01 09:00:40 [core.py:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
            "2.00 GiB. GPU 0 has a total capacity of 23.64 GiB of which 1.10 GiB is free.\n"
            "vllm-1 exited with code 1\n"
            "vllm-1  | INFO 05-01 10:00:00 [api_server.py:1] vLLM API server version 0.9.2\n"
            "vllm-1  | INFO 05-01 10:00:30 [loader.py:1] Model loading took 14.99 GiB and 20.1 seconds\n"
            "vllm-1  | INFO:     Application startup complete.\n"
            "vllm-1  | INFO:     172.18.0.1:51234 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
            "Gracefully stopping... (press Ctrl+C again to force)\n"
            "vllm-1 exited with code 137\n")
    assert classify(text).cls == "oom_profiling"


@pytest.mark.parametrize("line", [
    "ERROR 05-01 09:00:40 [core.py:1] Worker process exited with exit code 255",  # a program's exit(-1)
    "ERROR 05-01 09:00:40 [core.py:1] Worker proc VllmWorker-0 died unexpectedly (exit code: 134)",
])
def test_a_positive_exit_code_in_a_log_is_no_signal(line: str) -> None:
    assert classify(_LOAD + line + "\n").exit_signal is None


@pytest.mark.parametrize("line", [
    "nvcc fatal   : Value 'sm_121a' is not defined for option 'gpu-code'",  # a kernel build's nvcc, not ptxas
    "nvcc fatal   : Value 'sm_90' is not defined for option 'gpu-architecture'",
])
def test_nvccs_architecture_refusal_is_not_tritons_ptxas(line: str) -> None:
    assert classify(_LOAD + line + "\n").detail != "ptxas_arch"


def test_a_ptxas_refusal_in_a_start_that_served_is_no_failure() -> None:
    # Inductor's max-autotune logs a failed choice and goes on
    text = (_LOAD + "ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'\n"
            "(APIServer pid=1) INFO:     Application startup complete.\n")
    assert classify(text).detail != "ptxas_arch"


# A fourth review's cases (after 3584c48)

_READY_THEN_HARMONY = (
    "INFO 05-10 10:00:00 [api_server.py:1900] vLLM API server version 0.33.0\n"
    "INFO 05-10 10:01:40 [api_server.py:1950] Starting vLLM server on http://0.0.0.0:8000\n"
    "INFO:     Application startup complete.\n"
    'INFO:     10.0.0.5:51234 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error\n'
    "ERROR 05-10 10:02:00 [serving.py:300] Error in preprocessing prompt inputs\n"
    "ERROR 05-10 10:02:00 [serving.py:300] openai_harmony.HarmonyError: error downloading or loading vocab file: "
    "failed to download or load vocab file\n")


def test_harmonys_vocabulary_at_the_first_request_of_a_ready_server_is_no_start_failure() -> None:
    # vLLM 0.33 loads the vocabulary at the first gpt-oss request, after the server is ready
    assert classify(_READY_THEN_HARMONY).cls == "unknown"


def test_a_remote_code_packages_warning_vllm_went_on_from_does_not_hide_the_architecture_error() -> None:
    # vLLM 0.11-0.34's Transformers fallback logs the remote class it could not load and goes on
    w = "WARNING 10-20 08:00:05 [dynamic_module.py:57] "
    text = (f"{w}Unable to load modeling_foo.FooForCausalLM from org/foo-7b on HF Hub.\n{w}Traceback (most recent "
            f"call last):\n{w}  File \"/usr/lib/python3.12/site-packages/transformers/dynamic_module_utils.py\", line "
            f"182, in check_imports\n{w}    raise ImportError(\n{w}ImportError: This modeling file requires the "
            f"following packages that were not found in your environment: flash_attn. Run `pip install flash_attn`\n"
            "ValueError: Model architectures ['FooForCausalLM'] are not supported for now. Supported architectures: "
            "dict_keys(['LlamaForCausalLM'])\n")
    assert classify(text).cls == "unsupported_architecture"


_WAITS = ("INFO 05-01 10:00:09 [llm_engine.py:240] Initializing a V0 LLM engine (v0.8.5) with config: model='Qwen'\n"
          "INFO 05-01 10:00:10 [ray_utils.py:335] No current placement group found. Creating a new placement group.\n"
          + "".join(f"INFO 05-01 10:0{n}:00 [ray_utils.py:231] Waiting for creating a placement group of specs for "
                    f"{s} seconds. specs=[{{'GPU': 1.0}}, {{'GPU': 1.0}}]\n" for n, s in ((1, 10), (2, 30), (3, 70))))


@pytest.mark.parametrize("missing", [
    "ModuleNotFoundError: No module named 'flash_attn'\n",  # the line alone
    ('Traceback (most recent call last):\n  File "/usr/lib/python3.12/site-packages/vllm/model_executor/layers/'
     'quantization/utils.py", line 12, in <module>\n    import flash_attn\n'
     "ModuleNotFoundError: No module named 'flash_attn'\n"),  # framed by an installed package
])
def test_a_missing_module_the_start_went_on_from_does_not_hide_the_hang_after_it(missing: str) -> None:
    d = classify("INFO 05-01 10:00:03 [api_server.py:1043] vLLM API server version 0.8.5\n" + missing + _WAITS)
    assert (d.cls, d.stage) == ("startup_hang", "ray_placement")


def test_a_shells_report_of_the_kill_is_not_the_start_going_on() -> None:
    # blind27/b27-008: zsh's job line after the engine's last error
    assert classify(blind_log("blind27", "b27-008")).detail == "package_missing"


def test_a_run_of_a_logged_failure_reads_what_follows_once() -> None:
    # the condition's answer for each of the lines: none of them is the last (an INFO line follows), and the
    # paste that stops at them reads them
    line = ("ERROR 11-29 06:00:00 [config.py:40] Failed to import Triton kernels. Please make sure your triton "
            "version is compatible. Error: No module named 'triton_kernels.matmul_ogs'\n")
    assert classify(line * 50 + "INFO 11-29 06:00:01 [core.py:1] next line\n").cls == "unknown"
    assert classify(line * 50).detail == "triton_kernels"


# A fifth review's cases (after ae9f60a)

_C10D_CLIENT = ("[W socket.cpp:697] [c10d] The client socket has failed to connect to [localhost]:29500 (errno: 99 - "
                "Cannot assign requested address).\n")


def test_torchs_routine_client_connect_warning_is_no_bind_failure() -> None:
    # torch tries IPv6 first and connects: the start goes on to vLLM's own KV failure
    text = (_C10D_CLIENT + "INFO 06-01 10:02:11 [gpu_model_runner.py:1347] Model loading took 65.5 GiB and 120 "
            "seconds\nERROR 06-01 10:02:30 [core.py:396] ValueError: To serve at least one request with the models's "
            "max seq len (131072), (20.00 GiB KV cache is needed, which is larger than the available KV cache memory "
            "(6.50 GiB). Based on the available memory, the estimated maximum model length is 42576. Try increasing "
            "`gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.\n")
    assert classify(text).cls == "kv_cache_too_small"
    assert classify(_C10D_CLIENT).detail != "bind_address"


@pytest.mark.parametrize("line", [
    "RuntimeError: The server socket has failed to bind to 10.0.0.7:29500 (errno: 99 - Cannot assign requested "
    "address).",
    "ERROR:    [Errno 99] error while attempting to bind on address ('10.0.0.7', 8000): cannot assign requested "
    "address",
])
def test_a_servers_bind_to_an_address_not_the_hosts(line: str) -> None:
    assert classify(line + "\n").detail == "bind_address"


def test_an_adapter_loaded_at_run_time_by_a_ready_server_is_no_start_failure() -> None:
    text = ("INFO:     Application startup complete.\n"
            "ERROR 06-01 10:05:01 [core.py:800] Invocation of add_lora method failed\n"
            "ERROR 06-01 10:05:01 [core.py:800] ValueError: While loading /adapters/x, expected target modules in "
            "{'q_proj', 'v_proj'} but received ['model.unembed_tokens']. Please verify that the loaded LoRA module "
            "is correct\n")
    assert classify(text).cls == "unknown"


def test_vllm_0_11s_list_of_lora_modules() -> None:
    text = ("ValueError: While loading /adapters/x, expected target modules in ['q_proj', 'k_proj'] but received "
            "['model.unembed_tokens']. Please verify that the loaded LoRA module is correct\n")
    assert classify(text).detail == "lora_modules"


def test_a_users_logits_processor_without_an_attribute_is_not_transformers() -> None:
    p = "(EngineCore_DP0 pid=77) ERROR 06-01 10:00:30 [core.py:708] "
    text = (f"{p}Traceback (most recent call last):\n"
            f'{p}  File "/app/my_plugins/banned_words.py", line 31, in is_argmax_invariant\n'
            f"{p}    return self.invariant\n"
            f"{p}AttributeError: 'BannedWordsLogitsProcessor' object has no attribute 'invariant'\n")
    assert classify(text).detail != "processor_api"
    other = text.replace("BannedWordsLogitsProcessor", "MyPostProcessor")  # a user's frames: not read either
    assert classify(other).detail != "processor_api"


@pytest.mark.parametrize(("log_seqs", "profile_seqs", "blocks", "steps"), [
    (1024, None, 658, True),   # the log's figure: step to vLLM's count
    (1024, 512, 658, False),   # the profile already asks no more than the count
    (300, None, 0, False),     # no block at all: more memory, not fewer sequences
])
def test_the_mamba_blocks_step(log_seqs: int, profile_seqs: int | None, blocks: int, steps: bool) -> None:
    from vllm_guard.diagnose.ladder import Settings, Step, next_step

    d = classify(f"ValueError: max_num_seqs ({log_seqs}) exceeds available Mamba cache blocks ({blocks}).")
    assert isinstance(next_step(d, Settings(max_num_seqs=profile_seqs)), Step) is steps
