#!/usr/bin/env bats
# limits.bats — SPEC section 6's limits on a real mount: AT MOST n PER f
# (at most n records of one group held at once), AT MOST n EVERY d (at most
# n hand-outs in any window of d, across mounts), ALTER QUEUE of the
# clauses that decide where a record is filed, the stats and metrics of the
# groups, and a wait that sleeps until the rate admits the next.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/limits.bats
#
# Needs what mount.bats needs (and python3, to read the workers' logs).

load mount_helpers

eval "$(declare -f teardown | sed '1s/^teardown/mount_teardown/')"
teardown() {
    # workers left by a failed test, then the mounts
    local pid
    for pid in ${WORKERS:-}; do kill "$pid" 2>/dev/null || true; done
    for pid in ${WORKERS:-}; do wait "$pid" 2>/dev/null || true; done
    mount_teardown
    [ -z "${SHARED:-}" ] || rm -rf "$SHARED"
}

# now_ns — the local clock in nanoseconds (the store's clock on LMDB, and
# on the test's own PostgreSQL server).
now_ns() {
    date +%s%N
}

# ns_of RFC3339 — nanoseconds since the epoch of a datetime a record shows.
ns_of() {
    python3 -c '
import calendar, sys, time
d = sys.argv[1].rstrip("Z")
whole, _, frac = d.partition(".")
print(calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) * 10**9 + int((frac + "000000000")[:9]))
' "$1"
}

# group_worker MNT LOG N — claims from MNT/q (by `cat claim`, or with N odd
# by `cat wait`) until q is empty, and logs each hold in LOG:
#   claim ID ACCOUNT HOLD CLAIMED_UNTIL HOST
#   end ID HOLD KIND NS     (KIND finish or release: NS read before the rm or
#                            mv, so the hold ended after it; KIND lapse: the
#                            hold was left to lapse at its claimed_until)
group_worker() {
    local mnt=$1 log=$2 n=$3 job id hold until account host held t
    local stop=$(( $(date +%s) + 60 ))
    while [ "$(date +%s)" -lt "$stop" ]; do
        if [ $((n % 2)) -eq 1 ]; then
            local rc=0
            job=$(timeout 2 cat "$mnt/q/wait") || rc=$?
            [ "$rc" -eq 0 ] || [ "$rc" -eq 124 ] || return 2   # 124: nothing came
        else
            job=$(cat "$mnt/q/claim") || return 2
        fi
        if [ -z "$job" ]; then
            [ -n "$(ls "$mnt/q")" ] || return 0
            sleep 0.02
            continue
        fi
        id=$(jq -r '.id | sub("^q:"; "")' <<<"$job")
        hold=$(jq -r .hold <<<"$job")
        until=$(jq -r .claimed_until <<<"$job")
        account=$(jq -r .account <<<"$job")
        host=$(jq -r .host <<<"$job")
        held="$mnt/q/held/$id~$hold"
        echo "claim $id $account $hold $until $host" >>"$log"
        sleep "0.0$((RANDOM % 10))"
        case $((RANDOM % 10)) in
            0 | 1)   # walk away: the hold lapses after the TIMEOUT
                echo "end $id $hold lapse 0" >>"$log" ;;
            2 | 3 | 4)
                t=$(now_ns)
                if mv "$held" "$mnt/q/released/" 2>/dev/null; then
                    echo "end $id $hold release $t" >>"$log"
                else
                    echo "end $id $hold lapse 0" >>"$log"
                fi ;;
            *)
                t=$(now_ns)
                if rm "$held" 2>/dev/null; then
                    echo "end $id $hold finish $t" >>"$log"
                else
                    echo "end $id $hold lapse 0" >>"$log"
                fi ;;
        esac
    done
    return 1
}

# three_workers LOG — runs group_worker 1, 2 and 3 on $M side by side,
# logging to LOG, until q is empty; fails when one fails or q is not.
three_workers() {
    local log=$1 n pid failed=0
    : >"$log"
    WORKERS=
    for n in 1 2 3; do
        group_worker "$M" "$log" "$n" 3>&- &
        WORKERS="$WORKERS $!"
    done
    for pid in $WORKERS; do wait "$pid" || failed=1; done
    WORKERS=
    [ "$failed" -eq 0 ] || fail "a worker failed, or did not see the queue empty within 60 s: $(cat "$log")"
    assert_equal "$(ls "$M/q")" ""
}

