#!/usr/bin/env bats
# conveniences.bats — the worker conveniences of SPEC section 2 through a
# real mount: touch (TOUCH), the held/ID~N and dead/ views, the blocking
# wait file (CLAIM … WAIT), and the figures in jobs/stats and MOUNT/metrics;
# and their statement forms through ctl and queuefs-sql.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/conveniences.bats
#
# Needs root (or a user allowed to mount FUSE), fusermount3, mountpoint, jq,
# python3 and GNU date.  Where time is the subject the bounds are generous;
# the wake delays of jobs/wait are measured and printed, not asserted tightly.

# The scripts given to bash -c are single-quoted on purpose: they expand
# their arguments themselves.  Each test runs in a subshell of its own, in
# which teardown also runs, so BG is that test's; bats's run sets $stderr.
# shellcheck disable=SC2016,SC2030,SC2031,SC2154

load mount_helpers

# Processes a test starts in the background (waiters); teardown ends them,
# by pid, before unmounting.
BG=()

# mount_helpers' teardown, kept under another name: ours runs it last.
eval "unmount_all_$(declare -f teardown)"

teardown() {
    local pid
    for pid in "${BG[@]}"; do
        kill "$pid" 2>/dev/null || true
    done
    for pid in "${BG[@]}"; do
        wait_gone "$pid" || kill -9 "$pid" 2>/dev/null || true
    done
    BG=()
    unmount_all_teardown
}

# The second mount point, for tests with two consumers.
M2=""

# mount_ab — mounts $STORE at $M as consumer a and at $M2 as consumer b.
mount_ab() {
    M2="$BATS_TEST_TMPDIR/m2"
    mount_fs -o consumer=a "$M"
    mount_fs -o consumer=b "$M2"
}

now_ns() {
    date +%s%N
}

# ns_of DATETIME — nanoseconds since the epoch of an RFC 3339 UTC datetime.
ns_of() {
    date -d "$1" +%s%N
}

# wait_until_past DATETIME [MS] — polls until the clock is MS milliseconds
# (default 0) past DATETIME; fails the test after 30 s.
wait_until_past() {
    local target=$(($(ns_of "$1") + ${2:-0} * 1000000)) i
    for i in $(seq 600); do
        [ "$(now_ns)" -gt "$target" ] && return 0
        sleep 0.05
    done
    fail "the clock did not pass $1 (+${2:-0} ms)"
}

# blocked PID — true once PID is seen waiting on a FUSE request twice in a
# row, 50 ms apart (polls up to 10 s).
blocked() {
    local i seen=0
    for i in $(seq 200); do
        if [ "$(cat "/proc/$1/wchan" 2>/dev/null)" = request_wait_answer ]; then
            seen=$((seen + 1))
            [ "$seen" -ge 2 ] && return 0
        else
            seen=0
        fi
        sleep 0.05
    done
    return 1
}

# start_waiter FILE OUT — opens FILE (a wait file) in the background; when
# the open returns it writes the clock (ns) on the first line of OUT and
# what it read after it.  Sets WAITER to its pid and waits until it blocks.
start_waiter() {
    python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_RDONLY)
t = time.time_ns()
data = os.read(fd, 1 << 20)
os.close(fd)
with open(sys.argv[2], "w") as f:
    f.write("%d\n%s" % (t, data.decode()))
' "$1" "$2" 3>&- &
    WAITER=$!
    BG+=("$WAITER")
    blocked "$WAITER" || fail "the open of $1 did not block"
}

# finish_waiter OUT — waits (up to 10 s) for $WAITER to end, successfully;
# sets WOKE_NS (when its open returned) and WOKE (what it read).
finish_waiter() {
    wait_gone "$WAITER" || fail "the waiter on $1 still waits after 10 s"
    wait "$WAITER" || fail "the waiter failed (status $?)"
    WOKE_NS=$(head -n 1 "$1")
    WOKE=$(tail -n +2 "$1")
}

# report_wake WHAT FROM_NS — prints the delay from FROM_NS to WOKE_NS to the
# TAP stream and fails beyond 1 s.
report_wake() {
    local ms=$(((WOKE_NS - $2) / 1000000))
    echo "# wake after $ms ms: $1" >&3
    [ "$ms" -lt 1000 ] || fail "the waiter woke $ms ms after $1"
}

# interrupt_ends_wait PID WHAT — sends SIGINT to PID, blocked in a wait,
# and expects it to end within 10 s, killed by the signal.  When it does not,
# a record is created so the wait (and the test) can end, then the test fails.
interrupt_ends_wait() {
    local t0 status=0
    t0=$(now_ns)
    kill -INT "$1"
    if ! wait_gone "$1"; then
        sql "CREATE jobs:999 = {};" >/dev/null
        wait_gone "$1" || true
        fail "$2 still waited 10 s after SIGINT (a create then ended it)"
    fi
    echo "# SIGINT ended $2 after $((($(now_ns) - t0) / 1000000)) ms" >&3
    wait "$1" || status=$?
    assert_equal "$status" 130
}

# nothing_claimed_after_interrupt — after an interrupted wait on $M's
# jobs: nothing was claimed, and a record created now is left for others
# (here $M2, consumer b).
nothing_claimed_after_interrupt() {
    sql "CREATE jobs:1 = {};" >/dev/null
    # Give an abandoned wait ample time to take it (a wake takes milliseconds).
    sleep 0.5
    assert_equal "$(sql 'SELECT * FROM jobs')" '[{"id":"jobs:1"}]'
    run cat "$M2/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:1"
    assert_equal "$(jqr .attempts "$output")" 1
    assert_equal "$(jqr .claimed_by.consumer "$output")" b
    assert_equal "$(jqr .claims "$(cat "$M/jobs/stats")")" 1
}

# The figures of jobs/stats that do not move with the clock.
figures() {
    jq -c 'del(.oldest_ready_age_seconds)' "$1"
}

# ---------------------------------------------------------------------------
# touch: TOUCH
# ---------------------------------------------------------------------------

@test "touch: touch jobs/7 moves claimed_until to now + TIMEOUT; a claim after the old deadline does not get it" {
    sql "DEFINE QUEUE jobs TIMEOUT 2s; CREATE jobs:7 = { url: 'a' };" >/dev/null
    mount_ab
    run cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqr .id "$output")" "jobs:7"
    first=$(jqr .claimed_until "$output")
    sleep 0.7    # the subject is time: the touch comes 0.7 s after the claim
    before=$(now_ns)
    run touch "$M/jobs/7"
    assert_success
    assert_output ""
    after=$(now_ns)
    rec=$(cat "$M/jobs/7")
    second=$(jqr .claimed_until "$rec")
    [ "$(ns_of "$second")" -ge $((before + 2000000000)) ] &&
        [ "$(ns_of "$second")" -le $((after + 2000000000)) ] ||
        fail "claimed_until $second is not the touch's time + 2 s"
    [ "$(ns_of "$second")" -gt $(($(ns_of "$first") + 500000000)) ] ||
        fail "claimed_until did not move forward: $first -> $second"
    assert_equal "$(jqr .attempts "$rec")" 1
    assert_equal "$(jqr .claimed_by.consumer "$rec")" a
    # Past the first deadline the record is still held: nobody claims it.
    wait_until_past "$first" 100
    run cat "$M2/jobs/claim"
    assert_success
    assert_output ""
    assert_equal "$(jqr .attempts "$(cat "$M/jobs/7")")" 1
    # Past the second one the hold lapses as any other.
    wait_until_past "$second" 50
    run cat "$M2/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
    assert_equal "$(jqr .attempts "$output")" 2
    assert_equal "$(jqr .claimed_by.consumer "$output")" b
}

@test "touch: another consumer's hold is EBUSY (Device or resource busy) and keeps its deadline" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = {};" >/dev/null
    mount_ab
    run cat "$M/jobs/claim"
    held=$(cat "$M/jobs/7")
    run touch "$M2/jobs/7"
    assert_failure
    assert_output --partial "Device or resource busy"
    assert_equal "$(errno_of 'os.utime(a[2])' "$M2/jobs/7")" EBUSY
    assert_equal "$(cat "$M/jobs/7")" "$held"
    # TOUCH through b's ctl: HeldByAnotherConsumer, naming a.
    assert_equal "$(ctl_errno 'TOUCH jobs:7;' "$M2")" "EBUSY HeldByAnotherConsumer"
    run --separate-stderr "$QUEUEFS_CTL" "$M2" "TOUCH jobs:7;"
    assert_failure
    assert_equal "$(jqr .message "$stderr" | grep -c "'a'")" 1
    assert_equal "$(cat "$M/jobs/7")" "$held"
    # The holder's own touch works.
    run touch "$M/jobs/7"
    assert_success
}

@test "touch: a record nobody holds is ENOLCK (No locks available; NotHeld) and stays unheld" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE QUEUE fast TIMEOUT 1ns;
         CREATE jobs:7 = { url: 'a' }; CREATE fast:1 = {};" >/dev/null
    mount_fs
    run touch "$M/jobs/7"
    assert_failure
    assert_output --partial "No locks available"
    assert_equal "$(errno_of 'os.utime(a[2])' "$M/jobs/7")" ENOLCK
    assert_equal "$(ctl_errno 'TOUCH jobs:7;')" "ENOLCK NotHeld"
    assert_equal "$(cat "$M/jobs/7")" '{"id":"jobs:7","url":"a"}'
    # A hold that has lapsed is no hold either.
    run cat "$M/fast/claim"
    assert_equal "$(jqr .id "$output")" "fast:1"
    lapsed=$(cat "$M/fast/1")
    run touch "$M/fast/1"
    assert_failure
    assert_output --partial "No locks available"
    assert_equal "$(cat "$M/fast/1")" "$lapsed"
}

@test "touch: of a new name creates nothing; of a collection's record or a reserved file changes nothing" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE COLLECTION notes;
         CREATE jobs:7 = {}; CREATE notes:1 = { text: 'hi' };" >/dev/null
    mount_fs
    run touch "$M/jobs/99"
    assert_success
    assert_equal "$(sql 'SELECT * FROM jobs:99')" '[]'
    run ls "$M/jobs"
    refute_line 99
    run touch "$M/notes/2"
    assert_success
    assert_equal "$(sql 'SELECT * FROM notes:2')" '[]'
    run touch "$M/notes/1"
    assert_success
    assert_equal "$(sql 'SELECT * FROM notes')" '[{"id":"notes:1","text":"hi"}]'
    # touch of claim, wait, new and stats claims nothing and does not block.
    for f in claim wait new stats; do
        run timeout 10 touch "$M/jobs/$f"
        [ "$status" -ne 124 ] || fail "touch jobs/$f blocked"
    done
    assert_equal "$(sql 'SELECT * FROM jobs')" '[{"id":"jobs:7"}]'
}

