#!/usr/bin/env bash
# Install the compilers the compiler-assisted counts use when they are missing:
#   * clang-16 + libomp-16-dev: OpenMP target regions compiled to PTX (--offload-device-only)
#   * nvcc is expected in its standard install location (/usr/local/cuda*); it is not
#     installable from the package registries here, and the tests skip the live compile
#     tests (never the parsing ones) without it.
# Idempotent: nothing happens when clang-16 is already on PATH.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if command -v clang-16 >/dev/null 2>&1 && [ -d /usr/lib/llvm-16/lib ] \
    && ls /usr/lib/llvm-16/lib/libomptarget* >/dev/null 2>&1; then
    echo "install-toolchains: clang-16 with OpenMP offload already installed"
    exit 0
fi
for attempt in 1 2 3; do
    if apt-get -o DPkg::Lock::Timeout=120 update -qq; then break; fi
    echo "install-toolchains: apt-get update failed (attempt $attempt)"; sleep 5
done
apt-get -o DPkg::Lock::Timeout=120 install -y -qq --no-install-recommends clang-16 libomp-16-dev \
    >/dev/null
echo "install-toolchains: $(clang-16 --version | head -n 1)"
