#!/usr/bin/env bats
# history.bats — SPEC section 8 on a real mount: why each attempt of a
# record failed (RELEASE … BECAUSE, the released/ file form, lapses),
# kept in the record as the engine's fields errors and last_error.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/history.bats
#
# Needs what mount.bats needs.

load mount_helpers

# claim_hold — claims the head of q through the mount; prints its hold.
claim_hold() {
    jq -r .hold <"$M/q/claim"
}

@test "a record released with three reasons, then dead, shows all three in dead/7, oldest first, with their attempts" {
    sql "DEFINE QUEUE q TIMEOUT 30s ATTEMPTS 3; CREATE q:7 = {url: 'a'};" >/dev/null
    mount_fs
    local hold why
    for why in "HTTP 503" "connection reset" "disk full"; do
        hold=$(claim_hold)
        printf '%s\n' "$why" >"$M/q/released/7~$hold" || fail "the release of hold $hold failed"
    done
    [ -e "$M/q/dead/7" ] || fail "q:7 is not dead after three attempts"
    assert_equal "$(jq -c '[.errors[] | [.attempt, .error]]' "$M/q/dead/7")" \
        '[[1,"HTTP 503"],[2,"connection reset"],[3,"disk full"]]'
    assert_equal "$(jq -r .last_error "$M/q/dead/7")" "disk full"
    # Each at its release, and in every JSON of the record.
    local at
    at=$(jq -r '.errors[2].at' "$M/q/7")
    assert_near "$(epoch_of "$at")" "$(date +%s)" 5
    assert_equal "$(sql 'SELECT last_error FROM q;' | jq -c .)" '[{"last_error":"disk full"}]'
}

@test "a lapse is recorded as \"lapsed\" at its deadline: shown once the hold ran out, kept by the claim that finds it, by RETRY too" {
    sql "DEFINE QUEUE q TIMEOUT 1s; CREATE q:7 = {};" >/dev/null
    mount_fs
    local first second
    first=$(jq -r .claimed_until <"$M/q/claim")
    [ "$(jq -c .errors "$M/q/7")" = null ] || fail "errors while the hold runs: $(cat "$M/q/7")"
    sleep 1.2
    assert_equal "$(jq -c '.errors | map([.attempt, .at, .error])' "$M/q/7")" "[[1,\"$first\",\"lapsed\"]]"
    second=$(jq -r .claimed_until <"$M/q/claim")
    assert_equal "$(jq -c '[.errors[] | [.attempt, .at, .error]], .last_error' "$M/q/7" | paste -sd' ')" \
        "[[1,\"$first\",\"lapsed\"]] \"lapsed\""
    sleep 1.2
    run ctl "RETRY q:7"
    assert_success
    assert_equal "$(jqc '.[0] | [.attempts, [.errors[] | [.attempt, .at]]]' "$output")" \
        "[0,[[1,\"$first\"],[2,\"$second\"]]]"
}

@test "25 failed attempts keep the last 20; RELEASE ALL … BECAUSE gives each hold it ends the reason" {
    sql "DEFINE QUEUE q TIMEOUT 30s; CREATE q:7 = {}; CREATE q:8 = {};" >/dev/null
    mount_fs
    local i script=''
    for i in $(seq 25); do script+="CLAIM q:7; RELEASE q:7 BECAUSE 'fail $i';"$'\n'; done
    run ctl "$script"
    assert_success
    assert_equal "$(jq -c '[(.errors | length), .errors[0].error, .errors[0].attempt, .last_error]' "$M/q/7")" \
        '[20,"fail 6",6,"fail 25"]'
    run ctl "CLAIM 2 FROM q; RELEASE ALL FROM q BECAUSE 'shutting down';"
    assert_success
    assert_equal "$(jq -r .last_error "$M/q/7") $(jq -r .last_error "$M/q/8")" "shutting down shutting down"
    assert_equal "$(jq -c '.errors | length' "$M/q/7")" 20
}