@test "touch: the statement TOUCH jobs:7 through queuefs-sql and ctl; NotHeld, NoSuchRecord, WrongKind" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE COLLECTION notes;
         CREATE jobs:7 = {}; CREATE jobs:8 = {}; CREATE notes:1 = {};" >/dev/null
    claimed=$(sql "CLAIM FROM jobs;")
    until1=$(jqr '.[0].claimed_until' "$claimed")
    run --separate-stderr sql "TOUCH jobs:7;"
    assert_success
    assert_stderr_empty
    assert_equal "$(jqr '.[0].id' "$output")" "jobs:7"
    assert_equal "$(jqr '.[0].attempts' "$output")" 1
    until2=$(jqr '.[0].claimed_until' "$output")
    [ "$(ns_of "$until2")" -gt "$(ns_of "$until1")" ] || fail "TOUCH did not move $until1 forward ($until2)"
    assert_equal "$(sql 'SELECT claimed_until FROM jobs:7' | jq -r '.[0].claimed_until')" "$until2"
    run --separate-stderr sql "TOUCH jobs:8;"
    assert_error NotHeld
    run --separate-stderr sql "TOUCH jobs:99;"
    assert_error NoSuchRecord
    run --separate-stderr sql "TOUCH notes:1;"
    assert_error WrongKind
    assert_equal "$(sql 'SELECT * FROM jobs:8')" '[{"id":"jobs:8"}]'
    # Through ctl: the mount claims and touches its own hold.
    mount_fs
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:8"
    run ctl "TOUCH jobs:8;"
    assert_success
    assert_equal "$(jqr '.[0].id' "$output")" "jobs:8"
    assert_equal "$(ctl_errno 'TOUCH jobs:99;')" "ENOENT NoSuchRecord"
}

# ---------------------------------------------------------------------------
# held/ID~N: the live holds, fenced by the number of the hold
# ---------------------------------------------------------------------------

@test "held: ls jobs/held/ lists the live holds as ID~N (N = the hold's number), string ids encoded; cat reads the record" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;
         CREATE jobs:7 = { url: 'a' }; CREATE jobs:8 = {};
         CREATE jobs:'a/b~1' = {}; CREATE jobs:'007' = {};" >/dev/null
    mount_fs
    run ls "$M/jobs/held"
    assert_success
    assert_output ""
    run cat "$M/jobs/claim"    # jobs:7, attempt 1, hold 1
    run mv "$M/jobs/7" "$M/jobs/released/"
    run cat "$M/jobs/claim"    # jobs:7, attempt 2, hold 2
    assert_equal "$(jqr .attempts "$output")" 2
    assert_equal "$(jqr .hold "$output")" 2
    sql "CLAIM jobs:'a/b~1'; CLAIM jobs:'007';" >/dev/null    # holds 3 and 4, attempt 1
    run ls "$M/jobs/held"
    assert_success
    assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "%3007~4 7~2 a%2Fb%7E1~3 "
    run cat "$M/jobs/held/7~2"
    assert_success
    assert_output "$(cat "$M/jobs/7")"
    assert_equal "$(jqr .url "$output")" a
    run cat "$M/jobs/held/a%2Fb%7E1~3"
    assert_success
    assert_equal "$(jqr .id "$output")" "jobs:'a/b~1'"
    # Earlier holds, other records' holds, unheld records and malformed
    # names name nothing.
    for name in 7~1 7~3 7~4 a%2Fb%7E1~1 7 8~1 8~0 7~ 7~x; do
        run cat "$M/jobs/held/$name"
        assert_failure
        assert_output --partial "No such file or directory"
    done
}

@test "held: the slow worker: A's hold lapses, B re-claims, A's rm held/7~1 is ENOENT and B's rm held/7~2 finishes" {
    sql "DEFINE QUEUE jobs TIMEOUT 1s; CREATE jobs:7 = { url: 'a' };" >/dev/null
    mount_ab
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
    assert_equal "$(jqr .attempts "$output")" 1
    run ls "$M/jobs/held"
    assert_output "7~1"
    # A is slow: its hold lapses (the name leaves held/).
    for _ in $(seq 100); do
        [ -z "$(ls "$M/jobs/held")" ] && break
        sleep 0.05
    done
    assert_equal "$(ls "$M/jobs/held")" ""
    run cat "$M2/jobs/claim"
    assert_equal "$(jqr .attempts "$output")" 2
    assert_equal "$(jqr .claimed_by.consumer "$output")" b
    # A comes back and tries to finish: its hold's name is gone.
    run rm "$M/jobs/held/7~1"
    assert_failure
    assert_output --partial "No such file or directory"
    rec=$(cat "$M2/jobs/7")
    assert_equal "$(jqr .attempts "$rec")" 2
    assert_equal "$(jqr .claimed_by.consumer "$rec")" b
    # B finishes in time.
    run rm "$M2/jobs/held/7~2"
    assert_success
    assert_equal "$(sql 'SELECT * FROM jobs')" '[]'
}

@test "held: mv held/7~N released/7@10m releases only while hold N is the live one" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s NOT BEFORE due; CREATE jobs:7 = {};" >/dev/null
    mount_ab
    run cat "$M/jobs/claim"                   # A: attempt 1
    run mv "$M/jobs/7" "$M/jobs/released/"
    run cat "$M2/jobs/claim"                  # B: attempt 2
    assert_equal "$(jqr .attempts "$output")" 2
    held=$(cat "$M2/jobs/7")
    run mv "$M/jobs/held/7~1" "$M/jobs/released/7@10m"
    assert_failure
    assert_output --partial "No such file or directory"
    assert_equal "$(renameat2 "$M2/jobs/held/7~1" "$M2/jobs/released/7@10m")" ENOENT
    assert_equal "$(cat "$M/jobs/7")" "$held"
    # The live hold's name releases, with the delay.
    before=$(date +%s)
    run mv "$M2/jobs/held/7~2" "$M2/jobs/released/7@10m"
    assert_success
    rec=$(cat "$M/jobs/7")
    assert_equal "$(jqr 'has("claimed_until")' "$rec")" false
    assert_equal "$(jqr .attempts "$rec")" 2
    assert_near "$(epoch_of "$(jqr .due "$rec")")" $((before + 600)) 3
    run ls "$M/jobs/held"
    assert_output ""
    # Released, the name is gone too.
    run rm "$M2/jobs/held/7~2"
    assert_failure
    assert_output --partial "No such file or directory"
    assert_equal "$(cat "$M/jobs/7")" "$rec"
}

@test "held: mv held/7~N released/ (the name mv keeps) releases that hold" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = {}; CREATE jobs:8 = {};" >/dev/null
    mount_fs
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
    run mv "$M/jobs/held/7~1" "$M/jobs/released/"
    assert_success
    run cat "$M/jobs/7"
    assert_equal "$(jqr 'has("claimed_until")' "$output")" false
    # A name for another record is refused, never a copy (EXDEV).
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
    assert_equal "$(renameat2 "$M/jobs/held/7~2" "$M/jobs/released/8")" EINVAL
    run ls "$M/jobs/held"
    assert_output "7~2"
}

@test "held: after a lapse with no new claim the name is gone for cat, rm, mv and touch, and nothing changes" {
    sql "DEFINE QUEUE jobs TIMEOUT 1s; CREATE jobs:7 = {};" >/dev/null
    mount_fs
    run cat "$M/jobs/claim"
    until_then=$(jqr .claimed_until "$output")
    wait_until_past "$until_then" 50
    rec=$(cat "$M/jobs/7")
    run ls "$M/jobs/held"
    assert_output ""
    run cat "$M/jobs/held/7~1"
    assert_failure
    assert_output --partial "No such file or directory"
    run rm "$M/jobs/held/7~1"
    assert_failure
    assert_output --partial "No such file or directory"
    assert_equal "$(renameat2 "$M/jobs/held/7~1" "$M/jobs/released/7")" ENOENT
    assert_equal "$(errno_of 'os.utime(a[2])' "$M/jobs/held/7~1")" ENOENT
    run touch "$M/jobs/held/7~1"
    assert_failure
    assert_output --partial "No such file or directory"
    run ls "$M/jobs/held"
    assert_output ""
    assert_equal "$(cat "$M/jobs/7")" "$rec"
    assert_equal "$(jqr .attempts "$rec")" 1
    # Like claimed_until, now past, the record keeps its last hold's number.
    assert_equal "$(jqr .hold "$rec")" 1
}

@test "held: touch held/7~N extends only hold N" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = {};" >/dev/null
    mount_ab
    run cat "$M/jobs/claim"
    run mv "$M/jobs/7" "$M/jobs/released/"
    run cat "$M2/jobs/claim"                  # B holds attempt 2
    held=$(cat "$M2/jobs/7")
    first=$(jqr .claimed_until "$held")
    # The earlier hold's name extends nothing.
    assert_equal "$(errno_of 'os.utime(a[2])' "$M2/jobs/held/7~1")" ENOENT
    assert_equal "$(cat "$M2/jobs/7")" "$held"
    # Another consumer's live hold: EBUSY.
    assert_equal "$(errno_of 'os.utime(a[2])' "$M/jobs/held/7~2")" EBUSY
    run touch "$M/jobs/held/7~2"
    assert_failure
    assert_equal "$(cat "$M2/jobs/7")" "$held"
    # The holder's own name extends it.
    run touch "$M2/jobs/held/7~2"
    assert_success
    second=$(jqr .claimed_until "$(cat "$M2/jobs/7")")
    [ "$(ns_of "$second")" -gt "$(ns_of "$first")" ] || fail "claimed_until did not move: $first -> $second"
    assert_equal "$(jqr .attempts "$(cat "$M2/jobs/7")")" 2
    run ls "$M2/jobs/held"
    assert_output "7~2"
}

@test "held: order-1 finished, created again and claimed again: the old hold's name is ENOENT for rm, mv, touch and cat, and the new hold stands" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s NOT BEFORE due;" >/dev/null
    mount_ab
    printf '{"n":1}\n' >"$M/jobs/order-1"
    first_claim=$(cat "$M/jobs/claim")
    first=$(ls "$M/jobs/held")
    assert_equal "$(jqr .attempts "$first_claim")" 1
    run rm "$M/jobs/held/$first"
    assert_success
    # The identity comes back and another worker claims it: attempt 1
    # again, but a hold with a number of its own.
    printf '{"n":2}\n' >"$M2/jobs/order-1"
    second_claim=$(cat "$M2/jobs/claim")
    assert_equal "$(jqr .attempts "$second_claim")" 1
    rec=$(cat "$M2/jobs/order-1")
    # The first worker, late, finishes or releases "its" record: nothing.
    run rm "$M/jobs/held/$first"
    assert_failure
    assert_output --partial "No such file or directory"
    assert_equal "$(renameat2 "$M/jobs/held/$first" "$M/jobs/released/order-1@10m")" ENOENT
    assert_equal "$(errno_of 'os.utime(a[2])' "$M/jobs/held/$first")" ENOENT
    run cat "$M/jobs/held/$first"
    assert_failure
    assert_equal "$(cat "$M/jobs/order-1")" "$rec"
    assert_equal "$(jqr .n "$rec")" 2
    # The names are the holds' numbers, the new one above the old.
    a=$(jqr .hold "$first_claim") b=$(jqr .hold "$second_claim")
    assert_equal "$first" "order-1~$a"
    [ "$b" -gt "$a" ] || fail "the new hold's number $b is not above the finished one's $a"
    run ls "$M/jobs/held"
    assert_output "order-1~$b"
    # The new holder's name still finishes it.
    run rm "$M2/jobs/held/order-1~$b"
    assert_success
    assert_equal "$(sql 'SELECT * FROM jobs')" '[]'
}

