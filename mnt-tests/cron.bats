#!/usr/bin/env bats
# cron.bats — SPEC section 9's work on a calendar on a real mount: RELEASE
# and RETRY … NOT BEFORE CRON 'EXPR' [IN 'ZONE'], time::cron() as a value,
# and the file forms `mv q/1 'q/released/1@cron EXPR'` and a reason written
# to such a name.  The expected instants are worked out here with GNU date,
# apart from queuefs.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/cron.bats
#
# Needs what mount.bats needs.

load mount_helpers

# A mount with the queue ticks (TIMEOUT 1m, NOT BEFORE next) whose records
# ticks:1 and ticks:2 are held through ctl.
mount_ticks() {
    sql "DEFINE QUEUE ticks TIMEOUT 1m NOT BEFORE next;
         CREATE ticks:1 = {job: 'cleanup'}; CREATE ticks:2 = {job: 'report'};" >/dev/null ||
        fail "could not set up the ticks queue"
    mount_fs
    run ctl "CLAIM 2 FROM ticks"
    assert_success
}

# next_of FILE — the epoch of the record's "next" (its NOT BEFORE).
next_of() {
    epoch_of "$(jqr .next "$(cat "$1")")"
}

@test "RELEASE … NOT BEFORE CRON: the record is not claimable, its NOT BEFORE is the next instant" {
    mount_ticks
    want=$(next_at UTC 03:00)
    run ctl "RELEASE ticks:1 NOT BEFORE CRON '0 3 * * *'"
    assert_success
    # The near side of 03:00 may have passed while the statement ran.
    got=$(next_of "$M/ticks/1")
    [ "$got" = "$want" ] || [ "$got" = "$(next_at UTC 03:00)" ] ||
        fail "next is $got, want $want ($(date -u -d "@$want"))"
    [ "$(jqr .claimed_until "$(cat "$M/ticks/1")")" = null ] || fail "ticks:1 is still held"
    run ctl "CLAIM ticks:1"
    assert_output '[]'
    assert_equal "$(jqr .delayed "$(cat "$M/ticks/stats")")" 1
}

@test "NOT BEFORE CRON '* * * * *' is the next whole minute; RELEASE of several, and RELEASE ALL" {
    mount_ticks
    t0=$(date +%s)
    run ctl "RELEASE ticks:1, ticks:2 NOT BEFORE CRON '* * * * *' BECAUSE 'tick'"
    assert_success
    t1=$(date +%s)
    for id in 1 2; do
        got=$(next_of "$M/ticks/$id")
        [ "$got" -eq $((t0 / 60 * 60 + 60)) ] || [ "$got" -eq $((t1 / 60 * 60 + 60)) ] ||
            fail "ticks:$id: next $got is not the minute after $t0..$t1"
    done
    assert_equal "$(jqr .last_error "$(cat "$M/ticks/1")")" tick
    # RELEASE ALL FROM: the holds of this mount
    run ctl "RETRY ALL FROM ticks NOT BEFORE time::now()"
    run ctl "CLAIM 2 FROM ticks"
    assert_equal "$(jqc '[.[].id]' "$output")" '["ticks:1","ticks:2"]'
    want=$(next_at UTC 00:00)
    run ctl "RELEASE ALL FROM ticks NOT BEFORE CRON '0 0 * * *'"
    assert_success
    assert_equal "$(next_of "$M/ticks/1")" "$want"
    assert_equal "$(next_of "$M/ticks/2")" "$want"
}

@test "CRON … IN 'ZONE': the expression is read in the zone's local time" {
    mount_ticks
    # zone | expression | local HH:MM | ISO weekday or empty
    while IFS='|' read -r zone expr hm wd; do
        want=$(next_at "$zone" "$hm" "$wd")
        run ctl "RELEASE ticks:1 NOT BEFORE CRON '$expr' IN '$zone'"
        assert_success
        got=$(next_of "$M/ticks/1")
        [ "$got" = "$want" ] || fail "CRON '$expr' IN '$zone': next $got, want $want"
        run ctl "CLAIM ticks:1"
        assert_output '[]'
        run ctl "RETRY ticks:1 NOT BEFORE time::now(); CLAIM ticks:1;"
        assert_success
        [ "$(jqr .claimed_until "$(cat "$M/ticks/1")")" != null ] || fail "ticks:1 is not held again"
    done <<'EOF'
Asia/Tokyo|30 9 * * mon|09:30|1
America/New_York|0 3 * * *|03:00|
Europe/Berlin|15 18 * * SAT|18:15|6
EOF
}

