#!/usr/bin/env python3
"""Consistency checks of the deploy files, run by scripts/system-deploy-files.sh.

The syntax of each file is checked by its own tool (docker-compose, promtool,
systemd-analyze, kubernetes-validate); this checks what no single tool sees: that the
files agree with each other and with electd's configuration contract (docs/architecture.md,
"The external contract"). Subcommands:

  compose ROOT             compose.yaml vs electd.toml vs prometheus.yml, mounted paths,
                           Grafana provisioning vs the compose mounts
  configs ROOT             every electd.toml in deploy/, checked by `electd config check`
                           (the daemon's own rules: keys, timing relations, roster …) for
                           every node; deployment-only paths and host names stand in as
                           temporary files and loopback addresses; the example scrape
                           configuration against the example roster
  k8s ROOT RENDERED.yaml   kustomize output vs deploy/k8s/electd.toml and the task's
                           requirements (probes, securityContext, headless Service …)
  render-kustomize DIR     fallback when kubectl is missing: resources + configMapGenerator

Each subcommand prints one line per failure and exits 1 if there was any.
Needs PyYAML; Python 3.11+ (tomllib); `configs` needs the electd binary
(ELECTD_BIN, default ROOT/target/release/electd; system-deploy-files.sh passes the
binary of cargo's real target directory, so CARGO_TARGET_DIR is honoured).
"""

import glob
import ipaddress
import os
import subprocess
import sys
import tempfile
import tomllib

import yaml

FAILURES = []
PASSED = []


def fail(msg):
    FAILURES.append(msg)
    print(f"FAIL: {msg}")


def ok(msg):
    PASSED.append(msg)
    if os.environ.get("VERBOSE"):
        print(f"ok: {msg}")


def expect(cond, msg):
    (ok if cond else fail)(msg)
    return cond


def load_yaml(path):
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def load_toml(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


# ------------------------------------------------------------------ electd config
def split_hostport(addr):
    host, _, port = addr.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"{addr!r} is not host:port")
    return host.strip("[]"), int(port)


def check_config(path):
    """Parse one electd config file (its rules are `electd config check`'s, run next).
    Returns the parsed file (or None)."""
    name = os.path.relpath(path)
    try:
        return load_toml(path)
    except (OSError, tomllib.TOMLDecodeError) as e:
        fail(f"{name}: not valid TOML: {e}")
        return None


def is_ip(host):
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


def electd_check(root, path, cfg):
    """`electd config check` on a copy of `path` in which what only exists where it is
    deployed stands in: host names become loopback addresses, the key, token and state
    files temporary ones (given as ELECTD_* overrides, as an operator could)."""
    name = os.path.relpath(path)
    binary = os.environ.get("ELECTD_BIN", os.path.join(root, "target/release/electd"))
    if not expect(os.access(binary, os.X_OK), f"{name}: electd binary {binary} exists (cargo build --release)"):
        return
    text = open(path, encoding="utf-8").read()
    hosts = []
    for p in cfg.get("peer", []):
        for field in ("addr", "http"):
            try:
                host, _ = split_hostport(p.get(field) or "")
            except ValueError:
                continue
            if not is_ip(host) and host not in hosts:
                hosts.append(host)
    for i, host in enumerate(hosts):
        text = text.replace(f'"{host}:', f'"127.0.{i // 250}.{i % 250 + 1}:')
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(path))
        with open(copy, "w", encoding="utf-8") as f:
            f.write(text)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ELECTD_")}
        env["ELECTD_LOG"] = "error"
        if "key_file" in cfg.get("security", {}):
            key = os.path.join(tmp, "cluster.key")
            subprocess.run([binary, "keygen", "--out", key], check=True, capture_output=True)
            env["ELECTD_SECURITY_KEY_FILE"] = key
        if "token_file" in cfg.get("admin", {}):
            token = os.path.join(tmp, "admin.token")
            with open(token, "w", encoding="utf-8") as f:
                f.write("0123456789abcdef0123456789abcdef\n")
            os.chmod(token, 0o600)
            env["ELECTD_ADMIN_TOKEN_FILE"] = token
        if cfg.get("raft", {}).get("state_file"):
            env["ELECTD_RAFT_STATE_FILE"] = os.path.join(tmp, "raft-{node}.state")
        if cfg.get("state", {}).get("file"):
            env["ELECTD_STATE_FILE"] = os.path.join(tmp, "{node}.state")
        r = subprocess.run([binary, "config", "check", "--config", copy], env=env,
                           capture_output=True, text=True, timeout=60)
        detail = (r.stderr or r.stdout).strip().replace(copy, name)
        expect(r.returncode == 0, f"{name}: electd config check passes for every node ({detail})")


