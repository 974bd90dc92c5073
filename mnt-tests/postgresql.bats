#!/usr/bin/env bats
# The PostgreSQL backend's own faults, on a private server this suite starts
# (scripts/pg-server) and stops: the server restarting under a mount that
# claims and writes, its connections killed, its tablespace full.  Each
# test gets a database of its own.  Under a load of workers that write,
# claim and finish, each fault an operator meets — connections killed
# twice a second, a restart, 300 idle connections of other clients, a
# SIGKILLed mount, a failover to a synchronous standby — loses nothing
# acknowledged, finishes nothing twice, and claims work again within 2 s.

load mount_helpers

PG_SERVER="$BATS_TEST_DIRNAME/../scripts/pg-server"
HOSTS=()

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
    load_end
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
    hosts_down
    pin_end
    idle_end || true
    own_servers_down
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

@test "postgresql: the server restarting: the calls that need it fail with EIO (StoreError naming the server) meanwhile, the mount reconnects by itself, nothing acknowledged is lost and no record is held twice" {
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
    # A statement says which server failed it.
    run ctl "CLAIM FROM jobs;"
    assert_failure
    assert_output --partial '"error":"StoreError"'
    assert_output --partial "the server $PG_DIR:$(cat "$PG_DIR/port")/$DB"
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

# queuefs_backends [Lock] — how many connections the mounts have open (with
# "Lock": how many of them wait for a lock).
queuefs_backends() {
    local waiting=""
    [ "${1:-}" = Lock ] && waiting="AND wait_event_type = 'Lock'"
    psql -qXAt "$STORE" -c "SELECT count(*) FROM pg_stat_activity
        WHERE application_name = 'queuefs' AND pid <> pg_backend_pid() $waiting"
}

# lock_held TABLE — holds an ACCESS EXCLUSIVE lock of queuefs.TABLE (in the
# background, for 60 s at most) and returns once it is granted; lock_end
# lets it go.
lock_held() {
    psql -qX "$STORE" -c "BEGIN" -c "LOCK queuefs.$1 IN ACCESS EXCLUSIVE MODE" \
        -c "SELECT pg_sleep(60) AS held_for_a_test" -c "COMMIT" >/dev/null 2>&1 &
    LOCKER=$!
    for _ in $(seq 200); do
        [ "$(psql -qXAt "$STORE" -c "SELECT count(*) FROM pg_stat_activity
            WHERE query LIKE '%held_for_a_test%' AND pid <> pg_backend_pid()")" = 1 ] && return 0
        sleep 0.05
    done
    fail "the lock of queuefs.$1 was not taken"
}
lock_end() {
    psql -qXAt "$STORE" -c "SELECT pg_cancel_backend(pid) FROM pg_stat_activity
        WHERE query LIKE '%held_for_a_test%' AND pid <> pg_backend_pid()" >/dev/null
    wait "$LOCKER" 2>/dev/null || true
}

# waiting_for_lock N — polls (10 s at most) until N of the mounts'
# connections wait for a lock; false when fewer ever do.
waiting_for_lock() {
    for _ in $(seq 200); do
        [ "$(queuefs_backends Lock)" -ge "$1" ] && return 0
        sleep 0.05
    done
    return 1
}

@test "postgresql: pooled connections the server closed while idle are found out before anything is sent: concurrent claims after the storm all succeed" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    local i n pids=()
    for i in $(seq 400); do printf '{"n":%d}\n' "$i"; done >"$D/lines"
    sql "$(jq -rc '"CREATE jobs CONTENT \(.);"' "$D/lines")" >/dev/null
    mount_fs
    # Twelve claims at once, each waiting on a lock the records table is
    # held under meanwhile, so each takes a connection of the pool of its
    # own.  (Not the catalog's: claims that find it uncached wait for the
    # one of them that reads it, and never reach the server.)
    cat "$M/jobs/stats" >/dev/null
    lock_held records
    for i in $(seq 12); do
        cat "$M/jobs/claim" >/dev/null &
        pids+=("$!")
    done
    waiting_for_lock 12 || true
    lock_end
    wait "${pids[@]}"
    n=$(queuefs_backends)
    [ "$n" -ge 12 ] || fail "the pool holds only $n connections"
    local claimed
    claimed=$(jqr .held "$(cat "$M/jobs/stats")")
    # Every one of them terminated while idle; the server stays up.
    psql -qXAt "$STORE" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
        WHERE application_name = 'queuefs' AND pid <> pg_backend_pid()" >/dev/null
    sleep 2
    # The first round's claims wait on a lock of the records table, each
    # holding the connection it took, so that together they take every
    # connection of the pool (a claim sent on a dead one fails at once).
    lock_held records
    local round failed=0
    for round in $(seq 10); do
        pids=()
        for i in $(seq 12); do
            (cat "$M/jobs/claim" >"$D/claim.$round.$i" 2>"$D/err.$round.$i" || echo failed >>"$D/failed") &
            pids+=("$!")
        done
        if [ "$round" = 1 ]; then
            waiting_for_lock 12 || true
            lock_end
        fi
        wait "${pids[@]}"
    done
    [ ! -e "$D/failed" ] || failed=$(wc -l <"$D/failed")
    [ "$failed" -eq 0 ] || fail "$failed of 120 claims failed: $(cat "$D"/err.* | sort | uniq -c)"
    assert_equal "$(jqr .held "$(cat "$M/jobs/stats")")" $((claimed + 120))
}

@test "postgresql: a transaction that cannot begin (a lock held past lock_timeout) fails, saying the server's reason, and leaves its connection usable once the lock is gone" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    sql 'CREATE jobs = {n: 1};' >/dev/null
    local impatient="$STORE&options=-c%20lock_timeout%3D200"
    STORE=$impatient mount_fs
    cat "$M/jobs/stats" >/dev/null
    psql -qX "$STORE" -c "BEGIN" -c "LOCK queuefs.catalog IN ACCESS EXCLUSIVE MODE" \
        -c "SELECT pg_sleep(3)" -c "COMMIT" >/dev/null &
    local locker=$! failed=0
    sleep 0.5
    STORE=$impatient run sql "SELECT * FROM jobs;"
    [ "$status" -ne 0 ] || fail "a SELECT went through the lock: $output"
    assert_output --partial "lock timeout"
    for _ in 1 2 3 4 5 6; do
        cat "$M/jobs/stats" >/dev/null 2>&1 || failed=$((failed + 1))
    done
    wait "$locker"
    [ "$failed" -ge 4 ] || fail "only $failed reads of stats failed while the catalog was locked"
    for _ in $(seq 20); do
        cat "$M/jobs/stats" >/dev/null || fail "a read after the lock was gone failed"
    done
    [ "$(sql "SELECT * FROM jobs;" | jq length)" = 1 ]
}

