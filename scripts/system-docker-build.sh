#!/usr/bin/env bash
# System test: deploy/docker/Dockerfile's build stage, replayed without a container
# engine (none is installed here or on CI). scripts/docker_replay.py copies into an
# empty temporary directory exactly what the builder stage COPYs from the build context
# (honouring .dockerignore), runs its RUN commands (both `cargo build --release --locked`
# steps) to completion, and checks that what the runtime stage copies from the builder
# exists and runs (`electd --version`).
#
# The crates.io dependencies an earlier `cargo build --release` compiled (scripts/test
# builds them before the system stage) are reused through hard links, so only electd
# itself is compiled twice (stub and real). Needs python3 and cargo; no root.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v python3 >/dev/null || { apt-get update -qq && apt-get install -y -qq python3 >/dev/null; }
echo "== docker: replaying the build stage of deploy/docker/Dockerfile"
if python3 scripts/docker_replay.py --seed-target target; then
    echo "docker build replay: ok"
else
    echo "FAIL: deploy/docker/Dockerfile's build stage does not build (see above)" >&2
    exit 1
fi