@test "released/ as a file: a stale fence or a missing record fails the open (ENOENT), @WHEN needs NOT BEFORE (EOPNOTSUPP), and none of them changes anything" {
    sql "DEFINE QUEUE q TIMEOUT 30s; CREATE q:7 = {}; DEFINE QUEUE d TIMEOUT 30s NOT BEFORE due; CREATE d:1 = {};" >/dev/null
    mount_fs
    local hold
    hold=$(claim_hold)
    assert_equal "$(errno_of 'os.open(a[2], os.O_WRONLY | os.O_CREAT)' "$M/q/released/7~$((hold + 1))")" ENOENT
    assert_equal "$(errno_of 'os.open(a[2], os.O_WRONLY | os.O_CREAT)' "$M/q/released/9")" ENOENT
    assert_equal "$(errno_of 'os.open(a[2], os.O_WRONLY | os.O_CREAT)' "$M/q/released/7~$hold@10m")" EOPNOTSUPP
    assert_equal "$(jq -c '[.hold, .errors]' "$M/q/7")" "[$hold,null]"
    # With NOT BEFORE: released, delayed, and the reason kept.
    hold=$(jq -r .hold <"$M/d/claim")
    printf 'try later\n' >"$M/d/released/1~$hold@1h" || fail "the release failed"
    assert_equal "$(jq -c '[.hold, .last_error]' "$M/d/1")" '[null,"try later"]'
    assert_near "$(epoch_of "$(jq -r .due "$M/d/1")")" $(($(date +%s) + 3600)) 5
    [ -z "$(ls -A "$M/d/released")" ] || fail "released/ lists: $(ls -A "$M/d/released")"
}

@test "released/ as a file: the final newline dropped, 4 KiB kept of a longer reason, a write that is not text refused (EINVAL) with nothing released, and nothing written is a release without a reason" {
    sql "DEFINE QUEUE q TIMEOUT 30s; CREATE q:7 = {};" >/dev/null
    mount_fs
    local hold
    hold=$(claim_hold)
    printf 'two\nlines\n\n' >"$M/q/released/7~$hold"
    assert_equal "$(jq -c .last_error "$M/q/7")" '"two\nlines\n"'
    hold=$(claim_hold)
    head -c 5000 /dev/zero | tr '\0' 'x' >"$M/q/released/7~$hold"
    assert_equal "$(jq '.last_error | length' "$M/q/7")" 4096
    hold=$(claim_hold)
    assert_equal "$(errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_CREAT); os.write(fd, b"\xff\n")' \
        "$M/q/released/7~$hold")" EINVAL
    assert_equal "$(jq -c '[.hold, (.errors | length)]' "$M/q/7")" "[$hold,2]"
    : >"$M/q/released/7~$hold"
    assert_equal "$(jq -c '[.hold, (.errors | length)]' "$M/q/7")" "[null,2]"
}

@test "errors and last_error are the engine's: refused to writers through files and ctl (EPERM, QueueFieldIsTheEngines); a record read back is written back" {
    sql "DEFINE QUEUE q TIMEOUT 30s; CREATE q:7 = {n: 1}; CLAIM q:7; RELEASE q:7 BECAUSE 'boom';" >/dev/null
    mount_fs
    assert_equal "$(errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC); os.write(fd, b"{\"last_error\": \"x\"}")' \
        "$M/q/8")" EPERM
    run --separate-stderr sql 'UPDATE q:7 MERGE {errors: []};'
    assert_error QueueFieldIsTheEngines
    jq -c '.n = 2 | del(.id)' "$M/q/7" >"$BATS_TEST_TMPDIR/rec"
    cp "$BATS_TEST_TMPDIR/rec" "$M/q/7" || fail "writing back what was read failed"
    assert_equal "$(jq -c '[.n, .last_error]' "$M/q/7")" '[2,"boom"]'
}