@test "postgresql: a file operation the server fails is logged with the time and the server's own message" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    local impatient="$STORE&options=-c%20lock_timeout%3D200" log="$D/daemon.log"
    "$QUEUEFS" -f "$impatient" "$M" 2>"$log" 3>&- &
    wait_mounted "$M" || fail "not mounted; log: $(cat "$log")"
    track_mount "$M"
    cat "$M/jobs/stats" >/dev/null
    psql -qX "$STORE" -c "BEGIN" -c "LOCK queuefs.records IN ACCESS EXCLUSIVE MODE" \
        -c "SELECT pg_sleep(2)" -c "COMMIT" >/dev/null &
    local locker=$!
    sleep 0.5
    run cat "$M/jobs/claim"
    assert_failure
    assert_output --partial "Input/output error"
    wait "$locker"
    local line
    line=$(grep "met StoreError" "$log") || fail "no log line for the failed claim: $(cat "$log")"
    [[ "$line" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{4}\ queuefs:\  ]] ||
        fail "the line has no time: $line"
    [[ "$line" == *"the server $PG_DIR:"* ]] || fail "the line does not name the server: $line"
    [[ "$line" == *"canceling statement due to lock timeout"* ]] ||
        fail "the line does not say what the server said: $line"
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
    # directory's reserve, nothing keeps room for it (queuefs(1),
    # POSTGRESQL).
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

@test "postgresql: a user with CREATE on the database makes the schema; another, given the README's grants, uses the same store" {
    local admin
    admin=$("$PG_SERVER" uri "$PG_DIR" postgres)
    psql -qX "$admin" -c "DROP ROLE IF EXISTS maker_$DB" -c "DROP ROLE IF EXISTS other_$DB" \
        -c "CREATE ROLE maker_$DB LOGIN" -c "CREATE ROLE other_$DB LOGIN" \
        -c "GRANT CREATE, CONNECT ON DATABASE $DB TO maker_$DB" >/dev/null
    local as_maker as_other
    shopt -s extglob
    as_maker=${STORE/user=+([^&])/user=maker_$DB}
    as_other=${STORE/user=+([^&])/user=other_$DB}
    run "$QUEUEFS_SQL" "$as_maker" "DEFINE QUEUE jobs TIMEOUT 1m; CREATE jobs = {n: 1};"
    assert_success
    # Without grants the other user cannot read it; with the README's, it works.
    run --separate-stderr "$QUEUEFS_SQL" "$as_other" "SELECT * FROM jobs;"
    assert_failure
    psql -qX "${STORE/user=+([^&])/user=maker_$DB}" -c "GRANT USAGE ON SCHEMA queuefs TO other_$DB" \
        -c "GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA queuefs TO other_$DB" \
        -c "GRANT USAGE, UPDATE ON ALL SEQUENCES IN SCHEMA queuefs TO other_$DB" >/dev/null
    run "$QUEUEFS_SQL" "$as_other" "CLAIM FROM jobs; CREATE jobs = {n: 2};"
    assert_success
    assert_line -n 0 --partial '"id":"jobs:1"'
    STORE=$as_other mount_fs
    assert_equal "$(jqr .n "$(cat "$M/jobs/claim")")" 2
}

@test "postgresql: metrics shows the row versions VACUUM has yet to reclaim" {
    sql "DEFINE QUEUE jobs TIMEOUT 1m;" >/dev/null
    python3 -c 'print("".join("CREATE jobs = {n: %d};\n" % i for i in range(300)))' | sql >/dev/null
    sql "DELETE FROM jobs WHERE n >= 0;" >/dev/null
    mount_fs
    local dead=0
    for _ in $(seq 50); do
        dead=$(awk '$1 == "queuefs_store_dead_rows" { print $2 }' "$M/metrics")
        [ "${dead:-0}" -ge 300 ] && break
        sleep 0.2
    done
    [ "${dead:-0}" -ge 300 ] || fail "queuefs_store_dead_rows is ${dead:-absent} after 300 deletes"
    grep -q '^# TYPE queuefs_store_live_rows gauge$' "$M/metrics"
}

# records_stat N — figure N of queuefs.records in pg_stat_user_tables
# (n_dead_tup: the row versions VACUUM has yet to reclaim; n_tup_del: the
# rows ever deleted, which a vacuum leaves as they are).
records_stat() {
    psql -qXAt "$STORE" -c "SELECT $1 FROM pg_stat_user_tables WHERE relid = 'queuefs.records'::regclass"
}

@test "postgresql: the records table is vacuumed by itself once 1% of it is dead, not PostgreSQL's 20%" {
    local admin
    admin=$("$PG_SERVER" uri "$PG_DIR" postgres)
    psql -qX "$admin" -c "ALTER SYSTEM SET autovacuum_naptime = 1" -c "SELECT pg_reload_conf()" >/dev/null
    sql "DEFINE QUEUE jobs TIMEOUT 1m;" >/dev/null
    python3 -c 'print("".join("CREATE jobs = {n: %d};\n" % i for i in range(20000)))' | sql_fast >/dev/null
    # Vacuumed now, so that the filing itself (20,000 inserts) asks for no
    # vacuum later: only the deletes below may.
    psql -qX "$STORE" -c "VACUUM queuefs.records" >/dev/null
    sql "DELETE FROM jobs WHERE n < 2000;" >/dev/null
    # Counted first (a vacuum may come before the dead rows are seen).
    local deleted=0 dead=0
    for _ in $(seq 100); do
        deleted=$(records_stat n_tup_del)
        [ "${deleted:-0}" -ge 2000 ] && break
        sleep 0.1
    done
    [ "${deleted:-0}" -ge 2000 ] || fail "the 2,000 deletes were not counted: $deleted deleted rows"
    # 2,000 of 20,000 rows dead: 10%, under the default's 20% + 50.
    for _ in $(seq 200); do
        dead=$(records_stat n_dead_tup)
        [ "$dead" -lt 100 ] && break
        sleep 0.1
    done
    psql -qX "$admin" -c "ALTER SYSTEM RESET autovacuum_naptime" -c "SELECT pg_reload_conf()" >/dev/null
    [ "$dead" -lt 100 ] || fail "$dead dead rows 20 s after the deletes: no vacuum came"
    [ "$(sql "SELECT n FROM jobs WHERE n < 2001;" | jq -c .)" = '[{"n":2000}]' ]
}

# scans N — how many sequential (N=seq_scan) or index (N=idx_scan) scans
# of queuefs.records the statistics collector has counted.
scans() {
    psql -qXAt "$STORE" -c "SELECT $1 FROM pg_stat_user_tables WHERE relid = 'queuefs.records'::regclass"
}

@test "postgresql: claims, finishes and RELEASE ALL read the table's indexes, never all of it: 50 cycles on a 20,000-record queue start no sequential scan" {
    sql "DEFINE QUEUE jobs TIMEOUT 1m;" >/dev/null
    python3 -c 'print("".join("CREATE jobs = {n: %d};\n" % i for i in range(20000)))' | sql_fast >/dev/null
    psql -qX "$STORE" -c "ANALYZE queuefs.records" >/dev/null
    mount_fs
    local seq0 idx0 id i
    seq0=$(scans seq_scan)
    idx0=$(scans idx_scan)
    for i in $(seq 50); do
        id=$(jq -r '.id | sub("^jobs:"; "")' <"$M/jobs/claim")
        rm "$M/jobs/$id"
    done
    printf 'CLAIM 3 FROM jobs;\nRELEASE ALL FROM jobs;\n' | sql >"$D/released"
    [ "$(jq -s '.[1] | length' "$D/released")" = 3 ] || fail "RELEASE ALL answered $(cat "$D/released")"
    # Backends report all their counts when they end: the mount's, at its
    # unmount (an idle one may keep them up to 10 s).
    unmount_fs "$M"
    for _ in $(seq 50); do
        [ "$(($(scans idx_scan) - idx0))" -ge 100 ] && break
        sleep 0.2
    done
    [ "$(($(scans idx_scan) - idx0))" -ge 100 ] || fail "only $(($(scans idx_scan) - idx0)) index scans counted"
    [ "$(scans seq_scan)" = "$seq0" ] || fail "$(($(scans seq_scan) - seq0)) sequential scans of queuefs.records"
    [ "$(jq -s length < <(sql "SELECT * FROM jobs;" | jq -c '.[]'))" = 19950 ]
}

