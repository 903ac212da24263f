"""`vllm-guard manifest` (issue 25): Kubernetes objects that pass the Kubernetes schema (kubernetes-validate,
strict, the schemas it ships: no network), with probes whose start-up budget covers the ladder's."""

from __future__ import annotations

import io
from pathlib import Path

import kubernetes_validate
import pytest
import yaml

from tests.conftest import ROOT
from vllm_guard.cli.main import main
from vllm_guard.launch.process import KEEPER_MARGIN_S
from vllm_guard.profile.load import load_profile
from vllm_guard.profile.model import world_size

KUBERNETES = "1.34.0"  # a version kubernetes-validate ships the schemas of
PROFILES = sorted((ROOT / "profiles").glob("*.toml"))


def manifest(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(["manifest", *argv], environ={"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin"}, stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def documents(text: str) -> dict[str, dict]:
    return {doc["kind"]: doc for doc in yaml.safe_load_all(text)}


def container(docs: dict[str, dict]) -> dict:
    return docs["Deployment"]["spec"]["template"]["spec"]["containers"][0]


@pytest.mark.parametrize("path", PROFILES, ids=lambda p: p.name)
def test_every_example_profile_gives_objects_the_schema_accepts(path: Path) -> None:
    code, out, err = manifest(str(path))
    assert code == 0, err
    docs = documents(out)
    assert set(docs) == {"ConfigMap", "Deployment", "Service"}
    for doc in docs.values():
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)  # raises on any error
    profile = load_profile(path, environ={})
    c = container(docs)
    assert docs["ConfigMap"]["data"]["profile.toml"] == path.read_text()
    assert c["resources"]["limits"]["nvidia.com/gpu"] == world_size(profile)
    startup = c["startupProbe"]
    budget = startup["failureThreshold"] * startup["periodSeconds"]
    assert budget >= int(profile.ladder_setting("max-attempts")) * float(profile.setting("startup-timeout"))
    assert startup["httpGet"]["path"] == "/startupz" and c["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["command"][:4] == ["vllm-guard", "serve", "--status-address", "0.0.0.0:9090"]
    assert c["command"][4] == "/etc/vllm-guard/profile.toml"
    shm = next(v for v in docs["Deployment"]["spec"]["template"]["spec"]["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"]["medium"] == "Memory"


def test_the_grace_period_covers_vllms_drain_and_the_guards_margins(tmp_path: Path) -> None:
    path = tmp_path / "drain.toml"
    path.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\nshutdown-timeout = 120\ntensor-parallel-size = 2\n'
                    "[guard]\nstop-timeout = 30\nstartup-timeout = 600\n[guard.ladder]\nmax-attempts = 3\n")
    code, out, err = manifest(str(path))
    assert code == 0, err
    docs = documents(out)
    for doc in docs.values():
        kubernetes_validate.validate(doc, KUBERNETES, strict=True)
    spec = docs["Deployment"]["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] >= 120 + KEEPER_MARGIN_S
    c = container(docs)
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert c["startupProbe"]["failureThreshold"] * c["startupProbe"]["periodSeconds"] >= 3 * 600


def test_a_secret_or_a_unix_socket_is_refused_and_o_writes_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "secret.toml"
    secret.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[env]\nHF_TOKEN = "hf_abc"\n')
    code, out, err = manifest(str(secret))
    assert code == 2 and "HF_TOKEN" in err and "hf_abc" not in err + out
    uds = tmp_path / "uds.toml"
    uds.write_text('[model]\nid = "Qwen/Qwen3-0.6B"\n[vllm]\nuds = "/tmp/v.sock"\n')
    assert manifest(str(uds))[0] == 2
    assert manifest("Qwen/Qwen3-0.6B")[0] == 2
    target = tmp_path / "out.yaml"
    code, out, err = manifest(str(PROFILES[0]), "-o", str(target))
    assert code == 0 and out == "" and str(target) in err
    assert set(documents(target.read_text())) == {"ConfigMap", "Deployment", "Service"}
    assert manifest(str(PROFILES[0]), "-o", str(target))[0] == 2  # exists: --force


def test_machine_runs_the_preflight_of_that_node() -> None:
    code, out, err = manifest(str(ROOT / "profiles/llama-3.1-8b-full-context.toml"), "--machine",
                              str(ROOT / "profiles/machines/l4-24gb.json"))
    assert code == 4 and "model.kv_fit" in err
    assert set(documents(out)) == {"ConfigMap", "Deployment", "Service"}