@test "held: hold numbers are the store's: they increase across records, re-claims, queues and a queue dropped and defined again; hold is in the JSON while held and gone on release" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE QUEUE other TIMEOUT 30s;
         CREATE jobs:1 = {}; CREATE jobs:2 = {}; CREATE other:1 = {};" >/dev/null
    mount_fs
    assert_equal "$(jqr .hold "$(cat "$M/jobs/claim")")" 1      # jobs:1
    assert_equal "$(jqr .hold "$(cat "$M/jobs/claim")")" 2      # jobs:2
    assert_equal "$(jqr .hold "$(cat "$M/other/claim")")" 3     # other:1
    assert_equal "$(jqr .hold "$(cat "$M/jobs/1")")" 1
    assert_equal "$(jqr .hold "$(cat "$M/jobs/held/1~1")")" 1
    assert_equal "$(sql 'SELECT hold FROM jobs ORDER BY id' | jq -c 'map(.hold)')" '[1,2]'
    # A release ends the hold: its number leaves the record.
    mv "$M/jobs/1" "$M/jobs/released/"
    rec=$(cat "$M/jobs/1")
    assert_equal "$(jqr 'has("hold")' "$rec")" false
    assert_equal "$(jqr .attempts "$rec")" 1
    # A finish, a re-create and a re-claim of the same identity.
    rm "$M/jobs/held/2~2"
    printf '{}\n' >"$M/jobs/2"
    assert_equal "$(jqc '[.id, .hold]' "$(cat "$M/jobs/claim")")" '["jobs:1",4]'
    assert_equal "$(jqc '[.id, .hold, .attempts]' "$(cat "$M/jobs/claim")")" '["jobs:2",5,1]'
    # A queue dropped and defined again goes on from the store's last number.
    sql "DROP QUEUE other; DEFINE QUEUE other TIMEOUT 30s; CREATE other:1 = {};" >/dev/null
    assert_equal "$(jqr .hold "$(cat "$M/other/claim")")" 6
    run cat "$M/other/held/1~3"
    assert_failure
    run ls "$M/other/held"
    assert_output "1~6"
}

@test "claim: the record a claim took, named next through the same mount, shows what the store would: size and times; rm after another mount deleted it is ENOENT" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = { url: 'a' }; CREATE jobs:2 = { url: 'b' };" >/dev/null
    mount_ab
    rec=$(cat "$M/jobs/claim")
    assert_equal "$(jqr .id "$rec")" jobs:1
    # The lookup that follows a claim is answered from the claim: the same
    # size (the claim's JSON line) and times as the store gives a moment later.
    first=$(stat -c '%s %y %z' "$M/jobs/1")
    assert_equal "${first%% *}" "$(printf '%s\n' "$rec" | wc -c)"
    assert_equal "$(stat -c '%s %y %z' "$M/jobs/1")" "$first"
    assert_equal "$(stat -c '%s %y %z' "$M2/jobs/1")" "$first"
    # Deleted through the other mount before this one names it: rm fails
    # as for any name gone, and nothing else changes.
    assert_equal "$(jqr .id "$(cat "$M/jobs/claim")")" jobs:2
    rm "$M2/jobs/2"
    run rm "$M/jobs/2"
    assert_failure
    assert_output --partial "No such file or directory"
    assert_equal "$(sql 'SELECT id FROM jobs' | jq -c 'map(.id)')" '["jobs:1"]'
}

@test "claim: what this mount changes of a record it just claimed shows at once: an UPDATE through ctl, a release through held/, a finish through held/" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = { url: 'a' }; CREATE jobs:2 = { url: 'b' };" >/dev/null
    mount_fs
    cat "$M/jobs/claim" >/dev/null
    ctl "UPDATE jobs:1 MERGE { url: 'a much longer address than before' };" >/dev/null
    assert_equal "$(stat -c %s "$M/jobs/1")" "$(wc -c <"$M/jobs/1")"
    assert_equal "$(jqr .url "$(cat "$M/jobs/1")")" 'a much longer address than before'
    rec=$(cat "$M/jobs/claim")
    claimed=$(stat -c %Z "$M/jobs/held/2~$(jqr .hold "$rec")")
    sleep 1.1
    mv "$M/jobs/held/2~$(jqr .hold "$rec")" "$M/jobs/released/"
    [ "$(stat -c %Z "$M/jobs/2")" -gt "$claimed" ] || fail "the release did not move jobs/2's ctime"
    assert_equal "$(jqr 'has("hold")' "$(cat "$M/jobs/2")")" false
    rec=$(cat "$M/jobs/claim")
    assert_equal "$(jqr .id "$rec")" jobs:2
    rm "$M/jobs/held/2~$(jqr .hold "$rec")"
    run stat "$M/jobs/2"
    assert_failure
}

@test "held: a held record read and written back whole stays held: still in held/, not claimable, released by mv" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = { url: 'a' };" >/dev/null
    mount_fs
    run cat "$M/jobs/claim"
    name=$(ls "$M/jobs/held")
    # The worker saves its progress: the JSON it read, changed, written whole.
    jq -c '.url = "b"' "$M/jobs/7" >"$BATS_TEST_TMPDIR/rec"
    run bash -c 'cat "$1" > "$M/jobs/7"' bash "$BATS_TEST_TMPDIR/rec"
    assert_success
    assert_equal "$(jqr .url "$(cat "$M/jobs/7")")" b
    run ls "$M/jobs/held"
    assert_output "$name"
    run cat "$M/jobs/claim"
    assert_output ""
    run mv "$M/jobs/held/$name" "$M/jobs/released/"
    assert_success
    assert_equal "$(jqr 'has("claimed_until")' "$(cat "$M/jobs/7")")" false
}

@test "held: hold is the engine's: a file write, a new line or an UPDATE that sets or changes it is EPERM QueueFieldIsTheEngines; repeating it is fine" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL; DEFINE FIELD url ON jobs TYPE string;
         CREATE jobs:7 = { url: 'a' };" >/dev/null
    mount_fs
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .hold "$output")" 1
    rec=$(cat "$M/jobs/7")
    # The record read back and written whole, hold and all, is accepted
    # (SCHEMAFULL declares no field hold: it is the engine's).
    printf '%s\n' "$rec" >"$BATS_TEST_TMPDIR/rec"
    run bash -c 'cat "$1" > "$M/jobs/7"' bash "$BATS_TEST_TMPDIR/rec"
    assert_success
    assert_equal "$(cat "$M/jobs/7")" "$rec"
    # … and the hold stays live (claimed_until read back as text stays the
    # engine's datetime): still listed, not claimable again.
    run ls "$M/jobs/held"
    assert_output "7~1"
    run cat "$M/jobs/claim"
    assert_output ""
    # Changing it is refused, through every way in, and nothing changes.
    jq -c '.hold = 2' <<<"$rec" >"$BATS_TEST_TMPDIR/rec2"
    run bash -c 'cat "$1" > "$M/jobs/7"' bash "$BATS_TEST_TMPDIR/rec2"
    assert_failure
    assert_output --partial "Operation not permitted"
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_TRUNC); os.write(fd, open(a[3], "rb").read()); os.close(fd)' \
        "$M/jobs/7" "$BATS_TEST_TMPDIR/rec2"
    assert_output EPERM
    run bash -c 'printf "%s\n" "{\"url\":\"b\",\"hold\":9}" >> "$M/jobs/new"'
    assert_failure
    assert_output --partial "Operation not permitted"
    assert_equal "$(ctl_errno 'UPDATE jobs:7 MERGE { hold: 9 };')" "EPERM QueueFieldIsTheEngines"
    assert_equal "$(ctl_errno 'CREATE jobs:8 = { url: "c", hold: 1 };')" "EPERM QueueFieldIsTheEngines"
    assert_equal "$(cat "$M/jobs/7")" "$rec"
    assert_equal "$(count_records jobs)" 1
    # Once released, the old JSON with its hold introduces it again: refused.
    mv "$M/jobs/7" "$M/jobs/released/"
    released=$(cat "$M/jobs/7")
    run bash -c 'cat "$1" > "$M/jobs/7"' bash "$BATS_TEST_TMPDIR/rec"
    assert_failure
    assert_equal "$(cat "$M/jobs/7")" "$released"
    # On a collection hold is any field.
    mkdir "$M/notes"
    printf '{"hold":5}\n' >"$M/notes/1"
    assert_equal "$(cat "$M/notes/1")" '{"hold":5,"id":"notes:1"}'
}

# ---------------------------------------------------------------------------
# dead/: the records at the ATTEMPTS ceiling
# ---------------------------------------------------------------------------

@test "dead: with TIMEOUT 1ns ATTEMPTS 2 a record claimed twice is in dead/; cat reads it, rm deletes it; SELECT agrees" {
    sql "DEFINE QUEUE q TIMEOUT 1ns ATTEMPTS 2;
         CREATE q:1 = { n: 1 }; CREATE q:2 = { n: 2 }; CREATE q:3 = { n: 3 };" >/dev/null
    mount_fs
    run ls "$M/q/dead"
    assert_success
    assert_output ""
    for want in 1:1 1:2 2:1; do
        run cat "$M/q/claim"
        assert_equal "$(jqr '"\(.id):\(.attempts)"' "$output")" "q:$want"
    done
    run ls "$M/q/dead"
    assert_output "1"
    assert_equal "$(sql 'SELECT id FROM q WHERE attempts >= 2' | jq -c 'map(.id)')" '["q:1"]'
    run cat "$M/q/dead/1"
    assert_success
    assert_output "$(cat "$M/q/1")"
    assert_equal "$(jqr .attempts "$output")" 2
    assert_equal "$(jqr .n "$output")" 1
    # q:2 (attempts 1) and q:3 (never claimed) are not there.
    for id in 2 3; do
        run cat "$M/q/dead/$id"
        assert_failure
        assert_output --partial "No such file or directory"
        run rm "$M/q/dead/$id"
        assert_failure
        assert_output --partial "No such file or directory"
    done
    assert_equal "$(count_records q)" 3
    # Two more claims take q:2 to the ceiling; the view follows.
    run cat "$M/q/claim"
    assert_equal "$(jqr .id "$output")" "q:2"
    run ls "$M/q/dead"
    assert_equal "$(tr '\n' ' ' <<<"$output")" "1 2 "
    assert_equal "$(sql 'SELECT id FROM q WHERE attempts >= 2' | jq -c 'map(.id)')" '["q:1","q:2"]'
    assert_equal "$(jqr .dead "$(cat "$M/q/stats")")" 2
    # rm dead/1 deletes the record.
    run rm "$M/q/dead/1"
    assert_success
    assert_equal "$(sql 'SELECT * FROM q:1')" '[]'
    run ls "$M/q/dead"
    assert_output "2"
    run ls "$M/q"
    refute_line 1
}

