# Sourced by scripts/test: make a MariaDB/MySQL reachable for the worker-ID tests and
# export UIDGEN_MYSQL_URL. In order:
#   1. UIDGEN_MYSQL_URL already set: use it as it is.
#   2. A server answers at 127.0.0.1:3306: use mysql://root@127.0.0.1:3306/test.
#   3. mariadbd is installed: start a private one on a temporary data directory.
#   4. Running as root with apt-get: install mariadb-server (without starting its service),
#      then as 3.
#   5. Otherwise: stop, saying what to install.
# A server this script starts is stopped, and its data removed, when scripts/test exits.

MARIADB_DIR=""
MARIADB_PID=""

port_answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

stop_private_mariadb() {
    if [ -n "$MARIADB_PID" ]; then
        kill "$MARIADB_PID" 2>/dev/null || true
        wait "$MARIADB_PID" 2>/dev/null || true
        MARIADB_PID=""
    fi
    if [ -n "$MARIADB_DIR" ]; then
        rm -rf "$MARIADB_DIR"
        MARIADB_DIR=""
    fi
}

find_mariadbd() {
    command -v mariadbd 2>/dev/null || { [ -x /usr/sbin/mariadbd ] && echo /usr/sbin/mariadbd; } || true
}

install_mariadb_server() {
    install_with_apt mariadb-server mariadb-client
}

# Starts mariadbd ($1) on MARIADB_DIR's data and port $2, in the background; sets
# MARIADB_PID. Its log is appended to, so a restart keeps the first start's.
launch_private_mariadbd() {
    "$1" --no-defaults --datadir="$MARIADB_DIR/data" --user="$(id -un)" \
        --port="$2" --bind-address=127.0.0.1 --socket="$MARIADB_DIR/mysqld.sock" \
        --pid-file="$MARIADB_DIR/mysqld.pid" --skip-log-bin >>"$MARIADB_DIR/server.log" 2>&1 &
    MARIADB_PID=$!
}

start_private_mariadb() {
    local mariadbd=$1 user port install_db client
    user=$(id -un)
    install_db=$(command -v mariadb-install-db || command -v mysql_install_db || true)
    client=$(command -v mariadb || command -v mysql || true)
    if [ -z "$install_db" ] || [ -z "$client" ]; then
        echo "mariadb: $mariadbd is installed but mariadb-install-db or the mariadb client is not;" >&2
        echo "mariadb: install mariadb-server and mariadb-client, or set UIDGEN_MYSQL_URL" >&2
        return 1
    fi
    MARIADB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-mariadb.XXXXXX")
    port=$(free_port)
    echo "mariadb: starting a private server on 127.0.0.1:$port (data in $MARIADB_DIR)"
    if ! "$install_db" --no-defaults --datadir="$MARIADB_DIR/data" --user="$user" \
        --auth-root-authentication-method=normal >"$MARIADB_DIR/install.log" 2>&1; then
        cat "$MARIADB_DIR/install.log" >&2
        return 1
    fi
    launch_private_mariadbd "$mariadbd" "$port"
    await_server mariadb "$MARIADB_PID" "$MARIADB_DIR/server.log" 60 \
        "$client" --no-defaults --protocol=tcp -h127.0.0.1 -P"$port" -uroot \
        -e 'CREATE DATABASE IF NOT EXISTS test' || return 1
    export UIDGEN_MYSQL_URL="mysql://root@127.0.0.1:$port/test"
}

ensure_mariadb() {
    if [ -n "${UIDGEN_MYSQL_URL:-}" ]; then
        echo "mariadb: using UIDGEN_MYSQL_URL"
        return 0
    fi
    if port_answers 127.0.0.1 3306; then
        echo "mariadb: using the server at 127.0.0.1:3306"
        export UIDGEN_MYSQL_URL="mysql://root@127.0.0.1:3306/test"
        return 0
    fi
    local mariadbd
    mariadbd=$(find_mariadbd)
    if [ -z "$mariadbd" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        install_mariadb_server || echo "mariadb: apt-get could not install mariadb-server" >&2
        mariadbd=$(find_mariadbd)
    fi
    if [ -n "$mariadbd" ]; then
        start_private_mariadb "$mariadbd"
        return
    fi
    cat >&2 <<'MSG'
mariadb: no MariaDB/MySQL is reachable, and none could be started.
  The worker-ID tests need one. Any of these works:
  - start the server you have, listening on 127.0.0.1:3306 (user root, no password, database test);
  - install MariaDB's server (Debian/Ubuntu: sudo apt-get install mariadb-server), and scripts/test
    starts a private one by itself;
  - point UIDGEN_MYSQL_URL at a server: mysql://user:password@host:port/database
MSG
    return 1
}

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Restarts the private server in place (scripts/schemes measures what a restart does to
# IDs): SIGTERM, a clean shutdown, then the same data directory, port and flags as
# start_private_mariadb (both launch_private_mariadbd); returns once it answers. The data
# stays.
# Reads MARIADB_DIR, MARIADB_PID and UIDGEN_MYSQL_URL; sets MARIADB_PID.
restart_private_mariadb() {
    local mariadbd client port
    mariadbd=$(find_mariadbd)
    client=$(command -v mariadb || command -v mysql)
    port=${UIDGEN_MYSQL_URL##*:}
    port=${port%%/*}
    kill -TERM "$MARIADB_PID"
    if ! wait_gone "$MARIADB_PID" 120; then
        echo "mariadb: the private server did not stop within 120 s of SIGTERM" >&2
        return 1
    fi
    launch_private_mariadbd "$mariadbd" "$port"
    await_server mariadb "$MARIADB_PID" "$MARIADB_DIR/server.log" 60 \
        "$client" --no-defaults --protocol=tcp -h127.0.0.1 -P"$port" -uroot -e 'SELECT 1'
}