def prom_targets_match(prom, cfg, what):
    """The scrape job 'electd' of `prom` names every peer's http address of `cfg`, and
    nothing else, each labelled with its node id and the cluster."""
    job = next((j for j in prom["scrape_configs"] if j["job_name"] == "electd"), None)
    if expect(job is not None, f"{what} has the job 'electd'"):
        targets = {}
        for sc in job["static_configs"]:
            for t in sc["targets"]:
                targets[t] = sc.get("labels", {})
        expect(sorted(targets) == sorted(p["http"] for p in cfg["peer"]),
               f"{what} targets = the roster's http addresses")
        for p in cfg["peer"]:
            lab = targets.get(p["http"], {})
            expect(lab.get("node") == str(p["id"]) and lab.get("cluster") == cfg["cluster"],
                   f"{what} labels {p['http']} node={p['id']} cluster={cfg['cluster']}")


def cmd_configs(root):
    paths = sorted(glob.glob(os.path.join(root, "deploy/**/electd.toml*"), recursive=True))
    expect(len(paths) >= 3, f"found the electd configs in deploy/ ({len(paths)})")
    for p in paths:
        cfg = check_config(p)
        if cfg is not None:
            electd_check(root, p, cfg)
    # The example scrape configuration scrapes the example cluster (it named two
    # nodes the example roster does not have, which would read `up == 0` for ever).
    example = os.path.join(root, "deploy/systemd/electd.toml.example")
    prom_targets_match(load_yaml(os.path.join(root, "deploy/prometheus/prometheus.yml")),
                       load_toml(example), "deploy/prometheus/prometheus.yml")


# ------------------------------------------------------------------ compose
def cmd_compose(root):
    cdir = os.path.join(root, "deploy/compose")
    compose = load_yaml(os.path.join(cdir, "compose.yaml"))
    services = compose["services"]

    # Every bind-mounted path and build input exists (relative to the compose file).
    for name, svc in services.items():
        for vol in svc.get("volumes", []):
            source = vol.split(":")[0] if isinstance(vol, str) else vol.get("source", "")
            if source.startswith((".", "/")):
                path = os.path.normpath(os.path.join(cdir, source))
                expect(os.path.exists(path),
                       f"compose {name}: mounted path {os.path.relpath(path, root)} exists")
        build = svc.get("build")
        if build:
            ctx = os.path.normpath(os.path.join(cdir, build["context"]))
            expect(os.path.isfile(os.path.join(ctx, build["dockerfile"])),
                   f"compose {name}: Dockerfile {build['dockerfile']} exists in the build context")

    # Nodes vs the shared config vs Prometheus.
    cfg = check_config(os.path.join(cdir, "electd.toml"))
    if cfg is None:
        return
    roster = {p["id"]: p for p in cfg["peer"]}
    nodes = {}
    for name, svc in services.items():
        env = svc.get("environment") or {}
        if "ELECTD_NODE_ID" in env:
            nodes[int(env["ELECTD_NODE_ID"])] = (name, svc)
            bad = [k for k in env if k.startswith("ELECTD_") and k not in ("ELECTD_NODE_ID", "ELECTD_LOG")]
            expect(not bad, f"compose {name}: no other ELECTD_* variables ({bad})")
    expect(sorted(nodes) == sorted(roster),
           f"compose node ids {sorted(nodes)} = roster ids {sorted(roster)}")
    for nid, (name, svc) in nodes.items():
        if nid not in roster:
            continue
        # The roster names each node by its service name, which the compose network's
        # DNS resolves (and the container's own hostname, which electd binds).
        expect(svc.get("hostname") == name,
               f"compose {name}: hostname {svc.get('hostname')} = the service name")
        expect(split_hostport(roster[nid]["addr"])[0] == name,
               f"compose {name}: the roster addr {roster[nid]['addr']} names the service")
        expect(split_hostport(roster[nid]["http"])[0] == name,
               f"compose {name}: the roster http {roster[nid]['http']} names the service")
        expect("ipv4_address" not in str(svc.get("networks", "")),
               f"compose {name}: no fixed ipv4_address (podman-compose 1.0.3 refuses it)")
        expect(any(v.split(":")[1] == "/etc/electd/electd.toml" for v in svc["volumes"]
                   if v.startswith("./electd.toml")),
               f"compose {name}: mounts ./electd.toml at /etc/electd/electd.toml")
    key_vol = cfg["security"].get("key_file", "")
    keygen = services.get("keygen", {})
    expect(key_vol and key_vol in " ".join(map(str, keygen.get("command", []))),
           f"compose keygen writes the key_file of electd.toml ({key_vol})")

    prom = load_yaml(os.path.join(cdir, "prometheus.yml"))
    prom_targets_match(prom, cfg, "compose prometheus.yml")
    # The rules the compose Prometheus loads exist in deploy/prometheus/.
    prom_svc = services["prometheus"]
    rules_mount = next(v for v in prom_svc["volumes"] if v.startswith("../prometheus"))
    host_dir, cont_dir = rules_mount.split(":")[:2]
    found = []
    for pattern in prom.get("rule_files", []):
        if pattern.startswith(cont_dir + "/"):
            host = os.path.join(cdir, host_dir, pattern[len(cont_dir) + 1:])
            found += glob.glob(host)
    expect(found, f"compose prometheus.yml rule_files match a rules file in deploy/prometheus/ ({found})")

    # Grafana provisioning vs the compose mounts.
    graf = services["grafana"]
    dash_target = next((v.split(":")[1] for v in graf["volumes"] if "electd.json" in v), None)
    providers = glob.glob(os.path.join(root, "dashboards/provisioning/dashboards/*.y*ml"))
    paths = []
    for f in providers:
        for p in (load_yaml(f) or {}).get("providers", []):
            paths.append(p.get("options", {}).get("path"))
    expect(dash_target and os.path.dirname(dash_target) in paths,
           f"a dashboard provider loads {os.path.dirname(dash_target or '')} (provider paths: {paths})")
    dsfiles = glob.glob(os.path.join(root, "dashboards/provisioning/datasources/*.y*ml"))
    urls = [d.get("url") for f in dsfiles for d in (load_yaml(f) or {}).get("datasources", [])]
    shares_ns = graf.get("network_mode") == "service:prometheus"
    reachable = [u for u in urls if u in ("http://prometheus:9090",)
                 or (shares_ns and u in ("http://localhost:9090", "http://127.0.0.1:9090"))]
    expect(reachable, f"a provisioned datasource reaches the compose Prometheus (urls: {urls})")


