# Sourced by scripts/test: make a PostgreSQL reachable for the lease-store tests and
# export UIDGEN_POSTGRES_URL. In order:
#   1. UIDGEN_POSTGRES_URL already set: use it as it is.
#   2. A server answers at 127.0.0.1:5432 and lets user postgres (or the current user)
#      into database test: use it.
#   3. PostgreSQL's server is installed (/usr/lib/postgresql/*/bin): start a private one
#      on a temporary data directory and a free port.
#   4. Running as root with apt-get: install postgresql (without starting its service),
#      then as 3.
#   5. Otherwise: stop, saying what to install.
# UIDGEN_PRIVATE_SERVERS=1 skips 1 and 2 (to try the private-server path).
# A server this script starts is stopped, and its data removed, when scripts/test exits.

POSTGRES_DIR=""
POSTGRES_BIN=""

declare -F port_answers >/dev/null || port_answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Runs a PostgreSQL server program as a user it accepts: it refuses to run as root.
as_postgres_user() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

stop_private_postgres() {
    if [ -n "$POSTGRES_DIR" ]; then
        if [ -n "$POSTGRES_BIN" ] && [ -f "$POSTGRES_DIR/data/postmaster.pid" ]; then
            as_postgres_user "$POSTGRES_BIN/pg_ctl" -D "$POSTGRES_DIR/data" -m immediate -w \
                stop >/dev/null 2>&1 || true
        fi
        rm -rf "$POSTGRES_DIR"
        POSTGRES_DIR=""
    fi
}

find_postgres_bin() {
    local dir
    # The newest installed version.
    for dir in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$dir/postgres" ] && [ -x "$dir/initdb" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
            return
        fi
    done
    if command -v initdb >/dev/null && command -v pg_ctl >/dev/null && command -v postgres >/dev/null; then
        dirname "$(command -v initdb)"
    fi
}

install_postgres_server() {
    install_with_apt postgresql
}

start_private_postgres() {
    local bin=$1 port
    if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
        echo "postgres: running as root, and there is no user postgres to run the server as;" >&2
        echo "postgres: install postgresql (it creates that user), or set UIDGEN_POSTGRES_URL" >&2
        return 1
    fi
    POSTGRES_DIR=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-postgres.XXXXXX")
    POSTGRES_BIN=$bin
    [ "$(id -u)" = 0 ] && chown postgres "$POSTGRES_DIR"
    port=$(free_port)
    echo "postgres: starting a private server on 127.0.0.1:$port (data in $POSTGRES_DIR)"
    if ! as_postgres_user "$bin/initdb" -D "$POSTGRES_DIR/data" -U postgres --auth=trust \
        -E UTF8 --no-sync >"$POSTGRES_DIR/initdb.log" 2>&1; then
        cat "$POSTGRES_DIR/initdb.log" >&2
        return 1
    fi
    # fsync off: a throwaway server for tests.
    if ! as_postgres_user "$bin/pg_ctl" -D "$POSTGRES_DIR/data" -l "$POSTGRES_DIR/server.log" -w -t 60 \
        -o "-p $port -c listen_addresses=127.0.0.1 -k $POSTGRES_DIR -c fsync=off" start >/dev/null; then
        echo "postgres: the private server did not come up; its log:" >&2
        tail -20 "$POSTGRES_DIR/server.log" >&2
        return 1
    fi
    if ! "$bin/createdb" -h 127.0.0.1 -p "$port" -U postgres test; then
        echo "postgres: could not create database test on the private server" >&2
        return 1
    fi
    export UIDGEN_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/test"
}

# The URL of the server at 127.0.0.1:5432 for the first user that may use database test,
# if psql is there to ask; else the usual postgres user.
local_postgres_url() {
    local user
    if ! command -v psql >/dev/null; then
        echo "postgres://postgres@127.0.0.1:5432/test"
        return 0
    fi
    for user in postgres "$(id -un)"; do
        if PGCONNECT_TIMEOUT=5 psql -h 127.0.0.1 -p 5432 -U "$user" -d test -w -Atqc 'select 1' \
            >/dev/null 2>&1; then
            echo "postgres://$user@127.0.0.1:5432/test"
            return 0
        fi
    done
    return 1
}

ensure_postgres() {
    if [ -z "${UIDGEN_PRIVATE_SERVERS:-}" ]; then
        if [ -n "${UIDGEN_POSTGRES_URL:-}" ]; then
            echo "postgres: using UIDGEN_POSTGRES_URL"
            return 0
        fi
        local url
        if port_answers 127.0.0.1 5432; then
            if url=$(local_postgres_url); then
                echo "postgres: using the server at 127.0.0.1:5432 (${url%%@*}@...)"
                export UIDGEN_POSTGRES_URL="$url"
                return 0
            fi
            echo "postgres: the server at 127.0.0.1:5432 lets neither user postgres nor $(id -un) into database test; starting a private one"
        fi
    fi
    local bin
    bin=$(find_postgres_bin)
    if [ -z "$bin" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        install_postgres_server || echo "postgres: apt-get could not install postgresql" >&2
        bin=$(find_postgres_bin)
    fi
    if [ -n "$bin" ]; then
        start_private_postgres "$bin"
        return
    fi
    cat >&2 <<'MSG'
postgres: no PostgreSQL is reachable, and none could be started.
  The lease-store tests need one. Any of these works:
  - start the server you have, listening on 127.0.0.1:5432 (user postgres, trust auth, database test);
  - install PostgreSQL's server (Debian/Ubuntu: sudo apt-get install postgresql), and scripts/test
    starts a private one by itself;
  - point UIDGEN_POSTGRES_URL at a server: postgres://user:password@host:port/database
MSG
    return 1
}

# Restarts the private server in place (scripts/schemes measures what a restart does to
# IDs): pg_ctl's fast shutdown (clean: a checkpoint, then exit), then a start with the
# options of the last (postmaster.opts: the same port and flags); -w returns once it
# accepts connections. The data stays. Reads POSTGRES_DIR and POSTGRES_BIN.
restart_private_postgres() {
    if ! as_postgres_user "$POSTGRES_BIN/pg_ctl" -D "$POSTGRES_DIR/data" -l "$POSTGRES_DIR/server.log" \
        -m fast -w -t 60 restart >/dev/null; then
        echo "postgres: the private server did not come back; its log:" >&2
        tail -20 "$POSTGRES_DIR/server.log" >&2
        return 1
    fi
}