@test "dead: a record at the ceiling is not dead while held; released, it is" {
    sql "DEFINE QUEUE slow TIMEOUT 30s ATTEMPTS 1; DEFINE QUEUE plain TIMEOUT 1ns;
         CREATE slow:1 = {}; CREATE plain:1 = {};" >/dev/null
    mount_fs
    run cat "$M/slow/claim"
    assert_equal "$(jqr .attempts "$output")" 1
    run ls "$M/slow/dead"
    assert_output ""
    run ls "$M/slow/held"
    assert_output "1~1"
    run rm "$M/slow/dead/1"
    assert_failure
    assert_equal "$(count_records slow)" 1
    run mv "$M/slow/1" "$M/slow/released/"
    assert_success
    run ls "$M/slow/dead"
    assert_output "1"
    run cat "$M/slow/claim"       # at the ceiling: never handed out again
    assert_success
    assert_output ""
    # A queue without ATTEMPTS has no ceiling.
    for _ in 1 2 3; do cat "$M/plain/claim" >/dev/null; done
    run ls "$M/plain/dead"
    assert_success
    assert_output ""
    assert_equal "$(jqr .attempts "$(cat "$M/plain/1")")" 3
}

# ---------------------------------------------------------------------------
# wait: the blocking claim
# ---------------------------------------------------------------------------

@test "wait: cat jobs/wait blocks, then wakes and claims a record created through the same mount" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs -o consumer=a
    start_waiter "$M/jobs/wait" "$BATS_TEST_TMPDIR/out"
    t0=$(now_ns)
    printf '{"url":"x"}\n' >>"$M/jobs/new"
    finish_waiter "$BATS_TEST_TMPDIR/out"
    report_wake "a create through the same mount" "$t0"
    assert_equal "$(jqr .id "$WOKE")" "jobs:1"
    assert_equal "$(jqr .url "$WOKE")" x
    assert_equal "$(jqr .attempts "$WOKE")" 1
    assert_equal "$(jqr .claimed_by.consumer "$WOKE")" a
    assert_equal "$(cat "$M/jobs/1")" "$WOKE"
}

@test "wait: a create through another mount of the store wakes it" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_ab
    start_waiter "$M/jobs/wait" "$BATS_TEST_TMPDIR/out"
    t0=$(now_ns)
    printf '{"url":"y"}\n' >"$M2/jobs/5"
    finish_waiter "$BATS_TEST_TMPDIR/out"
    report_wake "a create through another mount" "$t0"
    assert_equal "$(jqr .id "$WOKE")" "jobs:5"
    assert_equal "$(jqr .claimed_by.consumer "$WOKE")" a
}

@test "wait: a CREATE through queuefs-sql wakes it" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    start_waiter "$M/jobs/wait" "$BATS_TEST_TMPDIR/out"
    t0=$(now_ns)
    sql "CREATE jobs:3 = { url: 'z' };" >/dev/null
    finish_waiter "$BATS_TEST_TMPDIR/out"
    report_wake "a CREATE through queuefs-sql (process start included)" "$t0"
    assert_equal "$(jqr .id "$WOKE")" "jobs:3"
    assert_equal "$(jqr .attempts "$WOKE")" 1
}

@test "wait: a release (mv to released/ on another mount) wakes it" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:7 = {};" >/dev/null
    mount_ab
    run cat "$M2/jobs/claim"
    assert_equal "$(jqr .claimed_by.consumer "$output")" b
    start_waiter "$M/jobs/wait" "$BATS_TEST_TMPDIR/out"
    t0=$(now_ns)
    mv "$M2/jobs/7" "$M2/jobs/released/"
    finish_waiter "$BATS_TEST_TMPDIR/out"
    report_wake "a release through another mount" "$t0"
    assert_equal "$(jqr .id "$WOKE")" "jobs:7"
    assert_equal "$(jqr .attempts "$WOKE")" 2
    assert_equal "$(jqr .claimed_by.consumer "$WOKE")" a
}

@test "wait: a hold lapsing wakes it, not before the deadline" {
    # 3 s: time for the waiter (a python3, which a pyenv shim makes slow to
    # start) to be seen blocked while the hold still runs, on a loaded machine.
    sql "DEFINE QUEUE jobs TIMEOUT 3s; CREATE jobs:7 = {};" >/dev/null
    mount_ab
    run cat "$M2/jobs/claim"
    deadline=$(jqr .claimed_until "$output")
    start_waiter "$M/jobs/wait" "$BATS_TEST_TMPDIR/out"
    finish_waiter "$BATS_TEST_TMPDIR/out"
    report_wake "a hold lapsing (from its claimed_until)" "$(ns_of "$deadline")"
    assert_equal "$(jqr .id "$WOKE")" "jobs:7"
    assert_equal "$(jqr .attempts "$WOKE")" 2
    assert_equal "$(jqr .claimed_by.consumer "$WOKE")" a
    # Claimed at (its claimed_until - TIMEOUT), which is not before the lapse.
    claimed_at=$(($(ns_of "$(jqr .claimed_until "$WOKE")") - 3000000000))
    [ "$claimed_at" -ge "$(ns_of "$deadline")" ] ||
        fail "claimed at $claimed_at, before the hold lapsed at $deadline"
    [ "$WOKE_NS" -ge "$(ns_of "$deadline")" ] || fail "the wait ended before the deadline $deadline"
}

@test "wait: O_NONBLOCK is EAGAIN when nothing is claimable, and claims when something is" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE COLLECTION notes;" >/dev/null
    mount_fs
    nonblock='fd = os.open(a[2], os.O_RDONLY | os.O_NONBLOCK); sys.stdout.write(os.read(fd, 1 << 20).decode()); os.close(fd)'
    run timeout 10 python3 -c "import os, sys; a = sys.argv; $nonblock" x "$M/jobs/wait"
    assert_failure 1
    assert_equal "$(errno_of "$nonblock" "$M/jobs/wait")" EAGAIN
    # A held record is not claimable either.
    sql "CREATE jobs:1 = {}; CLAIM FROM jobs;" >/dev/null
    assert_equal "$(errno_of "$nonblock" "$M/jobs/wait")" EAGAIN
    assert_equal "$(jqr .claims "$(cat "$M/jobs/stats")")" 1
    sql "CREATE jobs:2 = { url: 'b' };" >/dev/null
    run timeout 10 python3 -c "import os, sys; a = sys.argv; $nonblock" x "$M/jobs/wait"
    assert_success
    assert_equal "$(jqr .id "$output")" "jobs:2"
    assert_equal "$(jqr .attempts "$output")" 1
    assert_equal "$(sql 'SELECT attempts FROM jobs:2')" '[{"attempts":1}]'
    # A collection has no wait file.
    assert_equal "$(errno_of "$nonblock" "$M/notes/wait")" ENOENT
}

@test "wait: Ctrl-C (SIGINT) ends the wait and claims nothing; a later create goes to someone else" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_ab
    # A background job ignores SIGINT unless told otherwise.
    env --default-signal=INT cat "$M/jobs/wait" >"$BATS_TEST_TMPDIR/out" 3>&- &
    pid=$!
    BG+=("$pid")
    blocked "$pid" || fail "cat jobs/wait did not block"
    interrupt_ends_wait "$pid" "cat jobs/wait"
    assert_equal "$(cat "$BATS_TEST_TMPDIR/out")" ""
    nothing_claimed_after_interrupt
}

@test "wait: Ctrl-C (SIGINT) ends CLAIM FROM jobs WAIT through ctl and claims nothing" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_ab
    env --default-signal=INT "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs WAIT;" >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
    pid=$!
    BG+=("$pid")
    blocked "$pid" || fail "CLAIM FROM jobs WAIT through ctl did not block"
    interrupt_ends_wait "$pid" "queuefs-ctl CLAIM FROM jobs WAIT"
    run cat "$BATS_TEST_TMPDIR/out"
    refute_output --partial '"id"'
    nothing_claimed_after_interrupt
}

@test "wait: SIGTERM to the daemon ends a blocked wait, claiming nothing, and the daemon exits" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    pid=$(daemon_pid "$M") || fail "no daemon serves $M"
    cat "$M/jobs/wait" >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
    waiter=$!
    BG+=("$waiter")
    blocked "$waiter" || fail "cat jobs/wait did not block"
    kill -TERM "$pid"
    if ! wait_gone "$pid"; then
        sql "CREATE jobs:999 = {};" >/dev/null    # lets the wait, and the daemon, end
        fail "queuefs still ran 10 s after SIGTERM while a wait blocked"
    fi
    wait_unmounted "$M" || fail "$M is still mounted after SIGTERM"
    wait_gone "$waiter" || fail "cat jobs/wait still waits after the daemon exited"
    ! wait "$waiter" || fail "cat jobs/wait succeeded: $(cat "$BATS_TEST_TMPDIR/out")"
    run cat "$BATS_TEST_TMPDIR/out"
    refute_output --partial '"id"'
    assert_equal "$(sql 'SELECT * FROM jobs')" '[]'
}

@test "wait: a wait interrupted (SIGTERM or SIGINT) as a record arrives claims nothing, or gives back exactly what it took" {
    local rounds=50 round pid sig create
    # A queue a round, so that a record given back is not the next round's.
    sql "$(for round in $(seq "$rounds"); do printf 'DEFINE QUEUE q%d TIMEOUT 1h;' "$round"; done)" >/dev/null
    mount_fs
    # The reader: its open of wait is interrupted by SIGTERM or SIGINT,
    # which it turns into an exception (so it ends with nothing); once
    # the open returned, it blocks them until what it read is written.
    reader='
import os, signal, sys
def interrupted(sig, frame):
    raise KeyboardInterrupt(sig)
signal.signal(signal.SIGTERM, interrupted)
signal.signal(signal.SIGINT, interrupted)
got = b""
try:
    fd = os.open(sys.argv[1], os.O_RDONLY)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    got = os.read(fd, 1 << 20)
finally:
    with open(sys.argv[2], "wb") as f:
        f.write(got)
'
    for round in $(seq "$rounds"); do
        python3 -c "$reader" "$M/q$round/wait" "$BATS_TEST_TMPDIR/got.$round" 2>/dev/null 3>&- &
        pid=$!
        BG+=("$pid")
        blocked "$pid" || fail "round $round: the open of q$round/wait did not block"
        sig=TERM
        [ $((round % 2)) -eq 0 ] && sig=INT
        # The create and the signal race: the wait is woken while it is
        # interrupted (or, when the signal comes late, has read its
        # record).  The signal goes with the create, just after it, or
        # once it returned.
        printf '{"round":%d}\n' "$round" >>"$M/q$round/new" &
        create=$!
        case $((round % 3)) in
        1) sleep 0.001 ;;
        2) wait "$create" ;;
        esac
        kill -"$sig" "$pid" 2>/dev/null || true
        wait "$create" || true
        wait_gone "$pid" || fail "round $round: the reader outlived SIG$sig"
        wait "$pid" || true
    done
    # What a reader got is claimed; nothing else is claimed, and no attempt
    # was spent on it.  (Giving back what a killed reader never read
    # follows its close: the state is polled until it holds, 10 s at most.)
    local read_ids claimed_ids i state claims
    read_ids=$(cat "$BATS_TEST_TMPDIR"/got.* | jq -r .id | sort)
    query=$(for round in $(seq "$rounds"); do printf 'SELECT * FROM q%d;' "$round"; done)
    for i in $(seq 200); do
        state=$(sql "$query" | jq -s -c 'add')
        claimed_ids=$(jq -r '.[] | select(.attempts != null) | .id' <<<"$state" | sort)
        [ "$claimed_ids" = "$read_ids" ] && break
        sleep 0.05
    done
    echo "# $(grep -c . <<<"$read_ids") of $rounds interrupted waits had read their record" >&3
    [ "$claimed_ids" = "$read_ids" ] ||
        fail "claimed but read by nobody: $(comm -13 <(echo "$read_ids") <(echo "$claimed_ids") | tr '\n' ' ')"
    assert_equal "$(jq length <<<"$state")" "$rounds"
    assert_equal "$(jq -c '[.[] | select(.attempts != null and .attempts != 1)]' <<<"$state")" '[]'
    assert_equal "$(jq -c '[.[] | select(.attempts == null and .claimed_until != null)]' <<<"$state")" '[]'
    claims=0
    for round in $(seq "$rounds"); do
        claims=$((claims + $(jqr .claims "$(cat "$M/q$round/stats")")))
    done
    assert_equal "$claims" "$(grep -c . <<<"$read_ids")"
}

