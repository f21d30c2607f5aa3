# Sourced by demo.sh, test.sh and install.sh: stops with one line when cargo is missing or
# older than the workspace's rust-version (Debian 12's apt cargo is 1.63 and cannot build
# the workspace; the compile error it gives is pages long).
need_rust() {
    local want have
    want=$(sed -n 's/^rust-version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)
    if ! command -v cargo >/dev/null; then
        echo "grtrace needs Rust >= $want: install rustup (https://rustup.rs) and run 'rustup default stable'" >&2
        exit 1
    fi
    have=$(cargo --version 2>/dev/null | awk '{print $2}')
    if [ "$(printf '%s\n%s\n' "$want" "${have%%-*}" | sort -V | head -n 1)" != "$want" ]; then
        echo "grtrace needs Rust >= $want, but cargo here is ${have:-unknown}: install rustup (https://rustup.rs) and run 'rustup default stable' (or 'rustup update')" >&2
        exit 1
    fi
}

# CI: the declared rust-version must be at least what every locked dependency declares
# (cargo does not check it: 1.87 was declared while hdrhistogram 7.6.0 and proptest 1.12.0
# in Cargo.lock need 1.88). One line naming the packages when it is too low.
check_rust_version() {
    cargo metadata --format-version 1 --locked | python3 -c '
import json, sys
m = json.load(sys.stdin)
ws = set(m["workspace_members"])
key = lambda v: tuple(int(x) for x in v.split("."))
want = max((p["rust_version"] for p in m["packages"] if p["id"] in ws and p.get("rust_version")), key=key)
need = [(p["rust_version"], p["name"] + " " + p["version"]) for p in m["packages"]
        if p["id"] not in ws and p.get("rust_version") and key(p["rust_version"]) > key(want)]
if need:
    top = max(need, key=lambda n: key(n[0]))[0]
    names = ", ".join(n for v, n in sorted(need) if v == top)
    sys.exit(f"Cargo.toml: rust-version = \"{want}\" but Cargo.lock holds {names}, which need Rust {top}: raise rust-version (and the README)")
print(f"rust-version {want}: every locked dependency builds with it")
'
}
