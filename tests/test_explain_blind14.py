"""`explain` on blind14 (tests/data/real-logs/blind14), the fourteenth blind set of issue 26, after its one scoring.

Collected by a helper that never read the classifier and scored once, whole, at commit c5a14df (19 of 26 right, no
confident error; tests/data/real-logs/README.md). What its misses taught, each from the source that writes the
message: Python's ImportError names the file of the module it could not import a name from, so an installed
package of another release is seen by its site-packages path; PyTorch's warning that its build does not support
the GPU's compute capability; ptxas refusing a GPU target its PTX version predates.
"""

from __future__ import annotations

import pytest

from tests.conftest import DATA, blind_log
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


def _real(name: str) -> str:
    return (DATA / "real-logs" / "failures" / name).read_text()


def test_pytorchs_capability_warning_yields_to_a_decisive_error_after_it() -> None:
    # b14-026's warning, then a real start's CUDA OOM while loading (failures/016): the warning names a GPU the
    # build lacks kernels for (an old second card warns too), the OOM is what stopped the start.
    warning = "".join(blind_log("blind14", "b14-026").splitlines(keepends=True)[:3])
    alone = classify(_real("016-oom_loading.log"))
    after = classify(warning + _real("016-oom_loading.log"))
    assert alone.cls == "oom_loading" and (after.cls, after.stage) == (alone.cls, alone.stage)
    # a bare CUDA OOM the log does not place is still the error, the warning only may be one
    bare = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity " \
           "of 23.64 GiB of which 3.06 MiB is free.\n"
    assert classify(warning + bare).cls == "gpu_oom"
    # with nothing decisive after it, the warning is the reading, and no more than medium
    d = classify(warning)
    assert (d.cls, d.detail, d.confidence) == ("version_mismatch", "gpu_arch", "medium")


def test_an_import_error_in_a_start_that_got_ready_is_no_failure() -> None:
    # b14-020's ImportError, then the ready lines of a real start (startups): vLLM logged it and went on
    error = next(line for line in blind_log("blind14", "b14-020").splitlines() if "cannot import name" in line)
    assert classify(error + "\n").cls == "version_mismatch"
    ready = error + "\nINFO 07-01 14:28:21 [launcher.py:37] Route: /health, Methods: GET\n" \
                    "INFO:     Application startup complete.\n"
    assert classify(ready).cls == "unknown"
    named = "ImportError: cannot import name 'x' from 'transformers.utils' (/venv/lib/python3.10/site-packages/" \
            "transformers/utils/__init__.py)\nINFO:     Application startup complete.\n"
    assert classify(named).cls == "unknown"


def test_ptxas_family_targets() -> None:
    # CUDA 12.9's family-specific targets (sm_120f) beside the arch-specific ones b14-025 shows (sm_120a)
    line = blind_log("blind14", "b14-025").splitlines()[0]
    assert classify(line.replace("sm_120a", "sm_120f") + "\n").detail == "gpu_arch"