# Waits up to 5 s for jobs' [held, ready, claims] to be "$1", and fails
# naming the last seen. The kernel sends a close to the daemon after
# close(2) has returned, so what the close gives back comes a moment later.
stats_become() {
    local got
    for _ in $(seq 100); do
        got=$(jqc '[.held, .ready, .claims]' "$(cat "$M/jobs/stats")")
        [ "$got" = "$1" ] && return 0
        sleep 0.05
    done
    assert_equal "$got" "$1"
}

@test "ctl: claims whose answer nobody began to read go back when the session closes; read ones stay held" {
    sql "DEFINE QUEUE jobs TIMEOUT 1h;" >/dev/null
    mount_fs
    seq 20 | sed 's/.*/{"n":&}/' >"$M/jobs/new"
    # Written and closed unread: the five claims are given back exactly.
    echo "CLAIM 5 FROM jobs;" >"$M/ctl"
    stats_become '[0,20,0]'
    assert_equal "$(sql 'SELECT * FROM jobs' | jq -c '[.[] | select(.attempts != null)]')" '[]'
    # The first bytes read: the reader may have seen them, so they stay held.
    exec 4<>"$M/ctl"
    echo "CLAIM 5 FROM jobs;" >&4
    head -c 1 <&4 >/dev/null
    exec 4>&-
    # Read to the end, then another claim left unread: only that one goes.
    exec 4<>"$M/ctl"
    echo "CLAIM 2 FROM jobs;" >&4
    cat <&4 >/dev/null
    echo "CLAIM 3 FROM jobs;" >&4
    exec 4>&-
    stats_become '[7,13,7]'
}

@test "wait: a NOT BEFORE instant wakes a blocked wait, not before it" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s NOT BEFORE due; DEFINE FIELD due ON jobs TYPE datetime;" >/dev/null
    mount_fs
    # 3 s ahead: time for the waiter to be seen blocked first (see above).
    due=$(date -u -d '+3 second' +%Y-%m-%dT%H:%M:%S.%NZ)
    printf '{"due":"%s"}\n' "$due" >"$M/jobs/4"
    start_waiter "$M/jobs/wait" "$BATS_TEST_TMPDIR/out"
    finish_waiter "$BATS_TEST_TMPDIR/out"
    report_wake "a NOT BEFORE instant" "$(ns_of "$due")"
    assert_equal "$(jqr .id "$WOKE")" "jobs:4"
    [ "$WOKE_NS" -ge "$(ns_of "$due")" ] || fail "the wait ended before the NOT BEFORE instant $due"
}

@test "wait: CLAIM … WAIT through queuefs-sql, and waits on two mounts, are woken by a create through another mount" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_ab
    M3="$BATS_TEST_TMPDIR/m3"
    mkdir -p "$M3"
    mount_fs -o consumer=c "$M3"
    "$QUEUEFS_SQL" "$STORE" "USE CONSUMER 'sql'; CLAIM FROM jobs WAIT 20s;" >"$BATS_TEST_TMPDIR/sql.out" 3>&- &
    sqlpid=$!
    BG+=("$sqlpid")
    start_waiter "$M/jobs/wait" "$BATS_TEST_TMPDIR/a.out"
    a=$WAITER
    start_waiter "$M2/jobs/wait" "$BATS_TEST_TMPDIR/b.out"
    b=$WAITER
    sleep 0.2   # queuefs-sql is waiting by now (it answers [] only after 20 s)
    printf '%s\n' '{"n":1}' '{"n":2}' '{"n":3}' >>"$M3/jobs/new"
    WAITER=$a finish_waiter "$BATS_TEST_TMPDIR/a.out"
    WAITER=$b finish_waiter "$BATS_TEST_TMPDIR/b.out"
    wait_gone "$sqlpid" || fail "CLAIM … WAIT through queuefs-sql still waits after the creates"
    wait "$sqlpid" || fail "queuefs-sql failed"
    got=$( (jq -r .id "$BATS_TEST_TMPDIR/a.out" "$BATS_TEST_TMPDIR/b.out" 2>/dev/null || true;
            tail -n +2 "$BATS_TEST_TMPDIR/a.out" "$BATS_TEST_TMPDIR/b.out" | jq -r .id 2>/dev/null;
            jq -r '.[]?.id' "$BATS_TEST_TMPDIR/sql.out") | grep '^jobs:' | sort -u | tr '\n' ' ')
    assert_equal "$got" "jobs:1 jobs:2 jobs:3 "
    assert_equal "$(jq -r '.[0].claimed_by.consumer' "$BATS_TEST_TMPDIR/sql.out" | tail -n 1)" sql
}

@test "wait: a lazy unmount (fusermount3 -u -z) ends every blocked wait with ENODEV, and the daemon exits" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    pid=$(daemon_pid "$M") || fail "no daemon serves $M"
    pids=()
    for i in $(seq 5); do
        cat "$M/jobs/wait" >"$BATS_TEST_TMPDIR/out.$i" 2>&1 3>&- &
        pids+=("$!")
        BG+=("$!")
    done
    for w in "${pids[@]}"; do
        blocked "$w" || fail "waiter $w did not block"
    done
    # A plain unmount is refused while opens are in progress.
    run fusermount3 -u "$M"
    assert_failure
    run fusermount3 -u -z "$M"
    assert_success
    for w in "${pids[@]}"; do
        if ! wait_gone "$w"; then
            sql "CREATE jobs:999 = {};" >/dev/null
            fail "a wait still blocked 10 s after the lazy unmount"
        fi
        ! wait "$w" || fail "a wait succeeded after the lazy unmount"
    done
    cat "$BATS_TEST_TMPDIR"/out.* >"$BATS_TEST_TMPDIR/all"
    assert_equal "$(grep -c 'No such device' "$BATS_TEST_TMPDIR/all")" 5
    wait_gone "$pid" || fail "queuefs still ran 10 s after the lazy unmount ended its waits"
    assert_equal "$(sql 'SELECT * FROM jobs')" '[]'
}

@test "wait: DROP QUEUE of the queue ends a blocked wait with ENOENT" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    cat "$M/jobs/wait" >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
    waiter=$!
    BG+=("$waiter")
    blocked "$waiter" || fail "cat jobs/wait did not block"
    sql "DROP QUEUE jobs;" >/dev/null
    wait_gone "$waiter" || fail "cat jobs/wait still waits 10 s after DROP QUEUE"
    ! wait "$waiter" || fail "cat jobs/wait succeeded on a dropped queue"
    run cat "$BATS_TEST_TMPDIR/out"
    assert_output --partial "No such file or directory"
}

@test "wait: 40 blocked waits leave ls, claim, ctl and new answering; 40 creates wake all 40 with distinct records" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE COLLECTION notes;" >/dev/null
    mount_fs -o sync=none
    pids=()
    for i in $(seq 40); do
        cat "$M/jobs/wait" >"$BATS_TEST_TMPDIR/out.$i" 3>&- &
        pids+=("$!")
        BG+=("$!")
    done
    for pid in "${pids[@]}"; do
        blocked "$pid" || fail "waiter $pid did not block"
    done
    # Every other kind of request answers while they block.
    probe() {
        local t0 ms
        t0=$(now_ns)
        run timeout 5 "$@"
        ms=$((($(now_ns) - t0) / 1000000))
        echo "# with 40 waits blocked: $* took $ms ms" >&3
        [ "$status" -ne 124 ] || fail "$* did not answer within 5 s while 40 waits blocked"
        assert_success
    }
    probe ls "$M/jobs"
    assert_equal "$(grep -c '^[0-9]' <<<"$output")" 0
    probe cat "$M/jobs/claim"
    assert_output ""
    probe "$QUEUEFS_CTL" "$M" "SELECT * FROM jobs; INFO FOR TABLE jobs;"
    assert_line -n 0 '[]'
    probe cat "$M/jobs/stats"
    assert_equal "$(jqr .held "$output")" 0
    probe bash -c 'printf "{\"n\":1}\n" >>"$1"' bash "$M/notes/new"
    probe bash -c 'printf "{\"n\":0}\n" >>"$1"' bash "$M/jobs/new"
    # That record wakes one waiter; 39 more wake the rest.
    sql "$(for i in $(seq 2 40); do printf 'CREATE jobs = { n: %d };' "$i"; done)" >/dev/null
    for pid in "${pids[@]}"; do
        wait_gone "$pid" || fail "waiter $pid still waits after 40 creates"
        wait "$pid" || fail "waiter $pid failed"
    done
    ids=$(cat "$BATS_TEST_TMPDIR"/out.* | jq -r .id | sort -u)
    assert_equal "$(wc -l <<<"$ids")" 40
    assert_equal "$(cat "$BATS_TEST_TMPDIR"/out.* | jq -r .attempts | sort -u)" 1
    assert_equal "$(sql 'SELECT id FROM jobs WHERE attempts = 1' | jq -r '.[].id' | sort)" "$ids"
    stats=$(cat "$M/jobs/stats")
    assert_equal "$(jqc '[.records, .held, .ready, .claims]' "$stats")" '[40,40,0,40]'
}

@test "wait: CLAIM FROM jobs WAIT 2s answers [] after 2 s when nothing comes, through queuefs-sql and ctl" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; CLAIM FROM jobs;" >/dev/null
    t0=$(now_ns)
    run --separate-stderr timeout 10 "$QUEUEFS_SQL" "$STORE" "CLAIM FROM jobs WAIT 2s;"
    ms=$((($(now_ns) - t0) / 1000000))
    echo "# CLAIM … WAIT 2s answered after $ms ms" >&3
    assert_success
    assert_output '[]'
    [ "$ms" -ge 1900 ] && [ "$ms" -lt 5000 ] || fail "WAIT 2s answered after $ms ms"
    mount_fs
    t0=$(now_ns)
    run timeout 10 "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs WAIT 2s;"
    ms=$((($(now_ns) - t0) / 1000000))
    assert_success
    assert_output '[]'
    [ "$ms" -ge 1900 ] && [ "$ms" -lt 5000 ] || fail "WAIT 2s through ctl answered after $ms ms"
    assert_equal "$(jqr .claims "$(cat "$M/jobs/stats")")" 1
}

