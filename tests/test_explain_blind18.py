"""`explain` on blind18 (tests/data/real-logs/blind18), the eighteenth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit 3705a68 (9 of 12 right, 1
confident error; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: pybind11's own binding error, where a platform fork of vLLM calls its compiled device library with
arguments that library's release does not take; and PyTorch's TCPStore saying that the first rank waited for ranks
that never came, which is not the network's fault alone.
"""

from __future__ import annotations

from tests.conftest import DATA, blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.ladder import Settings, Stop, next_step

PYBIND = ("ERROR 08-08 14:35:47 [engine.py:453] __init__(): incompatible constructor arguments. The following "
          "argument types are supported:")


def test_a_pybind11_binding_error_in_a_start_that_never_got_ready_is_a_version_mismatch() -> None:
    # b18-001: tenstorrent's vLLM fork builds ttnn's DispatchCoreConfig(axis=None), which the installed tt-metal's
    # binding does not take: the fork and the compiled library are at different releases
    d = classify(blind_log("blind18", "b18-001"))
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "python_package", "medium")


def test_the_same_line_in_a_start_that_got_ready_is_no_failure() -> None:
    ready = (DATA / "real-logs" / "startups" / "013-llama-3.1-8b-instruct.log").read_text()
    assert classify(PYBIND + "\n" + ready).cls == "unknown"


def test_ranks_that_never_joined_the_store_say_so() -> None:
    # b18-003 (vllm #16334, data parallel 4 with --task embed): "DistStoreError: Timed out after 601 seconds waiting
    # for clients. 1/4 clients joined." The collector labelled it startup_hang (the thread's "hanging"), with network
    # as the second reading: the store's own side cannot tell ranks that hung or failed from ranks that could not
    # connect, so the advice sends the reader to the missing ranks' own lines first. It stays a disputed reading.
    d = classify(blind_log("blind18", "b18-003"))
    assert (d.cls, d.detail, d.numbers) == ("network", "ranks_missing", {"waited_s": 601, "joined": 1, "ranks": 4})
    assert any("other ranks" in helps for helps in advice_for(d).helps)
    assert isinstance(next_step(d, Settings()), Stop)


def test_a_bare_multiple_values_binding_error_is_a_version_mismatch() -> None:
    # After blind18: Python's "got multiple values for argument" is what a caller written for the callee's other
    # release gets. b10-024 is the paste's one line (GLM-4.1V's processor under another transformers), b9-003 its
    # prose summary and a cut traceback, b9-020 a platform plugin calling vLLM's get_attn_backend, typed "typeError".
    for folder, name in (("blind10", "b10-024"), ("blind9", "b9-003"), ("blind9", "b9-020")):
        d = classify(blind_log(folder, name))
        assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "python_package", "medium"), name
        assert any("multiple values for argument" in line for line in d.evidence), name


def test_a_multiple_values_error_in_a_start_that_got_ready_is_no_failure() -> None:
    ready = (DATA / "real-logs" / "startups" / "013-llama-3.1-8b-instruct.log").read_text()
    line = "TypeError: Glm4vProcessor.__init__() got multiple values for argument 'tokenizer'"
    assert classify(line + "\n" + ready).cls == "unknown"
    assert classify(line).cls == "version_mismatch"


USER_SCRIPT = """Traceback (most recent call last):
  File "/home/me/serve.py", line 12, in <module>
    main(args, args=args)
TypeError: main() got multiple values for argument 'args'
"""


def test_a_users_own_script_calling_its_function_wrongly_is_not_a_version() -> None:
    # the traceback's last frame is the user's file: a bug there, not two releases apart (a newcomer's review)
    assert classify(USER_SCRIPT).cls == "unknown"
    installed = USER_SCRIPT.replace("/home/me/serve.py", "/usr/lib/python3.12/site-packages/vllm/entrypoints/llm.py")
    d = classify(installed)
    assert (d.cls, d.confidence) == ("version_mismatch", "medium")
    assert len(d.evidence) == len(set(d.evidence))
    keyword = "TypeError: Processor.__init__() got multiple values for keyword argument 'tokenizer'"
    assert classify(keyword).cls == "version_mismatch"
