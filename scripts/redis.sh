# Sourced by scripts/test: make a Redis reachable for the lease-store tests and export
# UIDGEN_REDIS_URL. In order:
#   1. UIDGEN_REDIS_URL already set: use it as it is.
#   2. A server answers at 127.0.0.1:6379: use redis://127.0.0.1:6379.
#   3. redis-server is installed: start a private one (no persistence) on a free port.
# Both servers keep nothing on disk, which uidgen refuses unless the URL says
# ?accept_data_loss=true: the URLs exported here do.
#   4. Running as root with apt-get: install redis-server (without starting its
#      service), then as 3.
#   5. Otherwise: stop, saying what to install.
# UIDGEN_PRIVATE_SERVERS=1 skips 1 and 2 (to try the private-server path).
# A server this script starts is stopped, and its directory removed, when scripts/test
# exits.

REDIS_DIR=""
REDIS_PID=""

declare -F port_answers >/dev/null || port_answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

stop_private_redis() {
    if [ -n "$REDIS_PID" ]; then
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
        REDIS_PID=""
    fi
    if [ -n "$REDIS_DIR" ]; then
        rm -rf "$REDIS_DIR"
        REDIS_DIR=""
    fi
}

find_redis_server() {
    command -v redis-server 2>/dev/null || { [ -x /usr/bin/redis-server ] && echo /usr/bin/redis-server; } || true
}

install_redis_server() {
    install_with_apt redis-server
}

# Starts redis-server ($1) on port $2 in REDIS_DIR, keeping nothing on disk, in the
# background; sets REDIS_PID.
launch_private_redis() {
    "$1" --port "$2" --bind 127.0.0.1 --save "" --appendonly no --daemonize no \
        --dir "$REDIS_DIR" >>"$REDIS_DIR/server.log" 2>&1 &
    REDIS_PID=$!
}

start_private_redis() {
    local server=$1 port
    REDIS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-redis.XXXXXX")
    port=$(free_port)
    echo "redis: starting a private server on 127.0.0.1:$port (in $REDIS_DIR)"
    launch_private_redis "$server" "$port"
    await_server redis "$REDIS_PID" "$REDIS_DIR/server.log" 30 port_answers 127.0.0.1 "$port" ||
        return 1
    export UIDGEN_REDIS_URL="redis://127.0.0.1:$port/?accept_data_loss=true"
}

ensure_redis() {
    if [ -z "${UIDGEN_PRIVATE_SERVERS:-}" ]; then
        if [ -n "${UIDGEN_REDIS_URL:-}" ]; then
            echo "redis: using UIDGEN_REDIS_URL"
            return 0
        fi
        if port_answers 127.0.0.1 6379; then
            echo "redis: using the server at 127.0.0.1:6379"
            export UIDGEN_REDIS_URL="redis://127.0.0.1:6379/?accept_data_loss=true"
            return 0
        fi
    fi
    local server
    server=$(find_redis_server)
    if [ -z "$server" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        install_redis_server || echo "redis: apt-get could not install redis-server" >&2
        server=$(find_redis_server)
    fi
    if [ -n "$server" ]; then
        start_private_redis "$server"
        return
    fi
    cat >&2 <<'MSG'
redis: no Redis is reachable, and none could be started.
  The lease-store tests need one. Any of these works:
  - start the server you have, listening on 127.0.0.1:6379;
  - install Redis's server (Debian/Ubuntu: sudo apt-get install redis-server), and scripts/test
    starts a private one by itself;
  - point UIDGEN_REDIS_URL at a server: redis://[:password@]host:port[/db]
MSG
    return 1
}

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Restarts the private server in place (scripts/schemes measures what a restart does to
# IDs): SIGTERM, then the same port, directory and flags as start_private_redis (both
# launch_private_redis); returns once it answers PING. Without persistence it comes back empty.
# Reads REDIS_DIR, REDIS_PID and UIDGEN_REDIS_URL; sets REDIS_PID.
restart_private_redis() {
    local server port
    server=$(find_redis_server)
    port=${UIDGEN_REDIS_URL#redis://127.0.0.1:}
    port=${port%%/*}
    kill -TERM "$REDIS_PID"
    if ! wait_gone "$REDIS_PID" 60; then
        echo "redis: the private server did not stop within 60 s of SIGTERM" >&2
        return 1
    fi
    launch_private_redis "$server" "$port"
    # The port opens before a loading server takes commands: wait for +PONG.
    await_server redis "$REDIS_PID" "$REDIS_DIR/server.log" 30 redis_pongs "$port"
}

# Whether the Redis on port $1 answers PING with +PONG.
redis_pongs() {
    local reply
    reply=$( (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf 'PING\r\n' >&3 &&
        read -r -t 2 line <&3 && printf '%s' "$line") 2>/dev/null) &&
        [ "${reply%$'\r'}" = "+PONG" ]
}
