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
# ensure_zookeeper_ensemble, further down, starts the 3-member ensemble the ZooKeeper
# store's tests use (UIDGEN_ZOOKEEPER_STORE_URL).

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

# The private 3-member ensemble for the ZooKeeper store's tests: start_private_zookeeper_
# ensemble starts it in a temporary folder, exported as UIDGEN_ZOOKEEPER_ENSEMBLE_DIR
# beside UIDGEN_ZOOKEEPER_STORE_URL (zookeeper://127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3/
# uidgen-test). The folder holds, per member N (1 to 3):
#   member-N.env   KEY=VALUE lines, the value the rest of the line: index, pid (empty
#                  while it is down), client_port, quorum_port, election_port, data_dir,
#                  config, log, and start (the command that starts it again, with
#                  UIDGEN_ZOOKEEPER_ENSEMBLE_DIR set)
#   member-N.args  the JVM's command line, one argument a line
#   member-N.cfg, member-N.data/ (with myid), member-N.log
# A test kills, restarts and finds the leader with `bash scripts/zookeeper.sh
# member-kill N | member-restart N | leader` (see the end), or the shell functions
# kill_zookeeper_member, start_zookeeper_member, zookeeper_leader_index and
# zookeeper_member_pid.

ZOOKEEPER_ENSEMBLE_DIR=""
ZOOKEEPER_SCRIPT="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")"

# The ensemble these functions act on: the exported one, else the one this shell started.
zookeeper_ensemble_dir() {
    local dir=${UIDGEN_ZOOKEEPER_ENSEMBLE_DIR:-$ZOOKEEPER_ENSEMBLE_DIR}
    if [ -z "$dir" ] || [ ! -f "$dir/member-1.env" ]; then
        echo "zookeeper: no private ensemble (UIDGEN_ZOOKEEPER_ENSEMBLE_DIR is unset or not one)" >&2
        return 1
    fi
    echo "$dir"
}

zookeeper_member_field() { # N KEY
    local dir
    dir=$(zookeeper_ensemble_dir) || return 1
    case $1 in 1 | 2 | 3) ;; *) echo "zookeeper: no member '$1' (1 to 3)" >&2; return 1 ;; esac
    sed -n "s/^$2=//p" "$dir/member-$1.env"
}

zookeeper_member_set_pid() { # N PID
    local dir
    dir=$(zookeeper_ensemble_dir) || return 1
    sed -i "s/^pid=.*/pid=$2/" "$dir/member-$1.env"
}

# Prints the member's pid while it runs; fails when it does not. The command line is
# checked: a dead member's pid may have gone to another process.
zookeeper_member_pid() {
    local pid config cmdline
    pid=$(zookeeper_member_field "$1" pid) || return 1
    config=$(zookeeper_member_field "$1" config)
    [ -n "$pid" ] && cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) &&
        [[ $cmdline == *" $config "* ]] && echo "$pid"
}

# A four-letter word's answer (timeout: a stopped JVM's kernel still accepts).
zookeeper_4lw() { # PORT WORD
    (exec 3<>"/dev/tcp/127.0.0.1/$1" && printf '%s' "$2" >&3 && timeout 2 cat <&3) 2>/dev/null
}

