#!/usr/bin/env bats
# The PostgreSQL backend's own faults, on a private server this suite starts
# (scripts/pg-server) and stops: the server restarting under a mount that
# claims and writes, its connections killed, its tablespace full.  Each
# test gets a database of its own.

load mount_helpers

PG_SERVER="$BATS_TEST_DIRNAME/../scripts/pg-server"

setup_file() {
    if [ -n "${QUEUEFS_TEST_PG:-}" ]; then
        return 0
    fi
    PG_DIR=$(mktemp -d /tmp/queuefs-pgfaults.XXXXXX)
    chmod 755 "$PG_DIR"
    export PG_DIR
    "$PG_SERVER" start "$PG_DIR" >/dev/null
}

teardown_file() {
    if [ -n "${PG_DIR:-}" ]; then
        "$PG_SERVER" stop "$PG_DIR" >/dev/null 2>&1
        if mountpoint -q "$PG_DIR/small"; then umount "$PG_DIR/small"; fi
        [ -n "${QUEUEFS_KEEP_PG:-}" ] || rm -rf "$PG_DIR"
    fi
}

setup() {
    # The suite restarts its server: on the PostgreSQL pass's shared server
    # it would break the suites running beside it.
    if [ -n "${QUEUEFS_TEST_PG:-}" ]; then
        skip "runs in the other passes, on a server of its own"
    fi
    [ -x "$QUEUEFS" ] || fail "no queuefs at $QUEUEFS"
    DB="t$$_$RANDOM"
    psql -qX "$("$PG_SERVER" uri "$PG_DIR" postgres)" -c "CREATE DATABASE $DB" >/dev/null
    STORE=$("$PG_SERVER" uri "$PG_DIR" "$DB")
    M="$BATS_TEST_TMPDIR/m"
    D="$BATS_TEST_TMPDIR"
    mkdir -p "$M"
    export STORE M D
}

teardown() {
    [ -n "${QUEUEFS_TEST_PG:-}" ] && return 0
    local i mnt
    for i in "${!MOUNTS[@]}"; do
        mnt=${MOUNTS[$i]}
        if grep -qF " $mnt " /proc/mounts; then
            fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null
        fi
        [ -z "${DAEMONS[$i]:-}" ] || wait_gone "${DAEMONS[$i]}" || kill -9 "${DAEMONS[$i]}"
    done
    MOUNTS=()
    DAEMONS=()
}

# Polls until "cat FILE" succeeds; prints what it read.  False after 20 s.
read_when_up() {
    local out
    for _ in $(seq 200); do
        if out=$(cat "$1" 2>/dev/null); then
            printf '%s' "$out"
            return 0
        fi
        sleep 0.1
    done
    return 1
}

@test "postgresql: the server restarting: the calls that need it fail with EIO meanwhile, the mount reconnects by itself, nothing acknowledged is lost and no record is held twice" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    mount_fs
    for i in $(seq 40); do echo "{\"n\":$i}" >>"$M/jobs/new"; done
    for _ in $(seq 10); do cat "$M/jobs/claim" >>"$D/claimed"; echo >>"$D/claimed"; done
    "$PG_SERVER" stop "$PG_DIR"
    run cat "$M/jobs/claim"
    assert_failure
    assert_output --partial "Input/output error"
    run bash -c "echo '{\"n\":41}' >> '$M/jobs/new'"
    assert_failure
    assert_output --partial "Input/output error"
    # What the mount can answer without the server, it still does.
    [ -e "$M/ctl" ] || fail "the mount is gone"
    "$PG_SERVER" start "$PG_DIR" >/dev/null
    read_when_up "$M/jobs/claim" >>"$D/claimed" || fail "no claim after the server came back"
    echo >>"$D/claimed"
    for _ in $(seq 9); do cat "$M/jobs/claim" >>"$D/claimed"; echo >>"$D/claimed"; done
    # A restart mid-flight: the pooled connections all end at once.
    "$PG_SERVER" restart "$PG_DIR"
    read_when_up "$M/jobs/claim" >>"$D/claimed" || fail "no claim after the restart"
    echo >>"$D/claimed"
    echo '{"n":42}' >>"$M/jobs/new"
    grep -v '^$' "$D/claimed" >"$D/held"
    assert_equal "$(wc -l <"$D/held")" 21
    assert_equal "$(jq -r .id "$D/held" | sort -u | wc -l)" 21
    assert_equal "$(jq -r .hold "$D/held" | sort -u | wc -l)" 21
    assert_equal "$(jq -r .attempts "$D/held" | sort -u)" 1
    # The 40 written before, and the one after: the failed write made nothing.
    assert_equal "$(count_records jobs)" 41
    assert_equal "$(jqr .held "$(cat "$M/jobs/stats")")" 21
}

