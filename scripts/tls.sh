# Sourced by scripts/test: give the TLS tests a MariaDB, a PostgreSQL and a Redis that
# speak TLS on loopback, with certificates from a throwaway CA this script makes with
# openssl, and export:
#   UIDGEN_TLS_CA             the CA that signed the servers' certificate (ca.pem)
#   UIDGEN_TLS_WRONG_CA       an unrelated CA that signed nothing the servers use
#   UIDGEN_MYSQL_TLS_PORT     MariaDB (user root, no password, database test)
#   UIDGEN_POSTGRES_TLS_PORT  PostgreSQL (user postgres, trust, database test)
#   UIDGEN_REDIS_TLS_PORT     Redis (TLS only, no client certificates)
# The servers' certificate names DNS:localhost and no IP address: a client that checks
# names (verify-full, VERIFY_IDENTITY) accepts localhost:PORT and refuses 127.0.0.1:PORT.
# Each server listens on 127.0.0.1 and, when the machine has it, ::1, so localhost works
# whichever address it resolves to first. In order:
#   1. UIDGEN_TLS_CA and the three port variables already set: use them as they are
#      (and make only a wrong CA if UIDGEN_TLS_WRONG_CA is not set).
#   2. Otherwise make the CAs, and start private servers (never the system ones) on free
#      ports, each checked once over TLS as the tests will use it.
#   3. A server missing: when root with apt-get, install it (without starting its
#      service), as scripts/mariadb.sh, postgres.sh and redis.sh do; else stop, saying
#      what to install.
# stop_tls_servers stops what this script started and removes its temporary directories
# (scripts/test calls it on exit); it is safe to call twice, or when nothing was started.

TLS_CA_DIR=""
# The variables this script exported (stop_tls_servers unsets them, and only them).
TLS_EXPORTED=()
TLS_MARIADB_DIR=""
TLS_MARIADB_PID=""
TLS_MARIADB_INSTALL_PID=""
TLS_POSTGRES_DIR=""
TLS_POSTGRES_BIN=""
TLS_POSTGRES_START_PID=""
TLS_REDIS_DIR=""
TLS_REDIS_PID=""

# The finders and installers of the plain-server scripts, unless scripts/test has
# sourced them already (sourcing again would forget the servers they started).
TLS_SCRIPTS_DIR=$(dirname "${BASH_SOURCE[0]}")
# shellcheck source=scripts/mariadb.sh
declare -F find_mariadbd >/dev/null || . "$TLS_SCRIPTS_DIR/mariadb.sh"
# shellcheck source=scripts/postgres.sh
declare -F find_postgres_bin >/dev/null || . "$TLS_SCRIPTS_DIR/postgres.sh"
# shellcheck source=scripts/redis.sh
declare -F find_redis_server >/dev/null || . "$TLS_SCRIPTS_DIR/redis.sh"

# True if mariadb-install-db and the mariadb client are there (mariadbd is not enough).
tls_have_mariadb_tools() {
    { command -v mariadb-install-db || command -v mysql_install_db; } >/dev/null &&
        { command -v mariadb || command -v mysql; } >/dev/null
}

# Nanoseconds since the epoch (GNU date), for the start-up time.
tls_now() { date +%s%N; }

# True if the loopback interface has ::1, so servers can listen there too.
tls_have_ipv6_loopback() {
    [ -r /proc/net/if_inet6 ] && grep -q '^00000000000000000000000000000001 ' /proc/net/if_inet6
}

# A port at or after a random start (`random_port`: below the ephemeral range) that
# answers on neither loopback address and is not one of the ports given.
tls_free_port() {
    local port taken
    port=$(random_port)
    while :; do
        taken=""
        case " $* " in *" $port "*) taken=1 ;; esac
        if [ -z "$taken" ] && ! port_answers 127.0.0.1 "$port" && ! port_answers ::1 "$port"; then
            echo "$port"
            return 0
        fi
        port=$((port + 1))
        [ "$port" -lt 40000 ] || port=20000
    done
}

