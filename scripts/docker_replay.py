#!/usr/bin/env python3
"""Replay the build stage of deploy/docker/Dockerfile without a container engine.

    scripts/docker_replay.py [--keep] [--seed-target DIR]

Reads the Dockerfile, takes its first stage (the builder) and carries out its
instructions in a fresh temporary directory that holds nothing but what the stage's
COPY instructions bring in from the build context (the repository root, minus what
.dockerignore excludes):

    ARG        default values are substituted into later instructions
    WORKDIR    becomes a directory under the temporary root
    COPY SRC.. DEST   copies from the context (a source .dockerignore excludes is an error)
    RUN        runs with /bin/sh -e; BuildKit flags (--mount=...) are dropped, absolute
               paths are mapped under the temporary root (/src -> ROOT/src, /out -> ROOT/out)
    ENV        exported to later RUNs

Then it checks that every file a later stage copies from the builder
(`COPY --from=builder PATH ...`) exists in the replay and, for the binary, that it runs
(`electd --version`). Exit 0 when every step succeeded, 1 otherwise.

--seed-target DIR hard-links DIR/release/{deps,build,.fingerprint} into the replay's
target directory first, so the crates.io dependencies an earlier `cargo build --release`
compiled are reused (cargo rebuilds whatever does not match: the result is the same,
only faster). The registry is the machine's own (~/.cargo): offline when its cache has
every crate, from crates.io otherwise, as in the image.
"""

import argparse
import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def logical_lines(text):
    """Dockerfile instructions: comments dropped, backslash continuations joined."""
    out, cur = [], ""
    for raw in text.splitlines():
        line = raw.strip()
        if not cur and (not line or line.startswith("#")):
            continue
        if cur and line.startswith("#"):
            continue  # a comment inside a continued instruction
        if line.endswith("\\"):
            cur += line[:-1] + " "
            continue
        cur += line
        out.append(cur.strip())
        cur = ""
    if cur:
        out.append(cur.strip())
    return out


def stages(instructions):
    """[(name, [instruction, ...])] per FROM, plus the global ARGs before the first."""
    global_args, result = [], []
    for ins in instructions:
        word = ins.split(None, 1)[0].upper()
        if word == "FROM":
            m = re.search(r"\bAS\s+(\S+)\s*$", ins, re.IGNORECASE)
            result.append((m.group(1) if m else str(len(result)), []))
        elif result:
            result[-1][1].append(ins)
        elif word == "ARG":
            global_args.append(ins)
    return global_args, result


def dockerignore():
    path = os.path.join(ROOT, ".dockerignore")
    if not os.path.exists(path):
        return []
    pats = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                pats.append(line.rstrip("/"))
    return pats


