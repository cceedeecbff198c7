# shellcheck shell=bash
# Sourced by scripts/gateway, scripts/test and .ci/run: create .venv/ and install the project into it
# once, then skip all of that (in milliseconds) until pyproject.toml changes.
#
# Needs only python3 (3.11+) with pip. Debian/Ubuntu without python3-venv have no ensurepip; there we
# create the venv without pip and let the system pip install into it (pip --python, pip >= 22.3).

RC_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
RC_VENV="$RC_ROOT/.venv"
RC_PACKAGES=(gateway mcp_shim channels nodes plugins migrations)

rc_python() {  # print the first python >= 3.11 on PATH ($REMOTECLAW_PYTHON first)
    local py
    for py in "${REMOTECLAW_PYTHON:-}" python3.13 python3.12 python3.11 python3; do
        if [ -z "$py" ] || ! command -v "$py" >/dev/null 2>&1; then
            continue
        fi
        if "$py" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
            echo "$py"
            return 0
        fi
    done
    echo "remoteclaw: Python 3.11 or newer is needed (python3 is $(python3 --version 2>&1 || echo missing))" >&2
    return 1
}

RC_INSTALL_MODE="editable-compat"  # bump when the way we install changes, so old venvs reinstall

rc_fingerprint() {  # what the install depends on: pyproject.toml, the interpreter, the install mode
    printf '%s|%s|%s' "$(cksum <"$RC_ROOT/pyproject.toml")" "$("$RC_VENV/bin/python" -V 2>&1)" "$RC_INSTALL_MODE" |
        cksum | cut -d' ' -f1
}

rc_installed() {  # rc_installed EXTRAS: is .venv current for these extras? ("dev" covers everything)
    local stamp="$RC_VENV/.remoteclaw-installed" fp
    [ -x "$RC_VENV/bin/remoteclaw" ] && [ -f "$stamp" ] || return 1
    fp="$(rc_fingerprint)"
    if [ -z "$1" ]; then
        grep -q "^$fp " "$stamp"
    else
        grep -qx -e "$fp $1" -e "$fp dev" "$stamp"
    fi
}

rc_ensure_venv() {  # rc_ensure_venv [EXTRAS]   e.g. dev, or postgres,redis; empty = core only
    local extras="${1:-}" py="" spec="$RC_ROOT"
    [ -n "$extras" ] && spec="${RC_ROOT}[$extras]"
    if [ -x "$RC_VENV/bin/python" ] && "$RC_VENV/bin/python" -c '' 2>/dev/null; then
        rc_installed "$extras" && return 0
    else
        py="$(rc_python)" || return 1
        echo "remoteclaw: creating $RC_VENV with $py" >&2
        rm -rf "$RC_VENV"
        if ! "$py" -m venv "$RC_VENV" >/dev/null 2>&1; then
            rm -rf "$RC_VENV"
            "$py" -m venv --without-pip "$RC_VENV"
        fi
    fi
    echo "remoteclaw: installing remoteclaw${extras:+[$extras]} into .venv (once per pyproject.toml change)" >&2
    # editable_mode=compat installs a plain path entry instead of an import hook: the hook costs every
    # Python start ~15-20 ms, and the MCP shim starts for every agent run.
    local pip_args=(install -q --disable-pip-version-check --config-settings editable_mode=compat -e "$spec")
    if "$RC_VENV/bin/python" -m pip --version >/dev/null 2>&1; then
        "$RC_VENV/bin/python" -m pip "${pip_args[@]}"
    else
        [ -n "$py" ] || py="$(rc_python)" || return 1
        "$py" -m pip --python "$RC_VENV/bin/python" "${pip_args[@]}"
    fi
    echo "$(rc_fingerprint) $extras" >>"$RC_VENV/.remoteclaw-installed"
    rc_compile
}

rc_compile() {  # write bytecode for our packages: spawned gateways and shims start faster
    # (PYTHONDONTWRITEBYTECODE=1 may be set, so nothing else would); unchanged files are skipped.
    local dirs=() d
    for d in "${RC_PACKAGES[@]}"; do [ -d "$RC_ROOT/$d" ] && dirs+=("$RC_ROOT/$d"); done
    "$RC_VENV/bin/python" -m compileall -q -j 0 "${dirs[@]}" >/dev/null ||
        echo "remoteclaw: some files did not compile (the tests will say which)" >&2
}