@test "AT MOST 1 PER account: three workers never hold two records of one account at once; all finish" {
    {
        echo "DEFINE QUEUE q TIMEOUT 1s AT MOST 1 PER account;"
        for i in $(seq 1 8); do
            echo "CREATE q:$i = {account: '$([ $((i % 2)) -eq 0 ] && echo a || echo b)', n: $i};"
        done
    } | sql >/dev/null || fail "could not set up the queue"
    mount_fs
    local log="$BATS_TEST_TMPDIR/log"
    three_workers "$log"
    # At no instant was an account held twice: a hold runs from its claim
    # instant (claimed_until - TIMEOUT, the store's) to the instant read
    # before its rm or mv, or its claimed_until when it lapsed.  Every
    # record finished once.
    run holds_within "$log" account=1
    assert_success
    echo "# $output" >&3
    stats=$(cat "$M/q/stats")
    assert_equal "$(jqc '[.records, .grouped, .groups_at_limit, .deletes]' "$stats")" '[0,0,0,8]'
}

# holds_within LOG FIELD=LIMIT… — from group_worker's LOG (holds of a 1 s
# TIMEOUT), that no group of any FIELD (account or host) was ever held by
# more than its LIMIT at once, and that every record finished once; prints
# how many holds there were and how many were left to lapse.
holds_within() {
    python3 -c '
import calendar, sys, time
def ns(d):
    whole, _, frac = d.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) * 10**9 + int((frac + "0" * 9)[:9])
holds, finished, ids = {}, {}, set()
for line in open(sys.argv[1]):
    w = line.split()
    if w[0] == "claim":
        until = ns(w[4])
        holds[w[3]] = {"id": w[1], "account": w[2], "host": w[5], "start": until - 10**9, "until": until}
        ids.add(w[1])
    else:
        h = holds[w[2]]
        h["end"] = h["until"] if w[3] == "lapse" else min(int(w[4]), h["until"])
        if w[3] == "finish":
            finished[w[1]] = finished.get(w[1], 0) + 1
for spec in sys.argv[2:]:
    field, limit = spec.split("=")
    groups = {}
    for h in holds.values():
        groups.setdefault(h[field], []).append(h)
    for group, mine in groups.items():
        # the holds running at each instant one begins
        for one in mine:
            at = [h["id"] for h in mine if h["start"] <= one["start"] < h["end"]]
            if len(at) > int(limit):
                print("%s %s: %s held at once (at most %s)" % (field, group, at, limit))
                sys.exit(1)
if set(finished) != ids or set(finished.values()) != {1}:
    print("finished:", finished)
    sys.exit(1)
print(len(holds), "holds,", sum(1 for line in open(sys.argv[1]) if " lapse " in line), "left to lapse")
' "$@"
}

@test "AT MOST 1 PER account AT MOST 2 PER host: three workers with lapses never hold over either limit; all finish" {
    {
        echo "DEFINE QUEUE q TIMEOUT 1s AT MOST 1 PER account AT MOST 2 PER host;"
        for i in $(seq 1 16); do
            echo "CREATE q:$i = {account: 'a$((i % 4))', host: 'h$(((i / 4) % 2))', n: $i};"
        done
    } | sql >/dev/null || fail "could not set up the queue"
    mount_fs
    stats=$(cat "$M/q/stats")
    assert_equal "$(jqc '[.records, .ready, .grouped]' "$stats")" '[16,4,12]'
    local log="$BATS_TEST_TMPDIR/log"
    three_workers "$log"
    run holds_within "$log" account=1 host=2
    assert_success
    echo "# $output" >&3
    stats=$(cat "$M/q/stats")
    assert_equal "$(jqc '[.records, .grouped, .groups_at_limit, .groups_at_limit_per_key, .deletes]' "$stats")" \
        '[0,0,0,{"account":0,"host":0},16]'
}

