"""`explain` on blind173 and blind174 (tests/data/real-logs), issue 26's sets after their one scoring.

blind173, failed starts quoted in the commit messages of twelve more programs that start vLLM (lighteval and LocalAI
gave all seven), scored once at 1e0eb72: 1 of 7. A commit message quotes an exception the way a person types it:
indented, and broken by hand wherever they liked (after a few words, before the name a colon introduces, at a
deeper indent). Six of the seven were rules' messages that wrapping alone hid. blind174, three excerpts of vLLM pull
requests' descriptions, each cut before its cause, scored once at 1e0eb72's successor: 3 of 3 (`unknown`).
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify
from vllm_guard.diagnose.logread import continuation, read


@pytest.mark.parametrize(("name", "cls", "detail"), [
    # vLLM's KV message broken after its fifth word, then again at 70 columns
    ("b173-001", "kv_cache_too_small", None),
    # FlashInfer's JIT without a CUDA toolkit (read before the score)
    ("b173-002", "version_mismatch", "nvcc_missing"),
    # an undefined symbol of vLLM's _C, the symbol on the next line, both indented
    ("b173-003", "version_mismatch", "extension_abi"),
    # vLLM's CPU op missing from its extension, the attribute's name at a deeper indent
    ("b173-004", "version_mismatch", "op_missing"),
    # Inductor without a C++ compiler (torch/_inductor/exc.py InvalidCxxCompiler), under vLLM's CPU backend
    ("b173-005", "version_mismatch", "no_cxx_compiler"),
    # glibc older than a library the image ships, quoted indented
    ("b173-006", "version_mismatch", "glibc"),
    # flash-attn's extension against another torch, the symbol on the next line
    ("b173-007", "version_mismatch", "extension_abi"),
])
def test_blind173(name: str, cls: str, detail: str | None) -> None:
    d = classify(blind_log("blind173", name))
    assert (d.cls, d.detail) == (cls, detail)


def test_the_kv_message_broken_by_hand_keeps_its_figures() -> None:
    d = classify(blind_log("blind173", "b173-001"))
    assert d.numbers == {"max_seq_len": 8192, "needed_gib": 1.5, "available_gib": 1.42}


@pytest.mark.parametrize("text", [
    # a traceback's code under a frame, and a short exception line followed by another record
    "  File \"/v/vllm/x.py\", line 3, in f\n    raise ValueError(\n",
    # under an unindented head, an indented line is code or a table's row, never the message's rest
    "ValueError: bad value for\n  return int(x)\n",
    # a colon before a line of several words introduces a record, not a name
    "  ImportError: cannot load:\n  see the log above for why\n",
    # the sentence ended
    "ValueError: The model is too big.\nwith the next thing\n",
])
def test_a_line_is_not_joined_to_what_is_no_rest_of_its_message(text: str) -> None:
    lines = read(text)
    assert continuation(lines, 0) is None


@pytest.mark.parametrize(("text", "cls"), [
    ("ValueError: To serve at least one request\nwith the model's max seq len (8192), 1.5 GiB KV cache is needed, "
     "which is larger than the available KV cache memory (1.42 GiB).\n", "kv_cache_too_small"),
    # the same at an indent, and the rest at a deeper one
    ("  ValueError: To serve at least one request\n    with the model's max seq len (8192), 1.5 GiB KV cache is "
     "needed, which is larger than the available KV cache memory (1.42 GiB).\n", "kv_cache_too_small"),
])
def test_an_exception_broken_by_hand_is_read_whole(text: str, cls: str) -> None:
    assert classify(text).cls == cls
