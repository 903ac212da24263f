"""`explain` on blind168 and after (tests/data/real-logs), issue 26's sets after their one scoring, and the settings a
log shows, which the ladder's next step and "what helps" start from.

blind168, a paste from a page written in Chinese, scored once at ec9d74b: 1 of 1. blind169, failed starts quoted in
the commit messages of vLLM's hardware plugins (vllm-ascend, vllm-spyre, vllm-gaudi, tpu-inference), walked in order,
scored once at b5f9cdc: 10 of 20, one confident error. Its misses taught a ZMQ socket's bind on a port in use,
transformers' later wording of the Hub out of reach, torch_npu's graph capture refusing TASK_QUEUE_ENABLE=2,
vllm-spyre's warmup shapes, Gaudi's device OOM, vllm-gaudi's build check and CANN's later wording of a device index
it cannot see. blind170, more of those commit messages (Gaudi's plugin and fork, recipes, KServe, llm-compressor,
NeMo RL, tpu-inference), scored once at 5989dfd: 11 of 16, one confident error; it taught Triton newer than torch's
Inductor, and vLLM's encoder budget message with its head left out. blind171 (SkyRL's commit messages, scored once
at a139dac: 5 of 7) taught nothing that a rule should read; blind172 (serving platforms' and model projects' commit
messages, scored once at cf4b579: 7 of 9, one confident error) a CUDA library the loader cannot open, quoted indented.

The settings: V0's INFO advice "set 'enforce_eager=True'" (every graph capture's) read as the start's, a pasted
command line not read at all, and advice to make a change the start had already made.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify, starts
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import Settings, Step, Stop, next_step, settings_from_log


@pytest.mark.parametrize(("name", "cls", "detail"), [
    ("b169-004", "port_in_use", "zmq_port"),  # zmq.error.ZMQError: Address already in use (addr='tcp://...')
    ("b169-002", "network", "hub"),  # transformers' "We couldn't connect to ... to load the files"
    ("b169-006", "usage_error", "npu_task_queue"),  # "Do not support TASK_QUEUE_ENABLE = 2 during NPU graph capture"
    ("b169-013", "usage_error", "spyre_warmup"),  # "Warmup shape [...] results in a maximum sequence length of"
    ("b169-019", "oom_loading", None),  # "FATAL ERROR :: MODULE:PT_DEVMEM Allocation failed for size::134217728"
    ("b169-018", "version_mismatch", "gaudi_build"),  # "build: '1.23.0.post1' doesn't match pattern"
    ("b169-007", "too_few_gpus", None),  # "Failed to set visible device. The invalid device is 1"
])
def test_what_blind169_taught(name: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log("blind169", name))
    assert (d.cls, d.detail) == (cls, detail)


@pytest.mark.parametrize(("name", "cls", "detail"), [
    ("b170-004", "version_mismatch", "triton_torch"),  # torch 2.5's Inductor reading Triton 3.2's AttrsDescriptor
    ("b170-014", "usage_error", "mm_budget"),  # "max_tokens_per_mm_item (2496) is larger than", its head left out
])
def test_what_blind170_taught(name: str, cls: str, detail: str) -> None:
    d = classify(blind_log("blind170", name))
    assert (d.cls, d.detail) == (cls, detail)


@pytest.mark.parametrize("line", [
    "  ImportError: libcudart.so.13: cannot open shared object file",  # blind172/b172-007, quoted indented
    "ImportError: libcudart.so.13: cannot open shared object file: No such file or directory",
])
def test_a_cuda_library_the_loader_cannot_open_is_the_install_quoted_indented_or_not(line: str) -> None:
    assert classify(line + "\n").detail == "extension_abi"
    assert classify(blind_log("blind172", "b172-007")).detail == "extension_abi"


def test_dataclasses_refusal_is_tritons_only_at_inductors_read_of_it() -> None:
    elsewhere = ('  File "/x/app.py", line 3, in <module>\n    fields(Config)\n'
                 "TypeError: must be called with a dataclass type or instance\n")
    assert classify(elsewhere).detail != "triton_torch"


def test_a_zmq_bind_names_its_port_retries_once_and_then_names_the_fixed_ports() -> None:
    # two reviews: vLLM picks most of its ZMQ ports itself (a race: one more start picks another), but
    # --data-parallel-rpc-port, a connector's ports and NIXL's side channel are fixed by a setting
    d = classify("zmq.error.ZMQError: Address already in use (addr='tcp://10.0.0.3:30012')\n")
    assert (d.cls, d.detail, d.numbers) == ("port_in_use", "zmq_port", {"port": 30012})
    retry = next_step(d, Settings())
    assert isinstance(retry, Step) and not retry.change
    stop = next_step(d, Settings(), unchanged_retries=1)
    assert isinstance(stop, Stop) and "--data-parallel-rpc-port" in stop.reason \
        and "VLLM_NIXL_SIDE_CHANNEL_PORT" in stop.reason
    assert not any(item.startswith("--port") for item in advice_for(d).helps)
    # a start that served: a later request's socket is not the start's failure
    served = "INFO 01-01 10:00:00 [api_server.py:1] Application startup complete.\n"
    assert classify(served + "zmq.error.ZMQError: Address already in use (addr='tcp://10.0.0.3:30012')\n").cls \
        != "port_in_use"


def test_the_stops_name_the_fix_the_message_names() -> None:
    npu = next_step(classify(blind_log("blind169", "b169-006")), Settings())
    assert isinstance(npu, Stop) and "TASK_QUEUE_ENABLE=1" in npu.reason
    gaudi = advice_for(classify(blind_log("blind169", "b169-018")))
    assert any("VLLM_BUILD" in item for item in gaudi.helps)


def test_a_port_is_shown_as_its_number(capsys: pytest.CaptureFixture[str]) -> None:
    import sys

    from vllm_guard.report.explain import print_explain

    d = classify("ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already "
                 "in use\n")
    print_explain(d, next_step(d, Settings()), sys.stdout)
    assert "numbers: port 8000" in capsys.readouterr().out


@pytest.mark.parametrize("warning", [
    # a terminal's wrap inside vLLM's _C warning (the review's case: the rest begins "Error(" with no header)
    "WARNING 03-01 10:00:00 [_custom_ops.py:21] Failed to import from vllm._C with Import\n"
    "Error('libcuda.so.1: cannot open shared object file: No such file or directory')\n",
    # ... wrapped over three lines
    "WARNING 03-01 10:00:00 [_custom_ops.py:21] Failed to import from vllm._C with ModuleNotFou\n"
    "ndError(\"No module named 'vllm._C'\n\")\n",
    # vllm-ascend's own (device_allocator/camem.py), an ERROR record in 0.7.3-0.8.x, whole and wrapped
    "ERROR 03-01 10:00:00 [camem.py:63] Failed to import vllm_ascend_C:No module named 'vllm_ascend.vllm_ascend_C'\n",
    "ERROR 03-01 10:00:00 [camem.py:63] Failed to import vllm_ascend_C:libascend_hal.so: cannot open shared obje\n"
    "ct file: No such file or directory\n",
])
def test_an_import_warning_before_the_banner_wrapped_or_vllm_ascends_is_part_of_the_one_start(warning: str) -> None:
    banner = "INFO 03-01 10:00:05 [api_server.py:1043] vLLM API server version 0.8.5\n"
    assert len(starts(warning + banner)) == 1
    # a record after the wrapped rest still counts: a start that died with it, then another, are two
    error = "ERROR 03-01 10:00:02 [core.py:1] EngineCore failed to start.\n"
    assert len(starts(warning + error + banner)) == 2


def test_v0s_advice_to_run_eager_logged_on_every_graph_capture_is_not_the_starts_setting() -> None:
    # blind3/b3-038: V0's model_runner (0.4-0.10) logs this on every start that captures CUDA graphs, then the
    # capture ran out of memory; reading 'enforce_eager=True' from it made the ladder stop "already eager"
    d = classify(blind_log("blind3", "b3-038"))
    assert settings_from_log(d).enforce_eager is False
    step = next_step(d, settings_from_log(d))
    assert isinstance(step, Step) and step.param == "enforce-eager"


@pytest.mark.parametrize(("line", "settings"), [
    # 0.8+'s args as vLLM read them, logged before a config check refuses the start
    ("INFO 11-02 15:01:42 [utils.py:233] non-default args: {'model': 'm', 'max_model_len': 8192, "
     "'enforce_eager': True}", {"max_model_len": 8192, "enforce_eager": True}),
    ("INFO 05-26 18:53:37 [api_server.py:1044] args: Namespace(subparser='serve', max_model_len=None, "
     "enforce_eager=True)", {"enforce_eager": True}),
    # advice naming the setting, in an exception's own words however it is laid out (a review's forms)
    ("  NotImplementedError: graph mode is not supported here; set enforce_eager=True", {}),
    ("E   NotImplementedError: graph mode is not supported here; set enforce_eager=True", {}),
    ("ray.exceptions.RayTaskError(NotImplementedError): set enforce_eager=True", {}),
])
def test_settings_are_read_from_vllms_own_dumps_of_them_only(line: str, settings: dict[str, object]) -> None:
    got = settings_from_log(classify(line + "\n"))
    assert {k: getattr(got, k) for k in settings} == settings
    if not settings:
        assert got.enforce_eager is False


def test_a_pasted_command_line_is_the_starts_settings_until_vllm_dumps_its_own() -> None:
    # blind8/b8-020: the command, then vLLM's error; it ran eager, so eager mode is no step to offer
    d = classify(blind_log("blind8", "b8-020"))
    assert settings_from_log(d).enforce_eager is True
    assert settings_from_log(d).max_model_len == 4096
    step = next_step(d, settings_from_log(d))
    assert not (isinstance(step, Step) and step.param == "enforce-eager")


@pytest.mark.parametrize(("command", "settings"), [
    ("root@host:/workspace# python3 -m vllm.entrypoints.openai.api_server \\\n  --model /m --max-model-len 32k \\\n"
     "  --port 8001 --kv-cache-dtype fp8", {"port": 8001, "max_model_len": 32000, "kv_cache_dtype": "fp8"}),
    ("$ vllm serve m --max-num-seqs=8 --gpu-memory-utilization 0.85",
     {"max_num_seqs": 8, "gpu_memory_utilization": 0.85}),
    # what the shell or vLLM's parser cannot read is no setting: an unclosed quote, a --config file not at hand
    ("vllm serve m --max-model-len 4096 --chat-template '{{ x }}", {}),
    ("vllm serve m --max-model-len 4096 --config serve.yaml", {}),
    # argparse's own refusal names the program: no command
    ("vllm serve: error: argument --max-model-len: invalid parse_human_int value: 'x'", {}),
])
def test_a_pasted_command_line_read_as_vllms_parser_reads_it(command: str, settings: dict[str, object]) -> None:
    assert classify(command + "\n").context == settings
    # vLLM's resolved value, later in the log, wins
    dump = "INFO 01-01 10:00:00 [core.py:1] Initializing a V1 LLM engine (v0.9.1) with config: max_seq_len=2048, x\n"
    assert classify(command + "\n" + dump).context.get("max_model_len") == 2048


def test_advice_to_set_what_the_start_already_set_is_marked_as_made() -> None:
    # blind8/b8-020 ran --enforce-eager: "what helps" still lists eager mode, marked, not as a fresh change
    eager = [item for item in advice_for(classify(blind_log("blind8", "b8-020"))).helps if "--enforce-eager" in item]
    assert eager == ["--enforce-eager (no CUDA-graph memory; this start already ran eager)"]
    dump = "INFO 01-01 10:00:00 [core.py:1] Initializing an LLM engine with config: x, kv_cache_dtype=fp8_e5m2, y\n"
    kv = classify(dump + "ValueError: The model's max seq len (32768) is larger than the maximum number of tokens "
                  "that can be stored in KV cache (8192). Try increasing `gpu_memory_utilization` or decreasing "
                  "`max_model_len` when initializing the engine.\n")
    marked = [item for item in advice_for(kv).helps if item.startswith("--kv-cache-dtype fp8")]
    assert marked and all(item.endswith("this start's KV cache was already fp8)") for item in marked)
    assert not any("already" in item for item in advice_for(classify(
        "ValueError: No available memory for the cache blocks.\n")).helps)


@pytest.mark.parametrize(("text", "candidate"), [
    # blind169/b169-003: vllm-ascend reading the language model's layers at the top of an audio model's config
    ("AttributeError: 'Qwen2AudioConfig' object has no attribute 'num_hidden_layers'\n", "unsupported_architecture"),
    ("AttributeError: 'InternVLChatConfig' object has no attribute 'hidden_size'\n", "unsupported_architecture"),
    # vLLM's own config classes are another release's fields, never the model's
    ("AttributeError: 'CacheConfig' object has no attribute 'x'\n", None),
])
def test_a_models_config_without_a_language_models_setting_is_a_candidate(text: str, candidate: str | None) -> None:
    d = classify(text)
    assert d.cls != "unsupported_architecture"  # labelled both ways: a candidate, not a class
    assert (d.hint[0] if d.hint else None) == candidate


# --- a review's cases: the settings of one start only, and only its own ---------------------------------------------

_OOM = ("Traceback (most recent call last):\n  File \"/v/vllm/worker/model_runner.py\", line 1500, in capture_model\n"
        "    graph_runner.capture(**capture_inputs)\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
        "2.00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.2 GiB is free.\n")
_BANNER = "INFO 05-01 10:00:00 [api_server.py:1043] vLLM API server version 0.8.5\n"


def test_a_second_command_line_is_another_start_and_vllms_own_dump_beats_a_command() -> None:
    first = ("$ vllm serve m --max-model-len 8192\n" + _BANNER + "INFO 05-01 10:00:00 [api_server.py:1044] args: "
             "Namespace(model='m', max_model_len=8192, enforce_eager=False)\n" + _OOM)
    second = ("$ vllm serve m --max-model-len 8192 --enforce-eager\n" + _BANNER + "INFO:     Application startup "
              "complete.\n")
    found = starts(first + second)
    assert len(found) == 2 and found[0].diagnosis.cls == "oom_cudagraph"
    assert settings_from_log(found[0].diagnosis).enforce_eager is False
    step = next_step(found[0].diagnosis, settings_from_log(found[0].diagnosis))
    assert isinstance(step, Step) and step.param == "enforce-eager"
    # the command after the log it belongs to (a paste's order) does not beat vLLM's dump either
    after = (_BANNER + "INFO 05-01 10:00:00 [api_server.py:1044] args: Namespace(model='m', enforce_eager=False)\n"
             + _OOM + "$ vllm serve m --enforce-eager\n")
    assert settings_from_log(classify(after)).enforce_eager is False


@pytest.mark.parametrize("head", [
    # prose between two commands: the last one is the start's, its settings alone (not the first one's eager mode)
    "This one works:\n$ vllm serve m --enforce-eager\nThis one fails:\n$ vllm serve m\n",
    # a shell comment is no command
    "#!/bin/bash\n# vllm serve m --enforce-eager --kv-cache-dtype fp8\nvllm serve m --max-model-len 32768\n",
])
def test_only_the_last_command_of_a_start_gives_its_settings(head: str) -> None:
    d = classify(head + _BANNER + _OOM)
    assert settings_from_log(d).enforce_eager is False and settings_from_log(d).kv_cache_dtype == "auto"
    assert not any("already" in item for item in advice_for(d).helps)


@pytest.mark.parametrize("command", [
    "$ vllm serve m --enforce-eager 2>&1 | tee serve.log",
    "$ vllm serve m --enforce-eager > serve.log 2>&1 &",
    "$ vllm serve m --enforce-eager  # the eager run",
    "$ CUDA_VISIBLE_DEVICES=0 nohup vllm serve m --enforce-eager",
    "(venv) $ vllm serve m --enforce-eager",
])
def test_a_command_line_is_read_up_to_the_shells_own_syntax(command: str) -> None:
    assert classify(command + "\n").context == {"enforce_eager": True}


def test_a_command_line_the_parser_refuses_is_no_setting_and_no_crash() -> None:
    for command in ("$ vllm serve m --speculative-config.method ngram --speculative-config.method.x 2",
                    "$ vllm serve m --compilation-config " + "[" * 50_000, "$ vllm serve m --max-model-len auto"):
        assert classify(command + "\n").context == {}


def test_a_nested_configs_item_is_not_the_starts() -> None:
    # the draft model's max_model_len inside speculative_config
    line = ("INFO 05-01 10:00:00 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-8B', 'speculative_config': "
            "{'model': 'Qwen/Qwen3-0.6B', 'num_speculative_tokens': 5, 'max_model_len': 2048}, 'max_num_seqs': 8}\n")
    assert classify(line).context == {"max_num_seqs": 8}


def test_an_exception_after_an_import_warning_is_the_starts_own() -> None:
    # a paste that dropped the Traceback header: the exception line is no wrapped rest of the warning
    warning = ("WARNING 05-01 10:00:00 [_custom_ops.py:21] Failed to import from vllm._C with ImportError('libcudart."
               "so.12: cannot open shared object file: No such file or directory')\n")
    served = ("INFO 05-01 10:05:00 [api_server.py:1043] vLLM API server version 0.6.3\n"
              "INFO:     Application startup complete.\n")
    assert len(starts(warning + "RuntimeError: Failed to infer device type\n" + served)) == 2


def test_a_command_pasted_after_its_log_is_that_starts() -> None:
    # blind8/b8-028: the error, then the command that gave it (with --enforce-eager): one start, its settings
    found = starts(blind_log("blind8", "b8-028"))
    assert len(found) == 1 and settings_from_log(found[0].diagnosis).enforce_eager is True
    # a second command that printed nothing yet is still the start before's; one that printed a start is its own
    assert len(starts(_BANNER + _OOM + "$ vllm serve m\n$ vllm serve m --enforce-eager\n")) == 1
    # ... and the guard's next attempt after such a command is still a start of its own
    attempt = "vllm-guard: attempt 2/3 (max-model-len 4096): starting vLLM\n"
    assert len(starts(_BANNER + _OOM + "$ vllm serve m\n" + attempt + _BANNER + _OOM)) == 2


# --- a second review's cases: which lines make a start, and which command a start ran --------------------------------

_EAGER_CMD = "$ vllm serve m --enforce-eager\n"


@pytest.mark.parametrize(("after", "second"), [
    ("usage: vllm serve [-h]\nvllm serve: error: unrecognized arguments: --enforce-eagre\n", "usage_error"),
    ("Segmentation fault (core dumped)\n", None),
])
def test_a_command_with_output_of_its_own_after_a_start_is_a_start_of_its_own(after: str, second: str | None) -> None:
    found = starts("$ vllm serve m\n" + _BANNER + _OOM + _EAGER_CMD + after)
    assert len(found) == 2 and found[0].diagnosis.cls == "oom_cudagraph"
    step = next_step(found[0].diagnosis, settings_from_log(found[0].diagnosis))
    assert isinstance(step, Step) and step.param == "enforce-eager"  # the first start ran without eager mode
    assert second is None or found[1].diagnosis.cls == second


def test_a_start_whose_command_vllm_refused_then_the_next_command_and_its_start() -> None:
    typo = "$ vllm serve m --enforce-eagre\nvllm serve: error: unrecognized arguments: --enforce-eagre\n"
    found = starts(typo + _EAGER_CMD + _BANNER + _OOM)
    assert [s.diagnosis.cls for s in found] == ["usage_error", "oom_cudagraph"]
    assert settings_from_log(found[1].diagnosis).enforce_eager is True


@pytest.mark.parametrize("tail", [_EAGER_CMD, "Error above. I will try:\n" + _EAGER_CMD])
def test_the_next_command_pasted_after_a_start_that_ran_its_own_is_not_its_setting(tail: str) -> None:
    found = starts("$ vllm serve m\n" + _BANNER + _OOM + tail)
    assert len(found) == 1 and settings_from_log(found[0].diagnosis).enforce_eager is False


def test_prose_between_two_commands_or_before_one_makes_no_start() -> None:
    # blind8/b8-021: two commands with "or" between them, then the error: one start
    assert len(starts(blind_log("blind8", "b8-021"))) == 1
    # words naming an error before the command and its log: no start of their own
    assert len(starts("Loading the model fails with this Error:\n$ vllm serve m\n" + _BANNER + _OOM)) == 1


def test_a_command_after_an_exception_line_is_read() -> None:
    v1 = ("(APIServer pid=5) RuntimeError: Engine core initialization failed. See root cause above. Failed core "
          "proc(s): {}\n")
    assert settings_from_log(classify(_BANNER + _OOM + v1 + _EAGER_CMD)).enforce_eager is True


@pytest.mark.parametrize("text", ["## vllm serve m --enforce-eager", "### vllm serve m --enforce-eager",
                                  "-> vllm serve m --enforce-eager", "=> vllm serve m --enforce-eager"])
def test_a_heading_or_an_arrow_is_no_prompt(text: str) -> None:
    assert classify(text + "\n" + _BANNER + _OOM).context.get("enforce_eager") is None


def test_a_dump_a_terminal_wrapped_is_not_read_past_its_first_line() -> None:
    dump = ("INFO 05-01 10:00:00 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-8B', 'speculative_config': "
            "{'model': 'Qwen/Qwen3-0.6B',\n'num_speculative_tokens': 5, 'max_model_len': 2048}}\n")
    assert "max_model_len" not in classify(dump).context



def test_an_eager_graph_capture_oom_without_max_num_seqs_says_it_is_unknown_not_at_its_floor() -> None:
    d = classify(_EAGER_CMD + _BANNER + _OOM)
    stop = next_step(d, settings_from_log(d))
    assert isinstance(stop, Stop) and "does not show max-num-seqs" in stop.reason
    assert isinstance(next_step(d, Settings(enforce_eager=True, max_num_seqs=1)), Stop)
    step = next_step(d, Settings(enforce_eager=True, max_num_seqs=8))
    assert isinstance(step, Step) and (step.param, step.value) == ("max-num-seqs", 4)


# --- container runs and sudo: the command lines a Docker user pastes -------------------------------------------------

@pytest.mark.parametrize(("name", "settings"), [
    # the image's entrypoint is vLLM's: its arguments follow the image
    ("blind40/b40-001", {"port": 8008, "max_model_len": 262144, "max_num_seqs": 256, "gpu_memory_utilization": 0.9}),
    # sudo, continued over lines (one backslash with no space before it), the image then "vllm serve" as its command
    ("blind25/b25-013", {"port": 9527, "max_model_len": 4096, "max_num_batched_tokens": 4096,
                         "gpu_memory_utilization": 0.9}),
    # another image, its command "vllm serve ..."
    ("blind4/b4-022", {"max_model_len": 4000, "gpu_memory_utilization": 0.9}),
])
def test_a_container_runs_vllm_arguments_are_the_starts_settings(name: str, settings: dict[str, object]) -> None:
    folder, stem = name.split("/")
    assert classify(blind_log(folder, stem)).context == settings


@pytest.mark.parametrize(("command", "settings"), [
    ("$ docker run --gpus all -p 8000:8000 --ipc=host docker.io/vllm/vllm-openai:v0.7.1 --model m --enforce-eager",
     {"enforce_eager": True}),
    ("$ podman run --device nvidia.com/gpu=all vllm/vllm-openai-rocm:latest --max-model-len 8k",
     {"max_model_len": 8000}),
    ("$ docker run --rm -e HF_TOKEN=x vllm/vllm-openai python3 -m vllm.entrypoints.openai.api_server --port 8001",
     {"port": 8001}),
    # a volume that names vLLM's image is no image; nothing after it is vLLM's
    ("$ docker run -v /srv/vllm-openai:/models ubuntu:22.04 --max-model-len 8192", {}),
    ("$ sudo -E vllm serve m --max-num-seqs 4", {"max_num_seqs": 4}),
    ("user@host:~$ sudo -E CUDA_VISIBLE_DEVICES=1 vllm serve m --port 9000", {"port": 9000}),
])
def test_a_container_run_or_sudo_command_line_is_read(command: str, settings: dict[str, object]) -> None:
    assert classify(command + "\n").context == settings


def test_a_container_run_of_another_image_does_not_hide_the_starts_command() -> None:
    log = "$ vllm serve m --enforce-eager\n" + _BANNER + "$ docker run --rm redis:7 --port 6379\n" + _OOM
    assert settings_from_log(classify(log)).enforce_eager is True
