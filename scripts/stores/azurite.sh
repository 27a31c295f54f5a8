#!/usr/bin/env bash
# Installs Azurite (Microsoft's Azure Storage emulator, npm package `azurite`) for the Azure storage tier
# into a cache outside the repo. 3.35.0 is the newest release that still runs on Node 20; idempotent.
set -euo pipefail
version="${TABLEKEEPER_AZURITE_VERSION:-3.35.0}"
cache="${TABLEKEEPER_CACHE:-$HOME/.cache/tablekeeper}/azurite/$version"
[ -x "$cache/node_modules/.bin/azurite-blob" ] && exit 0
command -v npm >/dev/null || { echo "azure tier: needs node and npm" >&2; exit 1; }
mkdir -p "$cache"
npm install --silent --no-audit --no-fund --prefix "$cache" "azurite@$version"
