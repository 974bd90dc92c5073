#!/usr/bin/env bats
# after.bats — SPEC section 9's CREATE … AFTER on a real mount: a record
# that is not handed out until the records it names have finished
# (deleted, or done on a KEEP queue), shown as blocked.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/after.bats
#
# Needs what mount.bats needs.

load mount_helpers

# listed DIR — the names in DIR, space-separated, in glob order.
listed() {
    local f names=()
    for f in "$1"/*; do
        [ -e "$f" ] && names+=("${f##*/}")
    done
    echo "${names[*]}"
}

# claimed_ids — claims everything claimable of q through ctl; prints the
# ids taken, space-separated, in claim order.
claimed_ids() {
    ctl "CLAIM 100 FROM q" | jq -r 'map(.id) | join(" ")'
}

@test "CREATE … AFTER: blocked until every record it names has finished — out of claims, in blocked/, \"after\" shows what is outstanding, counted as blocked; then claimable in its place" {
    sql "DEFINE QUEUE q TIMEOUT 30s; DEFINE QUEUE other TIMEOUT 30s;
         CREATE q:1 = {n: 1}; CREATE other:3 = {n: 3};
         CREATE q:5 = {n: 5} AFTER q:1, other:3, q:99; CREATE q:6 = {n: 6};" >/dev/null
    mount_fs
    # q:99 does not exist: it counts as finished.
    assert_equal "$(jq -c .after "$M/q/5")" '["q:1","other:3"]'
    assert_equal "$(ls "$M/q/blocked")" 5
    assert_equal "$(jq -c '[.records, .ready, .delayed, .blocked]' "$M/q/stats")" '[3,2,0,1]'
    grep -q '^queuefs_blocked{queue="q"} 1$' "$M/metrics" || fail "no blocked in metrics: $(grep -F blocked "$M/metrics")"
    assert_equal "$(claimed_ids)" "q:1 q:6"
    rm "$M/q/1" || fail "finishing q:1 failed"
    assert_equal "$(jq -c .after "$M/q/5")" '["other:3"]'
    assert_equal "$(claimed_ids)" ""
    rm "$M/other/3" || fail "finishing other:3 failed"
    assert_equal "$(jq -c .after "$M/q/5")" null
    assert_equal "$(ls "$M/q/blocked")" ""
    assert_equal "$(jq -c '[.records, .ready, .blocked]' "$M/q/stats")" '[2,1,0]'
    assert_equal "$(jq -c '[.id, .n]' <"$M/q/claim")" '["q:5",5]'
}

@test "an unblocked record keeps its place in claim order; a record done on a KEEP queue has finished, a dead one has not (RETRY of the blocked one does not free it); rm dead/ID does; NOT BEFORE holds after" {
    sql "DEFINE QUEUE k TIMEOUT 30s KEEP 1h; DEFINE QUEUE q TIMEOUT 30s ATTEMPTS 1 NOT BEFORE due;
         CREATE k:1 = {}; CREATE q:1 = {}; CREATE q:2 = {} AFTER k:1; CREATE q:3 = {};
         CREATE q:4 = {} AFTER q:1; CREATE q:5 = {due: time::now() + 1h} AFTER q:1;" >/dev/null
    mount_fs
    assert_equal "$(jq -r .id <"$M/k/claim")" k:1
    rm "$M/k/1" || fail "finishing k:1 failed"
    [ -e "$M/k/done/1" ] || fail "k:1 is not done"
    # q:2 came before q:3 and goes before it; q:1 dies at its first attempt.
    local hold
    hold=$(ctl "CLAIM q:1" | jq -r '.[0].hold')
    ctl "RELEASE q:1~$hold" >/dev/null
    [ -e "$M/q/dead/1" ] || fail "q:1 is not dead"
    assert_equal "$(claimed_ids)" "q:2 q:3"
    assert_equal "$(listed "$M/q/blocked")" "4 5"
    local due
    due=$(jq -r .due "$M/q/5")
    ctl "RETRY q:4 NOT BEFORE 1s" >/dev/null
    sleep 1.2
    assert_equal "$(claimed_ids)" ""
    assert_equal "$(jq -c .after "$M/q/4")" '["q:1"]'
    rm "$M/q/dead/1" || fail "rm dead/1 failed"
    assert_equal "$(claimed_ids)" "q:4"
    assert_equal "$(jq -r .due "$M/q/5")" "$due"
    assert_equal "$(jq -c '[.delayed, .blocked]' "$M/q/stats")" '[1,0]'
}

