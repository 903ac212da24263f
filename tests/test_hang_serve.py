"""`serve` in front of the fake vLLM when a start hangs (issue 24): each hang the fake plays is named with its
stage, stopped once, never started again, and nothing is left behind; a slow download that moves starts."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import MACHINES
from tests.test_serve import Rig, gone_soon, no_leftovers  # noqa: F401  (the autouse fixture: nothing left)
from vllm_guard.diagnose.hang import HANG_STAGES

A100_X2 = str(MACHINES / "a100-80gb-x2.json")
STALL = 'stall-timeout = 2\nstartup-timeout = 120'


def _hung(rig: Rig) -> dict:
    code, _, err = rig.run(rig.profile("max-model-len = 8192", extra=STALL), timeout=120)
    assert code == 5, err[-3000:]
    records = rig.records()
    assert len(records) == 1, "the same hang was started again"
    assert records[0]["failure"]["class"] == "startup_hang", records[0]["failure"]
    assert gone_soon()
    return records[0]


@pytest.mark.parametrize(("hang", "stage"), [("dp_coordinator", "dp_coordinator"),
                                             ("engine_handshake", "engine_handshake")])
def test_a_start_repeating_a_waiting_line_is_a_hang_named_by_it(tmp_path: Path, hang: str, stage: str) -> None:
    record = _hung(Rig(tmp_path, hang=hang, hang_interval_s=0.2))
    assert record["failure"]["stage"] == stage
    assert record["failure"]["numbers"]["stall_timeout_s"] == 2.0
    assert "stop" in record["next"]
    info = record["hang"]
    # py-spy reads the fake's processes where it may attach; where not, the record says why
    assert info["frames"] or info["notes"], info
    if info["stacks_file"]:
        assert "Thread " in Path(info["stacks_file"]).read_text()


def test_a_silent_start_is_a_hang(tmp_path: Path) -> None:
    record = _hung(Rig(tmp_path, hang=True))
    assert record["failure"]["stage"] in HANG_STAGES


def test_a_download_that_stops_is_a_hang_in_the_download(tmp_path: Path) -> None:
    record = _hung(Rig(tmp_path, download_chunks=100, download_stops=True))
    assert record["failure"]["stage"] == "download"


def test_a_slow_download_that_moves_is_never_called_hung(tmp_path: Path) -> None:
    rig = Rig(tmp_path, download_chunks=10, download_interval_s=0.5)  # 5 s of download, a chunk every 0.5 s
    guard = rig.start(rig.profile("max-model-len = 8192", extra=STALL))
    rig.wait_ready(guard, timeout=60)
    guard.terminate()
    guard.communicate(timeout=30)
    first = rig.records()[0]
    assert first["outcome"] == "ready", json.dumps(first)[:2000]


def test_an_nccl_hang_on_two_gpus_retries_once_without_peer_to_peer_and_remembers_it(tmp_path: Path) -> None:
    rig = Rig(tmp_path, hang="nccl_init", hang_unless_env="NCCL_P2P_DISABLE")
    # The fake hangs where NCCL does, in the engine's workers before the weights load (fake_vllm.ENGINE_HANGS).
    # A longer stall limit than the others: the retry, cured, must not pause 2 s between lines on a loaded
    # 2-core machine, or it is (rightly) called a second hang.
    profile = rig.profile("max-model-len = 8192\ntensor-parallel-size = 2",
                          extra=STALL.replace("stall-timeout = 2", "stall-timeout = 6"))
    guard = rig.start("--machine", A100_X2, "--force", profile)
    rig.wait_ready(guard, timeout=90)
    guard.terminate()
    _, err = guard.communicate(timeout=30)
    first, second = rig.records()[:2]
    assert (first["failure"]["class"], first["failure"]["stage"]) == ("startup_hang", "nccl_init")
    assert (first["next"]["param"], first["next"]["value"]) == ("disable-custom-all-reduce", True)
    assert "NCCL_P2P_DISABLE=1" in err
    assert second["outcome"] == "ready" and "--disable-custom-all-reduce" in second["argv"]
    assert second["changed"] == {"disable-custom-all-reduce": [False, True]}
    assert "remembered for the next start of this profile: disable-custom-all-reduce True" in err
    # The next start begins from it, the environment it implies included: the fake hangs without NCCL_P2P_DISABLE.
    again = rig.start("--machine", A100_X2, "--force", profile)
    deadline = time.monotonic() + 60
    while sum(r["outcome"] == "ready" for r in rig.records()) < 2:  # the first run's ready line is there already
        assert again.poll() is None and time.monotonic() < deadline, rig.records()
        time.sleep(0.2)
    again.terminate()
    again.communicate(timeout=30)
    third = [r for r in rig.records() if r.get("phase") != "serving"][2]
    assert third["outcome"] == "ready" and third["remembered"] == {"disable-custom-all-reduce": True}
