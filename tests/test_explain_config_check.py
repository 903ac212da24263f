"""vLLM's own settings checks, read by where they raise when no rule knows their message (fallback._config_check).

The real log is failures/058 (vLLM 0.11, SchedulerConfig refusing max_num_batched_tokens below max_model_len, which
its own rule decides); the variants put scheduler.py's other refusals, verbatim from vLLM 0.11-0.33
vllm/config/scheduler.py verify_max_model_len, in its place, as pydantic re-raises them.
"""

from __future__ import annotations

import re

import pytest

from tests.conftest import DATA, blind_log
from vllm_guard.diagnose.classify import classify

REAL = (DATA / "real-logs" / "failures" / "058-unknown.log").read_text()
_INNER = re.compile(r"Value error, max_num_batched_tokens \(512\) is smaller than max_model_len \(4096\)\..*?decrease "
                    r"max_model_len\.")


def _with_inner(message: str) -> str:
    out, n = _INNER.subn(message, REAL)
    assert n == 1
    return out


def test_the_real_log_keeps_its_own_rule() -> None:
    d = classify(REAL)
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "batched_tokens", "high")


@pytest.mark.parametrize("message", [
    "Value error, Chunked prefill must be enabled to set max_num_partial_prefills > 1.",
    "Value error, long_prefill_token_threshold (9000) cannot be greater than the max_model_len (4096).",
    "Value error, self.max_long_partial_prefills=4 must be less than or equal to self.max_num_partial_prefills=2.",
])
def test_a_scheduler_refusal_no_rule_knows_is_a_usage_error(message: str) -> None:
    d = classify(_with_inner(message))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "config_check", "medium")
    assert any(message[:40] in line for line in d.evidence)


def test_a_pydantic_bound_on_a_setting_is_a_usage_error() -> None:
    # Field(ge=1) on max_num_seqs (vllm/config/scheduler.py): pydantic names the field, then the bound
    text = _with_inner("max_num_seqs\n(APIServer pid=266)   Input should be greater than or equal to 1")
    d = classify(text)
    assert (d.cls, d.detail) == ("usage_error", "config_check")


def test_model_config_validation_stays_unknown() -> None:
    # ModelConfig's checks read the model's own files: a JSON decode error there is not a setting (blind3/b3-037)
    d = classify(blind_log("blind3", "b3-037"))
    assert (d.cls, d.confidence) == ("unknown", "none")


def test_a_value_error_of_vllms_older_single_config_file() -> None:
    # vLLM 0.6 vllm/config.py ParallelConfig._verify_args, under create_engine_config
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/engine/arg_utils.py", line 1000, in '
            "create_engine_config\n"
            "    parallel_config = ParallelConfig(\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/config.py", line 950, in __init__\n'
            "    self._verify_args()\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/config.py", line 980, in _verify_args\n'
            "    raise ValueError(\n"
            "ValueError: Unrecognized distributed executor backend rya. Supported values are 'ray', 'mp' or "
            "custom ExecutorBase subclass.\n")
    d = classify(text)
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "config_check", "medium")


def test_a_value_error_elsewhere_in_vllm_is_not_a_settings_check() -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.10/dist-packages/vllm/model_executor/model_loader/loader.py", line 300, '
            "in load_model\n"
            "    raise ValueError(\n"
            "ValueError: something in the checkpoint is off\n")
    assert classify(text).cls == "unknown"


def test_model_configs_own_file_is_not_a_settings_check() -> None:
    # vLLM 0.10+ keeps ModelConfig in config/model.py: its checks read the model's files
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/dist-packages/vllm/config/model.py", line 600, in __post_init__\n'
            "    raise ValueError(\n"
            "ValueError: something only this checkpoint says\n")
    assert classify(text).cls == "unknown"


def test_another_programs_config_class_is_not_vllms() -> None:
    # a pydantic validation error for a config class of Ray Serve's, with none of vLLM's frames
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/local/lib/python3.12/site-packages/ray/llm/_internal/serve/configs/server_models.py", line '
            "200, in __init__\n"
            "    super().__init__(**data)\n"
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for LLMConfig\n"
            "  Value error, accelerator_type must be set\n")
    assert classify(text).cls == "unknown"


def test_a_frameless_valueerror_naming_a_vllm_option_is_a_usage_error() -> None:
    # blind6/b6-010: tt-inference-server's vLLM fork refusing a length on its device, the one line a CI issue quoted
    d = classify(blind_log("blind6", "b6-010"))
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "config_check", "medium")
    assert "--max_model_len" in d.evidence[1]


@pytest.mark.parametrize("text", [
    "ValueError: pass --my-own-flag to the trainer\n",  # not an option of vLLM's
    "RuntimeError: Set --max-model-len lower\n",  # not a settings check's ValueError
    "ValueError: Set --max-model-len lower\nINFO 01-01 00:00:01 [launcher.py:1] Application startup complete.\n",
])
def test_only_a_valueerror_naming_a_vllm_option_in_a_failed_start(text: str) -> None:
    assert classify(text).cls == "unknown", text


def test_another_programs_traceback_naming_a_vllm_flag_is_its_own() -> None:
    # transformers' HfArgumentParser refusing arguments it was handed: --model is also vLLM's option
    text = ("Traceback (most recent call last):\n  File \"/home/u/train.py\", line 9, in <module>\n"
            "    args = parser.parse_args_into_dataclasses()\n  File \"/usr/lib/python3.11/site-packages/transformers/"
            "hf_argparser.py\", line 348, in parse_args_into_dataclasses\n    raise ValueError(f\"Some specified "
            "arguments are not used by the HfArgumentParser: {remaining_args}\")\nValueError: Some specified arguments "
            "are not used by the HfArgumentParser: ['--model', 'llama']\n")
    assert classify(text).cls == "unknown"


def test_a_users_own_modelconfig_is_not_vllms() -> None:
    text = ("Traceback (most recent call last):\n  File \"/srv/app/settings.py\", line 12, in <module>\n"
            "    cfg = ModelConfig(**raw)\npydantic_core._pydantic_core.ValidationError: 1 validation error for "
            "ModelConfig\n  Value error, api_key must be set [type=value_error, input_value={}, input_type=dict]\n")
    assert classify(text).cls == "unknown"


@pytest.mark.parametrize("message", ["Unable to read /models/llama/generation_config.json",
                                     "quantization_config.targets is malformed"])
def test_a_file_name_or_a_dotted_key_is_not_a_setting(message: str) -> None:
    text = ("Traceback (most recent call last):\n  File \"/usr/lib/python3.12/site-packages/vllm/engine/"
            "arg_utils.py\", line 1300, in create_engine_config\n    model_config = self.create_model_config()\n"
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
            f"  Value error, {message} [type=value_error, input_value=ArgsKwargs((), {{}}), input_type=ArgsKwargs]\n")
    assert classify(text).cls == "unknown"


def test_the_last_exception_may_be_module_qualified() -> None:
    # a warning that quotes a ValueError naming a flag, then the start's real end: Triton's CompilationError
    text = ("WARNING 01-01 00:00:00 [utils.py:1] ignored: ValueError: use --enforce-eager to skip graphs\n"
            "triton.compiler.errors.CompilationError: at 12:4: unsupported operand\n")
    assert classify(text).detail != "config_check"
