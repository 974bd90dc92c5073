# helpers.bash — shared set-up for the queuefs bats suites.
#
#   QUEUEFS_BUILD   the build directory holding queuefs-sql (set by
#                   `make check`; defaults to the repository root)
#   STORE           a fresh store for each test (removed after it): a
#                   directory, or with QUEUEFS_TEST_PG set a database of
#                   its own on that PostgreSQL server
#   QUEUEFS_TEST_PG the URI of database "queuefs" on a server whose
#                   database "queuefs_template" holds queuefs's schema
#                   (scripts/test's PostgreSQL pass): every suite then runs
#                   on PostgreSQL
#
#   on_postgresql           true when the suite runs on PostgreSQL
#   lmdb_only REASON        skips the test on PostgreSQL, saying why
#
#   sql STATEMENT…          queuefs-sql "$STORE" STATEMENT…
#   assert_error NAME       the last `run --separate-stderr` failed with
#                           status 1 and exactly one stderr line
#                           {"error":"NAME","message":"…"}
#   jqr FILTER JSON         jq -r FILTER on JSON
#   jqc FILTER JSON         jq -c FILTER on JSON
bats_require_minimum_version 1.5.0

load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

: "${QUEUEFS_BUILD:=$(cd "$BATS_TEST_DIRNAME/.." && pwd)}"
export QUEUEFS_BUILD
QUEUEFS_SQL="$QUEUEFS_BUILD/queuefs-sql"
export QUEUEFS_SQL

on_postgresql() {
    [ -n "${QUEUEFS_TEST_PG:-}" ]
}

lmdb_only() {
    if on_postgresql; then skip "LMDB only: $*"; fi
}

# Sets STORE to a fresh store: $BATS_TEST_TMPDIR/store, or a new database
# made from the template on $QUEUEFS_TEST_PG's server (STORE_DB names it).
store_fresh() {
    STORE_DB=
    if on_postgresql; then
        STORE_DB="t${BATS_ROOT_PID:-$$}_${BATS_SUITE_TEST_NUMBER:-0}_$RANDOM"
        psql -qX "$QUEUEFS_TEST_PG" -c "CREATE DATABASE $STORE_DB TEMPLATE queuefs_template" >/dev/null ||
            fail "cannot make database $STORE_DB on $QUEUEFS_TEST_PG"
        STORE=${QUEUEFS_TEST_PG/\/queuefs\?/\/$STORE_DB?}
    else
        STORE="$BATS_TEST_TMPDIR/store"
    fi
    export STORE STORE_DB
}

# Removes what store_fresh made.
store_remove() {
    if [ -n "${STORE_DB:-}" ]; then
        psql -qX "$QUEUEFS_TEST_PG" -c "DROP DATABASE IF EXISTS $STORE_DB WITH (FORCE)" >/dev/null 2>&1
    elif [ -n "${STORE:-}" ]; then
        rm -rf "$STORE"
    fi
}

setup() {
    [ -x "$QUEUEFS_SQL" ] || fail "no queuefs-sql at $QUEUEFS_SQL (build it, or set QUEUEFS_BUILD)"
    store_fresh
}

teardown() {
    store_remove
}

sql() {
    "$QUEUEFS_SQL" "$STORE" "$@"
}

# The same with sync=none (faster; used where many processes run).
sql_fast() {
    "$QUEUEFS_SQL" -o sync=none "$STORE" "$@"
}

jqr() {
    jq -r "$1" <<<"$2"
}

jqc() {
    jq -c "$1" <<<"$2"
}

# assert_error NAME — after `run --separate-stderr sql …`.
assert_error() {
    local want="$1"
    # shellcheck disable=SC2154 # $status and $output: set by bats' run
    if [ "$status" -ne 1 ]; then
        fail "expected exit status 1 ($want), got $status; stdout: $output; stderr: ${stderr:-}"
    fi
    local n
    n=$(printf '%s\n' "$stderr" | grep -c . || true)
    [ "$n" -eq 1 ] || fail "expected one stderr line, got $n: $stderr"
    local name message
    name=$(jq -r '.error' <<<"$stderr" 2>/dev/null) ||
        fail "stderr is not a JSON error line: $stderr"
    [ "$name" = "$want" ] || fail "expected error $want, got: $stderr"
    message=$(jq -r '.message | strings' <<<"$stderr")
    [ -n "$message" ] || fail "the error line has no message: $stderr"
}

# assert_stderr_empty — after `run --separate-stderr`.
assert_stderr_empty() {
    [ -z "${stderr:-}" ] || fail "expected nothing on stderr, got: $stderr"
}

# epoch SECONDS of an RFC 3339 UTC datetime with optional fraction.
epoch_of() {
    jq -rn --arg d "$1" '$d | sub("\\.[0-9]+Z$"; "Z") | fromdateiso8601'
}

# assert_near EPOCH WANT SLACK — |EPOCH - WANT| <= SLACK.
assert_near() {
    local got="$1" want="$2" slack="$3"
    local d=$((got - want))
    [ "${d#-}" -le "$slack" ] || fail "expected $got within $slack s of $want (off by $d)"
}

# The seed's jobs queue with jobs:1..3 (urls a, b, c).
seed_jobs() {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;
         CREATE jobs:1 = { url: 'a' };
         CREATE jobs:2 = { url: 'b' };
         CREATE jobs:3 = { url: 'c' };" >/dev/null ||
        fail "could not set up the jobs queue"
}
