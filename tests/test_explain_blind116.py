"""`explain` on blind116 to blind119 (tests/data/real-logs/blind116-119), four blind sets of issue 26, after their
one scoring.

Collected by helpers that never read the classifier: blind116 scored once at cb06225 (0 of 2, one confident error),
blind117 at 2970dc3 (17 of 18, none). What their misses taught: vLLM's _C import warning is no cause where a
traceback ends in an exception of its own that no missing compiled op raises; openai-harmony's "invalid tiktoken
vocab file" is a vocabulary file other than the one it expects (read from its source); and PyTorch's mmap refusal is
read where a paste stops before its errno. blind118 scored once at 7a46b0e (11 of 11, all labelled `unknown`),
blind119 at 00929d9 (16 of 17, none): its miss was PyTorch's TCPStore without libuv, under a native Windows fork.
"""

from __future__ import annotations

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.details import advice_for
from vllm_guard.diagnose.details_files import HARMONY_VOCAB_FILE

C_WARNING = ("WARNING 11-05 07:33:16 [_custom_ops.py:20] Failed to import from vllm._C with ImportError('libcudart.so."
             "12: cannot open shared object file: No such file or directory')\n")


def test_the_c_warning_is_no_cause_where_a_traceback_ends_in_an_exception_of_its_own() -> None:
    # blind116/b116-002: vLLM 0.11's CPU worker parsing lscpu's output under WSL, 'json.decoder.JSONDecodeError'
    d = classify(blind_log("blind116", "b116-002"))
    assert d.cls == "unknown"
    # what a start without its compiled ops raises when it calls one is still read with the warning
    ops = (C_WARNING + "Traceback (most recent call last):\n  File \"/x/vllm/_custom_ops.py\", line 1, in rms_norm\n"
           "AttributeError: '_OpNamespace' '_C' object has no attribute 'rms_norm'\n")
    assert classify(ops).cls == "version_mismatch"
    # xformers built for the same other torch fails first in a V0 profile run: still the extension's reading (a
    # review's finding)
    xformers = (C_WARNING + "Traceback (most recent call last):\n  File \"/x/xformers/ops/fmha/dispatch.py\", line "
                "63, in _run_priority_list\n    raise NotImplementedError(msg)\nNotImplementedError: No operator found "
                "for `memory_efficient_attention_forward` with inputs:\n")
    assert classify(xformers).cls == "version_mismatch"


def test_harmonys_vocabulary_file_that_is_not_the_expected_one() -> None:
    # blind116/b116-001: TIKTOKEN_ENCODINGS_BASE's o200k_base.tiktoken empty ('computed=e3b0c442...', the sha256 of
    # nothing); blind17/b17-003, the same project's other run: 'could not split on ' ' at line 1'
    for part, name in (("blind116", "b116-001"), ("blind17", "b17-003")):
        d = classify(blind_log(part, name))
        assert (d.cls, d.detail) == ("model_access", "harmony_vocab_file")
        assert advice_for(d) is HARMONY_VOCAB_FILE
    # 0.33 loads it at the first request, after the server is ready: no start-up failure then
    ready = ("(APIServer pid=1) INFO:     Application startup complete.\n"
             "(APIServer pid=1) openai_harmony.HarmonyError: invalid tiktoken vocab file: expected token and rank, "
             "could not split on ' ' at line 1\n")
    assert classify(ready).cls == "unknown"


def test_the_mmap_refusal_where_the_paste_stops_before_its_errno() -> None:
    # blind117/b117-001: "... Cannot allocate memory (" and the paste ends
    d = classify(blind_log("blind117", "b117-001"))
    assert (d.cls, d.detail, d.numbers) == ("host_oom", "mmap_enomem", {"mmap_bytes": 4965799096})


def test_what_blind117_read_right_at_its_score() -> None:
    assert [classify(blind_log("blind117", p)).cls for p in ("b117-002", "b117-003")] == ["host_oom", "network"]


def test_a_torch_without_libuv_for_its_tcpstore() -> None:
    # blind119/b119-001: "RuntimeError: use_libuv was requested but PyTorch was built without libuv support"
    d = classify(blind_log("blind119", "b119-001"))
    assert (d.cls, d.detail) == ("version_mismatch", "torch_no_libuv")
    # earlier torch's own spelling ("build without"), as the DistStoreError it is
    d = classify("torch.distributed.DistStoreError: use_libuv was requested but PyTorch was build without libuv "
                 "support\n")
    assert (d.cls, d.detail) == ("version_mismatch", "torch_no_libuv")


def test_what_blind119_read_right_at_its_score() -> None:
    assert [classify(blind_log("blind119", p)).cls for p in ("b119-005", "b119-007", "b119-016")] == \
        ["network", "version_mismatch", "dtype_unsupported"]