@test "a line of new that carries id creates that identity (a record's own id read back too; another table's names none); DEDUPLICATE drops a repeat; an id taken is EEXIST for the whole write" {
    sql "DEFINE QUEUE q TIMEOUT 30s; DEFINE QUEUE d TIMEOUT 30s DEDUPLICATE 10m;" >/dev/null
    mount_fs
    printf '%s\n' '{"id":"bucket/key","n":1}' '{"n":2}' '{"id":7,"n":3}' '{"id":"other:5","n":4}' \
        '{"id":"q:abc","n":5}' >>"$M/q/new"
    assert_equal "$(sql 'SELECT id, n FROM q;' | jq -c 'map([.id, .n])')" \
        "[[\"q:1\",2],[\"q:7\",3],[\"q:8\",4],[\"q:abc\",5],[\"q:'bucket/key'\",1]]"
    # A record read back and appended names itself: it exists, so the whole
    # write (one write(), one transaction) is refused.
    printf '%s\n' '{"n":6}' "$(jq -c '.n = 9' "$M/q/7")" >"$BATS_TEST_TMPDIR/lines"
    assert_equal "$(errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND); os.write(fd, open(a[3], "rb").read())' \
        "$M/q/new" "$BATS_TEST_TMPDIR/lines")" EEXIST
    assert_equal "$(sql 'SELECT n FROM q WHERE n >= 6;')" '[]'
    printf '%s\n' '{"id":"k","v":1}' >>"$M/d/new"
    printf '%s\n' '{"id":"k","v":2}' '{"id":"d:k","v":3}' '{"id":"j","v":4}' >>"$M/d/new"
    assert_equal "$(sql 'SELECT id, v FROM d;' | jq -c 'map([.id, .v])')" '[["d:j",4],["d:k",1]]'
    assert_equal "$(errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND); os.write(fd, b"{\"id\": [1]}\n")' "$M/q/new")" EINVAL
}

@test "KEEP: a finish marks the record done — out of ls and claims, in done/, read by name and by SELECT with completed_at, counted in stats; rm done/7 removes it" {
    sql "DEFINE QUEUE q TIMEOUT 30s KEEP 1h; CREATE q:7 = {url: 'a'}; CREATE q:8 = {url: 'b'};" >/dev/null
    mount_fs
    assert_equal "$(jq -r .id <"$M/q/claim")" q:7
    rm "$M/q/7" || fail "the finish failed"
    assert_equal "$(ls "$M/q")" 8
    assert_equal "$(ls "$M/q/done")" 7
    assert_equal "$(jq -c '[.url, .attempts, .hold]' "$M/q/7")" '["a",1,null]'
    assert_equal "$(jq -c 'del(.completed_at)' "$M/q/done/7")" "$(jq -c 'del(.completed_at)' "$M/q/7")"
    assert_near "$(epoch_of "$(jq -r .completed_at "$M/q/7")")" "$(date +%s)" 5
    assert_equal "$(sql 'SELECT id, completed_at != NONE AS done FROM q;' | jq -c 'map([.id, .done])')" \
        '[["q:7",true],["q:8",false]]'
    assert_equal "$(jq -c '[.records, .done, .ready, .deletes]' "$M/q/stats")" '[1,1,1,1]'
    grep -q '^queuefs_done{queue="q"} 1$' "$M/metrics" || fail "no done in metrics: $(grep -F queuefs_done "$M/metrics")"
    # Never claimed again; RETRY does not revive it; completed_at is the engine's.
    assert_equal "$(jq -r .id <"$M/q/claim")" q:8
    assert_equal "$(cat "$M/q/claim")" ""
    run --separate-stderr sql 'RETRY q:7;'
    assert_error NoSuchRecord
    run --separate-stderr sql 'UPDATE q:8 MERGE {completed_at: time::now()};'
    assert_error QueueFieldIsTheEngines
    # rm of a record that is not done, through done/: ENOENT; of a done one: gone.
    assert_equal "$(errno_of 'os.unlink(a[2])' "$M/q/done/8")" ENOENT
    rm "$M/q/done/7" || fail "rm done/7 failed"
    [ ! -e "$M/q/7" ] || fail "q:7 still there: $(cat "$M/q/7")"
    assert_equal "$(jq -c '[.records, .done]' "$M/q/stats")" '[1,0]'
}

