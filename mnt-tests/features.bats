#!/usr/bin/env bats
# features.bats — SPEC section 6 on a real mount: RETRY brings dead work
# back (through ctl and through `mv q/dead/ID q/released/`), and PAUSE QUEUE
# stops hand-outs durably until RESUME QUEUE; and section 9's DELETE and
# RELEASE of several records, fenced, in one commit.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/features.bats
#
# Needs what mount.bats needs.

load mount_helpers

# A mount with the queue q (TIMEOUT 1s, ATTEMPTS 1, NOT BEFORE due) whose
# record q:1 is dead — claimed once, its hold lapsed — and q:2 ready.
mount_dead() {
    sql "DEFINE QUEUE q TIMEOUT 1s ATTEMPTS 1 NOT BEFORE due;
         CREATE q:1 = {url: 'a'}; CLAIM q:1; CREATE q:2 = {url: 'b'};" >/dev/null ||
        fail "could not set up the queue"
    mount_fs
    for _ in $(seq 100); do
        [ -e "$M/q/dead/1" ] && return 0
        sleep 0.05
    done
    fail "q:1 did not die after its hold lapsed"
}

@test "RETRY: a dead record is claimable again, its attempts back to 0; claims keep counting" {
    mount_dead
    run ctl "RETRY q:1"
    assert_success
    assert_equal "$(jqc '.[0] | [.id, .attempts, .claimed_until]' "$output")" '["q:1",0,null]'
    [ ! -e "$M/q/dead/1" ] || fail "q:1 is still in dead/ after RETRY"
    run ctl "CLAIM 2 FROM q"
    assert_success
    assert_equal "$(jqc '[.[] | [.id, .attempts]]' "$output")" '[["q:1",1],["q:2",1]]'
    assert_equal "$(jqc '[.claims, .dead]' "$(cat "$M/q/stats")")" '[3,0]'
}

@test "RETRY … NOT BEFORE delays it; RETRY ALL FROM q WHERE retries what matches" {
    mount_dead
    run ctl "RETRY q:1 NOT BEFORE 1h"
    assert_success
    assert_equal "$(jqc '[.delayed, .dead]' "$(cat "$M/q/stats")")" '[1,0]'
    run ctl "CLAIM q:1"
    assert_success
    assert_output '[]'
    run ctl "RETRY ALL FROM q WHERE url = 'b'"
    assert_success
    assert_equal "$(jqc '[.[] | .id]' "$output")" '["q:2"]'
    run ctl "RETRY ALL FROM q"
    assert_success
    assert_equal "$(jqc '[.[] | .id]' "$output")" '["q:1","q:2"]'
}

@test "RETRY ALL and SELECT over more records than one read of the store: every match once, in order" {
    mount_fs
    ctl "DEFINE QUEUE big TIMEOUT 1h ATTEMPTS 1 NOT BEFORE due;" >/dev/null
    seq 2500 | sed 's/.*/{"n":&}/' >"$M/big/new"
    for _ in 1 2 3; do ctl "CLAIM 1000 FROM big;" >/dev/null; done
    ctl "RELEASE ALL FROM big;" >/dev/null
    assert_equal "$(jqc '[.dead, .ready]' "$(cat "$M/big/stats")")" '[2500,0]'
    run ctl "RETRY ALL FROM big WHERE n > 600 NOT BEFORE 1h;"
    assert_success
    assert_equal "$(jqc '[.[] | .id] == [range(601; 2501) | "big:\(.)"]' "$output")" true
    assert_equal "$(jqc '[.[] | select(.attempts != 0 or .due == null)] | length' "$output")" 0
    assert_equal "$(jqc '[.dead, .delayed, .held]' "$(cat "$M/big/stats")")" '[600,1900,0]'
    run ctl "SELECT * FROM big WHERE n <= 600 OR n > 2499;"
    assert_success
    assert_equal "$(jqc '[.[] | .n] == [range(1; 601), 2500]' "$output")" true
}

@test "RETRY refuses what RELEASE refuses: no such record, NOT BEFORE without the field" {
    mount_dead
    assert_equal "$(ctl_errno 'RETRY q:9;')" "ENOENT NoSuchRecord"
    sql "DEFINE QUEUE plain TIMEOUT 1m; CREATE plain:1 = {};" >/dev/null
    assert_equal "$(ctl_errno 'RETRY plain:1 NOT BEFORE 1h;')" "EOPNOTSUPP NoDelayField"
    assert_equal "$(ctl_errno 'RETRY ALL FROM nowhere;')" "ENOENT NoSuchTable"
}

