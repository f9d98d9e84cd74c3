# Where cargo puts its build products: CARGO_TARGET_DIR (relative to the repository
# root, as cargo reads it there), else `build.target-dir` of a .cargo/config.toml, else
# target/ -- cargo metadata answers all three. Sourced by the scripts that run a built
# binary, which must never assume ROOT/target:
#   . "$ROOT/scripts/lib/target.sh"; ELECTD="$(target_dir)/release/electd"
target_dir() {
    local dir
    dir=$(cd "$ROOT" && cargo metadata --no-deps --format-version 1 |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
    [ -n "$dir" ] || { echo "cannot ask cargo for its target directory" >&2; return 1; }
    printf '%s\n' "$dir"
}