# pin_xmin — a session on the test's database begins a transaction, takes
# an xid and sits idle in it: VACUUM may remove no row version that dies
# after it began (the xmin is pinned) until pin_end.  Returns once the
# server shows it idle in that transaction.
pin_xmin() {
    coproc PIN { psql -qXAt "$STORE&application_name=xmin_pin" 2>&1 3>&-; }
    # shellcheck disable=SC2153 # coproc PIN sets PIN_PID
    PIN_CLIENT=$PIN_PID
    echo 'BEGIN; SELECT txid_current();' >&"${PIN[1]}"
    read -r -t 20 PIN_XID <&"${PIN[0]}" || fail "the pinning session did not answer"
    for _ in $(seq 100); do
        pin_held && return 0
        sleep 0.1
    done
    fail "the pinning session is not idle in transaction $PIN_XID"
}
# pin_held — true while that session is idle in the transaction of $PIN_XID.
pin_held() {
    [ "$(psql -qXAt "$STORE" -c "SELECT count(*) FROM pg_stat_activity
        WHERE application_name = 'xmin_pin' AND state = 'idle in transaction'
        AND backend_xid = '$PIN_XID'")" = 1 ]
}
pin_end() {
    [ -n "${PIN_CLIENT:-}" ] || return 0
    kill "$PIN_CLIENT" 2>/dev/null || true
    wait "$PIN_CLIENT" 2>/dev/null || true
    psql -qXAt "$STORE" -c "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
        WHERE application_name = 'xmin_pin'" >/dev/null 2>&1 || true
    PIN_CLIENT=
}