# Makes, in a new temporary directory TLS_CA_DIR: ca.pem/ca.key (the CA),
# server.pem/server.key (signed by it, for DNS:localhost only, TLS server use),
# wrong-ca.pem/wrong-ca.key (an unrelated CA). With "wrong-only", only the wrong CA.
# EC P-256 keys, valid 2 days; keys 0600, certificates 0644.
make_test_ca() {
    local what=${1:-all}
    if ! command -v openssl >/dev/null; then
        echo "tls: openssl is not installed; install it (Debian/Ubuntu: sudo apt-get install openssl)" >&2
        return 1
    fi
    # A CA made before (by an earlier call) is replaced.
    [ -z "$TLS_CA_DIR" ] || rm -rf "$TLS_CA_DIR"
    TLS_CA_DIR=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-tls.XXXXXX")
    local dir=$TLS_CA_DIR
    # Our own configuration, so the system's openssl.cnf adds no extensions.
    cat >"$dir/openssl.cnf" <<'CNF'
[req]
distinguished_name = dn
prompt = no

[dn]
CN = uidgen test

[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash

[server_ext]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid, issuer
CNF
    local ec=(-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes)
    if ! (
        umask 077
        cd "$dir" &&
            openssl req -x509 "${ec[@]}" -keyout wrong-ca.key -out wrong-ca.pem -days 2 \
                -subj "/CN=uidgen wrong test CA" -config openssl.cnf -extensions ca_ext &&
            if [ "$what" != wrong-only ]; then
                openssl req -x509 "${ec[@]}" -keyout ca.key -out ca.pem -days 2 \
                    -subj "/CN=uidgen test CA" -config openssl.cnf -extensions ca_ext &&
                    openssl req -new "${ec[@]}" -keyout server.key -out server.csr \
                        -subj "/CN=localhost" -config openssl.cnf &&
                    openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
                        -CAserial ca.srl -out server.pem -days 2 \
                        -extfile openssl.cnf -extensions server_ext &&
                    chmod 644 ca.pem server.pem
            fi &&
            chmod 644 wrong-ca.pem
    ) >"$dir/openssl.log" 2>&1; then
        echo "tls: openssl could not make the test CA:" >&2
        cat "$dir/openssl.log" >&2
        return 1
    fi
    export UIDGEN_TLS_WRONG_CA="$dir/wrong-ca.pem"
    TLS_EXPORTED+=(UIDGEN_TLS_WRONG_CA)
    if [ "$what" != wrong-only ]; then
        export UIDGEN_TLS_CA="$dir/ca.pem"
        TLS_EXPORTED+=(UIDGEN_TLS_CA)
    fi
}

stop_tls_mariadb() {
    if [ -n "$TLS_MARIADB_INSTALL_PID" ]; then
        # mariadb-install-db ends by itself (killing it could orphan its mariadbd).
        wait "$TLS_MARIADB_INSTALL_PID" 2>/dev/null || true
        TLS_MARIADB_INSTALL_PID=""
    fi
    if [ -n "$TLS_MARIADB_PID" ]; then
        kill "$TLS_MARIADB_PID" 2>/dev/null || true
        wait "$TLS_MARIADB_PID" 2>/dev/null || true
        TLS_MARIADB_PID=""
    fi
    if [ -n "$TLS_MARIADB_DIR" ]; then
        rm -rf "$TLS_MARIADB_DIR"
        TLS_MARIADB_DIR=""
    fi
}

stop_tls_postgres() {
    if [ -n "$TLS_POSTGRES_START_PID" ]; then
        # pg_ctl start -w ends by itself (up, or failed, or timed out).
        wait "$TLS_POSTGRES_START_PID" 2>/dev/null || true
        TLS_POSTGRES_START_PID=""
    fi
    if [ -n "$TLS_POSTGRES_DIR" ]; then
        if [ -n "$TLS_POSTGRES_BIN" ] && [ -f "$TLS_POSTGRES_DIR/data/postmaster.pid" ]; then
            as_postgres_user "$TLS_POSTGRES_BIN/pg_ctl" -D "$TLS_POSTGRES_DIR/data" -m immediate -w \
                stop >/dev/null 2>&1 || true
        fi
        rm -rf "$TLS_POSTGRES_DIR"
        TLS_POSTGRES_DIR=""
    fi
}

stop_tls_redis() {
    if [ -n "$TLS_REDIS_PID" ]; then
        kill "$TLS_REDIS_PID" 2>/dev/null || true
        wait "$TLS_REDIS_PID" 2>/dev/null || true
        TLS_REDIS_PID=""
    fi
    if [ -n "$TLS_REDIS_DIR" ]; then
        rm -rf "$TLS_REDIS_DIR"
        TLS_REDIS_DIR=""
    fi
}

stop_tls_servers() {
    stop_tls_mariadb
    stop_tls_postgres
    stop_tls_redis
    if [ -n "$TLS_CA_DIR" ]; then
        rm -rf "$TLS_CA_DIR"
        TLS_CA_DIR=""
    fi
    # What this script exported points at nothing now.
    if [ "${#TLS_EXPORTED[@]}" -gt 0 ]; then
        unset "${TLS_EXPORTED[@]}"
        TLS_EXPORTED=()
    fi
}

# Starts MariaDB, PostgreSQL and Redis with the certificate from make_test_ca (made
# here if it was not), waits for them, checks each once over TLS with name checks, and
# exports the ports. Start-ups overlap: each server is started, then all are waited for.
# Servers this script started before are stopped first.
start_tls_servers() {
    stop_tls_mariadb
    stop_tls_postgres
    stop_tls_redis
    if [ -z "$TLS_CA_DIR" ] || [ ! -f "$TLS_CA_DIR/server.pem" ]; then
        make_test_ca
    fi
    local mariadbd pg_bin redis_server install_db client user
    mariadbd=$(find_mariadbd)
    pg_bin=$(find_postgres_bin)
    redis_server=$(find_redis_server)
    install_db=$(command -v mariadb-install-db || command -v mysql_install_db || true)
    client=$(command -v mariadb || command -v mysql || true)
    user=$(id -un)
    local missing=""
    [ -n "$mariadbd" ] || missing+=" mariadbd"
    [ -n "$install_db" ] || missing+=" mariadb-install-db"
    [ -n "$client" ] || missing+=" mariadb(client)"
    [ -n "$pg_bin" ] || missing+=" postgres/initdb/pg_ctl"
    [ -n "$redis_server" ] || missing+=" redis-server"
    if [ -n "$missing" ]; then
        echo "tls: missing:$missing; install mariadb-server, mariadb-client, postgresql and redis-server" >&2
        return 1
    fi
    if [ "$(id -u)" = 0 ] && ! id postgres >/dev/null 2>&1; then
        echo "tls: running as root, and there is no user postgres to run PostgreSQL as;" >&2
        echo "tls: install postgresql (it creates that user)" >&2
        return 1
    fi
    local ca=$TLS_CA_DIR/ca.pem cert=$TLS_CA_DIR/server.pem key=$TLS_CA_DIR/server.key
    local ipv6="" where="127.0.0.1"
    if tls_have_ipv6_loopback; then
        ipv6=1
        where="127.0.0.1 and ::1"
    fi
    local my_port pg_port redis_port
    my_port=$(tls_free_port)
    pg_port=$(tls_free_port "$my_port")
    redis_port=$(tls_free_port "$my_port" "$pg_port")
    echo "tls: starting private TLS servers on $where: MariaDB :$my_port, PostgreSQL :$pg_port, Redis :$redis_port"

    # Redis: TLS only (--port 0), no client certificates, no persistence.
    TLS_REDIS_DIR=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-tls-redis.XXXXXX")
    local redis_bind=(127.0.0.1)
    # "-" before an address: skip it if it cannot be bound.
    [ -z "$ipv6" ] || redis_bind+=(-::1)
    "$redis_server" --port 0 --tls-port "$redis_port" --bind "${redis_bind[@]}" \
        --tls-cert-file "$cert" --tls-key-file "$key" --tls-ca-cert-file "$ca" \
        --tls-auth-clients no --save "" --appendonly no --daemonize no \
        --dir "$TLS_REDIS_DIR" >"$TLS_REDIS_DIR/server.log" 2>&1 &
    TLS_REDIS_PID=$!

    # MariaDB: as start_private_mariadb in scripts/mariadb.sh, plus the TLS files. Its
    # data directory is made while PostgreSQL's is.
    TLS_MARIADB_DIR=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-tls-mariadb.XXXXXX")
    "$install_db" --no-defaults --datadir="$TLS_MARIADB_DIR/data" --user="$user" \
        --auth-root-authentication-method=normal >"$TLS_MARIADB_DIR/install.log" 2>&1 &
    TLS_MARIADB_INSTALL_PID=$!

    # PostgreSQL: as start_private_postgres in scripts/postgres.sh, plus ssl. The server
    # refuses a key others may read unless root owns it: it gets copies it owns, 0600.
    TLS_POSTGRES_DIR=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-tls-postgres.XXXXXX")
    TLS_POSTGRES_BIN=$pg_bin
    local pg_dir=$TLS_POSTGRES_DIR
    cp "$cert" "$pg_dir/server.pem"
    cp "$key" "$pg_dir/server.key"
    cp "$ca" "$pg_dir/ca.pem"
    chmod 600 "$pg_dir/server.key"
    [ "$(id -u)" != 0 ] || chown -R postgres "$pg_dir"
    if ! as_postgres_user "$pg_bin/initdb" -D "$pg_dir/data" -U postgres --auth=trust \
        -E UTF8 --no-sync >"$pg_dir/initdb.log" 2>&1; then
        echo "tls: initdb failed:" >&2
        tail -20 "$pg_dir/initdb.log" >&2
        return 1
    fi
    local pg_listen="127.0.0.1"
    [ -z "$ipv6" ] || pg_listen="127.0.0.1,::1"
    # fsync off: a throwaway server for tests.
    cat >>"$pg_dir/data/postgresql.conf" <<CONF

# uidgen scripts/tls.sh
listen_addresses = '$pg_listen'
port = $pg_port
unix_socket_directories = '$pg_dir'
fsync = off
ssl = on
ssl_cert_file = '$pg_dir/server.pem'
ssl_key_file = '$pg_dir/server.key'
ssl_ca_file = '$pg_dir/ca.pem'
CONF
    cat >"$pg_dir/data/pg_hba.conf" <<'HBA'
# TYPE  DATABASE USER     ADDRESS       METHOD
local   all      all                    trust
hostssl all      postgres 127.0.0.1/32  trust
hostssl all      postgres ::1/128       trust
host    all      postgres 127.0.0.1/32  trust
host    all      postgres ::1/128       trust
HBA
    as_postgres_user "$pg_bin/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/server.log" -w -t 60 \
        start >/dev/null 2>&1 &
    TLS_POSTGRES_START_PID=$!

    local install_pid=$TLS_MARIADB_INSTALL_PID
    TLS_MARIADB_INSTALL_PID=""
    if ! wait "$install_pid"; then
        echo "tls: mariadb-install-db failed:" >&2
        tail -20 "$TLS_MARIADB_DIR/install.log" >&2
        return 1
    fi
    local my_bind=127.0.0.1
    [ -z "$ipv6" ] || my_bind=127.0.0.1,::1
    "$mariadbd" --no-defaults --datadir="$TLS_MARIADB_DIR/data" --user="$user" \
        --port="$my_port" --bind-address="$my_bind" --socket="$TLS_MARIADB_DIR/mysqld.sock" \
        --pid-file="$TLS_MARIADB_DIR/mysqld.pid" --skip-log-bin \
        --ssl-cert="$cert" --ssl-key="$key" --ssl-ca="$ca" \
        >"$TLS_MARIADB_DIR/server.log" 2>&1 &
    TLS_MARIADB_PID=$!

    # Wait for each (bounded), then check it once over TLS as the tests connect:
    # host name localhost, the CA, names checked.
    local waited=0
    until port_answers 127.0.0.1 "$redis_port"; do
        if ! kill -0 "$TLS_REDIS_PID" 2>/dev/null || [ "$waited" -ge 300 ]; then
            echo "tls: the private Redis did not come up; its log:" >&2
            tail -20 "$TLS_REDIS_DIR/server.log" >&2
            if grep -q "^>>> 'tls-" "$TLS_REDIS_DIR/server.log"; then
                echo "tls: is $redis_server built with TLS support (Debian's is)?" >&2
            fi
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    local out
    if command -v redis-cli >/dev/null; then
        if ! out=$(redis-cli --tls --cacert "$ca" -h localhost -p "$redis_port" ping 2>&1 </dev/null) ||
            [ "$out" != PONG ]; then
            echo "tls: the private Redis does not answer over TLS at localhost:$redis_port: $out" >&2
            tail -20 "$TLS_REDIS_DIR/server.log" >&2
            return 1
        fi
    fi

    waited=0
    until "$client" --no-defaults --protocol=tcp -h127.0.0.1 -P"$my_port" -uroot \
        -e 'CREATE DATABASE IF NOT EXISTS test' >/dev/null 2>&1 </dev/null; do
        if ! kill -0 "$TLS_MARIADB_PID" 2>/dev/null || [ "$waited" -ge 600 ]; then
            echo "tls: the private MariaDB did not come up; its log:" >&2
            tail -20 "$TLS_MARIADB_DIR/server.log" >&2
            return 1
        fi
        sleep 0.1
        waited=$((waited + 1))
    done
    if ! out=$("$client" --no-defaults --protocol=tcp -h localhost -P"$my_port" -uroot \
        --ssl --ssl-ca="$ca" --ssl-verify-server-cert -N -B \
        -e 'SHOW SESSION STATUS LIKE "Ssl_cipher"' test 2>&1 </dev/null) ||
        [ "$(printf '%s' "$out" | cut -f2)" = "" ]; then
        echo "tls: the private MariaDB does not answer over TLS at localhost:$my_port: $out" >&2
        tail -20 "$TLS_MARIADB_DIR/server.log" >&2
        return 1
    fi

    local start_pid=$TLS_POSTGRES_START_PID
    TLS_POSTGRES_START_PID=""
    if ! wait "$start_pid"; then
        echo "tls: the private PostgreSQL did not come up; its log:" >&2
        tail -20 "$pg_dir/server.log" >&2
        return 1
    fi
    if ! out=$("$pg_bin/createdb" -h "$pg_dir" -p "$pg_port" -U postgres test 2>&1 </dev/null); then
        echo "tls: could not create database test on the private PostgreSQL: $out" >&2
        return 1
    fi
    if ! out=$("$pg_bin/psql" -X -w -Atq \
        "host=localhost port=$pg_port user=postgres dbname=test sslmode=verify-full sslrootcert=$ca" \
        -c 'select ssl from pg_stat_ssl where pid = pg_backend_pid()' 2>&1 </dev/null) ||
        [ "$out" != t ]; then
        echo "tls: the private PostgreSQL does not answer over TLS at localhost:$pg_port: $out" >&2
        tail -20 "$pg_dir/server.log" >&2
        return 1
    fi

    export UIDGEN_MYSQL_TLS_PORT="$my_port"
    export UIDGEN_POSTGRES_TLS_PORT="$pg_port"
    export UIDGEN_REDIS_TLS_PORT="$redis_port"
    TLS_EXPORTED+=(UIDGEN_MYSQL_TLS_PORT UIDGEN_POSTGRES_TLS_PORT UIDGEN_REDIS_TLS_PORT)
}

ensure_tls_servers() {
    local t0
    t0=$(tls_now)
    if [ -n "${UIDGEN_TLS_CA:-}" ] && [ -n "${UIDGEN_MYSQL_TLS_PORT:-}" ] &&
        [ -n "${UIDGEN_POSTGRES_TLS_PORT:-}" ] && [ -n "${UIDGEN_REDIS_TLS_PORT:-}" ]; then
        echo "tls: using UIDGEN_TLS_CA, UIDGEN_MYSQL_TLS_PORT, UIDGEN_POSTGRES_TLS_PORT and UIDGEN_REDIS_TLS_PORT as they are"
        if [ -z "${UIDGEN_TLS_WRONG_CA:-}" ]; then
            make_test_ca wrong-only
            echo "tls: made an unrelated CA for UIDGEN_TLS_WRONG_CA"
        fi
        return 0
    fi
    echo "tls: UIDGEN_TLS_CA and the three port variables are not all set; starting private TLS servers"
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        if [ -z "$(find_mariadbd)" ] || ! tls_have_mariadb_tools; then
            install_mariadb_server || echo "tls: apt-get could not install mariadb-server" >&2
        fi
        [ -n "$(find_postgres_bin)" ] || install_postgres_server ||
            echo "tls: apt-get could not install postgresql" >&2
        [ -n "$(find_redis_server)" ] || install_redis_server ||
            echo "tls: apt-get could not install redis-server" >&2
    fi
    if [ -z "$(find_mariadbd)" ] || ! tls_have_mariadb_tools || [ -z "$(find_postgres_bin)" ] ||
        [ -z "$(find_redis_server)" ] || ! command -v openssl >/dev/null; then
        cat >&2 <<'MSG'
tls: the TLS tests need MariaDB's, PostgreSQL's and Redis's servers, and one is missing.
  Either of these works:
  - install them (Debian/Ubuntu: sudo apt-get install mariadb-server mariadb-client
    postgresql redis-server openssl), and scripts/test starts private TLS ones by itself;
  - point UIDGEN_TLS_CA (and UIDGEN_TLS_WRONG_CA) at a CA, and UIDGEN_MYSQL_TLS_PORT,
    UIDGEN_POSTGRES_TLS_PORT and UIDGEN_REDIS_TLS_PORT at servers on localhost whose
    certificate that CA signed for the name localhost.
MSG
        return 1
    fi
    make_test_ca
    start_tls_servers
    local ms
    ms=$((($(tls_now) - t0) / 1000000))
    printf 'tls: CA in %s; servers up and checked over TLS in %d.%03ds\n' \
        "$TLS_CA_DIR" $((ms / 1000)) $((ms % 1000))
}