@test "postgresql: connections killed with pg_terminate_backend: requests reconnect, and a wait still wakes on a write from elsewhere" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    mount_fs
    echo '{"n":1}' >>"$M/jobs/new"
    cat "$M/jobs/claim" >/dev/null
    cat "$M/jobs/wait" >"$D/woke" &
    local waiter=$!
    sleep 0.5
    local killed
    killed=$(psql -qXAt "$STORE" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
        WHERE application_name = 'queuefs' AND pid <> pg_backend_pid()")
    [ "$killed" -ge 2 ] || fail "only $killed connections of the mount to kill"
    # The next request finds its connection gone and makes another.
    read_when_up "$M/jobs/stats" >/dev/null || fail "the mount did not reconnect"
    sql 'CREATE jobs = {n: 2};' >/dev/null
    for _ in $(seq 100); do
        [ -s "$D/woke" ] && break
        sleep 0.1
    done
    [ -s "$D/woke" ] || fail "the wait did not wake"
    wait "$waiter"
    assert_equal "$(jq -r .n "$D/woke")" 2
}

@test "postgresql: a full tablespace is StoreFull (ENOSPC); reads and deletes go on, and the store takes writes again once the disk grows" {
    mkdir -p "$PG_DIR/small"
    mountpoint -q "$PG_DIR/small" || mount -t tmpfs -o size=24m tmpfs "$PG_DIR/small"
    chown "$(stat -c %U "$PG_DIR/data")" "$PG_DIR/small"
    local admin
    admin=$("$PG_SERVER" uri "$PG_DIR" postgres)
    psql -qX "$admin" -c "CREATE TABLESPACE small_$DB LOCATION '$PG_DIR/small'" >/dev/null
    psql -qX "$admin" -c "DROP DATABASE $DB" -c "CREATE DATABASE $DB TABLESPACE small_$DB" >/dev/null
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    mount_fs
    local n=0
    # Fill it, 200 records of 3 KiB that do not compress a statement, until
    # the server says no.
    while :; do
        python3 -c "
import base64, os
for i in range(200):
    print(\"CREATE jobs = {pad: '%s', i: %d};\" % (base64.b64encode(os.urandom(2300)).decode(), i))" >"$D/batch"
        run --separate-stderr sql <"$D/batch"
        [ "$status" -eq 0 ] || break
        n=$((n + 1))
        [ "$n" -lt 100 ] || fail "24 MiB took more than 20,000 records of 3 KiB"
    done
    assert_error StoreFull
    python3 -c "
import base64, os, json
print(json.dumps({'pad': base64.b64encode(os.urandom(30000)).decode()}))" >"$D/big.json"
    run bash -c "cat '$D/big.json' >> '$M/jobs/new'"
    assert_failure
    assert_output --partial "No space left on device"
    # Reads and deletes need no new room.  A claim writes a new version of
    # its row (PostgreSQL's MVCC) and index entries: unlike a store
    # directory's reserve, nothing keeps room for it (README: "Many
    # machines").
    [ "$(find "$M/jobs" -maxdepth 1 -type f -name "[0-9]*" | wc -l)" -gt 1000 ] || fail "the listing of a full store"
    run cat "$M/jobs/claim"
    if [ "$status" -ne 0 ]; then
        assert_output --partial "No space left on device"
    fi
    sql 'DELETE FROM jobs WHERE i < 150;' >/dev/null || fail "a delete on a full store failed"
    # The disk grows: writes and claims work again, with no restart.
    mount -o remount,size=64m "$PG_DIR/small"
    sql "CREATE jobs = {n: 2};" >/dev/null || fail "no write after the disk grew"
    cat "$M/jobs/claim" >/dev/null || fail "no claim after the disk grew"
    cat "$D/big.json" >>"$M/jobs/new" || fail "no write through the mount after the disk grew"
}