# leader or follower while the member serves; nothing otherwise.
zookeeper_member_mode() {
    local port answer
    port=$(zookeeper_member_field "$1" client_port) || return 1
    answer=$(zookeeper_4lw "$port" srvr) || return 0
    [[ $answer == *"Mode: "* ]] || return 0
    answer=${answer#*Mode: }
    echo "${answer%%$'\n'*}"
}

zookeeper_member_serves() {
    local mode
    mode=$(zookeeper_member_mode "$1")
    [ "$mode" = leader ] || [ "$mode" = follower ]
}

# Prints the leader's index (1 to 3); fails when none leads (an election, no quorum).
zookeeper_leader_index() {
    local n
    zookeeper_ensemble_dir >/dev/null || return 1
    for n in 1 2 3; do
        [ "$(zookeeper_member_mode "$n")" = leader ] && { echo "$n"; return 0; }
    done
    return 1
}

# Launches member N's JVM from member-N.args (not waiting). Disowned: the shell neither
# reports its SIGKILL nor needs to reap it.
run_zookeeper_member() {
    local dir args
    dir=$(zookeeper_ensemble_dir) || return 1
    mapfile -t args <"$dir/member-$1.args"
    "${args[@]}" </dev/null >>"$dir/member-$1.log" 2>&1 &
    zookeeper_member_set_pid "$1" $!
    disown $!
}

# Starts member N again on its data, if down, and waits until it serves (in a quorum).
start_zookeeper_member() {
    local pid dir
    dir=$(zookeeper_ensemble_dir) || return 1
    zookeeper_member_field "$1" index >/dev/null || return 1
    pid=$(zookeeper_member_pid "$1") || { run_zookeeper_member "$1" && pid=$(zookeeper_member_pid "$1"); } || return 1
    await_server "zookeeper member $1" "$pid" "$dir/member-$1.log" 60 zookeeper_member_serves "$1"
}

# SIGKILLs member N (if up) and waits until it is gone.
kill_zookeeper_member() {
    local pid
    zookeeper_member_field "$1" index >/dev/null || return 1
    pid=$(zookeeper_member_pid "$1") || return 0
    kill -9 "$pid" 2>/dev/null || true
    wait_gone "$pid" 10 || { echo "zookeeper: member $1 (pid $pid) outlived SIGKILL" >&2; return 1; }
    zookeeper_member_set_pid "$1" ""
}

# SIGTERM (a clean shutdown), then SIGKILL after 10 s.
stop_zookeeper_member() {
    local pid
    zookeeper_member_field "$1" index >/dev/null || return 1
    pid=$(zookeeper_member_pid "$1") || return 0
    kill "$pid" 2>/dev/null || true
    wait_gone "$pid" 10 || kill_zookeeper_member "$1"
    zookeeper_member_set_pid "$1" ""
}

# COUNT different ports that no server answers on.
free_ports() {
    local ports=() port
    while [ "${#ports[@]}" -lt "$1" ]; do
        port=$(free_port)
        [[ " ${ports[*]} " == *" $port "* ]] || ports+=("$port")
    done
    echo "${ports[@]}"
}

start_private_zookeeper_ensemble() {
    local classpath dir n ports servers="" started=$SECONDS pid
    classpath=$(zookeeper_classpath) || return 1
    dir=$(mktemp -d "${TMPDIR:-/tmp}/uidgen-zookeeper-ensemble.XXXXXX")
    ZOOKEEPER_ENSEMBLE_DIR=$dir
    # ports[0..2]: client; ports[3..5]: quorum; ports[6..8]: election.
    read -r -a ports <<<"$(free_ports 9)"
    for n in 1 2 3; do servers+="server.$n=127.0.0.1:${ports[n + 2]}:${ports[n + 5]}"$'\n'; done
    echo "zookeeper: starting a private 3-member ensemble on 127.0.0.1:${ports[0]},${ports[1]},${ports[2]} (in $dir)"
    for n in 1 2 3; do
        mkdir "$dir/member-$n.data"
        echo "$n" >"$dir/member-$n.data/myid"
        # admin.enableServer: Debian's AdminServer would take port 8080. forceSync=no:
        # test data, no fsync per write. maxClientCnxns=0: every lease is a connection of
        # its own, and the suites hold hundreds at once from 127.0.0.1. maxSessionTimeout:
        # a lease's session lasts its TTL, and first_use holds leases of 900 s unrenewed.
        cat >"$dir/member-$n.cfg" <<CFG
tickTime=500
initLimit=20
syncLimit=10
minSessionTimeout=1000
maxSessionTimeout=1000000
maxClientCnxns=0
dataDir=$dir/member-$n.data
clientPort=${ports[n - 1]}
clientPortAddress=127.0.0.1
admin.enableServer=false
forceSync=no
4lw.commands.whitelist=srvr,ruok,mntr,stat
$servers
CFG
        # Small heap, one GC thread, C1 only: three JVMs on a 2-core machine.
        printf '%s\n' java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 \
            -cp "$classpath" org.apache.zookeeper.server.quorum.QuorumPeerMain \
            "$dir/member-$n.cfg" >"$dir/member-$n.args"
        cat >"$dir/member-$n.env" <<ENV
index=$n
pid=
client_port=${ports[n - 1]}
quorum_port=${ports[n + 2]}
election_port=${ports[n + 5]}
data_dir=$dir/member-$n.data
config=$dir/member-$n.cfg
log=$dir/member-$n.log
start=bash $ZOOKEEPER_SCRIPT member-restart $n
ENV
        run_zookeeper_member "$n" || return 1
    done
    for n in 1 2 3; do
        pid=$(zookeeper_member_field "$n" pid)
        await_server "zookeeper member $n" "$pid" "$dir/member-$n.log" 60 \
            zookeeper_member_serves "$n" || return 1
    done
    n=$(zookeeper_leader_index) || { echo "zookeeper: the private ensemble has no leader" >&2; return 1; }
    echo "zookeeper: the ensemble serves, member $n leads ($((SECONDS - started)) s)"
    export UIDGEN_ZOOKEEPER_ENSEMBLE_DIR=$dir
    export UIDGEN_ZOOKEEPER_STORE_URL="zookeeper://127.0.0.1:${ports[0]},127.0.0.1:${ports[1]},127.0.0.1:${ports[2]}/uidgen-test"
}

# Stops the ensemble this shell started (or, from the command line, the one named) and
# removes its folder. Does nothing when there is none.
stop_private_zookeeper_ensemble() {
    local dir=$ZOOKEEPER_ENSEMBLE_DIR n stoppers=()
    [ -n "$dir" ] || return 0
    # All three at once; `wait` names them (scripts/test has other jobs running).
    for n in 1 2 3; do
        [ -f "$dir/member-$n.env" ] || continue
        UIDGEN_ZOOKEEPER_ENSEMBLE_DIR=$dir stop_zookeeper_member "$n" &
        stoppers+=($!)
    done
    [ "${#stoppers[@]}" = 0 ] || wait "${stoppers[@]}" || true
    rm -rf "$dir"
    ZOOKEEPER_ENSEMBLE_DIR=""
    if [ "${UIDGEN_ZOOKEEPER_ENSEMBLE_DIR:-}" = "$dir" ]; then
        unset UIDGEN_ZOOKEEPER_ENSEMBLE_DIR UIDGEN_ZOOKEEPER_STORE_URL
    fi
}

ensure_zookeeper_ensemble() {
    if [ -z "${UIDGEN_PRIVATE_SERVERS:-}" ] && [ -n "${UIDGEN_ZOOKEEPER_STORE_URL:-}" ]; then
        echo "zookeeper: using UIDGEN_ZOOKEEPER_STORE_URL"
        return 0
    fi
    if ! have_zookeeper && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        install_with_apt zookeeperd || echo "zookeeper: apt-get could not install zookeeperd" >&2
    fi
    if have_zookeeper; then
        start_private_zookeeper_ensemble
        return
    fi
    cat >&2 <<'MSG'
zookeeper: no ZooKeeper ensemble is reachable, and none could be started.
  The ZooKeeper store's tests need a 3-member ensemble. Any of these works:
  - install ZooKeeper (Debian/Ubuntu: sudo apt-get install zookeeperd; it needs java),
    and scripts/test starts a private ensemble by itself;
  - point UIDGEN_ZOOKEEPER_STORE_URL at one: zookeeper://host:port,host:port,host:port/PATH
    (the tests that kill members need UIDGEN_ZOOKEEPER_ENSEMBLE_DIR, which only a
    private ensemble has)
MSG
    return 1
}

# Run as a script, on the ensemble UIDGEN_ZOOKEEPER_ENSEMBLE_DIR names:
#   member-kill N      SIGKILL member N, wait until it is gone
#   member-restart N   start member N again on its data (stopping it first if up), wait
#                      until it serves
#   leader             print the leader's index (exit 1 when none leads)
#   pid N              print member N's pid (exit 1 when it is down)
#   start              start a private ensemble, print the variables to export
#   stop               stop it and remove its folder
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    set -euo pipefail
    case "${1:-}" in
        member-kill) kill_zookeeper_member "${2:?member-kill N}" ;;
        member-restart)
            stop_zookeeper_member "${2:?member-restart N}"
            start_zookeeper_member "$2"
            ;;
        leader) zookeeper_leader_index ;;
        pid) zookeeper_member_pid "${2:?pid N}" ;;
        start)
            unset UIDGEN_ZOOKEEPER_STORE_URL
            start_private_zookeeper_ensemble >&2 || { stop_private_zookeeper_ensemble; exit 1; }
            echo "export UIDGEN_ZOOKEEPER_STORE_URL='$UIDGEN_ZOOKEEPER_STORE_URL' UIDGEN_ZOOKEEPER_ENSEMBLE_DIR='$UIDGEN_ZOOKEEPER_ENSEMBLE_DIR'"
            echo "# to stop it: scripts/zookeeper.sh stop"
            ;;
        stop)
            ZOOKEEPER_ENSEMBLE_DIR=$(zookeeper_ensemble_dir)
            stop_private_zookeeper_ensemble
            ;;
        *)
            echo "usage: scripts/zookeeper.sh member-kill N | member-restart N | leader | pid N | start | stop" >&2
            exit 2
            ;;
    esac
fi
