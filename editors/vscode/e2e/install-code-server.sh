#!/usr/bin/env bash
# Installs code-server 4.99.4 (VS Code 1.99.3; 4.100 and later need Node 24) into editors/vscode/e2e/.code-server,
# offline but for the npm registry and Debian: its native modules build against Debian's headers, and the
# @vscode/ripgrep post-install, which would download rg from GitHub, finds an archive of Debian's rg in its cache.
# Idempotent: a finished install is left as it is. Prints the path of the code-server program.
set -euo pipefail
version=4.99.4
here="$(cd "$(dirname "$0")" && pwd)"
prefix="$here/.code-server"
program="$prefix/node_modules/.bin/code-server"
if [[ -x "$program" && -f "$prefix/.installed-$version" ]]; then
    echo "$program"
    exit 0
fi
missing=()
for package in libkrb5-dev libxkbfile-dev libsecret-1-dev ripgrep build-essential python3; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'ok installed' || missing+=("$package")
done
if ((${#missing[@]})); then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cache="$work/vscode-ripgrep-cache-1.15.11"
mkdir -p "$cache/rg"
cp "$(command -v rg)" "$cache/rg/rg"
tar -czf "$cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz" -C "$cache/rg" rg
rm -rf "$prefix"
mkdir -p "$prefix"
cd "$prefix"
echo '{"name": "fimlsp-e2e-code-server", "private": true}' >package.json
# node-pty's build runs `npx node-gyp`, which must not stop to ask; code-server's post-install refuses to run as
# root without unsafe-perm (given as the variable: npm 11 warns about it as a flag).
TMPDIR="$work" npm_config_yes=true npm_config_unsafe_perm=true \
    npm install --no-audit --no-fund --loglevel=error "code-server@$version" >&2
XDG_CONFIG_HOME="$work" "$program" --version >&2
touch "$prefix/.installed-$version"
echo "$program"