@test "AT MOST … PER host past the first key: a full host's records wait, out of claims, and come back in claim order when it has room" {
    {
        echo "DEFINE QUEUE q TIMEOUT 1m AT MOST 5 PER account AT MOST 1 PER host;"
        for i in 1 2 3 4 5 6; do
            echo "CREATE q:$i = {account: 'a', host: 'h$((i % 2))'};"
        done
    } | sql >/dev/null || fail "could not set up the queue"
    mount_fs
    # one of each host; the other four wait behind them
    assert_equal "$(ctl 'CLAIM 6 FROM q;' | jq -c '[.[].id]')" '["q:1","q:2"]'
    stats=$(cat "$M/q/stats")
    assert_equal "$(jqc '[.records, .held, .ready, .delayed, .grouped, .groups_at_limit]' "$stats")" '[6,2,0,0,4,2]'
    assert_equal "$(jqc .groups_at_limit_per_key "$stats")" '{"account":0,"host":2}'
    assert_equal "$(ctl 'CLAIM 6 FROM q;' | jq -c '[.[].id]')" '[]'
    # a named claim of a record whose host is full takes nothing
    assert_equal "$(ctl 'CLAIM q:3;' | jq -c '[.[].id]')" '[]'
    # a waiting record reads as it was: no hold, no attempt counted
    assert_equal "$(jqc '[.attempts, .hold]' "$(cat "$M/q/3")")" '[null,null]'
    # a finish lets the next of its host go, in claim order; a release too
    rm "$M/q/1"
    assert_equal "$(ctl 'CLAIM 6 FROM q;' | jq -c '[.[].id]')" '["q:3"]'
    ctl 'RELEASE q:2;' >/dev/null
    assert_equal "$(ctl 'CLAIM 6 FROM q;' | jq -c '[.[].id]')" '["q:2"]'
    # RELEASE ALL, then the rest in order as each finishes
    ctl 'RELEASE ALL FROM q;' >/dev/null
    assert_equal "$(ctl 'CLAIM 6 FROM q;' | jq -c '[.[].id]')" '["q:2","q:3"]'
    rm "$M/q/2" "$M/q/3"
    assert_equal "$(ctl 'CLAIM 6 FROM q;' | jq -c '[.[].id]')" '["q:4","q:5"]'
    rm "$M/q/4" "$M/q/5"
    assert_equal "$(ctl 'CLAIM 6 FROM q;' | jq -c '[.[].id]')" '["q:6"]'
    rm "$M/q/6"
    stats=$(cat "$M/q/stats")
    assert_equal "$(jqc '[.records, .grouped, .groups_at_limit, .claims]' "$stats")" '[0,0,0,9]'
}

@test "ALTER QUEUE adds and drops AT MOST … PER keys one at a time; INFO writes them back in declared order" {
    {
        echo "DEFINE QUEUE q TIMEOUT 1m AT MOST 1 PER account;"
        for i in 1 2 3 4; do
            echo "CREATE q:$i = {account: 'a$i', host: 'h'};"
        done
    } | sql >/dev/null || fail "could not set up the queue"
    mount_fs
    assert_equal "$(ctl 'CLAIM 1 FROM q;' | jq -c '[.[].id]')" '["q:1"]'
    # the held record counts in its host from the ALTER on
    ctl 'ALTER QUEUE q AT MOST 1 PER host;' >/dev/null
    assert_equal "$(ctl 'INFO FOR TABLE q;' | jq -r .definition)" \
        'DEFINE QUEUE q TIMEOUT 1m AT MOST 1 PER account AT MOST 1 PER host'
    assert_equal "$(ctl 'CLAIM 4 FROM q;' | jq -c '[.[].id]')" '[]'
    assert_equal "$(jqc '[.grouped, .groups_at_limit_per_key]' "$(cat "$M/q/stats")")" '[3,{"account":1,"host":1}]'
    # a larger limit takes effect at once
    ctl 'ALTER QUEUE q AT MOST 2 PER host;' >/dev/null
    assert_equal "$(ctl 'CLAIM 4 FROM q;' | jq -c '[.[].id]')" '["q:2"]'
    # dropping the key lets the rest go
    ctl 'ALTER QUEUE q DROP AT MOST PER host;' >/dev/null
    assert_equal "$(ctl 'INFO FOR TABLE q;' | jq -r .definition)" 'DEFINE QUEUE q TIMEOUT 1m AT MOST 1 PER account'
    assert_equal "$(jqc '[.grouped, .delayed, .ready]' "$(cat "$M/q/stats")")" '[0,0,2]'
    assert_equal "$(ctl 'CLAIM 4 FROM q;' | jq -c '[.[].id]')" '["q:3","q:4"]'
    # up to four keys; a fifth is refused and changes nothing
    ctl 'ALTER QUEUE q AT MOST 1 PER b AT MOST 1 PER c AT MOST 1 PER d;' >/dev/null
    run ctl 'ALTER QUEUE q AT MOST 1 PER e;'
    assert_failure
    assert_output --partial ParseError
    assert_equal "$(ctl 'INFO FOR TABLE q;' | jq -c '[.at_most_per_keys[].field]')" '["account","b","c","d"]'
    # dropping every key
    ctl 'ALTER QUEUE q DROP AT MOST PER;' >/dev/null
    assert_equal "$(ctl 'INFO FOR TABLE q;' | jq -r .definition)" 'DEFINE QUEUE q TIMEOUT 1m'
}