# pinned_worker N — claims from $M/jobs and finishes each claim by rm
# until a claim reads nothing, logging the claims in $D/claims.N, the
# finishes in $D/finished.N and what failed in $D/errors.
pinned_worker() {
    local rec
    while :; do
        rec=$(cat "$M/jobs/claim") || { echo "worker $1: a claim failed" >>"$D/errors"; return; }
        [ -n "$rec" ] || return 0
        echo "$rec" >>"$D/claims.$1"
        if [[ $rec =~ \"id\":\"jobs:([^\"]+)\" ]] && rm "$M/jobs/${BASH_REMATCH[1]}"; then
            echo "${BASH_REMATCH[1]}" >>"$D/finished.$1"
        else
            echo "worker $1: could not finish $rec" >>"$D/errors"
        fi
    done
}

@test "postgresql: with the xmin pinned by a transaction idle with an xid, claims still find the head: 2,000 records claimed and finished by 8 workers at once, each exactly once, none left, and stats agree" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    python3 -c 'print("".join("CREATE jobs = {n: %d};\n" % i for i in range(2000)))' | sql_fast >/dev/null
    mount_fs
    pin_xmin
    # One worker first: the head, in order, each claim past the row
    # versions the one before left dead.
    local i rec pids=()
    for i in 0 1 2; do
        rec=$(cat "$M/jobs/claim")
        assert_equal "$(jqr .n "$rec")" "$i"
        rm "$M/jobs/$(jqr '.id | sub("^jobs:"; "")' "$rec")"
    done
    for i in $(seq 8); do
        pinned_worker "$i" 3>&- &
        pids+=("$!")
    done
    wait "${pids[@]}"
    [ ! -s "$D/errors" ] || fail "$(head -5 "$D/errors")"
    pin_held || fail "the pinning transaction ended meanwhile"
    # The pin held: VACUUM could remove none of the row versions the
    # claims and finishes left dead.
    local kept
    kept=$(psql -qX "$STORE" -c "VACUUM (VERBOSE) queuefs.records" 2>&1 |
        sed -n 's/.* \([0-9]*\) are dead but not yet removable.*/\1/p' | sort -n | tail -n 1)
    [ "${kept:-0}" -ge 1997 ] || fail "VACUUM kept ${kept:-no} dead row versions: was the xmin pinned?"
    # Every record claimed and finished exactly once, none left.
    cat "$D"/claims.* | jq -r .n | sort -n >"$D/claimed"
    seq 3 1999 >"$D/all"
    diff "$D/all" "$D/claimed" >"$D/diff" || fail "claims other than 3..1999 once each: $(head -5 "$D/diff")"
    assert_equal "$(cat "$D"/finished.* | wc -l)" 1997
    assert_equal "$(cat "$D"/finished.* | sort -u | wc -l)" 1997
    assert_equal "$(count_records jobs)" 0
    local stats
    stats=$(cat "$M/jobs/stats")
    assert_equal "$(jqc '[.records, .ready, .held, .claims, .deletes, .releases, .lapses]' "$stats")" \
        '[0,0,0,2000,2000,0,0]'
    # A record filed now is found behind them all.
    echo '{"n":2000}' >>"$M/jobs/new"
    assert_equal "$(jqr .n "$(cat "$M/jobs/claim")")" 2000
    pin_held || fail "the pinning transaction ended meanwhile"
    pin_end
}

# ---------------------------------------------------------------------------
# Faults under load: workers claim and finish while producers write, and
# what each acknowledged is held against the store afterwards
# ---------------------------------------------------------------------------

# The workers running (load_start), the client holding idle connections
# (idle_clients) and the servers a test started of its own (failover).
WORKERS=()
IDLE_CLIENT=
OWN_SERVERS=()

# prefill N — records {"n": 1} … {"n": N}, written through queuefs-sql and
# so acknowledged.
prefill() {
    python3 -c "print(''.join('CREATE jobs = {n: %d};\n' % i for i in range(1, $1 + 1)))" |
        sql >/dev/null || fail "could not write the first $1 records"
    seq "$1" >"$D/created.prefill"
}

# load_producer NAME MNT FIRST — writes {"n": FIRST + 1}, {"n": FIRST + 2}
# … to MNT/jobs/new, about 40 a second, until $D/stop or
# $D/stop_producers exists: each n acknowledged goes to $D/created.NAME,
# each whose write failed (it may have been carried out) to
# $D/create_failed.NAME.
load_producer() {
    local name=$1 mnt=$2 n=$3
    while [ ! -e "$D/stop" ] && [ ! -e "$D/stop_producers" ]; do
        n=$((n + 1))
        if printf '{"n":%d}\n' "$n" 2>>"$D/failures.$name" >>"$mnt/jobs/new"; then
            echo "$n" >>"$D/created.$name"
        else
            echo "$n" >>"$D/create_failed.$name"
            sleep 0.05
        fi
        sleep 0.02
    done
}

# finish_claim NAME MNT REC — finishes REC, a record claimed through MNT,
# by its hold's name (rm jobs/held/ID~HOLD acts only while that hold is
# the live one).  An acknowledged finish goes to $D/finished.NAME ("n
# hold"); one that failed is tried again (5 s at most), and when it could
# have been carried out (a try failed with something other than ENOENT)
# its n goes to $D/unsure.NAME; a hold found gone at once (it lapsed) to
# $D/lapsed.NAME.
finish_claim() {
    local name=$1 mnt=$2 rec=$3 id hold n out doubt=
    if ! [[ $rec =~ \"id\":\"jobs:([0-9]+)\" ]]; then
        echo "$name: no identity in $rec" >>"$D/failures.$name"
        return 0
    fi
    id=${BASH_REMATCH[1]}
    [[ $rec =~ \"hold\":([0-9]+) ]] && hold=${BASH_REMATCH[1]}
    [[ $rec =~ \"n\":([0-9]+) ]] && n=${BASH_REMATCH[1]}
    for _ in $(seq 50); do
        if out=$(rm "$mnt/jobs/held/$id~$hold" 2>&1); then
            echo "$n $hold" >>"$D/finished.$name"
            return 0
        fi
        if [[ $out == *"No such file or directory"* ]]; then
            if [ -n "$doubt" ]; then echo "$n" >>"$D/unsure.$name"; else echo "$n" >>"$D/lapsed.$name"; fi
            return 0
        fi
        echo "$out" >>"$D/failures.$name"
        doubt=1
        sleep 0.1
    done
    echo "$n" >>"$D/unsure.$name"
}

# load_consumer NAME MNT WORK — claims from MNT/jobs (cat jobs/claim),
# works WORK seconds and finishes (finish_claim), until $D/stop exists;
# each acknowledged claim goes to $D/claims.NAME as the claim read it, and
# a claim that failed is tried again.
load_consumer() {
    local name=$1 mnt=$2 work=$3 rec
    while [ ! -e "$D/stop" ]; do
        if ! rec=$(cat "$mnt/jobs/claim" 2>>"$D/failures.$name"); then
            sleep 0.05
            continue
        fi
        if [ -z "$rec" ]; then
            sleep 0.05
            continue
        fi
        echo "$rec" >>"$D/claims.$name"
        sleep "$work"
        finish_claim "$name" "$mnt" "$rec"
    done
}

# load_start TAG PRODUCERS CONSUMERS WORK MNT — starts that many producers
# and consumers (each working WORK seconds a record) on MNT, named TAG.pN
# and TAG.cN; producers' numbers n are unique across the test.
load_start() {
    local tag=$1 producers=$2 consumers=$3 work=$4 mnt=$5 i
    for i in $(seq "$producers"); do
        load_producer "$tag.p$i" "$mnt" $((1000000 * (${#WORKERS[@]} + 1))) 3>&- &
        WORKERS+=("$!")
    done
    for i in $(seq "$consumers"); do
        load_consumer "$tag.c$i" "$mnt" "$work" 3>&- &
        WORKERS+=("$!")
    done
}

# load_stop — the workers stop and are waited for.
load_stop() {
    touch "$D/stop"
    [ "${#WORKERS[@]}" -eq 0 ] || wait "${WORKERS[@]}"
    WORKERS=()
}

# load_end — for teardown: the workers stopped, killed when they linger.
load_end() {
    [ "${#WORKERS[@]}" -gt 0 ] || return 0
    touch "$D/stop"
    kill "${WORKERS[@]}" 2>/dev/null || true
    wait "${WORKERS[@]}" 2>/dev/null || true
    WORKERS=()
}

finished_count() {
    cat "$D"/finished.* 2>/dev/null | wc -l
}

# wait_finished N — polls (30 s at most) until N finishes were acknowledged.
wait_finished() {
    for _ in $(seq 600); do
        [ "$(finished_count)" -ge "$1" ] && return 0
        sleep 0.05
    done
    fail "only $(finished_count) of $1 finishes acknowledged; the workers met: $(cat "$D"/failures.* 2>/dev/null | sort | uniq -c | sort -rn | head -5)"
}

usec_now() {
    echo "${EPOCHREALTIME//[!0-9]/}"
}

# first_claim MNT — from the fault's end (now), claims from MNT/jobs until a
# claim gives a record, and finishes it: fails when that took more than the
# 2 s the mount has to recover in.
first_claim() {
    local mnt=$1 start rec took
    start=$(usec_now)
    while :; do
        if rec=$(cat "$mnt/jobs/claim" 2>>"$D/failures.probe") && [ -n "$rec" ]; then break; fi
        took=$(($(usec_now) - start))
        [ "$took" -le 2000000 ] ||
            fail "no claim within 2 s of the fault's end: $(tail -n 3 "$D/failures.probe" 2>/dev/null)"
        sleep 0.05
    done
    took=$(($(usec_now) - start))
    echo "$rec" >>"$D/claims.probe"
    echo "# the first claim came $((took / 1000)) ms after the fault's end" >&3
    [ "$took" -le 2000000 ] || fail "the first claim came $((took / 1000)) ms after the fault's end"
    finish_claim probe "$mnt" "$rec"
}

# ledger_check TIMEOUT — holds what the workers logged against the store
# (read through queuefs-sql), TIMEOUT being the queue's in seconds: every
# record whose write was acknowledged is in the store, once; every one
# whose finish was acknowledged is done there, and was finished once;
# nothing is done that no finish was acknowledged of or left in doubt, and
# nothing is there that nobody wrote; no hold was handed out twice, no two
# holds of a record overlapped by the server's clock (a hold begins
# TIMEOUT before its claimed_until), and no record was claimed again after
# a finish of it was acknowledged.  Prints what it counted.
ledger_check() {
    sql "SELECT n, completed_at FROM jobs;" >"$D/store.json" || fail "the store could not be read"
    python3 - "$D" "$1" >"$D/ledger" <<'EOF' || fail "$(cat "$D/ledger")"
import collections, datetime, glob, json, re, sys

d, timeout_us = sys.argv[1], int(float(sys.argv[2]) * 1000000)

def lines(pattern):
    out = []
    for f in sorted(glob.glob(d + "/" + pattern)):
        out += [l.strip() for l in open(f) if l.strip()]
    return out

def usec(t):
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d+))?Z", t)
    s = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S")
    s = int(s.replace(tzinfo=datetime.timezone.utc).timestamp())
    return s * 1000000 + int((m.group(2) or "0").ljust(6, "0")[:6])

created = set(map(int, lines("created.*")))
tried = set(map(int, lines("create_failed.*")))
finishes = [tuple(map(int, l.split())) for l in lines("finished.*")]
unsure = set(map(int, lines("unsure.*")))
lapsed = lines("lapsed.*")
failed = lines("failures.*")
claims = [json.loads(l) for l in lines("claims.*")]
store = json.load(open(d + "/store.json"))
bad = []

in_store = collections.Counter(r["n"] for r in store)
done = {r["n"] for r in store if "completed_at" in r}
bad += ["n=%d: %d records of one write" % (n, k) for n, k in in_store.items() if k > 1]
bad += ["n=%d: acknowledged, and not in the store" % n for n in sorted(created - set(in_store))]
bad += ["n=%d: in the store, and never written" % n for n in sorted(set(in_store) - created - tried)]
finished = collections.Counter(n for n, _ in finishes)
bad += ["n=%d: finished %d times" % (n, k) for n, k in finished.items() if k > 1]
bad += ["n=%d: its finish acknowledged, and it is not done" % n for n in sorted(set(finished) - done)]
bad += ["n=%d: done, and no finish of it acknowledged or in doubt" % n
        for n in sorted(done - set(finished) - unsure)]

holds = collections.Counter(c["hold"] for c in claims)
bad += ["hold %d handed out %d times" % (h, k) for h, k in holds.items() if k > 1]
by_n = collections.defaultdict(list)
for c in claims:
    by_n[c["n"]].append(c)
finished_hold = {n: h for n, h in finishes}
for n, cs in by_n.items():
    cs.sort(key=lambda c: c["hold"])
    for a, b in zip(cs, cs[1:]):
        if usec(b["claimed_until"]) - timeout_us < usec(a["claimed_until"]):
            bad.append("n=%d: hold %d (until %s) overlaps hold %d (until %s)"
                       % (n, b["hold"], b["claimed_until"], a["hold"], a["claimed_until"]))
    if n in finished_hold:
        bad += ["n=%d: claimed again (hold %d) after its finish (hold %d)" % (n, c["hold"], finished_hold[n])
                for c in cs if c["hold"] > finished_hold[n]]

print("%d calls failed; %d written, %d writes in doubt, %d claims, %d finished, %d finishes in doubt, "
      "%d holds lapsed, %d records claimed more than once, %d in the store (%d done)"
      % (len(failed), len(created), len(tried), len(claims), len(finishes), len(unsure), len(lapsed),
         sum(1 for cs in by_n.values() if len(cs) > 1), sum(in_store.values()), len(done)))
if bad:
    print("\n".join(bad[:20]))
    sys.exit(1)
EOF
    echo "# $(cat "$D/ledger")" >&3
}

# idle_clients N — one process holds N connections to the test's database
# open and idle (application_name idle_client, for 120 s at most), and
# returns once the server shows them all.
idle_clients() {
    python3 -c '
import ctypes, sys, time
pq = ctypes.CDLL("libpq.so.5")
pq.PQconnectdb.restype = ctypes.c_void_p
pq.PQconnectdb.argtypes = [ctypes.c_char_p]
pq.PQstatus.argtypes = [ctypes.c_void_p]
pq.PQerrorMessage.restype = ctypes.c_char_p
pq.PQerrorMessage.argtypes = [ctypes.c_void_p]
conns = []
for i in range(int(sys.argv[2])):
    c = pq.PQconnectdb(sys.argv[1].encode())
    if pq.PQstatus(c) != 0:
        sys.exit("connection %d: %s" % (i, pq.PQerrorMessage(c).decode()))
    conns.append(c)
time.sleep(120)
' "$STORE&application_name=idle_client" "$1" 3>&- &
    IDLE_CLIENT=$!
    for _ in $(seq 300); do
        [ "$(idle_count)" = "$1" ] && return 0
        kill -0 "$IDLE_CLIENT" 2>/dev/null || fail "the idle client could not open its $1 connections"
        sleep 0.1
    done
    fail "only $(idle_count) of $1 idle connections open after 30 s"
}
idle_count() {
    psql -qXAt "$STORE" -c "SELECT count(*) FROM pg_stat_activity
        WHERE application_name = 'idle_client' AND state = 'idle'"
}
# idle_end — the idle client's connections closed; polls until the
# server shows none.
idle_end() {
    [ -n "${IDLE_CLIENT:-}" ] || return 0
    kill "$IDLE_CLIENT" 2>/dev/null || true
    wait "$IDLE_CLIENT" 2>/dev/null || true
    IDLE_CLIENT=
    for _ in $(seq 200); do
        [ "$(idle_count)" = 0 ] && return 0
        sleep 0.05
    done
    return 1
}

# own_servers_down — stops the servers a test started of its own, and
# removes them.
own_servers_down() {
    local dir
    for dir in "${OWN_SERVERS[@]+"${OWN_SERVERS[@]}"}"; do
        "$PG_SERVER" stop "$dir" >/dev/null 2>&1
        [ -n "${QUEUEFS_KEEP_PG:-}" ] || rm -rf "$dir"
    done
    OWN_SERVERS=()
}

# kill_backends — terminates the test database's queuefs connections (the
# mounts' pools and their listening connections); prints how many.
kill_backends() {
    psql -qXAt "$STORE" -c "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
        WHERE application_name = 'queuefs' AND datname = '$DB'"
}

# sleep_until USEC — sleeps until usec_now reaches USEC.
sleep_until() {
    local d=$(($1 - $(usec_now)))
    [ "$d" -le 0 ] || sleep "$((d / 1000000)).$(printf '%06d' $((d % 1000000)))"
}

# synchronous_pair — a primary and a standby of its own for the test
# (PRIMARY, STANDBY: their directories), both on TCP at 127.0.0.1, the
# standby streaming from the primary and synchronous (a commit is
# acknowledged once the standby has it on disk); database $DB on them,
# and STORE naming both hosts, with target_session_attrs=read-write.
synchronous_pair() {
    local admin user
    PRIMARY=$(mktemp -d /tmp/queuefs-primary.XXXXXX)
    STANDBY=$(mktemp -d /tmp/queuefs-standby.XXXXXX)
    OWN_SERVERS=("$STANDBY" "$PRIMARY")
    chmod 755 "$PRIMARY" "$STANDBY"
    QUEUEFS_PG_LISTEN=127.0.0.1 "$PG_SERVER" start "$PRIMARY" >/dev/null
    admin=$("$PG_SERVER" uri "$PRIMARY" postgres)
    psql -qX "$admin" -c "CREATE DATABASE $DB" >/dev/null
    QUEUEFS_PG_LISTEN=127.0.0.1 "$PG_SERVER" standby "$PRIMARY" "$STANDBY" >/dev/null
    psql -qX "$admin" -c "ALTER SYSTEM SET synchronous_standby_names = '*'" -c "SELECT pg_reload_conf()" >/dev/null
    for _ in $(seq 100); do
        [ "$(psql -qXAt "$admin" -c "SELECT sync_state FROM pg_stat_replication")" = sync ] && break
        sleep 0.1
    done
    assert_equal "$(psql -qXAt "$admin" -c "SELECT sync_state FROM pg_stat_replication")" sync
    user=$(stat -c %U "$PRIMARY/data")
    STORE="postgresql://$user@127.0.0.1:$(cat "$PRIMARY/port"),127.0.0.1:$(cat "$STANDBY/port")/$DB?target_session_attrs=read-write"
}

@test "postgresql: under load, the mount's connections killed twice a second for 10 s: nothing acknowledged is lost or finished twice, no two holds overlap, and a claim succeeds within 2 s of the last kill" {
    sql "DEFINE QUEUE jobs TIMEOUT 5s KEEP 1h;" >/dev/null
    prefill 1000
    mount_fs
    load_start load 2 4 0.02 "$M"
    wait_finished 20
    local i k killed=0 t0 during
    during=$(finished_count)
    t0=$(usec_now)
    for i in $(seq 0 19); do
        sleep_until $((t0 + i * 500000))
        k=$(kill_backends) || fail "pg_terminate_backend failed"
        killed=$((killed + k))
    done
    during=$(($(finished_count) - during))
    first_claim "$M"
    wait_finished $(($(finished_count) + 20))
    load_stop
    echo "# $killed connections killed in 20 rounds; $during finishes meanwhile" >&3
    [ "$killed" -ge 20 ] || fail "only $killed connections of the mount were killed in 20 rounds"
    [ "$during" -gt 0 ] || fail "nothing was finished while the connections were killed"
    ledger_check 5
}

@test "postgresql: under load, the server restarting: nothing acknowledged is lost or finished twice, no two holds overlap, and a claim succeeds within 2 s of the server being back" {
    sql "DEFINE QUEUE jobs TIMEOUT 5s KEEP 1h;" >/dev/null
    prefill 1000
    mount_fs
    load_start load 2 4 0.02 "$M"
    wait_finished 50
    local started
    started=$(psql -qXAt "$STORE" -c "SELECT pg_postmaster_start_time()")
    "$PG_SERVER" restart "$PG_DIR"
    first_claim "$M"
    [ "$(psql -qXAt "$STORE" -c "SELECT pg_postmaster_start_time()")" != "$started" ] ||
        fail "the server did not restart"
    wait_finished $(($(finished_count) + 50))
    load_stop
    ledger_check 5
}

@test "postgresql: under load, with 300 idle connections held open by other clients: the mount connects and works meanwhile and after, nothing acknowledged is lost or finished twice, no two holds overlap, and a claim succeeds within 2 s of them closing" {
    # 300 others, the mount's pool (32 at most) and the test's own.
    QUEUEFS_PG_MAX_CONNECTIONS=400 "$PG_SERVER" restart "$PG_DIR"
    sql "DEFINE QUEUE jobs TIMEOUT 5s KEEP 1h;" >/dev/null
    prefill 1000
    idle_clients 300
    mount_fs
    load_start load 2 4 0.02 "$M"
    wait_finished 100
    local pool
    pool=$(queuefs_backends)
    [ "$pool" -ge 2 ] || fail "the mount has only $pool connections open"
    assert_equal "$(idle_count)" 300
    idle_end || fail "the idle connections did not close"
    first_claim "$M"
    wait_finished $(($(finished_count) + 50))
    load_stop
    ledger_check 5
}

@test "postgresql: under load on two mounts, one's daemon SIGKILLed while its workers hold records: its holds lapse to the other mount, whose workers finish everything; nothing acknowledged is lost or finished twice, no two holds overlap, and a claim succeeds within 2 s" {
    sql "DEFINE QUEUE jobs TIMEOUT 2s KEEP 1h;" >/dev/null
    prefill 200
    mount_fs "$D/m1"
    mount_fs "$D/m2"
    # The first mount's workers take their time: they hold work when it dies.
    load_start m1 1 3 1 "$D/m1"
    load_start m2 1 3 0.02 "$D/m2"
    wait_finished 30
    for _ in $(seq 100); do
        cat "$D"/finished.m1.* 2>/dev/null | grep -q . && break
        sleep 0.1
    done
    local pid
    pid=$(daemon_pid "$D/m1") || fail "no daemon serves $D/m1"
    kill -9 "$pid"
    wait_gone "$pid" || fail "the daemon outlived SIGKILL"
    fusermount3 -u "$D/m1" 2>/dev/null || fusermount3 -u -z "$D/m1"
    wait_unmounted "$D/m1" || fail "the dead mount is still mounted"
    first_claim "$D/m2"
    touch "$D/stop_producers"
    local left
    for _ in $(seq 300); do
        left=$(jqr .records "$(cat "$D/m2/jobs/stats")")
        [ "$left" = 0 ] && break
        sleep 0.1
    done
    load_stop
    [ "$left" = 0 ] || fail "$left records still outstanding 30 s after the producers stopped"
    ledger_check 2
    # Everything written was finished, and what the dead mount held went
    # to the other.
    local written finished
    written=$(cat "$D"/created.* | wc -l)
    finished=$(jq '[.[] | select(.completed_at)] | length' "$D/store.json")
    [ "$finished" -ge "$written" ] || fail "$finished records done of $written written"
    local taken
    taken=$(comm -12 <(cat "$D"/claims.m1.* | jq -r .n | sort -u) \
        <(cat "$D"/claims.m2.* "$D/claims.probe" | jq -r .n | sort -u) | wc -l)
    echo "# $taken records the killed mount had claimed were claimed again on the other" >&3
    [ "$taken" -ge 1 ] || fail "nothing the killed mount held was claimed by the other"
}

@test "postgresql: under load, a failover to a synchronous standby (the primary stopped at once, the standby promoted), mounted by a multi-host URI with target_session_attrs=read-write: nothing acknowledged is lost or finished twice, no two holds overlap, and a claim succeeds within 2 s of the promotion" {
    synchronous_pair
    sql "DEFINE QUEUE jobs TIMEOUT 5s KEEP 1h;" >/dev/null
    prefill 1000
    mount_fs
    load_start load 2 4 0.02 "$M"
    wait_finished 50
    "$PG_SERVER" crash "$PRIMARY"
    # The outage an operator's failover takes.
    sleep 1
    "$PG_SERVER" promote "$STANDBY"
    first_claim "$M"
    [ "$(psql -qXAt "$("$PG_SERVER" uri "$STANDBY" "$DB")" -c "SELECT count(*) FROM pg_stat_activity
        WHERE application_name = 'queuefs'")" -ge 1 ] || fail "the mount is not connected to the promoted standby"
    wait_finished $(($(finished_count) + 50))
    load_stop
    ledger_check 5
}

# ---------------------------------------------------------------------------
# Several hosts: network namespaces, each mounting the store over TCP
# ---------------------------------------------------------------------------

# The hosts' network: $NET.N.1 here and $NET.N.2 on host N, where NET is
# 10.X with X taken from this run's pid, so that two runs at once (two
# checkouts' suites) do not route each other's hosts.
NET=10.$((64 + $$ % 128))

# host_up N — network namespace qfs<pid>h<N> linked to this one by a veth
# pair, $NET.N.1 here and $NET.N.2 there.
host_up() {
    local ns=qfs$$h$1
    ip netns add "$ns"
    ip link add "qv$$h$1" type veth peer name eth0 netns "$ns"
    ip addr add "$NET.$1.1/24" dev "qv$$h$1"
    ip link set "qv$$h$1" up
    ip -n "$ns" addr add "$NET.$1.2/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    HOSTS+=("$1")
}

hosts_down() {
    local n
    for n in "${HOSTS[@]+"${HOSTS[@]}"}"; do
        ip link del "qv$$h$n" 2>/dev/null
        ip netns del "qfs$$h$n" 2>/dev/null
    done
    HOSTS=()
}

# host_worker N MNT SECONDS — claims from MNT/jobs, works SECONDS and
# finishes by the fenced name, logging each claim and each finish, until
# $D/stop exists.
host_worker() {
    local rec id hold
    while [ ! -e "$D/stop" ]; do
        rec=$(cat "$2/jobs/claim" 2>/dev/null) || { sleep 0.1; continue; }
        [ -n "$rec" ] || { sleep 0.05; continue; }
        echo "$rec" >>"$D/claims.$1"
        id=$(jq -r '.id | sub("^jobs:"; "")' <<<"$rec")
        hold=$(jq -r .hold <<<"$rec")
        sleep "$3"
        if rm "$2/jobs/held/$id~$hold" 2>/dev/null; then echo "$id" >>"$D/finished.$1"; fi
    done
}

@test "postgresql: three hosts mount one store over TCP; every record is finished exactly once, no two live holds overlap, and the holds of a host whose link is cut lapse to the others" {
    host_up 1
    host_up 2
    host_up 3
    local port
    port=$(cat "$PG_DIR/port")
    echo "host all all $NET.0.0/16 trust" >>"$PG_DIR/data/pg_hba.conf"
    QUEUEFS_PG_LISTEN=$NET.1.1,$NET.2.1,$NET.3.1 "$PG_SERVER" restart "$PG_DIR"
    sql "DEFINE QUEUE jobs TIMEOUT 3s;" >/dev/null
    python3 -c 'print("".join("CREATE jobs = {n: %d};\n" % i for i in range(1, 301)))' | sql >/dev/null
    local n user
    user=$(stat -c %U "$PG_DIR/data")
    for n in 1 2 3; do
        mkdir -p "$D/m$n"
        nsenter --net="/run/netns/qfs$$h$n" "$QUEUEFS" \
            "postgresql://$user@$NET.$n.1:$port/$DB" "$D/m$n" 3>&-
        wait_mounted "$D/m$n" || fail "host $n did not mount"
        track_mount "$D/m$n"
    done
    grep -F " $D/m1 " /proc/mounts | grep -q "postgresql://$user@$NET.1.1:$port/$DB" ||
        fail "the mount table does not name the server"
    local pids=()
    # Host 1's workers take their time: its link goes while they hold work.
    local took
    for n in 1 2 3; do
        took=0.05
        [ "$n" != 1 ] || took=1
        host_worker "$n" "$D/m$n" "$took" 3>&- &
        pids+=($!)
        host_worker "$n" "$D/m$n" "$took" 3>&- &
        pids+=($!)
    done
    # Once some work is done, host 1's link goes: what it holds lapses.
    for _ in $(seq 300); do
        [ "$(cat "$D"/finished.* 2>/dev/null | wc -l)" -ge 60 ] && [ -s "$D/finished.1" ] && break
        sleep 0.1
    done
    ip link set "qv$$h1" down
    local cut_at
    cut_at=$(date +%s)
    for _ in $(seq 600); do
        [ "$(jqr .records "$(cat "$D/m2/jobs/stats")")" -eq 0 ] && break
        sleep 0.1
    done
    touch "$D/stop"
    assert_equal "$(jqr .records "$(cat "$D/m2/jobs/stats")")" 0
    kill "${pids[0]}" "${pids[1]}" 2>/dev/null
    wait "${pids[@]:2}"
    fusermount3 -u -z "$D/m1"
    kill -9 "${DAEMONS[0]}" 2>/dev/null
    # Every record finished exactly once, across the hosts.
    assert_equal "$(cat "$D"/finished.* | sort -u | wc -l)" 300
    assert_equal "$(cat "$D"/finished.* | wc -l)" 300
    [ -s "$D/finished.2" ] && [ -s "$D/finished.3" ] || fail "a host finished nothing"
    # No two holds of a record overlapped: each claim came after the one
    # before had lapsed (none was released: each was finished or lapsed).
    cat "$D"/claims.* | jq -s -r '
        def at: (sub("\\.[0-9]+Z$"; "Z") | fromdate)
            + ((try capture("\\.(?<f>[0-9]+)Z$").f catch "0") | "0." + . | tonumber);
        group_by(.id)[] | sort_by(.hold) | . as $c
        | range(1; length)
        | select(($c[.].claimed_until | at) - 3 < ($c[. - 1].claimed_until | at))
        | "\($c[.].id): hold \($c[.].hold) overlaps hold \($c[. - 1].hold)"' >"$D/overlaps"
    [ ! -s "$D/overlaps" ] || fail "holds overlapped: $(head -5 "$D/overlaps")"
    # Host 1 held work when its link went, and the others took it over.
    local relapsed
    relapsed=$(cat "$D"/claims.* | jq -s '[group_by(.id)[] | select(length > 1)] | length')
    echo "# after the cut at $cut_at: $relapsed records claimed more than once" >&3
    [ "$relapsed" -ge 1 ] || fail "nothing host 1 held was claimed again"
    local taken
    taken=$(comm -12 <(jq -r .id "$D/claims.1" | sort -u) \
        <(cat "$D/claims.2" "$D/claims.3" | jq -r .id | sort -u) | wc -l)
    [ "$taken" -ge 1 ] || fail "no hold of host 1 lapsed to another host"
}

# What version 6 changed, undone: AT MOST … EVERY's instants back in one
# array in the queue's row of queuefs.rates, without their rows or the
# functions that keep them.
RATES_AS_V5=("DROP TABLE queuefs.rate_slots"
    "ALTER TABLE queuefs.rates DROP COLUMN handed, DROP COLUMN low, DROP COLUMN newest,
     ADD COLUMN stamps int8[] NOT NULL DEFAULT '{}'"
    "DROP FUNCTION queuefs.rate_note(int8, int8, int8, int8), queuefs.rate_next(int8, int8, int8),
     queuefs.rate_room(int8, int8, int8, int8)")

# schema_as VERSION SQL…: makes the store's schema look as version VERSION
# had it: drops the claim functions (made anew by version 4) and what
# version 6 made (RATES_AS_V5), runs each SQL, and sets the version.
schema_as() {
    local version=$1 sql
    shift
    local args=(-c "DROP FUNCTION queuefs.claim_named(int8, bytea, int8, int8, int8, bytea, bytea, int8),
                queuefs.claim_grouped(int8, int8, int8, int8, int8, bytea, bytea, int8),
                queuefs.claim_key(int8, bytea, int8, int8, int8, bytea, bytea)")
    for sql in "${RATES_AS_V5[@]}" "$@"; do args+=(-c "$sql"); done
    psql -qX "$STORE" -v ON_ERROR_STOP=1 "${args[@]}" \
        -c "UPDATE queuefs.version SET version = $version" >/dev/null
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT version FROM queuefs.version")" "$version"
}

@test "postgresql: a schema of version 2 (no errors) is brought to version 7 in place by the first process that writes: its records kept, a release's reason kept from then on" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m; CREATE jobs:1 = {n: 1}; CREATE jobs:2 = {n: 2};" >/dev/null
    # Version 2 as it was: no errors column, nor the functions that keep it
    # (nor what versions 4 and 5 add).
    schema_as 2 "DROP FUNCTION queuefs.errors_lapsed(bytea, int8, int8, int8),
                queuefs.errors_add(bytea, int8, int8, bytea)" \
        "DROP INDEX queuefs.records_done, queuefs.records_filed" \
        "ALTER TABLE queuefs.records DROP COLUMN errors, DROP COLUMN completed_at, DROP COLUMN rerun,
         DROP COLUMN filed_xid"
    run sql "CLAIM jobs:1; RELEASE jobs:1 BECAUSE 'upgraded';"
    assert_success
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT version FROM queuefs.version")" 7
    assert_equal "$(sql 'SELECT n, last_error FROM jobs;' | jq -c .)" \
        '[{"last_error":"upgraded","n":1},{"n":2}]'
}

@test "postgresql: a schema of version 3 (no KEEP) is brought to version 7 in place by the first process that writes: its records, holds and errors kept, a grouped queue's claims work on" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m AT MOST 1 PER g; CREATE jobs:1 = {n: 1, g: 'a'};
         CREATE jobs:2 = {n: 2, g: 'a'}; CREATE jobs:3 = {n: 3, g: 'b'};" >/dev/null
    sql "CLAIM jobs:1; RELEASE jobs:1 BECAUSE 'before'; CLAIM jobs:3;" >/dev/null
    # Version 3 as it was: no completed_at nor rerun, no done records'
    # index, its claim functions answering neither.
    schema_as 3 "DROP INDEX queuefs.records_done, queuefs.records_filed" \
        "ALTER TABLE queuefs.records DROP COLUMN completed_at, DROP COLUMN rerun, DROP COLUMN filed_xid"
    run sql "CLAIM FROM jobs;"
    assert_success
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT version FROM queuefs.version")" 7
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT count(*) FROM pg_indexes
        WHERE schemaname = 'queuefs' AND indexname = 'records_done'")" 1
    assert_equal "$(sql 'SELECT n, last_error FROM jobs;' | jq -c .)" \
        '[{"last_error":"before","n":1},{"n":2},{"n":3}]'
    # jobs:1 was claimed again (group a had room), jobs:3 is still held.
    assert_equal "$(sql 'SELECT n, hold FROM jobs;' | jq -c '[.[] | select(.hold) | .n] | sort')" \
        '[1,3]'
}

@test "postgresql: a schema of version 4 (claims from the head) is brought to version 7 in place by the first process that writes: its records and holds kept, claims in claim order from where the last left off" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m; CREATE jobs:1 = {n: 1}; CREATE jobs:2 = {n: 2};
         CREATE jobs:3 = {n: 3}; CLAIM jobs:1;" >/dev/null
    # Version 4 as it was: no filed_xid, nor its index (nor what version 6
    # adds).
    psql -qX "$STORE" -v ON_ERROR_STOP=1 -c "DROP INDEX queuefs.records_filed" \
        -c "ALTER TABLE queuefs.records DROP COLUMN filed_xid" \
        "${RATES_AS_V5[@]/#/-c}" -c "UPDATE queuefs.version SET version = 4" >/dev/null
    mount_fs
    assert_equal "$(jqr .n "$(cat "$M/jobs/claim")")" 2
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT version FROM queuefs.version")" 7
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT count(*) FROM pg_indexes
        WHERE schemaname = 'queuefs' AND indexname = 'records_filed'")" 1
    # A record given back, and one made before the upgrade, are still found
    # first by claims that go on from where the one before left off.
    echo 'RELEASE jobs:2;' >"$M/ctl"
    assert_equal "$(jqr .n "$(cat "$M/jobs/claim")")" 2
    assert_equal "$(jqr .n "$(cat "$M/jobs/claim")")" 3
    assert_equal "$(sql 'SELECT n, hold FROM jobs;' | jq -c '[.[] | select(.hold) | .n] | sort')" \
        '[1,2,3]'
}

@test "postgresql: a schema of version 6 (held records in records_filed) is brought to version 7 in place by the first process that writes: a claim files its record in two indexes, a held-back xmin's claims still find records given back and holds lapsed" {
    # jobs:1 is held for an hour: however slow the upgrade and the mount,
    # the first claim after them takes jobs:2.
    sql "DEFINE QUEUE jobs TIMEOUT 1h; CREATE jobs:1 = {n: 1}; CREATE jobs:2 = {n: 2};
         CREATE jobs:3 = {n: 3}; CLAIM jobs:1;" >/dev/null
    # Version 6 as it was: every ready or waiting record in records_filed.
    schema_as 6 "DROP INDEX queuefs.records_filed" \
        "CREATE INDEX records_filed ON queuefs.records (table_id, filed_xid) WHERE state IN (0, 1)"
    mount_fs
    assert_equal "$(jqr .n "$(cat "$M/jobs/claim")")" 2
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT version FROM queuefs.version")" 7
    # The index holds the ready record alone, not the two held (its entries
    # counted once VACUUM took the dead one of jobs:2 away).
    assert_equal "$(psql -qXAt "$STORE" -c "VACUUM queuefs.records" \
        -c "CREATE EXTENSION IF NOT EXISTS pageinspect" \
        -c "SELECT count(*) FROM bt_page_items('queuefs.records_filed', 1)")" 1
    # Claims from a position (an xmin held back by an open transaction, a
    # thousand transactions and more behind) find a record given back, and
    # holds that lapsed (the claims' 2 s; jobs:1 keeps its hour).
    echo 'ALTER QUEUE jobs TIMEOUT 2s;' >"$M/ctl"
    pin_xmin
    yes 'SELECT txid_current();' | head -n 1100 | psql -qXAt "$STORE" >/dev/null
    echo 'RELEASE jobs:2;' >"$M/ctl"
    assert_equal "$(jqr .n "$(cat "$M/jobs/claim")")" 2
    assert_equal "$(jqr .n "$(cat "$M/jobs/claim")")" 3
    sleep 2.2
    assert_equal "$(cat "$M/jobs/claim" "$M/jobs/claim" "$M/jobs/claim" | jq -s -c '[.[].n] | sort')" '[2,3]'
}

@test "postgresql: a schema of version 5 (AT MOST … EVERY's instants in one array) is brought to version 7 in place by the first process that writes: the window goes on from the instants it kept, and ALTER QUEUE moves it" {
    sql "DEFINE QUEUE r TIMEOUT 5m AT MOST 3 EVERY 1h; CREATE r:1 = {}; CREATE r:2 = {};
         CREATE r:3 = {}; CREATE r:4 = {}; CREATE r:5 = {}; CREATE r:6 = {};" >/dev/null
    assert_equal "$(sql "CLAIM 2 FROM r;" | jq length)" 2
    local stamps
    stamps=$(psql -qXAt "$STORE" -c "SELECT array_agg(s ORDER BY chunk, i)
        FROM queuefs.rate_slots, unnest(stamps) WITH ORDINALITY u(s, i)")
    [ "$(psql -qXAt "$STORE" -c "SELECT cardinality('$stamps'::int8[])")" = 2 ] ||
        fail "two instants kept: $stamps"
    # Version 5 as it was: the two instants in the queue's row.
    schema_as 5 "UPDATE queuefs.rates SET stamps = '$stamps'"
    # The window of 3 holds the 2: room for one more, then none.
    assert_equal "$(sql "CLAIM 5 FROM r;" | jq length)" 1
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT version FROM queuefs.version")" 7
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT handed, low, cardinality(stamps)
        FROM queuefs.rates JOIN queuefs.rate_slots USING (table_id)")" "3|0|3"
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT (SELECT stamps[1:2] FROM queuefs.rate_slots)
        = '$stamps'::int8[]")" t
    assert_equal "$(sql "CLAIM 5 FROM r;" | jq length)" 0
    # A rate one larger has room for one; one smaller for none.
    sql "ALTER QUEUE r AT MOST 4 EVERY 1h;" >/dev/null
    assert_equal "$(sql "CLAIM 5 FROM r;" | jq length)" 1
    sql "ALTER QUEUE r AT MOST 2 EVERY 1h;" >/dev/null
    assert_equal "$(sql "CLAIM 5 FROM r;" | jq length)" 0
    # Dropping the queue drops its instants.
    sql "DROP QUEUE r;" >/dev/null
    assert_equal "$(psql -qXAt "$STORE" -c "SELECT count(*) FROM queuefs.rate_slots")" 0
}
