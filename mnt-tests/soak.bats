#!/usr/bin/env bats
# soak.bats — under load and under daemon kills, queuefs hands a record to
# one worker at a time, gets it back when a hold lapses, and loses nothing
# (scripts/soak).  First the checker itself, on hand-made logs: a checker
# that cannot fail proves nothing.

# Each @test runs in a process of its own: the $output a test's run sets is
# its own on purpose.
# shellcheck disable=SC2030,SC2031
load helpers

SOAK="$BATS_TEST_DIRNAME/../scripts/soak"
CHECK="$QUEUEFS_BUILD/mnt-tests/soakcheck"

setup() {
    [ -x "$CHECK" ] || fail "no soakcheck at $CHECK (build it, or set QUEUEFS_BUILD)"
    [ -x "$QUEUEFS_BUILD/mnt-tests/soak" ] || fail "no $QUEUEFS_BUILD/mnt-tests/soak"
    LOG="$BATS_TEST_TMPDIR/run.log"
    : >"$LOG"
}

# Nothing of a soak stays mounted or running, whatever happened.
teardown() {
    local left p a
    local -a args
    left=$(awk -v d="$BATS_TEST_TMPDIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts)
    for p in $left; do fusermount3 -u -z "$p"; done
    for p in /proc/[0-9]*; do
        { mapfile -d '' -t args <"$p/cmdline"; } 2>/dev/null || continue
        for a in "${args[@]}"; do
            if [[ $a == "$BATS_TEST_TMPDIR"/* ]]; then
                left+=" pid ${p#/proc/} (${args[0]##*/})"
                kill -9 "${p#/proc/}" 2>/dev/null
                break
            fi
        done
    done
    [ -z "$left" ] || fail "the soak left behind: $left"
}

# ev EVENT WHO START_MS END_MS FIELDS… — one log line, times in ms (both
# clocks alike).
ev() {
    local e=$1 who=$2 s=$(($3 * 1000000)) t=$(($4 * 1000000))
    shift 4
    echo "$e $who $s $s $t $t $*" >>"$LOG"
}

# claim WHO ID ATTEMPTS AT_MS SERIAL — a claim whose store time is AT_MS
# (its claimed_until is AT_MS + the 2 s TIMEOUT), within a 1 ms system call.
claim() {
    ev CLAIM "$1" "$4" $(($4 + 1)) "$2" "$3" $((($4 + 2000) * 1000000)) "$5" /m
}

# finish WHO ID AT_MS RESULT [LATE] — an unlink from AT_MS to AT_MS + 1.
finish() {
    ev FINISH "$1" "$3" $(($3 + 1)) "$2" "$4" "${5:-0}" /m
}

# release WHO ID AT_MS RESULT
release() {
    ev RELEASE "$1" "$3" $(($3 + 1)) "$2" 0 "$4" 0 /m
}

created() {
    ev CREATED p 100 101 "$1" /m
}

# state ID:SERIAL:ATTEMPTS… — the store's records at the end.
state() {
    local r
    for r in "$@"; do
        IFS=: read -r id serial attempts <<<"$r"
        echo "PRESENT - 0 0 0 0 $id $serial $attempts" >>"$LOG"
    done
    echo "STATE - 0 0 0 0 $#" >>"$LOG"
}

check() {
    run "$CHECK" "$@" "$LOG"
}

@test "soakcheck passes a clean history: claim, release, lapse, late finish, records left" {
    created 1
    created 2
    created 3
    claim w1 1 1 1000 1
    release w1 1 1100 0
    claim w2 1 2 1200 1          # after the release started: fine
    claim w3 1 3 3200 1          # w2's hold lapsed at 3200
    finish w2 1 3300 0 1         # w2, late, deletes what w3 holds: rm allows it
    finish w3 1 3400 ENOENT
    claim w1 2 1 1000 2
    state 2:2:1 3:3:0
    check
    assert_success
    assert_output --partial "no findings"
    assert_output --partial "claims: 4 (and 0 empty reads), 1 lapses observed"
    assert_output --partial "1 of them deleting another worker's hold"
}

@test "soakcheck reports a record handed to a second worker while held, and a lost record" {
    created 1
    created 2
    claim w1 1 1 1000 1
    claim w2 1 2 2000 1          # w1 holds it until 3000
    finish w2 1 2100 0
    state                        # serial 2 was written, and is nowhere
    check
    assert_failure 1
    assert_output --partial "OVERLAP: jobs:1 handed to w2 (attempts 2) at"
    assert_output --partial "1000.000 ms too early"
    assert_output --partial "LOST: serial 2 was written (write() returned success) but never claimed"
    assert_output --partial "FAILED: 1 OVERLAP 1 LOST"
}

@test "soakcheck allows 2 ms of slack, and no more" {
    created 1
    created 2
    created 3
    claim w1 1 1 1000 1
    release w1 1 1500 0
    claim w2 1 2 1498 1          # 2 ms before the release started
    claim w1 2 1 1000 2
    claim w2 2 2 2999 2          # 1 ms before the hold lapsed
    claim w1 3 1 1000 3
    claim w3 3 2 2990 3          # 10 ms before
    state 1:1:2 2:2:2 3:3:2
    check
    assert_failure 1
    assert_output --partial "OVERLAP: jobs:3 handed to w3 (attempts 2)"
    assert_output --partial "10.000 ms too early"
    assert_output --partial "FAILED: 1 OVERLAP"
}

@test "soakcheck reports a record finished twice, and handed out after it was finished" {
    created 1
    claim w1 1 1 1000 1
    finish w1 1 1100 0
    finish w2 1 1200 0
    claim w3 1 2 1300 1
    state
    check
    assert_failure 1
    assert_output --partial "FINISHED: jobs:1 was unlinked successfully twice"
    assert_output --partial "FINISHED: jobs:1 was handed out after it was unlinked"
}

@test "soakcheck reports attempts that do not go up by one, and a finished record left in the store" {
    created 1
    created 2
    claim w1 1 1 1000 1
    claim w2 1 1 4000 1          # the same attempts again
    claim w1 2 2 1000 2          # a hand-out nobody saw
    finish w1 2 1100 0
    state 2:2:2
    check
    assert_failure 1
    assert_output --partial "ATTEMPTS: jobs:1: attempts 1 after the claim before it (expected 2)"
    assert_output --partial "ATTEMPTS: jobs:2: attempts 2 after no claim (expected 1)"
    assert_output --partial "FINISHED: jobs:2 is in the store after it was unlinked"
}

@test "soakcheck reports records nobody wrote, and a serial under two identities" {
    created 1
    claim w1 1 1 1000 1
    claim w1 2 1 1100 1
    state 1:1:1 2:1:1 3:7:0
    check
    assert_failure 1
    assert_output --partial "IDENTITY: serial 1 is both jobs:1 and jobs:2"
    assert_output --partial "IDENTITY: jobs:3 carries serial 7, which was never written"
}

@test "soakcheck reports a missing end state, errors when no daemon was killed, and what the driver saw" {
    created 1
    ev CLAIM_FAILED w1 1000 1001 /m ENOTCONN open
    ev FINDING - 1200 1200 the daemon of /m died by itself
    check
    assert_failure 1
    assert_output --partial "STATE: no STATE line"
    assert_output --partial "ERROR: a claim failed with no daemon killed"
    assert_output --partial "DRIVER: the daemon of /m died by itself"
}

@test "soakcheck --crash: a failed write may or may not store, a failed unlink may delete" {
    created 1
    ev CREATE_FAILED p 200 201 2 /m ENOTCONN
    ev CREATE_FAILED p 300 301 3 /m ENOTCONN
    claim w1 1 1 1000 1
    finish w1 1 1100 ECONNABORTED   # the daemon died: maybe deleted
    ev CLAIM_FAILED w2 1000 1001 /m ENOTCONN read
    claim w2 2 2 3000 2             # attempts 1 went to nobody
    state 2:2:2
    ev KILL - 1000 0 1001 0 /m 99
    check --crash
    assert_success
    assert_output --partial "1 kills survived"
    assert_output --partial "1 records of failed writes were stored anyway"
    assert_output --partial "1 attempts handed to no worker"
    check
    assert_failure 1
    assert_output --partial "ERROR: a finish failed with no daemon killed"
}

@test "soakcheck refuses a log it cannot read" {
    echo "CLAIM w1 1 2 3" >"$LOG"
    check
    assert_failure 2
    assert_output --partial "malformed line"
}

# figure SED_REGEX — the number its \(…\) finds in the soak's output.
figure() {
    sed -n "s/$1.*/\\1/p" <<<"$output" | head -n 1
}

@test "soak: eight workers on two mounts of one store never share a hold and lose no record" {
    run "$SOAK" --seconds 25 --dir "$BATS_TEST_TMPDIR/soak"
    assert_success
    assert_output --partial "no findings"
    [ "$(figure '^claims: \([0-9]*\)')" -gt 200 ] || fail "too few claims to prove anything"
    [ "$(figure '.* \([0-9]*\) lapses observed')" -gt 0 ] || fail "no hold lapsed"
}

@test "soak --crash: daemons killed with SIGKILL and remounted lose nothing a system call committed" {
    run "$SOAK" --crash --seconds 30 --dir "$BATS_TEST_TMPDIR/soak"
    assert_success
    assert_output --partial "no findings"
    [ "$(figure '^crash: \([0-9]*\) kills survived')" -ge 2 ] || fail "fewer than 2 kills"
}