# rate_worker MNT LOG — takes records from MNT/r with `cat claim` until r is
# empty, logging the instant of each hand-out (claimed_until - TIMEOUT).
rate_worker() {
    local mnt=$1 log=$2 job until
    local stop=$(( $(date +%s) + 60 ))
    while [ "$(date +%s)" -lt "$stop" ]; do
        job=$(cat "$mnt/r/claim") || return 2
        if [ -z "$job" ]; then
            [ -n "$(ls "$mnt/r")" ] || return 0
            sleep 0.02
            continue
        fi
        until=$(jq -r .claimed_until <<<"$job")
        echo "$(jq -r .id <<<"$job") $until" >>"$log"
        rm "$mnt/r/$(jq -r '.id | sub("^r:"; "")' <<<"$job")"
    done
    return 1
}

@test "AT MOST 5 EVERY 1s: ten workers on two mounts never take more than 5 in any second; all are taken" {
    {
        echo "DEFINE QUEUE r TIMEOUT 1m AT MOST 5 EVERY 1s;"
        for i in $(seq 1 20); do echo "CREATE r:$i = {n: $i};"; done
    } | sql >/dev/null || fail "could not set up the queue"
    mount_fs
    mount_fs "$BATS_TEST_TMPDIR/m2"
    local log="$BATS_TEST_TMPDIR/log"
    : >"$log"
    WORKERS=
    for n in $(seq 1 10); do
        rate_worker "$([ $((n % 2)) -eq 0 ] && echo "$M" || echo "$BATS_TEST_TMPDIR/m2")" "$log" 3>&- &
        WORKERS="$WORKERS $!"
    done
    local failed=0
    for pid in $WORKERS; do wait "$pid" || failed=1; done
    WORKERS=
    [ "$failed" -eq 0 ] || fail "a worker failed, or did not see the queue empty within 60 s: $(cat "$log")"
    # Any six hand-outs in a row span at least the window.
    run python3 -c '
import calendar, sys, time
def ns(d):
    whole, _, frac = d.rstrip("Z").partition(".")
    return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) * 10**9 + int((frac + "0" * 9)[:9])
lines = [l.split() for l in open(sys.argv[1])]
ids = sorted(int(i.split(":")[1]) for i, _ in lines)
if ids != list(range(1, 21)):
    print("handed out:", ids)
    sys.exit(1)
at = sorted(ns(u) - 60 * 10**9 for _, u in lines)
for i in range(len(at) - 5):
    if at[i + 5] - at[i] < 10**9:
        print("six hand-outs within %.3f s" % ((at[i + 5] - at[i]) / 1e9))
        sys.exit(1)
print("%d hand-outs over %.3f s" % (len(at), (at[-1] - at[0]) / 1e9))
' "$log"
    assert_success
    echo "# $output" >&3
    assert_equal "$(ls "$M/r")" ""
}

@test "ALTER QUEUE … PRIORITY BY files the records anew: the next claims follow it, and DROP undoes it" {
    sql "DEFINE QUEUE q TIMEOUT 1m;
         CREATE q:1 = {p: 1}; CREATE q:2 = {p: 9}; CREATE q:3 = {p: 5}; CREATE q:4 = {p: 7};" >/dev/null
    mount_fs
    assert_equal "$(jqr .id "$(cat "$M/q/claim")")" q:1
    run ctl "ALTER QUEUE q PRIORITY BY p"
    assert_success
    assert_output 'null'
    assert_equal "$(jqr .id "$(cat "$M/q/claim")")" q:2
    assert_equal "$(jqr .id "$(cat "$M/q/claim")")" q:4
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE q')")" "DEFINE QUEUE q TIMEOUT 1m PRIORITY BY p"
    ctl "ALTER QUEUE q DROP PRIORITY BY" >/dev/null
    ctl "CREATE q:5 = {p: 100}" >/dev/null
    assert_equal "$(jqr .id "$(cat "$M/q/claim")")" q:3
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE q')")" "DEFINE QUEUE q TIMEOUT 1m"
    # The holds taken before kept their deadlines throughout.
    assert_equal "$(jqr '.held' "$(cat "$M/q/stats")")" 4
}

