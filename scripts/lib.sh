# Sourced by the scripts that start private servers: what they share.
#   install_with_apt PACKAGE...: installs Debian packages (as root) without starting
#     their services (a policy-rc.d forbids it for the install's length).
#   wait_gone PID SECONDS: waits for a process to end; 1 if it still runs.
#   await_server NAME PID LOG SECONDS COMMAND...: waits for a server to answer.

# Recommends are left out, so each caller names every package whose files it uses.
install_with_apt() {
    echo "installing $* with apt-get (no service is started)"
    local policy=/usr/sbin/policy-rc.d had_policy=""
    [ -e "$policy" ] && had_policy=1
    [ -n "$had_policy" ] || { printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; }
    local status=0
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
        --no-install-recommends "$@" >/dev/null || status=$?
    [ -n "$had_policy" ] || rm -f "$policy"
    return "$status"
}

# A zombie counts as ended: only its parent can reap it, and the caller may be another
# process (a restart command of scripts/schemes).
wait_gone() {
    local pid=$1 tenths=$(($2 * 10))
    while kill -0 "$pid" 2>/dev/null; do
        case $(sed 's/.*) //' "/proc/$pid/stat" 2>/dev/null) in Z*) return 0 ;; esac
        [ "$tenths" -gt 0 ] || return 1
        sleep 0.1
        tenths=$((tenths - 1))
    done
}

# Runs COMMAND every 0.1 s until it succeeds. Fails, with the last lines of LOG, when the
# server's process PID ends or SECONDS pass first.
await_server() {
    local name=$1 pid=$2 log=$3 tenths=$(($4 * 10))
    shift 4
    until "$@" >/dev/null 2>&1; do
        if ! kill -0 "$pid" 2>/dev/null || [ "$tenths" -le 0 ]; then
            echo "$name: the private server did not answer; its log:" >&2
            tail -20 "$log" >&2
            return 1
        fi
        sleep 0.1
        tenths=$((tenths - 1))
    done
}

# A random first port to try for a private server: from 20000 up to the start of the
# kernel's ephemeral range. In that range outgoing connections take local ports without
# listening on them, so a port there that answers no one can still be taken before the
# server binds it (a CI run lost its private TLS Redis to "Address already in use" so).
random_port() {
    local low=32768 rest
    read -r low rest </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
    [ "$low" -ge 21000 ] 2>/dev/null && [ "$low" -le 40000 ] || low=40000
    echo $((20000 + RANDOM % (low - 20500)))
}

# A port at or after `random_port` that no server answers on at 127.0.0.1 (each script
# that sources this file defines port_answers).
free_port() {
    local port
    port=$(random_port)
    while port_answers 127.0.0.1 "$port"; do port=$((port + 1)); done
    echo "$port"
}