def ignored(rel, patterns):
    rel = rel.strip("/")
    for p in patterns:
        p = p.lstrip("/")
        for cand in (p, p[3:] if p.startswith("**/") else None):
            if cand and (fnmatch.fnmatch(rel, cand) or rel.startswith(cand + "/")):
                return True
    return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dockerfile", default=os.path.join(ROOT, "deploy/docker/Dockerfile"))
    ap.add_argument("--seed-target", help="an existing cargo target directory to reuse")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()

    with open(args.dockerfile) as f:
        global_args, all_stages = stages(logical_lines(f.read()))
    if not all_stages:
        print("no FROM in", args.dockerfile)
        return 1
    builder_name, builder = all_stages[0]
    ignore = dockerignore()

    tmp = tempfile.mkdtemp(prefix="electd-docker-replay.")
    ok = True
    try:
        def host(path):
            """A path inside the image, mapped under the temporary root."""
            return os.path.join(tmp, path.lstrip("/"))

        argv = {}
        for a in global_args:
            k, _, v = a.split(None, 1)[1].partition("=")
            argv[k] = v
        env = dict(os.environ)
        workdir = "/"

        def subst(s):
            return re.sub(r"\$\{?(\w+)\}?", lambda m: argv.get(m.group(1), m.group(0)), s)

        print(f"replaying stage {builder_name!r} of {os.path.relpath(args.dockerfile, ROOT)} in {tmp}")
        for ins in builder:
            word, _, rest = ins.partition(" ")
            word = word.upper()
            rest = subst(rest.strip())
            if word == "ARG":
                k, _, v = rest.partition("=")
                argv.setdefault(k, v)
            elif word == "ENV":
                k, _, v = rest.partition("=")
                env[k] = v
            elif word == "WORKDIR":
                workdir = os.path.join(workdir, rest)
                os.makedirs(host(workdir), exist_ok=True)
                if args.seed_target:
                    seed(args.seed_target, host(workdir))
            elif word == "COPY":
                parts = [p for p in shlex.split(rest) if not p.startswith("--")]
                if any(p.startswith("--from") for p in shlex.split(rest)):
                    print(f"  builder COPY --from is not replayable: {ins}")
                    return 1
                *srcs, dest = parts
                dest_abs = dest if dest.startswith("/") else os.path.join(workdir, dest)
                for src in srcs:
                    if ignored(src, ignore):
                        print(f"  FAIL: COPY {src}: excluded by .dockerignore")
                        ok = False
                        continue
                    s = os.path.join(ROOT, src)
                    if not os.path.exists(s):
                        print(f"  FAIL: COPY {src}: not in the build context")
                        ok = False
                        continue
                    if os.path.isdir(s):
                        shutil.copytree(s, host(dest_abs), dirs_exist_ok=True)
                    else:
                        d = host(dest_abs)
                        if dest.endswith("/"):
                            os.makedirs(d, exist_ok=True)
                        shutil.copy2(s, d)
                print(f"  COPY {' '.join(srcs)} -> {dest_abs}")
            elif word == "RUN":
                # BuildKit flags lead the command: --mount=..., --network=..., --security=...
                cmd = re.sub(r"^(--[a-z]+=\S+\s+)+", "", rest).strip()
                # Absolute paths of the image, under the temporary root.
                for top in ("/src", "/out"):
                    cmd = re.sub(rf"(?<![\w./-]){top}\b", host(top), cmd)
                print(f"  RUN {cmd}", flush=True)
                r = subprocess.run(["/bin/sh", "-ec", cmd], cwd=host(workdir), env=env)
                if r.returncode != 0:
                    print(f"  FAIL: RUN exited {r.returncode}")
                    return 1
            elif word in ("LABEL", "USER", "EXPOSE", "SHELL", "STOPSIGNAL"):
                pass
            else:
                print(f"  FAIL: instruction {word} is not replayable here: {ins}")
                return 1

        # What later stages take from the builder must be there.
        for name, body in all_stages[1:]:
            for ins in body:
                toks = shlex.split(ins)
                if toks[0].upper() != "COPY" or f"--from={builder_name}" not in toks:
                    continue
                srcs = [t for t in toks[1:] if not t.startswith("--")][:-1]
                for src in srcs:
                    p = host(src)
                    if not os.path.exists(p):
                        print(f"  FAIL: stage {name} copies {src} from {builder_name}: missing")
                        ok = False
                    elif os.access(p, os.X_OK) and os.path.isfile(p):
                        v = subprocess.run([p, "--version"], capture_output=True, text=True)
                        if v.returncode != 0:
                            print(f"  FAIL: {src} --version exited {v.returncode}")
                            ok = False
                        else:
                            print(f"  stage {name}: {src} runs: {v.stdout.strip()}")
        return 0 if ok else 1
    finally:
        if args.keep:
            print("kept", tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def seed(target, workdir):
    """Hard-link an existing target directory's release build products into workdir/target."""
    for sub in ("deps", "build", ".fingerprint"):
        src = os.path.join(target, "release", sub)
        if os.path.isdir(src):
            dst = os.path.join(workdir, "target", "release", sub)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            subprocess.run(["cp", "-al", src, dst], check=True)


if __name__ == "__main__":
    sys.exit(main())
