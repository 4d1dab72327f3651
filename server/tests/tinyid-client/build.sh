#!/usr/bin/env bash
# Compile didi/tinyid's vendored client sources (src/) and uidgen's driver
# (driver/TinyidDriver.java) into OUTDIR with plain javac (JDK 17; no Maven,
# no network, no third-party jars).
#
#   tests/tinyid-client/build.sh OUTDIR
#   java -cp OUTDIR TinyidDriver 127.0.0.1:PORT TOKEN BIZTYPE THREADS IDS_PER_THREAD
set -euo pipefail

if [ "$#" -ne 1 ] || [ -z "$1" ]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
fi
out=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

command -v javac >/dev/null 2>&1 || { echo "$0: javac not found (a JDK 17 is needed)" >&2; exit 1; }

mkdir -p "$out"
sources=$(mktemp)
trap 'rm -f "$sources"' EXIT
# One quoted path per line, so that javac's @argfile copes with spaces in paths.
find "$here/src" "$here/driver" -name '*.java' | LC_ALL=C sort | sed 's/.*/"&"/' > "$sources"
[ -s "$sources" ] || { echo "$0: no sources found under $here" >&2; exit 1; }

# Tinyid's sources carry UTF-8 (Chinese) comments. -Xlint:-removal silences the one
# warning JDK 17 gives for them (System.getSecurityManager in NamedThreadFactory).
javac -encoding UTF-8 -Xlint:-removal -nowarn -d "$out" @"$sources"

test -f "$out/TinyidDriver.class"
test -f "$out/com/xiaoju/uemc/tinyid/client/utils/TinyId.class"
