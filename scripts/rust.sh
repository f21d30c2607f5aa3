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
