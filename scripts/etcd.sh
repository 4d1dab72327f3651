# Sourced by scripts/test (or run: scripts/etcd.sh start|stop, see the end): make a
# 3-member etcd cluster reachable for the store tests and export UIDGEN_ETCD_URL. In order:
#   1. UIDGEN_ETCD_URL already set: use it as it is.
#   2. etcd is installed: start a private 3-member cluster on free loopback ports, its
#      data in a temporary folder.
#   3. Running as root with apt-get: install etcd-server (Debian's etcd 3.4; its service
#      is not started), then as 2.
#   4. Otherwise: stop, saying what to install.
# A second private cluster is for the tests that SIGKILL members (the leader, the whole
# cluster): on the first one, the tests running beside them would see their connections
# broken. Its folder is exported as UIDGEN_ETCD_CLUSTER: it holds, per member N (1 to
# 3), mN.args (the command line that starts it again on its data) and mN.pid. Both
# clusters are stopped, and their folders removed, when scripts/test exits.
#
# Building the `etcd` feature also needs protoc and Google's well-known .proto files:
# ensure_protoc installs Debian's protobuf-compiler and libprotobuf-dev the same way, or
# says so.

# The private clusters' folders (scripts/test stops them at exit).
ETCD_DIRS=()

declare -F port_answers >/dev/null || port_answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

stop_private_etcd() {
    [ "${#ETCD_DIRS[@]}" -gt 0 ] || return 0
    local dir pidfile
    for dir in "${ETCD_DIRS[@]}"; do
        for pidfile in "$dir"/m*.pid; do
            [ -e "$pidfile" ] || continue
            kill "$(cat "$pidfile")" 2>/dev/null || true
        done
    done
    sleep 0.5
    for dir in "${ETCD_DIRS[@]}"; do
        for pidfile in "$dir"/m*.pid; do
            [ -e "$pidfile" ] || continue
            kill -9 "$(cat "$pidfile")" 2>/dev/null || true
        done
        rm -rf "$dir"
    done
    ETCD_DIRS=()
}

find_etcd() {
    command -v etcd 2>/dev/null || { [ -x /usr/bin/etcd ] && echo /usr/bin/etcd; } || true
}

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Starts a private 3-member cluster with `server` (its use, for the log, in $2); sets
# ETCD_DIR to its folder and ETCD_ENDPOINTS to its members' host:port list.
start_private_etcd() {
    local server=$1 use=$2 n cluster="" clients=() peers=() waited=0
    ETCD_DIR=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-etcd.XXXXXX")
    ETCD_DIRS+=("$ETCD_DIR")
    for n in 1 2 3; do
        clients[n]=$(free_port)
        while [ "${clients[n]}" = "${clients[n-1]:-}" ] || [ "${clients[n]}" = "${peers[n-1]:-}" ]; do
            clients[n]=$((clients[n] + 1))
        done
        peers[n]=$((clients[n] + 1))
        while port_answers 127.0.0.1 "${peers[n]}"; do peers[n]=$((peers[n] + 1)); done
        cluster+="${cluster:+,}m$n=http://127.0.0.1:${peers[n]}"
    done
    echo "etcd: starting a private 3-member cluster $use on 127.0.0.1:${clients[1]},${clients[2]},${clients[3]} (in $ETCD_DIR)"
    for n in 1 2 3; do
        # One argument a line: what a test runs to start the member again.
        printf '%s\n' "$server" --name "m$n" --data-dir "$ETCD_DIR/m$n.data" \
            --listen-client-urls "http://127.0.0.1:${clients[n]}" \
            --advertise-client-urls "http://127.0.0.1:${clients[n]}" \
            --listen-peer-urls "http://127.0.0.1:${peers[n]}" \
            --initial-advertise-peer-urls "http://127.0.0.1:${peers[n]}" \
            --initial-cluster "$cluster" --initial-cluster-token "uidgen-$$-${#ETCD_DIRS[@]}" \
            --initial-cluster-state new --log-level warn >"$ETCD_DIR/m$n.args"
        mapfile -t args <"$ETCD_DIR/m$n.args"
        "${args[@]}" >>"$ETCD_DIR/m$n.log" 2>&1 &
        echo $! >"$ETCD_DIR/m$n.pid"
    done
    ETCD_ENDPOINTS="127.0.0.1:${clients[1]},127.0.0.1:${clients[2]},127.0.0.1:${clients[3]}"
    local web="http://127.0.0.1:${clients[1]},http://127.0.0.1:${clients[2]},http://127.0.0.1:${clients[3]}"
    until ETCDCTL_API=3 etcdctl --endpoints "$web" endpoint health >/dev/null 2>&1; do
        if [ "$waited" -ge 300 ]; then
            echo "etcd: the private cluster did not become healthy in 30 s; its logs:" >&2
            tail -5 "$ETCD_DIR"/m*.log >&2
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
}