@test "wait: CLAIM FROM jobs WAIT 5s claims a record that comes meanwhile (queuefs-sql creating it)" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    # The create comes 0.5 s into the wait.
    bash -c 'sleep 0.5; "$QUEUEFS_SQL" "$STORE" "CREATE jobs:9 = { n: 9 };"' >/dev/null 3>&- &
    BG+=("$!")
    t0=$(now_ns)
    run --separate-stderr timeout 10 "$QUEUEFS_SQL" "$STORE" "CLAIM FROM jobs WAIT 5s;"
    ms=$((($(now_ns) - t0) / 1000000))
    echo "# CLAIM … WAIT 5s answered after $ms ms (the create came at ~500 ms)" >&3
    assert_success
    assert_equal "$(jqr '.[0].id' "$output")" "jobs:9"
    assert_equal "$(jqr '.[0].n' "$output")" 9
    assert_equal "$(jqr '.[0].attempts' "$output")" 1
    [ "$ms" -ge 400 ] && [ "$ms" -lt 4000 ] || fail "answered after $ms ms"
    # The same through a mount's ctl.
    mount_fs
    bash -c 'sleep 0.5; "$QUEUEFS_SQL" "$STORE" "CREATE jobs:10 = {};"' >/dev/null 3>&- &
    BG+=("$!")
    run timeout 10 "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs WAIT 5s;"
    assert_success
    assert_equal "$(jqr '.[0].id' "$output")" "jobs:10"
}

@test "wait: CLAIM FROM jobs WAIT (no duration) waits until something comes" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    "$QUEUEFS_SQL" "$STORE" "CLAIM FROM jobs WAIT;" >"$BATS_TEST_TMPDIR/out" 2>&1 3>&- &
    pid=$!
    BG+=("$pid")
    sleep 2.5    # longer than any default: it is still waiting
    alive "$pid" || fail "CLAIM FROM jobs WAIT ended with nothing to claim: $(cat "$BATS_TEST_TMPDIR/out")"
    sql "CREATE jobs:4 = {};" >/dev/null
    wait_gone "$pid" || fail "CLAIM FROM jobs WAIT still waits after a create"
    wait "$pid" || fail "queuefs-sql failed: $(cat "$BATS_TEST_TMPDIR/out")"
    out=$(cat "$BATS_TEST_TMPDIR/out")
    assert_equal "$(jqr '.[0].id' "$out")" "jobs:4"
    assert_equal "$(jqr '.[0].attempts' "$out")" 1
}

@test "wait: WAIT inside BEGIN is a ParseError (EINVAL) and claims nothing" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {};" >/dev/null
    run --separate-stderr timeout 10 "$QUEUEFS_SQL" "$STORE" "BEGIN; CLAIM FROM jobs WAIT 1s; COMMIT;"
    assert_error ParseError
    mount_fs
    assert_equal "$(ctl_errno 'BEGIN; CLAIM FROM jobs WAIT;')" "EINVAL ParseError"
    assert_equal "$(sql 'SELECT * FROM jobs')" '[{"id":"jobs:1"}]'
}

# ---------------------------------------------------------------------------
# stats and metrics
# ---------------------------------------------------------------------------

@test "stats: jobs/stats is one JSON line: records, ready, held, delayed, dead, done, blocked, oldest_ready_age_seconds, counters, queue" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s ATTEMPTS 2 NOT BEFORE due; DEFINE COLLECTION notes;
         CREATE jobs:1 = {}; CREATE jobs:2 = {}; CREATE jobs:3 = {};
         CREATE jobs:4 = {}; CREATE jobs:5 = {};
         CLAIM jobs:1;
         CLAIM jobs:2; RELEASE jobs:2 NOT BEFORE 10m;
         CLAIM jobs:3; RELEASE jobs:3; CLAIM jobs:3; RELEASE jobs:3;" >/dev/null
    mount_fs
    run cat "$M/jobs/stats"
    assert_success
    assert_equal "${#lines[@]}" 1
    assert_equal "$(jqc 'keys' "$output")" \
        '["blocked","claims","dead","delayed","deletes","done","grouped","groups_at_limit","held","lapses","oldest_ready_age_seconds","paused","queue","ready","records","releases"]'
    assert_equal "$(jqc '[.queue, .records, .ready, .held, .delayed, .dead]' "$output")" '["jobs",5,2,1,1,1]'
    assert_equal "$(jqc '[.claims, .releases, .lapses, .deletes]' "$output")" '[4,3,0,0]'
    assert_equal "$(jqr '.oldest_ready_age_seconds | type' "$output")" number
    # The oldest ready record's age grows with the clock.
    sleep 1.2    # the subject is time
    age=$(jqr .oldest_ready_age_seconds "$(cat "$M/jobs/stats")")
    jq -en --argjson a "$age" '$a >= 1 and $a < 60' >/dev/null || fail "oldest_ready_age_seconds $age after 1.2 s"
    # Nothing ready: 0.
    sql "CLAIM 2 FROM jobs;" >/dev/null
    run cat "$M/jobs/stats"
    assert_equal "$(jqc '[.ready, .held, .oldest_ready_age_seconds]' "$output")" '[0,3,0]'
    # Only queues have stats.
    run cat "$M/notes/stats"
    assert_failure
    assert_output --partial "No such file or directory"
}

@test "stats: counters are kept in the store: two mounts and queuefs-sql drive them, both mounts report the same exact counts" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE QUEUE fast TIMEOUT 1ns;
         CREATE jobs:1 = {}; CREATE jobs:2 = {}; CREATE jobs:3 = {};
         CREATE jobs:4 = {}; CREATE jobs:5 = {}; CREATE jobs:6 = {};
         CREATE fast:1 = {};" >/dev/null
    mount_ab
    # claims through both mounts and queuefs-sql
    assert_equal "$(jqr .id "$(cat "$M/jobs/claim")")" "jobs:1"
    assert_equal "$(jqr .id "$(cat "$M2/jobs/claim")")" "jobs:2"
    assert_equal "$(sql 'CLAIM FROM jobs;' | jq -r '.[0].id')" "jobs:3"
    # releases: a mount and queuefs-sql; a RELEASE of a record nobody holds is none
    mv "$M/jobs/1" "$M/jobs/released/"
    sql "RELEASE jobs:3;" >/dev/null
    sql "RELEASE jobs:5;" >/dev/null
    # deletes: the other mount, queuefs-sql, and a held/ name; a fenced rm that fails is none
    rm "$M2/jobs/2"
    sql "DELETE jobs:6;" >/dev/null
    again=$(cat "$M/jobs/claim")                                  # jobs:1 again
    assert_equal "$(jqc '[.attempts, .hold]' "$again")" '[2,4]'
    run rm "$M/jobs/held/1~1"
    assert_failure
    rm "$M/jobs/held/1~4"
    # lapses: every fast hold lapses at once, and counts when claimed again
    cat "$M/fast/claim" >/dev/null
    assert_equal "$(jqc '[.claims, .lapses]' "$(cat "$M2/fast/stats")")" '[1,0]'
    cat "$M2/fast/claim" >/dev/null
    sql "CLAIM FROM fast;" >/dev/null
    for mnt in "$M" "$M2"; do
        run cat "$mnt/jobs/stats"
        assert_equal "$(jqc '[.claims, .releases, .lapses, .deletes]' "$output")" '[4,2,0,3]'
        assert_equal "$(jqc '[.records, .ready, .held, .delayed, .dead]' "$output")" '[3,3,0,0,0]'
        run cat "$mnt/fast/stats"
        assert_equal "$(jqc '[.claims, .releases, .lapses, .deletes]' "$output")" '[3,0,2,0]'
        assert_equal "$(jqc '[.records, .ready, .held]' "$output")" '[1,1,0]'
    done
    cat "$M/jobs/stats" >"$BATS_TEST_TMPDIR/a.jobs"
    cat "$M2/jobs/stats" >"$BATS_TEST_TMPDIR/b.jobs"
    assert_equal "$(figures "$BATS_TEST_TMPDIR/a.jobs")" "$(figures "$BATS_TEST_TMPDIR/b.jobs")"
    # Both mounts' metrics carry the same counters.
    for mnt in "$M" "$M2"; do
        run cat "$mnt/metrics"
        assert_line 'queuefs_claims_total{queue="jobs"} 4'
        assert_line 'queuefs_releases_total{queue="jobs"} 2'
        assert_line 'queuefs_deletes_total{queue="jobs"} 3'
        assert_line 'queuefs_lapses_total{queue="fast"} 2'
        assert_line 'queuefs_claims_total{queue="fast"} 3'
    done
    # They outlive the mounts.
    unmount_fs "$M"
    unmount_fs "$M2"
    mount_fs
    cat "$M/jobs/stats" >"$BATS_TEST_TMPDIR/c.jobs"
    assert_equal "$(figures "$BATS_TEST_TMPDIR/c.jobs")" "$(figures "$BATS_TEST_TMPDIR/a.jobs")"
}

# figures_of MOUNT TABLE — the figures of MOUNT/TABLE/stats that do not
# move with the clock, as [records, ready, held, delayed, dead, claims,
# releases, lapses, deletes].
figures_of() {
    jq -c '[.records, .ready, .held, .delayed, .dead, .claims, .releases, .lapses, .deletes]' \
        "$1/$2/stats"
}

@test "stats: exact as holds lapse unseen, a last hold lapses dead, held records are deleted, a table comes back; both mounts agree" {
    sql "DEFINE QUEUE jobs TIMEOUT 1s ATTEMPTS 2 NOT BEFORE due; DEFINE FIELD due ON jobs TYPE option<datetime>;
         CREATE jobs:1 = {}; CREATE jobs:2 = {}; CREATE jobs:3 = {}; CREATE jobs:4 = {};
         CREATE jobs:5 = { n: 5 }; CREATE jobs:6 = { n: 6 }; CREATE jobs:7 = { n: 7 };" >/dev/null
    mount_ab
    # jobs:1 takes its last attempt; jobs:2 an ordinary hold; jobs:3 a hold
    # whose NOT BEFORE lies past the hold's end.
    sql "CLAIM jobs:1; RELEASE jobs:1; CLAIM jobs:1; CLAIM jobs:2;
         CLAIM jobs:3; UPDATE jobs:3 MERGE { due: '2099-01-01T00:00:00Z' };" >/dev/null
    # Held records deleted: by rm of a mount's file and by DELETE … WHERE
    # of several (one of them held).
    cat "$M/jobs/claim" >/dev/null    # jobs:4
    rm "$M2/jobs/4"
    sql "CLAIM jobs:6; DELETE jobs WHERE n >= 5;" >/dev/null
    for mnt in "$M" "$M2"; do
        assert_equal "$(figures_of "$mnt" jobs)" '[3,0,3,0,0,6,1,0,4]'
    done
    # Every hold lapses, and nothing claims: jobs:1 is dead, jobs:2 ready,
    # jobs:3 delayed — before any claim moves them.
    for id in 1 2 3; do
        wait_until_past "$(jqr .claimed_until "$(cat "$M/jobs/$id")")" 50
    done
    for mnt in "$M" "$M2"; do
        assert_equal "$(figures_of "$mnt" jobs)" '[3,1,0,1,1,6,1,0,4]'
    done
    assert_equal "$(ls "$M/jobs/dead")" 1
    assert_equal "$(ls "$M/jobs/held")" ""
    age=$(jqr .oldest_ready_age_seconds "$(cat "$M/jobs/stats")")
    jq -en --argjson a "$age" '$a > 0 and $a < 60' >/dev/null || fail "oldest_ready_age_seconds $age"
    # A claim moves them and takes jobs:2 again (a lapse); the same figures
    # but for that hold.
    assert_equal "$(jqr .id "$(cat "$M2/jobs/claim")")" jobs:2
    for mnt in "$M" "$M2"; do
        assert_equal "$(figures_of "$mnt" jobs)" '[3,0,1,1,1,7,1,1,4]'
    done
    # The dead one finished through its dead/ name.
    rm "$M/jobs/dead/1"
    assert_equal "$(figures_of "$M2" jobs)" '[2,0,1,1,0,7,1,1,5]'
    # Dropped and defined again, the table starts from nothing.
    sql "DROP QUEUE jobs; DEFINE QUEUE jobs TIMEOUT 1s;" >/dev/null
    for mnt in "$M" "$M2"; do
        assert_equal "$(figures_of "$mnt" jobs)" '[0,0,0,0,0,0,0,0,0]'
    done
    echo '{}' >>"$M/jobs/new"
    assert_equal "$(figures_of "$M2" jobs)" '[1,1,0,0,0,0,0,0,0]'
}