@test "a line of new carries \"after\" (a record of the same write too); a malformed one is EINVAL and the write creates nothing" {
    sql "DEFINE QUEUE q TIMEOUT 30s;" >/dev/null
    mount_fs
    printf '%s\n' '{"id":1,"step":"fetch"}' '{"id":2,"step":"parse","after":["q:1"]}' \
        '{"id":3,"step":"report","after":["q:2",1]}' >>"$M/q/new"
    assert_equal "$(listed "$M/q/blocked")" "2 3"
    assert_equal "$(jq -c '[.step, .after]' "$M/q/3")" '["report",["q:2","q:1"]]'
    assert_equal "$(errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND); os.write(fd, b"{\"id\":4}\n{\"after\":\"q:1\"}\n")' \
        "$M/q/new")" EINVAL
    assert_equal "$(errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND); os.write(fd, b"{\"after\":[\"nonsense here\"]}\n")' \
        "$M/q/new")" EINVAL
    [ ! -e "$M/q/4" ] || fail "q:4 was created by a write that failed"
    local id
    for id in 1 2 3; do
        assert_equal "$(jq -r .step <"$M/q/claim")" "$(jq -r .step "$M/q/$id")"
        rm "$M/q/$id" || fail "finishing q:$id failed"
    done
}

@test "\"after\" is the engine's: refused to writers through files and ctl (EPERM, QueueFieldIsTheEngines), kept by a write of the whole record; rm blocked/ID removes a blocked record" {
    sql "DEFINE QUEUE q TIMEOUT 30s; CREATE q:1 = {}; CREATE q:2 = {n: 1} AFTER q:1;" >/dev/null
    mount_fs
    assert_equal "$(errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC); os.write(fd, b"{\"after\": [\"q:1\"]}")' \
        "$M/q/8")" EPERM
    run --separate-stderr sql 'UPDATE q:2 MERGE {after: []};'
    assert_error QueueFieldIsTheEngines
    run --separate-stderr sql 'CREATE q:9 = {after: ["q:1"]};'
    assert_error QueueFieldIsTheEngines
    # A whole-record write, with "after" read back or without it, keeps it.
    jq -c '.n = 2 | del(.id)' "$M/q/2" >"$BATS_TEST_TMPDIR/rec"
    cp "$BATS_TEST_TMPDIR/rec" "$M/q/2" || fail "writing back what was read failed"
    echo '{"n": 3}' >"$M/q/2" || fail "writing the record failed"
    assert_equal "$(jq -c '[.n, .after]' "$M/q/2")" '[3,["q:1"]]'
    assert_equal "$(claimed_ids)" "q:1"
    # rm through blocked/ of a record that is not blocked: ENOENT.
    assert_equal "$(errno_of 'os.unlink(a[2])' "$M/q/blocked/1")" ENOENT
    rm "$M/q/blocked/2" || fail "rm blocked/2 failed"
    [ ! -e "$M/q/2" ] || fail "q:2 is still there"
    assert_equal "$(jq -c '[.records, .blocked]' "$M/q/stats")" '[1,0]'
}

