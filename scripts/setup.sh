# Shared by run.sh and test.sh: install what a fresh Debian machine lacks. Sourced, not run.
# Usage: ensure_debian_packages CMD:PACKAGE...; ensure_venv [EXTRAS]

ensure_debian_packages() {
    local missing=() pair
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
    done
    python3 -c "import ensurepip" >/dev/null 2>&1 || missing+=(python3-venv)
    ((${#missing[@]})) || return 0
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "installing Debian packages: ${missing[*]}" >&2
    $sudo apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
}

ensure_venv() {
    # Installs only when pyproject.toml changed since the last install, or extras are asked for that
    # it did not install (a stamp in .venv), so that starting the bridge does not reinstall it each time.
    local extras="${1:-}" stamp=.venv/.mcp-bridge-installed hash installed=""
    [ -x .venv/bin/python ] || python3 -m venv .venv >&2
    hash="$(sha256sum pyproject.toml | cut -d' ' -f1)"
    [ -f "$stamp" ] && installed="$(cat "$stamp")"
    [ "$installed" = "$hash ${extras}" ] && return 0
    [ -z "$extras" ] && [ "${installed%% *}" = "$hash" ] && return 0
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".${extras}" >&2
    printf '%s\n' "$hash ${extras}" > "$stamp"
}