@test "stats: oldest_ready_age_seconds is how long the head, the record the next claim takes, has been claimable" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {}; CREATE jobs:2 = {};" >/dev/null
    mount_fs
    sleep 1.2    # the subject is time: both records wait 1.2 s
    # jobs:1, released just now, is the head again: its wait starts anew,
    # though jobs:2 behind it has waited longer.
    sql "CLAIM jobs:1; RELEASE jobs:1;" >/dev/null
    age=$(jqr .oldest_ready_age_seconds "$(cat "$M/jobs/stats")")
    jq -en --argjson a "$age" '$a >= 0 and $a < 1' >/dev/null || fail "head released just now: age $age"
    # Held, it is no longer the head: jobs:2 is, waiting since it was created.
    cat "$M/jobs/claim" >/dev/null
    age=$(jqr .oldest_ready_age_seconds "$(cat "$M/jobs/stats")")
    jq -en --argjson a "$age" '$a >= 1.2 and $a < 60' >/dev/null || fail "jobs:2 at the head: age $age"
}

# validate_metrics FILE — fails the test unless FILE is Prometheus text
# exposition as queuefs writes it: every line a HELP, a TYPE or a sample
# NAME{queue="Q"} VALUE; every metric one HELP and one TYPE before its
# samples; counters, and only they, named *_total.
validate_metrics() {
    local line name
    local -A help=() type=()
    [ "$(tail -c 1 "$1" | od -An -c | tr -d ' ')" = '\n' ] || fail "the metrics do not end with a newline"
    while IFS= read -r line; do
        if [[ $line =~ ^#\ HELP\ ([a-z_]+)\ [^[:space:]].*$ ]]; then
            name=${BASH_REMATCH[1]}
            [ -z "${help[$name]:-}" ] || fail "two HELP lines for $name"
            help[$name]=1
        elif [[ $line =~ ^#\ TYPE\ ([a-z_]+)\ (gauge|counter)$ ]]; then
            name=${BASH_REMATCH[1]}
            [ -z "${type[$name]:-}" ] || fail "two TYPE lines for $name"
            type[$name]=${BASH_REMATCH[2]}
            if [ "${type[$name]}" = counter ]; then
                [[ $name == *_total ]] || fail "the counter $name is not named *_total"
            else
                [[ $name != *_total ]] || fail "the gauge $name is named *_total"
            fi
        elif [[ $line =~ ^([a-z_]+)(\{queue=\"[^\"]*\"\})?\ [0-9.]+$ ]]; then
            name=${BASH_REMATCH[1]}
            [ -n "${help[$name]:-}" ] || fail "a sample of $name before its HELP: $line"
            [ -n "${type[$name]:-}" ] || fail "a sample of $name before its TYPE: $line"
        else
            fail "not a metrics line: '$line'"
        fi
    done <"$1"
    for name in "${!help[@]}"; do
        [ -n "${type[$name]:-}" ] || fail "$name has HELP but no TYPE"
    done
    for name in "${!type[@]}"; do
        [ -n "${help[$name]:-}" ] || fail "$name has TYPE but no HELP"
    done
}

@test "metrics: MOUNT/metrics is Prometheus text for every queue and agrees with each queue's stats" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s ATTEMPTS 1; DEFINE QUEUE mail TIMEOUT 30s NOT BEFORE send_at;
         DEFINE COLLECTION notes; CREATE notes:1 = {};
         CREATE jobs:1 = {}; CREATE jobs:2 = {}; CREATE jobs:3 = {};
         CLAIM jobs:1; CLAIM jobs:2; RELEASE jobs:2; DELETE jobs:3;
         CREATE mail:1 = {}; CLAIM mail:1; RELEASE mail:1 NOT BEFORE 1h;" >/dev/null
    mount_fs
    cat "$M/metrics" >"$BATS_TEST_TMPDIR/metrics"
    validate_metrics "$BATS_TEST_TMPDIR/metrics"
    m=$(cat "$BATS_TEST_TMPDIR/metrics")
    for metric in records ready held delayed dead oldest_ready_age_seconds; do
        grep -qx "# TYPE queuefs_$metric gauge" <<<"$m" || fail "no gauge queuefs_$metric"
    done
    for metric in claims releases lapses deletes; do
        grep -qx "# TYPE queuefs_${metric}_total counter" <<<"$m" || fail "no counter queuefs_${metric}_total"
    done
    # Queues only; each sample equals its queue's stats.
    assert_equal "$(grep -v '^#' <<<"$m" | grep -o 'queue="[^"]*"' | sort -u | tr '\n' ' ')" \
        'queue="jobs" queue="mail" '
    for q in jobs mail; do
        stats=$(cat "$M/$q/stats")
        for field in records ready held delayed dead claims releases lapses deletes; do
            metric=queuefs_$field
            case $field in claims | releases | lapses | deletes) metric=${metric}_total ;; esac
            want=$(jqr ".$field" "$stats")
            grep -qx "$metric{queue=\"$q\"} $want" <<<"$m" ||
                fail "metrics: no line '$metric{queue=\"$q\"} $want': $(grep "^$metric{queue=\"$q\"}" <<<"$m")"
        done
    done
    grep -qx 'queuefs_held{queue="jobs"} 1' <<<"$m" || fail "jobs: held is not 1"
    grep -qx 'queuefs_dead{queue="jobs"} 1' <<<"$m" || fail "jobs: dead is not 1"
    grep -qx 'queuefs_delayed{queue="mail"} 1' <<<"$m" || fail "mail: delayed is not 1"
    # promtool, where it is installed, agrees.
    if command -v promtool >/dev/null; then
        run promtool check metrics <"$BATS_TEST_TMPDIR/metrics"
        assert_success
    fi
}

@test "metrics: with no queue the only samples are the mount's and the store's own; a new queue appears at once" {
    mount_fs
    cat "$M/metrics" >"$BATS_TEST_TMPDIR/metrics"
    validate_metrics "$BATS_TEST_TMPDIR/metrics"
    run grep -v -e '^#' -e '^queuefs_store_' "$BATS_TEST_TMPDIR/metrics"
    assert_output --regexp '^queuefs_mount_inodes [0-9]+$'
    # The store's own: PostgreSQL's row versions (a store directory has none).
    run grep -c '^queuefs_store_\(live\|dead\)_rows [0-9]\+$' "$BATS_TEST_TMPDIR/metrics"
    if on_postgresql; then assert_output 2; else assert_output 0; fi
    ctl "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {};" >/dev/null
    cat "$M/metrics" >"$BATS_TEST_TMPDIR/metrics"
    validate_metrics "$BATS_TEST_TMPDIR/metrics"
    run cat "$BATS_TEST_TMPDIR/metrics"
    assert_line 'queuefs_records{queue="jobs"} 1'
    assert_line 'queuefs_ready{queue="jobs"} 1'
}

# ---------------------------------------------------------------------------
# ctl: a waiting claim waits in read(), not write(); results stream
# ---------------------------------------------------------------------------

# ctl_waiter OUT STATEMENTS — a session in the background on $M/ctl: one
# write() of STATEMENTS, then the line "written" (or "write failed
# ERRNO") in OUT once that write returned, then everything it reads up to
# end of file.  Sets WAITER.
ctl_waiter() {
    python3 -c '
import errno, os, sys
fd = os.open(sys.argv[1] + "/ctl", os.O_RDWR)
out = open(sys.argv[3], "w", buffering=1)
try:
    os.write(fd, sys.argv[2].encode())
    out.write("written\n")
except OSError as e:
    out.write("write failed %s\n" % errno.errorcode.get(e.errno, e.errno))
data = b""
while True:
    chunk = os.read(fd, 65536)
    if not chunk:
        break
    data += chunk
out.write(data.decode())
' "$M" "$2" "$1" 3>&- &
    WAITER=$!
    BG+=("$WAITER")
}

# wait_line FILE TEXT — polls (up to 10 s) until FILE holds the line TEXT.
wait_line() {
    local i
    for i in $(seq 200); do
        grep -qxF "$2" "$1" 2>/dev/null && return 0
        sleep 0.05
    done
    return 1
}

# anon_kib PID — the anonymous memory (RssAnon) of process PID, in KiB.
anon_kib() {
    awk '/^RssAnon:/ { print $2 }' "/proc/$1/status"
}

# lean_asan — on a sanitizer build, memory figures would count ASan's
# quarantine of freed memory (256 MiB): keep it small for the daemon.
lean_asan() {
    export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=1"
}

@test "ctl: CLAIM … WAIT waits in its session's read: other sessions' writes and reads on the same ctl go through; a SIGKILLed waiter leaves nothing blocked" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    ctl_waiter "$BATS_TEST_TMPDIR/a" "CLAIM FROM jobs WAIT;"
    a=$WAITER
    wait_line "$BATS_TEST_TMPDIR/a" written ||
        fail "the write of CLAIM FROM jobs WAIT did not return: $(cat "$BATS_TEST_TMPDIR/a")"
    blocked "$a" || fail "the read of a waiting claim did not block"
    # A second waiter, killed while it waits.
    ctl_waiter "$BATS_TEST_TMPDIR/c" "CLAIM FROM jobs WAIT;"
    c=$WAITER
    wait_line "$BATS_TEST_TMPDIR/c" written || fail "the second waiter's write did not return"
    blocked "$c" || fail "the second waiter's read did not block"
    kill -KILL "$c"
    wait_gone "$c" || fail "a waiter SIGKILLed in its read did not end"
    # Another session's write and read go through while one read blocks.
    run timeout 5 "$QUEUEFS_CTL" "$M" "DEFINE COLLECTION notes; CREATE notes:1 = { n: 1 }; SELECT * FROM notes;"
    assert_success
    assert_line -n 2 '[{"id":"notes:1","n":1}]'
    run timeout 5 "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs WAIT 100ms;"
    assert_success
    assert_output '[]'
    alive "$a" || fail "the waiting session ended: $(cat "$BATS_TEST_TMPDIR/a")"
    # A record created through the files answers the waiting claim, and
    # only it: the killed session's claim is gone.
    printf '%s\n' '{"url":"a"}' >>"$M/jobs/new"
    wait_gone "$a" || fail "a create through jobs/new did not answer the waiting claim"
    wait "$a"
    out=$(tail -n +2 "$BATS_TEST_TMPDIR/a")
    assert_equal "$(jqr '.[0].id' "$out")" jobs:1
    assert_equal "$(jqr '.[0].attempts' "$out")" 1
    assert_equal "$(jqc '[.claims, .held]' "$(cat "$M/jobs/stats")")" '[1,1]'
}

@test "ctl: SIGINT to the read of a waiting claim fails it with EINTR, the next read gives Interrupted, and nothing is claimed" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    python3 -c '
import os, signal, sys, time
class Stop(Exception):
    pass
def stop(*_):
    raise Stop()
signal.signal(signal.SIGINT, stop)
fd = os.open(sys.argv[1] + "/ctl", os.O_RDWR)
out = open(sys.argv[2], "w", buffering=1)
os.write(fd, b"CLAIM FROM jobs WAIT;")
out.write("written\n")
try:
    out.write("read %r\n" % os.read(fd, 65536))
except Stop:
    out.write("interrupted\n")
signal.signal(signal.SIGINT, signal.SIG_IGN)
out.write(os.read(fd, 65536).decode())
out.write("then %r\n" % os.read(fd, 65536))
while not os.path.exists(sys.argv[3]):   # the session stays open until the test is done
    time.sleep(0.05)
' "$M" "$BATS_TEST_TMPDIR/out" "$BATS_TEST_TMPDIR/done" 3>&- &
    pid=$!
    BG+=("$pid")
    wait_line "$BATS_TEST_TMPDIR/out" written || fail "the write of CLAIM FROM jobs WAIT did not return"
    blocked "$pid" || fail "the read of the waiting claim did not block"
    kill -INT "$pid"
    wait_line "$BATS_TEST_TMPDIR/out" "then b''" ||
        fail "SIGINT did not end the read: $(cat "$BATS_TEST_TMPDIR/out")"
    run cat "$BATS_TEST_TMPDIR/out"
    assert_line -n 1 interrupted
    assert_equal "$(jqr .error "${lines[2]}")" Interrupted
    # The session is still open; a record created now stays unclaimed.
    printf '%s\n' '{"url":"a"}' >>"$M/jobs/new"
    sleep 0.5   # ample for an abandoned wait to take it (a wake takes milliseconds)
    assert_equal "$(jqc '[.claims, .held, .ready]' "$(cat "$M/jobs/stats")")" '[0,0,1]'
    touch "$BATS_TEST_TMPDIR/done"
    wait_gone "$pid" || fail "the session did not end"
    assert_equal "$(sql 'SELECT * FROM jobs')" '[{"id":"jobs:1","url":"a"}]'
}

@test "ctl: an error in a statement after a waiting claim is read as its line; the write returned success and nothing after the error ran" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    ctl_waiter "$BATS_TEST_TMPDIR/a" "CLAIM FROM jobs WAIT; SELECT * FROM nope; CREATE jobs:5 = {};"
    wait_line "$BATS_TEST_TMPDIR/a" written ||
        fail "the write did not return: $(cat "$BATS_TEST_TMPDIR/a")"
    blocked "$WAITER" || fail "the read did not block"
    printf '%s\n' '{"url":"a"}' >>"$M/jobs/new"
    wait_gone "$WAITER" || fail "the claim was not answered"
    run cat "$BATS_TEST_TMPDIR/a"
    assert_equal "${#lines[@]}" 3
    assert_equal "$(jqr '.[0].id' "${lines[1]}")" jobs:1
    assert_equal "$(jqr .error "${lines[2]}")" NoSuchTable
    assert_equal "$(sql 'SELECT id FROM jobs')" '[{"id":"jobs:1"}]'
    # queuefs-ctl reports it the same way: the error line on stderr, status 1.
    run --separate-stderr timeout 10 "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs WAIT 100ms; SELECT * FROM nope;"
    assert_failure 1
    assert_output '[]'
    assert_equal "$(jqr .error "$stderr")" NoSuchTable
    # What can be checked at once fails the write itself.
    assert_equal "$(ctl_errno 'CLAIM FROM nope WAIT;')" "ENOENT NoSuchTable"
    assert_equal "$(ctl_errno 'CLAIM 1001 FROM jobs WAIT;')" "ERANGE ClaimAboveCeiling"
    sql "DEFINE COLLECTION notes;" >/dev/null
    assert_equal "$(ctl_errno 'CLAIM FROM notes WAIT;')" "EINVAL WrongKind"
}

@test "ctl: a waiting claim with O_NONBLOCK reads EAGAIN until something is claimable; a write meanwhile is EBUSY (SessionBusy)" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    run timeout 10 python3 -c '
import errno, fcntl, os, sys, time
fd = os.open(sys.argv[1] + "/ctl", os.O_RDWR)
os.write(fd, b"CLAIM FROM jobs WAIT 30s; SELECT id FROM jobs;")
fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) | os.O_NONBLOCK)
def attempt(what, fn):
    try:
        fn()
        print(what, "OK")
    except OSError as e:
        print(what, errno.errorcode[e.errno])
attempt("read", lambda: os.read(fd, 65536))
attempt("write", lambda: os.write(fd, b"SELECT * FROM jobs;"))
with open(sys.argv[1] + "/jobs/new", "a") as f:
    f.write("{\"url\": \"a\"}\n")
for _ in range(200):
    try:
        data = os.read(fd, 65536)
        break
    except BlockingIOError:
        time.sleep(0.05)
while True:
    more = os.read(fd, 65536)
    if not more:
        break
    data += more
sys.stdout.write(data.decode())
' "$M"
    assert_success
    assert_line -n 0 "read EAGAIN"
    assert_line -n 1 "write EBUSY"
    assert_equal "$(jqr '.[0].id' "${lines[2]}")" jobs:1
    assert_line -n 3 '[{"id":"jobs:1"}]'
    assert_equal "$(jqr .error "${lines[4]}")" SessionBusy
    assert_equal "${#lines[@]}" 5
}

@test "ctl: closing a session whose claim waits cancels the claim: a record created afterwards stays unclaimed" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    run timeout 10 python3 -c '
import os, sys
fd = os.open(sys.argv[1] + "/ctl", os.O_RDWR)
os.write(fd, b"CLAIM FROM jobs WAIT; CREATE jobs:9 = {};")
os.close(fd)
print("closed")
' "$M"
    assert_success
    assert_output closed
    printf '%s\n' '{"url":"a"}' >>"$M/jobs/new"
    sleep 0.5   # ample for a claim left behind to take it
    assert_equal "$(jqc '[.claims, .held, .records]' "$(cat "$M/jobs/stats")")" '[0,0,1]'
    # Written with something claimable, the claim is made in the write;
    # closed unread, it is given back.
    run timeout 10 python3 -c '
import os, sys
fd = os.open(sys.argv[1] + "/ctl", os.O_RDWR)
os.write(fd, b"CLAIM FROM jobs WAIT;")
os.close(fd)
' "$M"
    assert_success
    assert_equal "$(jqc '[.claims, .held, .ready]' "$(cat "$M/jobs/stats")")" '[0,0,1]'
}

