"""`explain` on blind14 (tests/data/real-logs/blind14), the fourteenth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit c5a14df (19 of 26 right, no
confident error; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: Python's ImportError names the file of the module it could not import a name from, so an installed
package of another release is seen by its site-packages path; PyTorch's warning that its build does not support
the GPU's compute capability; ptxas refusing a GPU target its PTX version predates.
"""

from __future__ import annotations

import pytest

from tests.conftest import blind_log
from vllm_guard.diagnose.classify import classify


@pytest.mark.parametrize(("prefix", "detail"), [
    ("b14-020", "python_package"),  # outlines.fsm.json_schema without build_regex_from_schema (vLLM 0.5.0)
    ("b14-026", "gpu_arch"),  # "RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch"
    ("b14-025", "gpu_arch"),  # "ptxas ... PTX .version 8.4 does not support .target sm_120a" under torch.compile
])
def test_what_blind14_taught(prefix: str, detail: str) -> None:
    d = classify(blind_log("blind14", prefix))
    assert (d.cls, d.detail) == ("version_mismatch", detail)


@pytest.mark.parametrize(("line", "cls"), [
    # an installed package, by the file Python names (Linux and Windows)
    ("ImportError: cannot import name 'x' from 'outlines.fsm' (/venv/lib/python3.10/site-packages/outlines/fsm/"
     "__init__.py)", "version_mismatch"),
    ("ImportError: cannot import name 'x' from 'pkg.mod' (C:\\Python311\\Lib\\site-packages\\pkg\\mod.py)",
     "version_mismatch"),
    ("ImportError: cannot import name 'x' from 'pkg.mod' (/usr/lib/python3/dist-packages/pkg/mod.py)",
     "version_mismatch"),
    # a model's own folder, a script beside it, and a circular import are no package version
    ("ImportError: cannot import name 'modeling_x' from 'DotsOCR' (unknown location)", "unknown"),
    ("ImportError: cannot import name 'helper' from 'utils' (/home/u/project/utils.py)", "unknown"),
    ("ImportError: cannot import name 'x' from partially initialized module 'pkg.mod' (most likely due to a circular "
     "import) (/venv/lib/python3.10/site-packages/pkg/mod.py)", "unknown"),
])
def test_an_import_error_is_a_version_only_for_an_installed_package(line: str, cls: str) -> None:
    assert classify(line + "\n").cls == cls


def test_pytorchs_capability_warning_in_a_start_that_got_ready_is_no_failure() -> None:
    warning = ("UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current "
               "PyTorch installation.\n")
    assert classify(warning).cls == "version_mismatch"
    ready = warning + "INFO 07-01 14:28:21 [launcher.py:37] Route: /health, Methods: GET\n" \
                      "INFO:     Application startup complete.\n"
    assert classify(ready).cls == "unknown"