@test "RETRY … NOT BEFORE CRON brings a dead record back on the calendar" {
    mount_ticks
    run ctl "ALTER QUEUE ticks ATTEMPTS 1; RELEASE ticks:1;"
    assert_success
    [ -e "$M/ticks/dead/1" ] || fail "ticks:1 did not die"
    want=$(next_at UTC 03:00)
    run ctl "RETRY ticks:1 NOT BEFORE CRON '0 3 * * *' IN 'UTC'"
    assert_success
    assert_equal "$(next_of "$M/ticks/1")" "$want"
    assert_equal "$(jqr .attempts "$(cat "$M/ticks/1")")" 0
}

@test "time::cron() is a datetime wherever an expression is" {
    mount_ticks
    want=$(next_at UTC 03:00)
    run ctl "DEFINE COLLECTION c; CREATE c:1 = { at: time::cron('0 3 * * *'), tokyo: time::cron('0 12 * * *', 'Asia/Tokyo') };"
    assert_success
    json=$(cat "$M/c/1")
    assert_equal "$(epoch_of "$(jqr .at "$json")")" "$want"
    assert_equal "$(epoch_of "$(jqr .tokyo "$json")")" "$(next_at Asia/Tokyo 12:00)"
    run ctl "SELECT id FROM c WHERE at = time::cron('0 3 * * *') AND at > time::now()"
    assert_output '[{"id":"c:1"}]'
}

@test "mv q/1 'q/released/1@cron EXPR' releases NOT BEFORE the next instant, in a zone too" {
    mount_ticks
    want=$(next_at UTC 03:00)
    run mv "$M/ticks/1" "$M/ticks/released/1@cron 0 3 * * *"
    assert_success
    assert_equal "$(next_of "$M/ticks/1")" "$want"
    [ "$(jqr .claimed_until "$(cat "$M/ticks/1")")" = null ] || fail "ticks:1 is still held"
    # A list for a step, a zone whose '/' is written %2F, through held/ID~N.
    t0=$(date +%s)
    hold=$(jqr .hold "$(cat "$M/ticks/2")")
    run mv "$M/ticks/held/2~$hold" "$M/ticks/released/2@cron 0,15,30,45 * * * * in Asia%2FTokyo"
    assert_success
    got=$(next_of "$M/ticks/2")
    q=$(((t0 / 900 + 1) * 900))
    [ "$got" -eq "$q" ] || [ "$got" -eq $((q + 900)) ] || fail "next $got is not the quarter after $t0"
}

@test "printf why > 'q/released/ID~N@cron EXPR' releases with the reason" {
    mount_ticks
    want=$(next_at UTC 03:00)
    hold=$(jqr .hold "$(cat "$M/ticks/1")")
    printf 'nightly\n' >"$M/ticks/released/1~$hold@cron 0 3 * * *"
    json=$(cat "$M/ticks/1")
    assert_equal "$(epoch_of "$(jqr .next "$json")")" "$want"
    assert_equal "$(jqr .last_error "$json")" nightly
}

@test "a malformed expression or an unknown zone is EINVAL ParseError and changes nothing" {
    mount_ticks
    before=$(cat "$M/ticks/1")
    for stmt in "RELEASE ticks:1 NOT BEFORE CRON '0 0 30 2 *';" \
        "RELEASE ticks:1 NOT BEFORE CRON '61 * * * *';" \
        "RELEASE ticks:1, ticks:2 NOT BEFORE CRON '* * * *';" \
        "RELEASE ticks:1 NOT BEFORE CRON '5/15 * * * *';" \
        "RELEASE ticks:1, ticks:2 NOT BEFORE CRON '0 3 * * *' IN 'Nowhere/Town';" \
        "RELEASE ALL FROM ticks NOT BEFORE CRON '0 3 * * *' IN 'Europe/Nowhere';" \
        "RELEASE ticks:1 NOT BEFORE time::cron('0 3 * * *', '../../etc/passwd');"; do
        assert_equal "$(ctl_errno "$stmt")" "EINVAL ParseError"
        assert_equal "$(cat "$M/ticks/1")" "$before"
    done
    for name in "1@cron 0 0 30 2 *" "1@cron 0 3 * *" "1@cron 0 3 * * * in Nowhere" "1@cron mon * * * *"; do
        assert_equal "$(errno_of "os.rename('$M/ticks/1', '$M/ticks/released/$name')")" EINVAL
        assert_equal "$(cat "$M/ticks/1")" "$before"
    done
    [ "$(jqr .claimed_until "$before")" != null ] || fail "ticks:1 was not held to begin with"
}