# ------------------------------------------------------------------ kubernetes
def cmd_k8s(root, rendered):
    docs = [d for d in yaml.safe_load_all(open(rendered, encoding="utf-8")) if d]
    by_kind = {}
    for d in docs:
        by_kind.setdefault(d["kind"], []).append(d)
    for kind in ("Namespace", "ConfigMap", "Service", "StatefulSet", "PodDisruptionBudget"):
        expect(len(by_kind.get(kind, [])) == 1, f"k8s: one {kind}")
    if FAILURES:
        return
    ns = by_kind["Namespace"][0]["metadata"]["name"]
    svc, sts = by_kind["Service"][0], by_kind["StatefulSet"][0]
    cm = by_kind["ConfigMap"][0]
    spec, pod = sts["spec"], sts["spec"]["template"]["spec"]

    expect(svc["spec"].get("clusterIP") == "None", "k8s: the Service is headless")
    expect(svc["spec"].get("publishNotReadyAddresses") is True, "k8s: publishNotReadyAddresses")
    expect(spec["serviceName"] == svc["metadata"]["name"], "k8s: serviceName = the headless Service")
    expect(any(p["protocol"] == "UDP" and p["port"] == 5740 for p in svc["spec"]["ports"]),
           "k8s: the Service has UDP 5740")
    for d in docs:
        if d["kind"] != "Namespace":
            expect(d["metadata"].get("namespace") == ns, f"k8s: {d['kind']} is in namespace {ns}")

    # Roster vs StatefulSet.
    cfg = tomllib.loads(cm["data"]["electd.toml"])
    peers = cfg["peer"]
    expect(spec["replicas"] == len(peers), f"k8s: replicas {spec['replicas']} = roster size {len(peers)}")
    for p in peers:
        want = f"{sts['metadata']['name']}-{p['id'] - 1}.{svc['metadata']['name']}.{ns}.svc.cluster.local"
        expect(split_hostport(p["addr"]) == (want, 5740) and split_hostport(p["http"]) == (want, 5741),
               f"k8s: peer {p['id']} is pod {want} (ordinal = id - 1)")
    src = open(os.path.join(root, "deploy/k8s/electd.toml"), "rb").read().decode()
    expect(cm["data"]["electd.toml"] == src, "k8s: the ConfigMap holds deploy/k8s/electd.toml")
    cm_vols = [v for v in pod["volumes"] if "configMap" in v]
    expect(cm_vols and cm_vols[0]["configMap"]["name"] == cm["metadata"]["name"],
           "k8s: the pods mount the generated ConfigMap")
    key_dir = os.path.dirname(cfg["security"]["key_file"])
    secret_vols = {v["name"]: v for v in pod["volumes"] if "secret" in v}
    main = next(c for c in pod["containers"] if c["name"] == "electd")
    mounted = {m["mountPath"]: m["name"] for m in main["volumeMounts"]}
    expect(mounted.get(key_dir) in secret_vols, f"k8s: the key Secret is mounted at {key_dir}")

    # Node id from the ordinal; no ELECTD_* collisions.
    script = " ".join(main.get("command", []) + main.get("args", []))
    expect("--node-id" in script and "ordinal + 1" in script and "exec " in script,
           "k8s: --node-id is computed from the pod ordinal, electd is exec'ed")
    expect(pod.get("enableServiceLinks") is False, "k8s: enableServiceLinks is false")
    env = {e["name"] for e in main.get("env", [])}
    expect(not {e for e in env if e.startswith("ELECTD_")} - {"ELECTD_LOG", "ELECTD_NODE_ID"},
           "k8s: no unknown ELECTD_* variable")

    # Probes and security.
    for probe in ("readinessProbe", "livenessProbe"):
        expect(main.get(probe, {}).get("httpGet", {}).get("path") == "/healthz",
               f"k8s: {probe} on /healthz")
    psc = pod.get("securityContext", {})
    expect(psc.get("runAsNonRoot") is True and psc.get("runAsUser", 0) != 0, "k8s: runAsNonRoot, non-zero uid")
    for c in pod["containers"] + pod.get("initContainers", []):
        sc = c.get("securityContext", {})
        expect(sc.get("readOnlyRootFilesystem") is True
               and sc.get("allowPrivilegeEscalation") is False
               and sc.get("capabilities", {}).get("drop") == ["ALL"],
               f"k8s: container {c['name']}: read-only root, no privilege escalation, drop ALL")
    ann = sts["spec"]["template"]["metadata"].get("annotations", {})
    expect(ann.get("prometheus.io/scrape") == "true" and ann.get("prometheus.io/port") == "5741",
           "k8s: scrape annotations")