# fill_big N — the collection big with records 1…N, each { n: I, pad: 400
# bytes }, written to big/new in large writes.
fill_big() {
    mkdir "$M/big"
    python3 -c '
import sys
pad = "x" * 400
with open(sys.argv[1], "w") as f:
    for i in range(1, int(sys.argv[2]) + 1):
        f.write("{\"n\":%d,\"pad\":\"%s\"}\n" % (i, pad))
' "$BATS_TEST_TMPDIR/big.lines" "$1"
    dd if="$BATS_TEST_TMPDIR/big.lines" of="$M/big/new" bs=1M oflag=append conv=notrunc status=none ||
        fail "could not fill big"
    rm "$BATS_TEST_TMPDIR/big.lines"
}

@test "ctl: SELECT * of 200,000 records streams them all, in order, exactly once, with the daemon's memory bounded" {
    lean_asan
    mount_fs -o sync=none
    fill_big 200000
    pid=$(daemon_pid "$M")
    run timeout 120 python3 -c '
import json, os, sys
def anon():
    with open("/proc/%s/status" % sys.argv[2]) as f:
        for line in f:
            if line.startswith("RssAnon:"):
                return int(line.split()[1])
base = anon()
fd = os.open(sys.argv[1] + "/ctl", os.O_RDWR)
os.write(fd, b"SELECT * FROM big;")
peak = anon()
chunks = []
while True:
    chunk = os.read(fd, 1 << 16)
    if not chunk:
        break
    chunks.append(chunk)
    if len(chunks) % 8 == 0:
        peak = max(peak, anon())
lines = b"".join(chunks).split(b"\n")
rows = json.loads(lines[0])
print(len(lines), lines[1] == b"")
print(len(rows), [r["n"] for r in rows] == list(range(1, 200001)),
      len({r["id"] for r in rows}), all(len(r["pad"]) == 400 for r in rows))
print((peak - base) // 1024)
' "$M" "$pid"
    assert_success
    assert_line -n 0 "2 True"
    assert_line -n 1 "200000 True 200000 True"
    echo "# the daemon's anonymous memory grew by ${lines[2]} MiB during the SELECT" >&3
    [ "${lines[2]}" -lt 64 ] || fail "the daemon grew by ${lines[2]} MiB streaming 200,000 records"
}

@test "ctl: four sessions that write SELECT * of 200,000 records and never read hold little; closed, they free it" {
    lean_asan
    mount_fs -o sync=none
    fill_big 200000
    pid=$(daemon_pid "$M")
    base=$(anon_kib "$pid")
    run timeout 120 python3 -c '
import os, sys
fds = [os.open(sys.argv[1] + "/ctl", os.O_RDWR) for _ in range(4)]
for fd in fds:
    os.write(fd, b"SELECT * FROM big;")
with open("/proc/%s/status" % sys.argv[2]) as f:
    print([int(l.split()[1]) for l in f if l.startswith("RssAnon:")][0])
for fd in fds:
    os.close(fd)
' "$M" "$pid"
    assert_success
    held=$(((output - base) / 1024))
    echo "# four unread SELECTs: the daemon grew by $held MiB" >&3
    [ "$held" -lt 64 ] || fail "four unread SELECTs grew the daemon by $held MiB"
    # Released (asynchronously, after close): back near where it was.
    for i in $(seq 100); do
        after=$((($(anon_kib "$pid") - base) / 1024))
        [ "$after" -lt 16 ] && break
        sleep 0.1
    done
    echo "# after they closed: $after MiB above the start" >&3
    [ "$after" -lt 16 ] || fail "after the sessions closed the daemon still held $after MiB more"
    # The sessions' results were never needed: the store is as it was.
    assert_equal "$(sql 'SELECT n FROM big WHERE n > 199999')" '[{"n":200000}]'
}