@test "mv q/dead/ID q/released/ retries it; @WHEN delays it; a record no longer dead is ENOENT" {
    mount_dead
    run mv "$M/q/dead/1" "$M/q/released/"
    assert_success
    [ ! -e "$M/q/dead/1" ] || fail "q:1 is still dead after the mv"
    assert_equal "$(jqr .attempts "$(cat "$M/q/1")")" 0
    assert_equal "$(jqr .ready "$(cat "$M/q/stats")")" 2
    # Dead again, then retried not before 10 minutes.
    ctl "CLAIM q:1" >/dev/null
    for _ in $(seq 100); do [ -e "$M/q/dead/1" ] && break; sleep 0.05; done
    [ -e "$M/q/dead/1" ] || fail "q:1 did not die again"
    run mv "$M/q/dead/1" "$M/q/released/1@10m"
    assert_success
    assert_equal "$(jqc '[.delayed, .dead]' "$(cat "$M/q/stats")")" '[1,0]'
    # The name of a record that is no longer dead names nothing to retry.
    assert_equal "$(errno_of "os.rename('$M/q/dead/1', '$M/q/released/1')")" ENOENT
}

@test "PAUSE QUEUE: claims answer nothing, wait blocks until RESUME; stats and metrics say so" {
    mount_dead
    run ctl "PAUSE QUEUE q"
    assert_success
    assert_output 'null'
    run ctl "CLAIM FROM q"
    assert_output '[]'
    assert_equal "$(cat "$M/q/claim")" ''
    assert_equal "$(jqr .paused "$(cat "$M/q/stats")")" true
    grep -qx 'queuefs_paused{queue="q"} 1' "$M/metrics" || fail "metrics do not say q is paused"
    # Creating, reading and finishing go on.
    run ctl "CREATE q:3 = {url: 'c'}"
    assert_success
    timeout 10 cat "$M/q/wait" >"$BATS_TEST_TMPDIR/waited" &
    local waiter=$!
    sleep 0.5
    [ ! -s "$BATS_TEST_TMPDIR/waited" ] || fail "wait handed out a record of a paused queue"
    ctl "RESUME QUEUE q" >/dev/null
    wait "$waiter" || fail "wait did not end after RESUME"
    assert_equal "$(jqr .id "$(cat "$BATS_TEST_TMPDIR/waited")")" q:2
    assert_equal "$(jqr .paused "$(cat "$M/q/stats")")" false
}

@test "PAUSE QUEUE lasts across an unmount and a remount" {
    mount_dead
    ctl "PAUSE QUEUE q" >/dev/null
    unmount_fs "$M"
    mount_fs
    assert_equal "$(cat "$M/q/claim")" ''
    assert_equal "$(jqr .paused "$(sql 'INFO FOR TABLE q')")" true
    assert_equal "$(ctl_errno 'PAUSE QUEUE nowhere;')" "ENOENT NoSuchTable"
    ctl "RESUME QUEUE q" >/dev/null
    assert_equal "$(jqr .id "$(cat "$M/q/claim")")" q:2
}

@test "ALTER QUEUE TIMEOUT: the next claim's claimed_until follows it; holds taken keep theirs" {
    sql "DEFINE QUEUE q TIMEOUT 1m; CREATE q:1 = {}; CREATE q:2 = {};" >/dev/null
    mount_fs
    local first second
    first=$(ctl "CLAIM q:1")
    run ctl "ALTER QUEUE q TIMEOUT 2h"
    assert_success
    assert_output 'null'
    second=$(ctl "CLAIM q:2")
    local held_for
    held_for=$(( $(epoch_of "$(jqr '.[0].claimed_until' "$second")") - $(date +%s) ))
    [ "$held_for" -gt 7000 ] && [ "$held_for" -le 7200 ] ||
        fail "a claim after ALTER TIMEOUT 2h holds for ${held_for}s"
    assert_equal "$(jqr '.[0].claimed_until' "$(sql 'SELECT * FROM q:1')")" \
        "$(jqr '.[0].claimed_until' "$first")"
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE q')")" "DEFINE QUEUE q TIMEOUT 2h"
}

