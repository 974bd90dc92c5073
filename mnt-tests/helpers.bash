# helpers.bash — shared set-up for the queuefs bats suites.
#
#   QUEUEFS_BUILD   the build directory holding queuefs-sql (set by
#                   `make check`; defaults to the repository root)
#   STORE           a fresh store directory for each test (removed after it)
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

setup() {
    [ -x "$QUEUEFS_SQL" ] || fail "no queuefs-sql at $QUEUEFS_SQL (build it, or set QUEUEFS_BUILD)"
    STORE="$BATS_TEST_TMPDIR/store"
    export STORE
}

teardown() {
    if [ -n "${STORE:-}" ]; then rm -rf "$STORE"; fi
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
