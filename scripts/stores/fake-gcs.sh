#!/usr/bin/env bash
# Builds fake-gcs-server (Go module github.com/fsouza/fake-gcs-server) for the GCS storage tier: it
# serves GCS's JSON API with preconditions (ifGenerationMatch=0), which create-if-absent needs.
# The binary lands in a cache outside the repo; idempotent.
set -euo pipefail
version="${TABLEKEEPER_FAKE_GCS_VERSION:-v1.56.1}"
cache="${TABLEKEEPER_CACHE:-$HOME/.cache/tablekeeper}/fake-gcs/$version"
[ -x "$cache/fake-gcs-server" ] && exit 0
command -v go >/dev/null || { echo "gcs tier: needs go" >&2; exit 1; }
mkdir -p "$cache"
GOTOOLCHAIN="${GOTOOLCHAIN:-auto}" GOBIN="$cache" CGO_ENABLED=0 go install -trimpath -ldflags="-s -w" \
  "github.com/fsouza/fake-gcs-server@$version"