def cmd_render(kdir):
    """Minimal kustomize: resources + namespace + configMapGenerator (no hash suffix)."""
    k = load_yaml(os.path.join(kdir, "kustomization.yaml"))
    out = []
    for r in k.get("resources", []):
        out += [d for d in yaml.safe_load_all(open(os.path.join(kdir, r), encoding="utf-8")) if d]
    for g in k.get("configMapGenerator", []):
        data = {}
        for f in g.get("files", []):
            key, _, path = f.partition("=") if "=" in f else (os.path.basename(f), "", f)
            data[key] = open(os.path.join(kdir, path), encoding="utf-8").read()
        labels = g.get("options", {}).get("labels", {})
        out.append({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": g["name"], "labels": labels}, "data": data})
    images = {i["name"]: i for i in k.get("images", [])}
    for d in out:
        if d["kind"] != "Namespace" and k.get("namespace"):
            d["metadata"]["namespace"] = k["namespace"]
        pod = d.get("spec", {}).get("template", {}).get("spec", {})
        for c in pod.get("containers", []) + pod.get("initContainers", []):
            img = images.get(c["image"])
            if img:
                c["image"] = f"{img.get('newName', c['image'])}:{img['newTag']}"
    yaml.safe_dump_all(out, sys.stdout, sort_keys=False)


def main(argv):
    cmd = argv[1] if len(argv) > 1 else ""
    if cmd == "compose" and len(argv) == 3:
        cmd_compose(argv[2])
    elif cmd == "configs" and len(argv) == 3:
        cmd_configs(argv[2])
    elif cmd == "k8s" and len(argv) == 4:
        cmd_k8s(argv[2], argv[3])
    elif cmd == "render-kustomize" and len(argv) == 3:
        cmd_render(argv[2])
        return 0
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(f"{cmd}: {len(PASSED)} checks ok, {len(FAILURES)} failing (VERBOSE=1 lists all)")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
