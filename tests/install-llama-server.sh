#!/usr/bin/env bash
# Builds llama.cpp's own HTTP server, `llama-server`, into tests/.llama-server/bin/ for the tests and benchmarks that
# drive a real llama.cpp server (harness/llama_server.py). The sources are the llama.cpp that the installed
# llama-cpp-python vendors, from its source package on PyPI (the one place these machines download from), so the
# server and the Python package are the same llama.cpp. Needs CMake and a C++ compiler (about 10 minutes on two
# cores); the web UI is left out (its assets would come from the network). Does nothing when built.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
target="$here/.llama-server"
if [ -x "$target/bin/llama-server" ]; then
    exit 0
fi
version=$(python -c "import importlib.metadata as m; print(m.version('llama_cpp_python'))")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$version" -d "$work"
tar xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
sources=$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)
cmake -S "$sources" -B "$work/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >/dev/null
cmake --build "$work/build" --target llama-server -j "$(nproc)" >/dev/null
mkdir -p "$target/bin"
cp "$work/build/bin/llama-server" "$target/bin/llama-server"
"$target/bin/llama-server" --version 2>&1 | head -n 2
