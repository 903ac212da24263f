"""GPU peer-to-peer before launching (issue 24 item 5): NVML's P2P status through a fake NVML namespace,
`nvidia-smi topo -p2p r` as a real process on PATH, the snapshot field, and the `gpu.p2p` check."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.fake_nvml import FakeNvml, FakeNvmlWithoutP2p, NVMLError_FunctionNotFound, a100, l4
from vllm_guard.errors import SnapshotError
from vllm_guard.facts.machine import Machine, P2pLink
from vllm_guard.probes import load_machine, probe_machine
from vllm_guard.probes.smi import parse_p2p

# `nvidia-smi topo -p2p r` on a 3-GPU PCIe box where GPU 2 sits behind a chipset without P2P.
TOPO_P2P_R = """ \tGPU0\tGPU1\tGPU2\t
 GPU0\tX\tOK\tCNS\t
 GPU1\tOK\tX\tCNS\t
 GPU2\tCNS\tCNS\tX\t

Legend:

  X    = Self
  OK   = Status Ok
  CNS  = Chipset not supported
  GNS  = GPU not supported
  TNS  = Topology not supported
  NS   = Not supported
  U    = Unknown
"""


def _fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, matrix: str) -> None:
    (tmp_path / "matrix.txt").write_text(matrix)
    tool = tmp_path / "nvidia-smi"
    tool.write_text(f"#!/bin/sh\n[ \"$1 $2 $3\" = 'topo -p2p r' ] && exec cat '{tmp_path / 'matrix.txt'}'\nexit 9\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")


@pytest.mark.parametrize(
    ("read", "nvlink", "expected"),
    [
        ({}, {}, (P2pLink((0, 1), "ok", "ok"), P2pLink((0, 2), "ok", "ok"), P2pLink((1, 2), "ok", "ok"))),
        ({(0, 2): 1, (1, 2): 3}, {(0, 1): 5, (0, 2): 5, (1, 2): 5},
         (P2pLink((0, 1), "ok", "not supported"),
          P2pLink((0, 2), "not supported", "not supported", "chipset not supported"),
          P2pLink((1, 2), "not supported", "not supported", "IOH topology not supported"))),
        ({(0, 1): 6}, {(0, 1): 6}, (P2pLink((0, 1), None, None), P2pLink((0, 2), "ok", "ok"),
                                    P2pLink((1, 2), "ok", "ok"))),
        ({(1, 2): 4}, {}, (P2pLink((0, 1), "ok", "ok"), P2pLink((0, 2), "ok", "ok"),
                           P2pLink((1, 2), "not supported", "ok", "disabled by registry key"))),
    ],
    ids=["nvlink everywhere", "pcie, one gpu behind a chipset", "unknown is null", "registry key"],
)
def test_nvml_p2p_status_per_pair(read: dict, nvlink: dict, expected: tuple[P2pLink, ...]) -> None:
    fake = FakeNvml([a100(), a100(), a100()], p2p_read=read, p2p_nvlink=nvlink)
    m = probe_machine(environ={}, nvml=fake)
    assert m.p2p == expected
    assert fake.p2p_calls == 6  # read and NVLink for each of three pairs, with plain ints (never the tuple)


def test_one_gpu_reads_no_p2p() -> None:
    fake = FakeNvml([l4()])
    assert probe_machine(environ={}, nvml=fake).p2p is None and fake.p2p_calls == 0


def test_old_nvidia_ml_py_falls_back_to_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_smi(tmp_path, monkeypatch, TOPO_P2P_R)
    m = probe_machine(environ={}, nvml=FakeNvmlWithoutP2p([l4(), l4(), l4()]))
    assert m.p2p == (P2pLink((0, 1), "ok", None), P2pLink((0, 2), "not supported", None, "chipset not supported"),
                     P2pLink((1, 2), "not supported", None, "chipset not supported"))
    assert any("nvidia-smi topo -p2p r" in n for n in m.notes)


def test_driver_without_the_call_falls_back_to_nvidia_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_smi(tmp_path, monkeypatch, TOPO_P2P_R)
    m = probe_machine(environ={}, nvml=FakeNvml([l4(), l4()], p2p_error=NVMLError_FunctionNotFound))
    assert m.p2p is not None and m.p2p[0] == P2pLink((0, 1), "ok", None)


def test_no_source_leaves_p2p_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi anywhere
    m = probe_machine(environ={}, nvml=FakeNvmlWithoutP2p([l4(), l4()]))
    assert m.p2p is None
    assert any("peer-to-peer unknown" in n for n in m.notes)


def test_nvidia_smi_that_fails_leaves_p2p_unknown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_smi(tmp_path, monkeypatch, "")
    (tmp_path / "nvidia-smi").write_text("#!/bin/sh\necho 'Failed to initialize NVML' >&2\nexit 9\n")
    m = probe_machine(environ={}, nvml=FakeNvmlWithoutP2p([l4(), l4()]))
    assert m.p2p is None and any("topo -p2p r failed" in n for n in m.notes)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (TOPO_P2P_R, 3),
        (" \tGPU0\tGPU1\t\n GPU0\tX\tU\t\n GPU1\tU\tX\t\n", (P2pLink((0, 1), None, None),)),
        (" \tGPU0\tGPU1\t\n GPU0\tX\tTNS\t\n GPU1\tTNS\tX\t\n",
         (P2pLink((0, 1), "not supported", None, "topology not supported"),)),
        ("No devices were found\n", None),
    ],
    ids=["three gpus", "unknown", "topology", "no matrix"],
)
def test_parse_topo_p2p_r(text: str, expected: object) -> None:
    links = parse_p2p(text)
    assert (len(links) if isinstance(expected, int) and links else links) == expected


def test_snapshot_round_trip_keeps_p2p(tmp_path: Path) -> None:
    m = probe_machine(environ={}, nvml=FakeNvml([a100(), a100()], p2p_read={(0, 1): 2}))
    path = tmp_path / "m.json"
    path.write_text(json.dumps(m.to_dict()))
    back = load_machine(path)
    assert back == m and back.p2p == (P2pLink((0, 1), "not supported", "ok", "GPU not supported"),)
    assert json.loads(path.read_text())["p2p"][0]["gpus"] == [0, 1]


@pytest.mark.parametrize(
    ("p2p", "fragment"),
    [("{}", "p2p: expected a list"), ('[{"gpus": [0]}]', "p2p[0].gpus"),
     ('[{"gpus": [0, 1], "read": false}]', "p2p[0].read"),
     ('[{"gpus": [0, 1], "read": "yes"}]', "p2p[0].read")],
)
def test_bad_p2p_in_a_snapshot_is_refused(p2p: str, fragment: str) -> None:
    data = probe_machine(environ={}, nvml=FakeNvml([a100(), a100()])).to_dict()
    data["p2p"] = json.loads(p2p)
    with pytest.raises(SnapshotError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        Machine.from_dict(data)


def test_snapshot_without_the_field_reads_as_unknown() -> None:
    data = probe_machine(environ={}, nvml=FakeNvml([a100(), a100()])).to_dict()
    del data["p2p"]
    assert Machine.from_dict(data).p2p is None