@test "AFTER refuses a collection's record and a table that does not exist; a dropped queue's records have finished; under COALESCE a finish that runs the record again is no finish" {
    sql "DEFINE COLLECTION c; DEFINE QUEUE q TIMEOUT 30s COALESCE; DEFINE QUEUE gone TIMEOUT 30s;
         CREATE gone:1 = {}; CREATE q:1 = {}; CREATE q:2 = {} AFTER gone:1; CREATE q:3 = {} AFTER q:1;" >/dev/null
    run --separate-stderr sql 'CREATE c:1 = {} AFTER q:1;'
    assert_error WrongKind
    run --separate-stderr sql 'CREATE q:4 = {} AFTER nosuch:1;'
    assert_error NoSuchTable
    run --separate-stderr sql 'CREATE q:4 = {} AFTER q;'
    assert_error ParseError
    mount_fs
    assert_equal "$(listed "$M/q/blocked")" "2 3"
    sql 'DROP QUEUE gone;' >/dev/null
    assert_equal "$(ls "$M/q/blocked")" 3
    # q:1 is held, created again (COALESCE: run once more), then finished:
    # it is handed out again, so q:3 still waits; the second finish frees it.
    assert_equal "$(jq -r .id <"$M/q/claim")" q:1
    ctl "CREATE q:1 = {}" >/dev/null
    rm "$M/q/1" || fail "the first finish failed"
    assert_equal "$(jq -c .after "$M/q/3")" '["q:1"]'
    assert_equal "$(jq -r .id <"$M/q/claim")" q:1
    rm "$M/q/1" || fail "the second finish failed"
    assert_equal "$(claimed_ids)" "q:2 q:3"
}

@test "a thousand blocked records on one record: none is handed out, and the one finish frees them all in one write" {
    local script='DEFINE QUEUE q TIMEOUT 30s; CREATE q:0 = {};'
    local i
    for i in $(seq 1 1000); do script+=" CREATE q:$i = {} AFTER q:0;"; done
    sql "$script" >/dev/null
    mount_fs
    assert_equal "$(jq -c '[.ready, .blocked]' "$M/q/stats")" '[1,1000]'
    assert_equal "$(claimed_ids)" "q:0"
    rm "$M/q/0" || fail "the finish failed"
    assert_equal "$(jq -c '[.ready, .blocked]' "$M/q/stats")" '[1000,0]'
    assert_equal "$(ctl 'CLAIM 1000 FROM q' | jq length)" 1000
}

@test "a fan-in: a report AFTER 500 imports is claimable only after the 500th finish" {
    sql "DEFINE QUEUE imports TIMEOUT 30s; DEFINE QUEUE reports TIMEOUT 30s;" >/dev/null
    mount_fs
    local i after=()
    for i in $(seq 500); do printf '{"id":%d}\n' "$i"; done >>"$M/imports/new"
    for i in $(seq 500); do after+=("\"imports:$i\""); done
    printf '{"id":"daily","after":[%s]}\n' "$(IFS=,; echo "${after[*]}")" >>"$M/reports/new"
    assert_equal "$(jq '.after | length' "$M/reports/daily")" 500
    local ids
    for i in $(seq 5); do
        ids=$(ctl 'CLAIM 100 FROM imports' | jq -r 'map(.id) | join(", ")')
        if [ "$i" = 5 ]; then
            # all but the last: the report still waits for one
            ctl "DELETE ${ids%, *}" >/dev/null
            assert_equal "$(jq -c .after "$M/reports/daily")" '["imports:500"]'
            assert_equal "$(cat "$M/reports/claim")" ""
            ctl "DELETE ${ids##*, }" >/dev/null
        else
            ctl "DELETE $ids" >/dev/null
        fi
    done
    assert_equal "$(jq -r .id <"$M/reports/claim")" "reports:daily"
}

@test "a chain of 100 records, each AFTER the one before, is handed out one at a time, in order" {
    sql "DEFINE QUEUE steps TIMEOUT 30s;" >/dev/null
    mount_fs
    local i got
    {
        printf '{"id":1}\n'
        for i in $(seq 2 100); do printf '{"id":%d,"after":[%d]}\n' "$i" $((i - 1)); done
    } >>"$M/steps/new"
    assert_equal "$(jq -c '[.ready, .blocked]' "$M/steps/stats")" '[1,99]'
    for i in $(seq 100); do
        got=$(ctl 'CLAIM 100 FROM steps' | jq -r 'map(.id) | join(" ")')
        [ "$got" = "steps:$i" ] || fail "claim $i took '$got'"
        rm "$M/steps/$i" || fail "finishing steps:$i failed"
    done
    assert_equal "$(jq -c '[.records, .blocked]' "$M/steps/stats")" '[0,0]'
}