@test "KEEP 1s: 200 finished records leave done/ 1.3 s later, the next write removes them from the store, and CREATE of a done identity is new work" {
    sql "DEFINE QUEUE q TIMEOUT 30s KEEP 1s;" >/dev/null
    mount_fs
    local script=''
    # One transaction, one instant: none of the 200 has expired when the
    # last is finished, however long the write took.
    for i in $(seq 200); do script+="CREATE q:$i = {n: $i}; DELETE q:$i;"$'\n'; done
    run ctl "BEGIN;"$'\n'"${script}COMMIT;"
    assert_success
    assert_equal "$(jq -c '[.records, .done]' "$M/q/stats")" '[0,200]'
    sleep 1.3
    assert_equal "$(find "$M/q/done" -mindepth 1 | wc -l)" 0
    [ ! -e "$M/q/5" ] || fail "an expired done record is still read: $(cat "$M/q/5")"
    assert_equal "$(sql 'SELECT id FROM q;')" '[]'
    # Expired, but still stored until a write of the queue removes them.
    assert_equal "$(jq -c .done "$M/q/stats")" 200
    echo '{"n": 0}' >"$M/q/500"
    assert_equal "$(sql 'INFO FOR TABLE q;' | jq -r .keep)" 1s
    assert_equal "$(jq -c '[.records, .done]' "$M/q/stats")" '[1,0]'
    # A finished identity created again is new work: attempts and errors gone.
    run ctl "CLAIM q:500; RELEASE q:500 BECAUSE 'boom'; CLAIM q:500; DELETE q:500; CREATE q:500 = {n: 1};"
    assert_success
    assert_equal "$(jq -c '[.n, .attempts, .errors, .completed_at]' "$M/q/500")" '[1,null,null,null]'
    assert_equal "$(jq -r .id <"$M/q/claim")" q:500
}

@test "ALTER QUEUE … DROP KEEP removes the done records; a finish then removes" {
    sql "DEFINE QUEUE q TIMEOUT 30s KEEP 1d; CREATE q:1 = {}; CREATE q:2 = {}; DELETE q:1;" >/dev/null
    mount_fs
    assert_equal "$(ls "$M/q/done")" 1
    ctl "ALTER QUEUE q DROP KEEP;"
    assert_equal "$(ls "$M/q/done")" ""
    assert_equal "$(jq -c '[.records, .done]' "$M/q/stats")" '[1,0]'
    rm "$M/q/2"
    assert_equal "$(jq -c '[.records, .done]' "$M/q/stats")" '[0,0]'
}

@test "COALESCE: a CREATE of a waiting record raises its priority and brings its NOT BEFORE forward, keeping its place; of a held one runs it once more after its finish" {
    sql "DEFINE QUEUE q TIMEOUT 30s PRIORITY BY demand NOT BEFORE due COALESCE;
         DEFINE FIELD due ON q TYPE option<datetime>;" >/dev/null
    mount_fs
    printf '%s\n' '{"id":"a","demand":1,"note":"first"}' '{"id":"b","demand":2}' \
        '{"id":"c","demand":1,"due":"2099-01-01T00:00:00Z"}' >>"$M/q/new"
    # a's demand rises above b's; the rest of a stays.
    printf '%s\n' '{"id":"a","demand":5,"note":"second"}' '{"id":"b","demand":1}' >>"$M/q/new"
    assert_equal "$(jq -c '[.demand, .note]' "$M/q/a")" '[5,"first"]'
    assert_equal "$(jq -c .demand "$M/q/b")" 2
    run ctl "CREATE q:c = {demand: 0};"
    assert_success
    assert_equal "$(jq -c '[.[0].demand, .[0].due]' <<<"$output")" '[1,null]'
    assert_equal "$(sql 'SELECT id FROM q;' | jq -c 'map(.id)')" '["q:a","q:b","q:c"]'
    assert_equal "$(jq -r .id <"$M/q/claim")" q:a
    # Held: marked; its finish hands it out again, as new work.
    echo '{"id":"a","demand":9}' >>"$M/q/new"
    rm "$M/q/a" || fail "the finish of a failed"
    assert_equal "$(jq -c '[.attempts, .hold, .demand]' "$M/q/a")" '[0,null,5]'
    assert_equal "$(jq -r .id <"$M/q/claim")" q:a
    rm "$M/q/a"
    [ ! -e "$M/q/a" ] || fail "a ran a third time: $(cat "$M/q/a")"
    # A dead record is not demand: EEXIST, as without COALESCE.
    run --separate-stderr sql 'DEFINE QUEUE d TIMEOUT 30s ATTEMPTS 1 COALESCE; CREATE d:1 = {}; CLAIM d:1; RELEASE d:1; CREATE d:1 = {};'
    assert_error RecordExists
}