@test "ALTER QUEUE ATTEMPTS: a raised or dropped ceiling brings dead records back; refusals" {
    mount_dead
    run ctl "ALTER QUEUE q ATTEMPTS 2"
    assert_success
    [ ! -e "$M/q/dead/1" ] || fail "q:1 is still dead under ATTEMPTS 2"
    assert_equal "$(jqc '[.[] | [.id, .attempts]]' "$(ctl 'CLAIM 2 FROM q')")" '[["q:1",2],["q:2",1]]'
    ctl "ALTER QUEUE q ATTEMPTS 1 DEDUPLICATE 1h" >/dev/null
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE q')")" \
        "DEFINE QUEUE q TIMEOUT 1s ATTEMPTS 1 NOT BEFORE due DEDUPLICATE 1h"
    run ctl "ALTER QUEUE q DROP ATTEMPTS DROP DEDUPLICATE"
    assert_success
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE q')")" \
        "DEFINE QUEUE q TIMEOUT 1s NOT BEFORE due"
    sql "DEFINE COLLECTION notes;" >/dev/null
    assert_equal "$(ctl_errno 'ALTER QUEUE notes TIMEOUT 1m;')" "EINVAL WrongKind"
    assert_equal "$(ctl_errno 'ALTER QUEUE q;')" "EINVAL ParseError"
}

# names DIR — the names ls lists in DIR, on one line.
names() {
    # shellcheck disable=SC2012 # what ls shows is what is checked; the names are plain
    ls "$1" | tr '\n' ' '
}

@test "DELETE and RELEASE of several records: one commit, all or nothing, fenced by q:ID~N" {
    sql "DEFINE QUEUE q TIMEOUT 1h NOT BEFORE due;
         CREATE q:1 = {}; CREATE q:2 = {}; CREATE q:3 = {}; CREATE q:4 = {}; CREATE q:5 = {};
         CLAIM 3 FROM q;" >/dev/null || fail "could not set up the queue"
    mount_fs
    assert_equal "$(names "$M/q/held")" "1~1 2~2 3~3 "
    # A missing record, a stale fence, a record nobody holds under a fence,
    # a hold of another consumer: refused whole, naming the record, and
    # nothing is changed.
    sql "USE CONSUMER 'other'; CLAIM q:5;" >/dev/null
    local before
    before=$(sql "SELECT * FROM q")
    # statement | errno and error | what the message names
    while IFS='|' read -r stmt want what; do
        assert_equal "$(ctl_errno "$stmt")" "$want"
        run --separate-stderr ctl "$stmt"
        # shellcheck disable=SC2154 # $stderr: set by bats' run
        [[ $stderr == *"$what"* ]] || fail "$stmt: the error '$stderr' does not name $what"
        assert_equal "$(sql "SELECT * FROM q")" "$before"
    done <<'EOF2'
DELETE q:1~1, q:2~2, q:9;|ENOENT NoSuchRecord|no record q:9
DELETE q:1~1, q:2~7, q:3~3;|ENOENT NoSuchRecord|q:2 is no longer held by hold 7
RELEASE q:1~1, q:2~2, q:4~4 NOT BEFORE 1h BECAUSE 'HTTP 503';|ENOENT NoSuchRecord|q:4 is no longer held by hold 4
RELEASE q:1, q:2, q:5 BECAUSE 'HTTP 503';|EBUSY HeldByAnotherConsumer|q:5 is held by consumer 'other'
DELETE q:1, q:1~1;|EINVAL ParseError|q:1 is named twice
EOF2
    assert_equal "$(names "$M/q")" "1 2 3 4 5 "
    assert_equal "$(names "$M/q/held")" "1~1 2~2 3~3 5~4 "
    # All succeed: one commit releases q:1 and q:2 (q:4, held by nobody, is
    # left as it is), each with the delay and the reason.
    run ctl "RELEASE q:1~1, q:2~2, q:4 NOT BEFORE 1h BECAUSE 'HTTP 503';"
    assert_success
    assert_equal "$(jqc '[.[] | [.id, .last_error, .claimed_until]]' "$output")" \
        '[["q:1","HTTP 503",null],["q:2","HTTP 503",null]]'
    assert_equal "$(names "$M/q/held")" "3~3 5~4 "
    assert_equal "$(jqc '[.delayed, .held, .ready]' "$(cat "$M/q/stats")")" '[2,2,1]'
    # …and one commit finishes a held record by its fence and two that
    # nobody holds.
    run ctl "DELETE q:3~3, q:1, q:4;"
    assert_success
    assert_output '[]'
    assert_equal "$(names "$M/q")" "2 5 "
    assert_equal "$(jqr .deletes "$(cat "$M/q/stats")")" 3
}