ensure_etcd() {
    local server
    server=$(find_etcd)
    if [ -n "${UIDGEN_ETCD_URL:-}" ]; then
        echo "etcd: using UIDGEN_ETCD_URL"
        # The tests that kill members need a cluster of their own, which only a local
        # etcd can give: without one they say so and fail.
        if [ -z "${UIDGEN_ETCD_CLUSTER:-}" ] && [ -n "$server" ] && command -v etcdctl >/dev/null; then
            start_private_etcd "$server" "for the tests that kill members" &&
                export UIDGEN_ETCD_CLUSTER="$ETCD_DIR"
        fi
        return 0
    fi
    if { [ -z "$server" ] || ! command -v etcdctl >/dev/null; } && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        install_with_apt etcd-server || echo "etcd: apt-get could not install etcd-server" >&2
        command -v etcdctl >/dev/null || install_with_apt etcd-client ||
            echo "etcd: apt-get could not install etcd-client" >&2
        server=$(find_etcd)
    fi
    if [ -n "$server" ] && command -v etcdctl >/dev/null; then
        start_private_etcd "$server" "for the store tests" || return 1
        export UIDGEN_ETCD_URL="etcd://$ETCD_ENDPOINTS/uidgen-test"
        start_private_etcd "$server" "for the tests that kill members" || return 1
        export UIDGEN_ETCD_CLUSTER="$ETCD_DIR"
        return 0
    fi
    cat >&2 <<'MSG'
etcd: no etcd is reachable, and none could be started.
  The etcd store tests need a cluster. Any of these works:
  - install etcd (Debian/Ubuntu: sudo apt-get install etcd-server etcd-client), and
    scripts/test starts a private 3-member cluster by itself;
  - point UIDGEN_ETCD_URL at a cluster: etcd://host:2379,host:2379,host:2379/PREFIX
MSG
    return 1
}

# protoc, and Google's well-known .proto files beside it: etcd's own .proto files import
# google/protobuf/descriptor.proto, which Debian ships in libprotobuf-dev, not in
# protobuf-compiler (a fresh machine has the one without the other).
PROTOC_INCLUDE_FILE=google/protobuf/descriptor.proto

# Where protoc finds the well-known files: PROTOC_INCLUDE, or beside the binary.
protoc_include_found() {
    local dir
    for dir in ${PROTOC_INCLUDE:-} /usr/include /usr/local/include \
        "$(dirname "$(command -v protoc 2>/dev/null || echo /nonexistent/bin/protoc)")/../include"; do
        [ -f "$dir/$PROTOC_INCLUDE_FILE" ] && return 0
    done
    return 1
}

ensure_protoc() {
    { command -v protoc >/dev/null || [ -n "${PROTOC:-}" ]; } && protoc_include_found && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        install_with_apt protobuf-compiler libprotobuf-dev ||
            echo "protoc: apt-get could not install protobuf-compiler libprotobuf-dev" >&2
    fi
    if ! command -v protoc >/dev/null && [ -z "${PROTOC:-}" ]; then
        cat >&2 <<'MSG'
protoc: not found. The `etcd` feature's client (etcd-client) compiles etcd's .proto files
  when it is built, with protoc. Install it (Debian/Ubuntu: sudo apt-get install
  protobuf-compiler libprotobuf-dev), or point PROTOC at a protoc binary, and run again.
MSG
        return 1
    fi
    protoc_include_found && return 0
    cat >&2 <<MSG
protoc: $PROTOC_INCLUDE_FILE not found (looked in PROTOC_INCLUDE, /usr/include,
  /usr/local/include and beside protoc). etcd's .proto files import it. Install Google's
  well-known .proto files (Debian/Ubuntu: sudo apt-get install libprotobuf-dev), or point
  PROTOC_INCLUDE at the folder that holds google/protobuf/, and run again.
MSG
    return 1
}

# Run as a script: `scripts/etcd.sh start` starts the private clusters and prints the
# variables to export, and how to stop them; `scripts/etcd.sh stop DIR...` stops the
# clusters in those folders.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    case "${1:-}" in
        start)
            unset UIDGEN_ETCD_URL
            ensure_etcd >&2
            echo "export UIDGEN_ETCD_URL='$UIDGEN_ETCD_URL' UIDGEN_ETCD_CLUSTER='$UIDGEN_ETCD_CLUSTER'"
            echo "# to stop them: scripts/etcd.sh stop ${ETCD_DIRS[*]}"
            ;;
        stop)
            shift
            [ "$#" -gt 0 ] || { echo "usage: scripts/etcd.sh stop DIR..." >&2; exit 2; }
            ETCD_DIRS=("$@")
            stop_private_etcd
            ;;
        *)
            echo "usage: scripts/etcd.sh start | stop DIR..." >&2
            exit 2
            ;;
    esac
fi
