# Sourced by scripts/test (and scripts/schemes): make a ZooKeeper reachable for the
# zookeeper-sequential scheme's tests and export UIDGEN_ZOOKEEPER_URL (zk://HOST:PORT).
# In order:
#   1. UIDGEN_ZOOKEEPER_URL already set: use it as it is.
#   2. A server answers at 127.0.0.1:2181: use zk://127.0.0.1:2181.
#   3. Debian's ZooKeeper (zookeeperd) and java are installed: start a private standalone
#      server on a free port, its data in a temporary directory.
#   4. Running as root with apt-get: install zookeeperd (without starting its service),
#      then as 3.
#   5. Otherwise: stop, saying what to install.
# UIDGEN_PRIVATE_SERVERS=1 skips 1 and 2. A server this script starts is stopped, and its
# directory removed, by stop_private_zookeeper; restart_private_zookeeper restarts it on
# its data (scripts/schemes measures what a restart does to IDs).

ZOOKEEPER_DIR=""
ZOOKEEPER_PID=""
ZOOKEEPER_PORT=""

declare -F port_answers >/dev/null || port_answers() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

stop_private_zookeeper() {
    if [ -n "$ZOOKEEPER_PID" ]; then
        kill "$ZOOKEEPER_PID" 2>/dev/null || true
        wait "$ZOOKEEPER_PID" 2>/dev/null || true
        ZOOKEEPER_PID=""
    fi
    if [ -n "$ZOOKEEPER_DIR" ]; then
        rm -rf "$ZOOKEEPER_DIR"
        ZOOKEEPER_DIR=""
    fi
}

# The classpath of Debian's ZooKeeper: its jar and the jars it names (zkEnv.sh's).
zookeeper_classpath() {
    [ -f /usr/share/java/zookeeper.jar ] || return 1
    local cp=/usr/share/java/zookeeper.jar jar
    for jar in zookeeper-jute netty-handler netty-transport netty-common netty-buffer \
        netty-codec netty-resolver netty-transport-native-unix-common \
        netty-transport-native-epoll slf4j-api slf4j-simple log4j-1.2 commons-cli \
        metrics-core snappy-java jline audience-annotations commons-io jackson-databind \
        jackson-core jackson-annotations; do
        [ -f "/usr/share/java/$jar.jar" ] && cp="$cp:/usr/share/java/$jar.jar"
    done
    echo "$cp"
}

have_zookeeper() { command -v java >/dev/null && zookeeper_classpath >/dev/null; }

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# Starts (or, after a stop, starts again) the private server on ZOOKEEPER_DIR and
# ZOOKEEPER_PORT, and waits until it answers.
run_private_zookeeper() {
    java -Xmx256m -cp "$(zookeeper_classpath)" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$ZOOKEEPER_DIR/zoo.cfg" \
        >>"$ZOOKEEPER_DIR/server.log" 2>&1 &
    ZOOKEEPER_PID=$!
    await_server zookeeper "$ZOOKEEPER_PID" "$ZOOKEEPER_DIR/server.log" 60 \
        port_answers 127.0.0.1 "$ZOOKEEPER_PORT"
}

start_private_zookeeper() {
    ZOOKEEPER_DIR=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-zookeeper.XXXXXX")
    ZOOKEEPER_PORT=$(free_port)
    echo "zookeeper: starting a private server on 127.0.0.1:$ZOOKEEPER_PORT (in $ZOOKEEPER_DIR)"
    mkdir -p "$ZOOKEEPER_DIR/data"
    cat >"$ZOOKEEPER_DIR/zoo.cfg" <<CFG
tickTime=2000
dataDir=$ZOOKEEPER_DIR/data
clientPort=$ZOOKEEPER_PORT
clientPortAddress=127.0.0.1
admin.enableServer=false
CFG
    run_private_zookeeper || return 1
    export UIDGEN_ZOOKEEPER_URL="zk://127.0.0.1:$ZOOKEEPER_PORT"
}

# Stops the private server (SIGTERM) and starts it again on its data.
restart_private_zookeeper() {
    kill "$ZOOKEEPER_PID" 2>/dev/null || true
    wait "$ZOOKEEPER_PID" 2>/dev/null || true
    while port_answers 127.0.0.1 "$ZOOKEEPER_PORT"; do sleep 0.1; done
    run_private_zookeeper
}

ensure_zookeeper() {
    if [ -z "${UIDGEN_PRIVATE_SERVERS:-}" ]; then
        if [ -n "${UIDGEN_ZOOKEEPER_URL:-}" ]; then
            echo "zookeeper: using UIDGEN_ZOOKEEPER_URL"
            return 0
        fi
        if port_answers 127.0.0.1 2181; then
            echo "zookeeper: using the server at 127.0.0.1:2181"
            export UIDGEN_ZOOKEEPER_URL="zk://127.0.0.1:2181"
            return 0
        fi
    fi
    if ! have_zookeeper && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        install_with_apt zookeeperd || echo "zookeeper: apt-get could not install zookeeperd" >&2
    fi
    if have_zookeeper; then
        start_private_zookeeper
        return
    fi
    cat >&2 <<'MSG'
zookeeper: no ZooKeeper is reachable, and none could be started.
  The zookeeper-sequential scheme's test needs one. Any of these works:
  - install ZooKeeper (Debian/Ubuntu: sudo apt-get install zookeeperd; it needs java),
    and scripts/test starts a private one by itself;
  - start a ZooKeeper listening on 127.0.0.1:2181;
  - point UIDGEN_ZOOKEEPER_URL at one: zk://host:port
MSG
    return 1
}
