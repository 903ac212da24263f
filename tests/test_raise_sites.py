"""vLLM's own raise sites (issue 26, item 2): the table scripts/gen_raise_sites.py reads from vLLM's source, and what
`explain` says from it: where a pasted message is raised, and a settings check's refusal pasted without frames."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.raise_sites import is_settings_check, sites_for

ROOT = Path(__file__).resolve().parent.parent


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_raise_sites", ROOT / "scripts" / "gen_raise_sites.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_raise_sites"] = module
    spec.loader.exec_module(module)
    return module


SOURCE = '''
def check(self):
    if self.a:
        raise ValueError(f"max_num_seqs ({self.a}) must be at most the batch size")
    msg = "Pipeline parallelism is not supported with %s" % self.b
    if self.b:
        raise NotImplementedError(msg)
    assert self.c, "Tensor parallel size must be a power of {}".format(2)
    raise RuntimeError("short")
'''


def test_the_generator_reads_each_message_up_to_its_first_field() -> None:
    gen = _generator()
    heads = {(exc, func, gen.head_of(msg)) for exc, func, msg in gen.raise_sites(SOURCE)}
    assert heads == {("ValueError", "check", "max_num_seqs ("),
                     ("NotImplementedError", "check", "Pipeline parallelism is not supported with"),
                     ("AssertionError", "check", "Tensor parallel size must be a power of"),
                     ("RuntimeError", "check", "short")}


def test_the_generator_keeps_the_first_and_last_release_of_each_site(tmp_path: Path) -> None:
    gen = _generator()
    for version in ("0.9.2", "0.10.2", "0.11.2"):
        config = tmp_path / version / "vllm" / "config"
        config.mkdir(parents=True)
        body = SOURCE if version != "0.11.2" else SOURCE.replace("Pipeline", "Pipe-lining")
        (config / "parallel.py").write_text(body)
        (tmp_path / version / "vllm" / "sampling.py").write_text(SOURCE)  # not on the start-up path
    table = gen.collect(tmp_path)
    assert table["versions"] == ["0.9.2", "0.10.2", "0.11.2"] and table["files"] == ["vllm/config/parallel.py"]
    spans = {site[0]: (site[4], site[5]) for site in table["sites"]}
    assert spans == {"Pipeline parallelism is not supported with": (0, 1),
                     "Pipe-lining parallelism is not supported with": (2, 2),
                     "Tensor parallel size must be a power of": (0, 2)}  # shorter heads are not kept


def test_the_committed_table_knows_a_message_with_its_file_and_releases() -> None:
    sites = sites_for("Did not receive response from front-end process within 5 minutes")
    assert {(s.file, s.function) for s in sites} == {("vllm/v1/engine/core.py", "startup_handshake")}
    assert (sites[0].first, sites[0].last) == ("0.9.2", "0.34.0")
    # a message a paste cut after forty characters still names it
    assert sites_for("Did not receive response from front-end proc") == sites


def test_a_settings_checks_refusal_pasted_without_frames_is_usage_error() -> None:
    d = classify("ValueError: enable_expert_parallel must be True to use EPLB.\n")
    assert (d.cls, d.detail, d.confidence) == ("usage_error", "config_check", "medium")
    assert "vllm/config/parallel.py" in d.evidence[-1] and "raise sites of 15 releases" in (d.template or "")


@pytest.mark.parametrize("line", [
    "ValueError: Unknown quantization method: mxfp9",  # a quantization refusal, cut before its list
    "ValueError: Bfloat16 is only supported on GPUs with compute capability of at least 8.0. Your Tesla T4",
])
def test_not_a_settings_refusal_whose_words_name_another_class(line: str) -> None:
    d = classify(line + "\n")
    assert d.cls != "usage_error"
    assert any(e.startswith("vLLM raises this message in") for e in d.evidence)


def test_frames_in_another_file_decide_not_the_words() -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/app/mytool/config.py", line 3, in load\n'
            "ValueError: enable_expert_parallel must be True to use EPLB.\n")
    assert classify(text).cls == "unknown"


def test_the_settings_checks_are_those_the_frames_route_reads() -> None:
    sites = sites_for("enable_expert_parallel must be True to use EPLB.")
    assert sites and all(is_settings_check(s) for s in sites)
    assert not any(is_settings_check(s) for s in sites_for("Did not receive response from front-end process"))


# A newcomer's review of the table's first cut: each of these is no refusal of the settings (hardware, the platform,
# a bug, the model's files, a per-request check, the GPU named in the part vLLM fills in).
@pytest.mark.parametrize("line", [
    "ValueError: Parsed unknown ROCm architecture from GCN arch 'gfx803': could not parse",
    "NotImplementedError: num_compute_units is not implemented for the current platform.",
    "TypeError: get_hash_factors: unsupported type for key 'foo'",
    "ValueError: Torch XLA does not support per-request seed.",
])
def test_not_a_settings_refusal(line: str) -> None:
    assert classify(line + "\n").cls != "usage_error"


def test_v1_forced_where_v1_does_not_run_is_its_own_reading_not_the_generic_route() -> None:
    # vLLM 0.8-0.10 raise it only where VLLM_USE_V1=1 was set by hand: unsetting it runs V0 on the same GPU
    # (rules_settings.py v1_unsupported, from blind86/b86-004), not the raise-site settings route
    d = classify("NotImplementedError: VLLM_USE_V1=1 is not supported with Compute Capability < 8.0.\n")
    assert (d.cls, d.detail) == ("usage_error", "v1_unsupported")


def test_not_once_the_start_got_past_its_settings() -> None:
    text = ("INFO 01-01 00:00:00 [default_loader.py:1] Loading weights took 12.00 seconds\n"
            "INFO 01-01 00:00:01 [gpu_worker.py:1] Available KV cache memory: 50.00 GiB\n"
            "ValueError: enable_expert_parallel must be True to use EPLB.\n")
    assert classify(text).cls != "usage_error"


def test_a_message_logged_again_after_another_programs_traceback_is_still_that_programs() -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/app/mytool/config.py", line 3, in load\n'
            "ValueError: enable_expert_parallel must be True to use EPLB.\n"
            "ERROR job failed: ValueError: enable_expert_parallel must be True to use EPLB.\n")
    assert classify(text).cls == "unknown"


def test_a_platform_helpers_not_implemented_is_no_settings_check() -> None:
    text = ("Traceback (most recent call last):\n"
            '  File "/usr/lib/python3.12/site-packages/vllm/platforms/cpu.py", line 90, in get_max_threads\n'
            "    raise NotImplementedError('Unsupported OS')\n"
            "NotImplementedError: Unsupported OS\n")
    assert classify(text).cls == "unknown"


@pytest.mark.parametrize("line", [
    # platform names are whole words: "cudagraph" is no CUDA, "output" no TPU
    "ValueError: cudagraph_capture_sizes and compilation_config.cudagraph_capture_sizes are mutually exclusive",
    "ValueError: Invalid compilation mode: 7",  # a pydantic validator's (validate_mode_before)
])
def test_settings_refusals_a_review_found_dropped(line: str) -> None:
    d = classify(line + "\n")
    assert (d.cls, d.detail) == ("usage_error", "config_check")


def test_the_generator_names_a_nested_functions_raise_once() -> None:
    gen = _generator()
    source = ("def outer(x):\n"
              "    def inner(y):\n"
              "        raise ValueError('inner refuses this value of y')\n"
              "    return inner(x)\n")
    assert [(exc, func) for exc, func, _ in gen.raise_sites(source)] == [("ValueError", "inner")]