@test "ALTER QUEUE … AT MOST 1 PER account on a queue with records; stats and metrics show the groups" {
    sql "DEFINE QUEUE q TIMEOUT 1m;
         CREATE q:1 = {account: 'a'}; CREATE q:2 = {account: 'a'}; CREATE q:3 = {account: 'b'};
         CREATE q:4 = {account: 'a'}; CREATE q:5 = {}; CLAIM q:1;" >/dev/null
    mount_fs
    run ctl "ALTER QUEUE q AT MOST 1 PER account"
    assert_success
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE q')")" \
        "DEFINE QUEUE q TIMEOUT 1m AT MOST 1 PER account"
    # a is held already (q:1): its others wait; b and the record of no group go.
    assert_equal "$(jqc '[.[] | .id]' "$(ctl 'CLAIM 5 FROM q')")" '["q:3","q:5"]'
    assert_equal "$(cat "$M/q/claim")" ''
    stats=$(cat "$M/q/stats")
    assert_equal "$(jqc '[.records, .ready, .held, .grouped, .groups_at_limit]' "$stats")" '[5,0,3,2,2]'
    grep -qx 'queuefs_grouped_records{queue="q"} 2' "$M/metrics" || fail "metrics: $(cat "$M/metrics")"
    grep -qx 'queuefs_groups_at_limit{queue="q"} 2' "$M/metrics" || fail "metrics: $(cat "$M/metrics")"
    # Finishing a's hold lets its next record go, in claim order.
    rm "$M/q/1"
    assert_equal "$(jqr .id "$(cat "$M/q/claim")")" q:2
    # AT MOST 2: a's third is claimable too; dropping the clause frees all.
    ctl "ALTER QUEUE q AT MOST 2 PER account" >/dev/null
    assert_equal "$(jqr .id "$(cat "$M/q/claim")")" q:4
    assert_equal "$(jqr .groups_at_limit "$(cat "$M/q/stats")")" 1
    ctl "ALTER QUEUE q DROP AT MOST PER" >/dev/null
    assert_equal "$(jqc '[.grouped, .groups_at_limit]' "$(cat "$M/q/stats")")" '[0,0]'
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE q')")" "DEFINE QUEUE q TIMEOUT 1m"
}

@test "ALTER QUEUE of a PER field's value too long for a group is refused and changes nothing" {
    sql "DEFINE QUEUE q TIMEOUT 1m PRIORITY BY p;
         CREATE q:1 = {k: 'a', p: 1}; CREATE q:2 = {k: '$(printf 'x%.0s' $(seq 500))', p: 2};" >/dev/null
    mount_fs
    assert_equal "$(ctl_errno 'ALTER QUEUE q DROP PRIORITY BY AT MOST 1 PER k;')" "EFBIG TooLarge"
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE q')")" "DEFINE QUEUE q TIMEOUT 1m PRIORITY BY p"
    assert_equal "$(jqr .id "$(cat "$M/q/claim")")" q:2
    assert_equal "$(ctl_errno 'ALTER QUEUE q AT MOST 0 PER k;')" "EINVAL ParseError"
    assert_equal "$(ctl_errno 'ALTER QUEUE q AT MOST 5 EVERY 0s;')" "EINVAL ParseError"
}

