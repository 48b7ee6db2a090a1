#!/usr/bin/env bash
# Creates the peer harness's virtual environment in .venv-peers/ (ignored by
# git) and installs the pinned packages of scripts/peers/requirements.txt from
# PyPI. Idempotent: a venv that already has them is left as it is.
#   bash scripts/peers/setup.sh            # then: .venv-peers/bin/python scripts/peers/peers.py --help
#   PEERS_VENV=/some/dir bash scripts/peers/setup.sh
# Needs python3 (3.10+) with the venv module (Debian: python3-venv).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
venv="${PEERS_VENV:-$root/.venv-peers}"
py="${PYTHON:-python3}"

if [ ! -x "$venv/bin/python" ]; then
  echo "setup: creating $venv"
  "$py" -m venv "$venv"
fi
if "$venv/bin/python" - "$here/requirements.txt" <<'PY' 2>/dev/null; then
import sys, importlib.metadata as md
for line in open(sys.argv[1]):
    line = line.split("#")[0].strip()
    if not line: continue
    name, ver = line.split("==")
    if md.version(name) != ver: sys.exit(1)
PY
  echo "setup: $venv already has the pinned packages"
  exit 0
fi
"$venv/bin/python" -m pip install --quiet --upgrade pip
# The default PyPI index is the only one reachable; torch from it is the CUDA
# build (the nvidia-* wheels come along, several GB on disk). It runs on the CPU.
"$venv/bin/python" -m pip install --progress-bar off -r "$here/requirements.txt"
"$venv/bin/python" -c "import onnx, onnxruntime, torch, torchvision, transformers, numpy, tvm; print('setup: ok: tvm', tvm.__version__, 'onnx', onnx.__version__, 'onnxruntime', onnxruntime.__version__, 'torch', torch.__version__, 'torchvision', torchvision.__version__, 'transformers', transformers.__version__, 'numpy', numpy.__version__)"
du -sh "$venv" | sed 's/^/setup: venv size /'