@test "a wait on a rate-limited queue sleeps until the window admits the next, without spinning" {
    sql "DEFINE QUEUE q TIMEOUT 1m AT MOST 1 EVERY 2s;
         CREATE q:1 = {}; CREATE q:2 = {}; CREATE q:3 = {};" >/dev/null
    mount_fs
    local first second third pid cpu0 cpu1
    first=$(cat "$M/q/claim")
    assert_equal "$(jqr .id "$first")" q:1
    assert_equal "$(cat "$M/q/claim")" ''
    pid=$(daemon_pid "$M")
    cpu0=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    second=$(timeout 10 cat "$M/q/wait") || fail "wait did not return within 10 s"
    assert_equal "$(jqr .id "$second")" q:2
    local gap=$(( $(ns_of "$(jqr .claimed_until "$second")") - $(ns_of "$(jqr .claimed_until "$first")") ))
    [ "$gap" -ge 2000000000 ] || fail "the wait claimed $gap ns after the first, inside the window"
    [ "$gap" -lt 4000000000 ] || fail "the wait claimed $gap ns after the first: it overslept"
    # CLAIM … WAIT through ctl sleeps the same way.
    third=$(ctl "CLAIM FROM q WAIT 10s")
    assert_equal "$(jqr '.[0].id' "$third")" q:3
    gap=$(( $(ns_of "$(jqr '.[0].claimed_until' "$third")") - $(ns_of "$(jqr .claimed_until "$second")") ))
    [ "$gap" -ge 2000000000 ] || fail "CLAIM … WAIT claimed $gap ns after the one before"
    # Four seconds of waiting cost the daemon well under a second of CPU.
    cpu1=$(awk '{ print $14 + $15 }' "/proc/$pid/stat")
    echo "# the daemon used $((cpu1 - cpu0)) ticks of CPU over two waits of 2 s" >&3
    [ $((cpu1 - cpu0)) -lt "$(( $(getconf CLK_TCK) / 2 ))" ] ||
        fail "the daemon used $((cpu1 - cpu0)) ticks of CPU while waiting"
}

@test "only a queue's owner may ALTER, PAUSE or RESUME it, even when others may write it" {
    # The mount point must be reachable by the second user (nobody).
    SHARED=$(mktemp -d /tmp/queuefs-limits.XXXXXX)
    chmod 0755 "$SHARED"
    M="$SHARED/m"
    mount_fs -o allow_other,default_permissions "$M"
    echo 'DEFINE QUEUE jobs TIMEOUT 1m;' >"$M/ctl"
    chmod 0777 "$M/jobs"
    run setpriv --reuid=65534 --regid=65534 --clear-groups "$QUEUEFS_CTL" "$M" "CREATE jobs:1 = {};"
    assert_success
    local stmt
    for stmt in "ALTER QUEUE jobs TIMEOUT 1h;" "ALTER QUEUE jobs AT MOST 1 PER a;" \
        "PAUSE QUEUE jobs;" "RESUME QUEUE jobs;"; do
        run setpriv --reuid=65534 --regid=65534 --clear-groups "$QUEUEFS_CTL" "$M" "$stmt"
        assert_failure
        assert_output --partial '"error":"PermissionDenied"'
    done
    assert_equal "$(jqc '[.definition, .paused]' "$(sql 'INFO FOR TABLE jobs')")" \
        '["DEFINE QUEUE jobs TIMEOUT 1m",false]'
    run "$QUEUEFS_CTL" "$M" "ALTER QUEUE jobs TIMEOUT 1h; PAUSE QUEUE jobs;"
    assert_success
}

@test "ALTER QUEUE … AT MOST n EVERY d goes on from the hand-outs kept: a larger n has room for the difference, a smaller one looks at the newest n, a shorter window lets the older go, a longer one holds them again" {
    sql "DEFINE QUEUE q TIMEOUT 1m AT MOST 3 EVERY 1h;" >/dev/null
    for i in $(seq 10); do echo "CREATE q:$i = {};"; done | sql >/dev/null
    taken() { sql "$1 CLAIM 5 FROM q;" | jq -s 'last | length'; }
    assert_equal "$(taken '')" 3
    assert_equal "$(taken '')" 0
    assert_equal "$(taken 'ALTER QUEUE q AT MOST 4 EVERY 1h;')" 1
    assert_equal "$(taken 'ALTER QUEUE q AT MOST 2 EVERY 1h;')" 0
    sleep 1.1 # so the four hand-outs are over a second old
    assert_equal "$(taken 'ALTER QUEUE q AT MOST 2 EVERY 1s;')" 2
    assert_equal "$(taken 'ALTER QUEUE q AT MOST 6 EVERY 1h;')" 0
    assert_equal "$(taken 'ALTER QUEUE q AT MOST 8 EVERY 1h;')" 2
    assert_equal "$(sql 'SELECT * FROM q;' | jq '[.[] | select(.hold == null)] | length')" 2
}
