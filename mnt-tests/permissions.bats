#!/usr/bin/env bats
# permissions.bats — with -o allow_other,default_permissions a queue
# directory's owner and mode decide who may read, claim, create, release
# and delete in it, through files and through ctl alike; chmod and chown of
# a queue directory persist in the store.  The second user is nobody
# (uid 65534), reached with setpriv.

# refused_alike reads the $output and $status its own run sets, in the
# test that calls it: each @test is a process of its own on purpose.
# shellcheck disable=SC2030,SC2031
load mount_helpers

# The mount point must be reachable by the second user, so it lives in a
# directory everyone may traverse rather than in the test's private one.
eval "$(declare -f setup | sed '1s/^setup/mount_setup/')"
eval "$(declare -f teardown | sed '1s/^teardown/mount_teardown/')"
setup() {
    mount_setup
    SHARED=$(mktemp -d /tmp/queuefs-permissions.XXXXXX)
    chmod 0755 "$SHARED"
    M="$SHARED/m"
    mkdir -p "$M"
    export M
}
teardown() {
    mount_teardown
    rm -rf "$SHARED"
}

# as_nobody CMD… — runs CMD as uid/gid 65534 with no supplementary groups.
as_nobody() {
    setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

mount_shared() {
    mount_fs -o allow_other,default_permissions
    echo 'DEFINE QUEUE jobs TIMEOUT 1m NOT BEFORE due;' >"$M/ctl"
    printf '%s\n' '{"n":1}' '{"n":2}' '{"n":3}' >>"$M/jobs/new"
}

@test "permissions: a queue's directory shows its owner and mode, its files follow it" {
    mount_shared
    chmod 0750 "$M/jobs"
    run stat -c '%a %U' "$M/jobs" "$M/jobs/1" "$M/jobs/claim" "$M/jobs/new" "$M/jobs/stats"
    assert_success
    assert_equal "$(tr '\n' ' ' <<<"$output")" "750 root 640 root 400 root 200 root 440 root "
}

@test "permissions: a user who may not write jobs/ can neither claim, create, release nor delete, by file or ctl" {
    mount_shared
    chmod 0755 "$M/jobs"
    run as_nobody cat "$M/jobs/claim"
    assert_failure
    assert_output --partial "Permission denied"
    run as_nobody sh -c "printf '{\"x\":1}\n' >> '$M/jobs/new'"
    assert_failure
    run as_nobody rm -f "$M/jobs/1"
    assert_failure
    # Nor hand back, with a reason, a record another user claimed.
    local hold
    hold=$(jq .hold <"$M/jobs/claim")
    run as_nobody sh -c "printf 'why\n' > '$M/jobs/released/1~$hold'"
    assert_failure
    assert_output --partial "Permission denied"
    assert_equal "$(jq -c '[.hold, .errors]' "$M/jobs/1")" "[$hold,null]"
    run as_nobody "$QUEUEFS_CTL" "$M" "RELEASE jobs:1 BECAUSE 'why';"
    assert_failure
    assert_output --partial PermissionDenied
    run as_nobody "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs;"
    assert_failure
    assert_output --partial '"error":"PermissionDenied"'
    run as_nobody "$QUEUEFS_CTL" "$M" "CREATE jobs = {x: 1};"
    assert_failure
    assert_output --partial PermissionDenied
    run as_nobody "$QUEUEFS_CTL" "$M" "DELETE jobs:1;"
    assert_failure
    # Reading is allowed by 0755: files and SELECT alike, and nothing changed.
    run as_nobody cat "$M/jobs/2"
    assert_success
    assert_output '{"id":"jobs:2","n":2}'
    run as_nobody "$QUEUEFS_CTL" "$M" "SELECT * FROM jobs;"
    assert_success
    assert_equal "$(jq length <<<"$output")" 3
    run sql "SELECT id FROM jobs WHERE attempts >= 1;"
    assert_output '[{"id":"jobs:1"}]'
}

@test "permissions: a user who may not read jobs/ can neither list, read nor SELECT it" {
    mount_shared
    chmod 0700 "$M/jobs"
    run as_nobody ls "$M/jobs"
    assert_failure
    run as_nobody cat "$M/jobs/1"
    assert_failure
    run as_nobody "$QUEUEFS_CTL" "$M" "SELECT * FROM jobs;"
    assert_failure
    assert_output --partial PermissionDenied
    run as_nobody "$QUEUEFS_CTL" "$M" "INFO FOR TABLE jobs;"
    assert_failure
}

@test "permissions: AFTER may name only records of tables the writer may read; the tables it touches keep their owners" {
    mount_shared
    chmod 0700 "$M/jobs"
    as_nobody mkdir "$M/mine" || fail "nobody could not make a table"
    as_nobody sh -c "echo '{}' >'$M/mine/1'" || fail "nobody could not write mine/1"
    echo 'DEFINE QUEUE steps TIMEOUT 1m;' >"$M/ctl"
    chmod 0777 "$M/steps"
    run as_nobody "$QUEUEFS_CTL" "$M" "CREATE steps:1 = {} AFTER jobs:1;"
    assert_failure
    assert_output --partial PermissionDenied
    assert_equal "$(sql 'SELECT id FROM steps;')" '[]'
    run as_nobody "$QUEUEFS_CTL" "$M" "CREATE steps:1 = {} AFTER mine:1;"
    assert_success
    assert_equal "$(jq -c .after "$M/steps/1")" '["mine:1"]'
    assert_equal "$(stat -c '%u %a' "$M/jobs" "$M/mine" "$M/steps" | paste -sd' ')" "0 700 65534 755 0 777"
}

@test "permissions: with write permission, another user claims, releases and finishes" {
    mount_shared
    chmod 0777 "$M/jobs"
    run as_nobody cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqr .id "$output")" "jobs:1"
    run as_nobody mv "$M/jobs/1" "$M/jobs/released/1@1h"
    assert_success
    run as_nobody rm "$M/jobs/2"
    assert_success
    run as_nobody "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs;"
    assert_success
    assert_equal "$(jqr '.[0].id' "$output")" "jobs:3"
    run as_nobody sh -c "printf 'HTTP 503\n' > '$M/jobs/released/3~$(jqr '.[0].hold' "$output")'"
    assert_success
    assert_equal "$(jq -c '[.hold, .last_error]' "$M/jobs/3")" '[null,"HTTP 503"]'
}

@test "permissions: waiting to claim from a queue one may not claim from is refused at once, by ctl and by the wait file" {
    mount_shared
    chmod 0755 "$M/jobs"
    sql "CLAIM 3 FROM jobs;" >/dev/null   # nothing is claimable: a wait would block
    run timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs WAIT 5s;"
    assert_failure 1
    assert_output --partial '"error":"PermissionDenied"'
    run timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups cat "$M/jobs/wait"
    assert_failure 1
    assert_output --partial "Permission denied"
    # Nor may it wait on a queue it may not even read.
    chmod 0700 "$M/jobs"
    run timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups \
        "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs WAIT;"
    assert_failure 1
    assert_output --partial '"error":"PermissionDenied"'
    run timeout 20 setpriv --reuid=65534 --regid=65534 --clear-groups cat "$M/jobs/wait"
    assert_failure 1
    assert_equal "$(jqr .claims "$(cat "$M/jobs/stats")")" 3
}

# all_blocked PID… — true once every PID waits on a FUSE request (polls up
# to 60 s).
all_blocked() {
    local i pid waiting w
    for i in $(seq 600); do
        waiting=0
        for pid in "$@"; do
            w=""
            read -r w 2>/dev/null <"/proc/$pid/wchan" || :   # no newline: read fails, w is set
            [ "$w" = request_wait_answer ] && waiting=$((waiting + 1))
        done
        [ "$waiting" -eq "$#" ] && return 0
        sleep 0.1
    done
    echo "# $waiting of $# blocked" >&3
    return 1
}

@test "permissions: 300 blocked waits of one user leave another user's wait served: it gets the next record" {
    mount_shared
    chmod 0777 "$M/jobs"
    sql "DELETE jobs;" >/dev/null   # nothing is claimable
    local pids=() i
    for i in $(seq 300); do
        cat "$M/jobs/wait" >"$BATS_TEST_TMPDIR/root.$i" 2>&1 3>&- &
        pids+=("$!")
    done
    all_blocked "${pids[@]}" || fail "not all 300 waits of root blocked: $(cat "$BATS_TEST_TMPDIR"/root.* | sort | uniq -c)"
    setpriv --reuid=65534 --regid=65534 --clear-groups cat "$M/jobs/wait" >"$BATS_TEST_TMPDIR/nobody" 2>&1 3>&- &
    local other=$!
    all_blocked "$other" || fail "nobody's wait did not block: $(cat "$BATS_TEST_TMPDIR/nobody")"
    printf '{"n":4}\n' >>"$M/jobs/new"
    wait_gone "$other" || fail "nobody's wait still waits 10 s after a record was created"
    wait "$other" || fail "nobody's wait failed: $(cat "$BATS_TEST_TMPDIR/nobody")"
    assert_equal "$(jqr .id "$(cat "$BATS_TEST_TMPDIR/nobody")")" "jobs:4"
    # root's 300 still wait, none refused.
    all_blocked "${pids[@]}" || fail "root's waits did not all wait on"
    kill "${pids[@]}"
    for i in "${pids[@]}"; do
        wait_gone "$i" || fail "a wait of root outlived SIGTERM"
    done
    assert_equal "$(cat "$BATS_TEST_TMPDIR"/root.*)" ""
    assert_equal "$(jqr .claims "$(cat "$M/jobs/stats")")" 1
}

@test "permissions: group bits apply to the queue's group" {
    mount_shared
    chown root:65534 "$M/jobs"
    chmod 0770 "$M/jobs"
    run setpriv --reuid=65533 --regid=65534 --clear-groups cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqr .id "$output")" "jobs:1"
    run setpriv --reuid=65533 --regid=65533 --clear-groups "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs;"
    assert_failure
    assert_output --partial PermissionDenied
}

@test "permissions: chmod and chown of a queue directory persist in the store" {
    mount_shared
    chmod 0710 "$M/jobs"
    chown 65534:65534 "$M/jobs"
    unmount_fs "$M"
    mount_fs -o allow_other,default_permissions
    run stat -c '%a %u %g' "$M/jobs"
    assert_output "710 65534 65534"
    # The owner now may chmod it; root's claim still works; nobody owns the queue.
    run as_nobody chmod 0700 "$M/jobs"
    assert_success
    run stat -c '%a' "$M/jobs"
    assert_output "700"
}

@test "permissions: only the owner may drop a table or define its fields" {
    mount_shared
    chmod 0777 "$M/jobs"
    run as_nobody "$QUEUEFS_CTL" "$M" "DROP QUEUE jobs;"
    assert_failure
    assert_output --partial PermissionDenied
    run as_nobody "$QUEUEFS_CTL" "$M" "DEFINE FIELD n ON jobs TYPE int;"
    assert_failure
    run sql "INFO FOR TABLE jobs;"
    assert_output --partial '"kind":"queue"'
}

@test "permissions: anyone may define a table; it is theirs, and only they may remove it" {
    mount_shared
    run stat -c '%a' "$M"
    assert_output "1777"
    run as_nobody mkdir "$M/mine"
    assert_success
    run stat -c '%a %u' "$M/mine"
    assert_output "755 65534"
    run as_nobody "$QUEUEFS_CTL" "$M" "DEFINE QUEUE theirs TIMEOUT 1m;"
    assert_success
    run stat -c '%u' "$M/theirs"
    assert_output "65534"
    run setpriv --reuid=65533 --regid=65533 --clear-groups rmdir "$M/mine"
    assert_failure
    run as_nobody rmdir "$M/mine"
    assert_success
}

@test "permissions: a table queuefs-sql defined belongs to the store's owner; files and ctl enforce its mode alike" {
    lmdb_only "the store's owner is its directory's; on PostgreSQL it is the mount's user (the test below)"
    # The store belongs to uid 65533, not to the mount's user (root).
    mkdir -m 0700 "$STORE"
    chown 65533:65533 "$STORE"
    sql "DEFINE QUEUE pay TIMEOUT 1m; CREATE pay:1 = {n: 1}; CREATE pay:2 = {n: 2};" >/dev/null
    mount_fs -o allow_other,default_permissions
    run stat -c '%u %g %a' "$M/pay"
    assert_output "65533 65533 755"
    chmod 0700 "$M/pay"
    run ls -ld "$M/pay"
    assert_output --regexp '^drwx------ [0-9]+ 65533 65533 '
    run as_nobody cat "$M/pay/1"
    assert_failure
    assert_output --partial "Permission denied"
    run as_nobody cat "$M/pay/claim"
    assert_failure
    local stmt
    for stmt in "SELECT * FROM pay;" "CLAIM FROM pay;" "DELETE pay:1;" \
        "DEFINE FIELD n ON pay TYPE int;" "DROP QUEUE pay;" "INFO FOR TABLE pay;"; do
        run as_nobody "$QUEUEFS_CTL" "$M" "$stmt"
        assert_failure
        assert_output --partial '"error":"PermissionDenied"'
    done
    # Nothing changed: both records, unclaimed, and no field defined.
    run sql "SELECT * FROM pay ORDER BY id;" "INFO FOR TABLE pay;"
    assert_line -n 0 '[{"id":"pay:1","n":1},{"id":"pay:2","n":2}]'
    assert_equal "$(jqc '.fields' "${lines[1]}")" '{}'
    # The store's owner may, by file and by ctl.
    run setpriv --reuid=65533 --regid=65533 --clear-groups cat "$M/pay/1"
    assert_success
    assert_output '{"id":"pay:1","n":1}'
    run setpriv --reuid=65533 --regid=65533 --clear-groups "$QUEUEFS_CTL" "$M" "CLAIM FROM pay;"
    assert_success
}

# refused_alike ORIGIN TABLE — as nobody, every file operation and ctl
# statement below is refused exactly where the directory's mode refuses it:
# at 0755 reading is allowed (cat, SELECT, INFO) and nothing that changes
# the table is (rm, claim, new, DELETE, CREATE, CLAIM, RELEASE); at 0700
# nothing is.  ORIGIN names where the table came from, for messages.
refused_alike() {
    local origin=$1 t=$2 mode stmt queue=0
    [ -e "$M/$t/claim" ] && queue=1
    for mode in 0755 0700; do
        chmod "$mode" "$M/$t"
        run as_nobody cat "$M/$t/1"
        if [ "$mode" = 0755 ]; then
            [ "$status" -eq 0 ] || fail "$origin $t $mode: cat $t/1 refused: $output"
        else
            [[ "$output" == *"Permission denied"* ]] || fail "$origin $t $mode: cat $t/1 allowed: $output"
        fi
        run as_nobody rm -f "$M/$t/2"
        [[ "$output" == *"Permission denied"* ]] || fail "$origin $t $mode: rm $t/2 allowed: $output"
        run as_nobody sh -c "printf '{\"x\":1}\n' >> '$M/$t/new'"
        [ "$status" -ne 0 ] || fail "$origin $t $mode: a write to $t/new was taken"
        if [ "$queue" = 1 ]; then
            run as_nobody cat "$M/$t/claim"
            [[ "$output" == *"Permission denied"* ]] || fail "$origin $t $mode: cat $t/claim allowed: $output"
        fi
        for stmt in "SELECT * FROM $t;" "INFO FOR TABLE $t;" "DELETE $t:1;" "CREATE $t = {x: 2};" \
            "CLAIM FROM $t;" "RELEASE $t:1;"; do
            case "$stmt" in CLAIM* | RELEASE*) [ "$queue" = 1 ] || continue ;; esac
            run as_nobody "$QUEUEFS_CTL" "$M" "$stmt"
            case "$mode:$stmt" in
            0755:SELECT* | 0755:INFO*)
                [ "$status" -eq 0 ] || fail "$origin $t $mode: '$stmt' refused: $output" ;;
            *)
                [[ "$output" == *'"error":"PermissionDenied"'* ]] ||
                    fail "$origin $t $mode: '$stmt' was not PermissionDenied: $output" ;;
            esac
        done
    done
}

@test "permissions: tables from queuefs-sql, ctl and mkdir refuse another user alike through files and ctl, at 0755 and after chmod 700" {
    sql "DEFINE QUEUE vault TIMEOUT 30s; CREATE vault:1 = {secret: 1}; CREATE vault:2 = {};" >/dev/null
    mount_fs -o allow_other,default_permissions
    ctl "DEFINE QUEUE viactl TIMEOUT 30s; CREATE viactl:1 = {secret: 1}; CREATE viactl:2 = {};" >/dev/null
    mkdir "$M/notes"
    ctl "CREATE notes:1 = {secret: 1}; CREATE notes:2 = {};" >/dev/null
    local before t
    before=$(sql "SELECT * FROM vault ORDER BY id;" "SELECT * FROM viactl ORDER BY id;" \
        "SELECT * FROM notes ORDER BY id;")
    # All three belong to root, the mount's user and the store's owner.
    run stat -c '%u %a' "$M/vault" "$M/viactl" "$M/notes"
    assert_equal "$(tr '\n' ' ' <<<"$output")" "0 755 0 755 0 755 "
    refused_alike queuefs-sql vault
    refused_alike ctl viactl
    refused_alike mkdir notes
    # Nothing changed, and nothing was claimed.
    assert_equal "$(sql "SELECT * FROM vault ORDER BY id;" "SELECT * FROM viactl ORDER BY id;" \
        "SELECT * FROM notes ORDER BY id;")" "$before"
    for t in vault viactl; do
        assert_equal "$(jqr .claims "$(cat "$M/$t/stats")")" 0
    done
}

@test "permissions: DEFINE QUEUE IF NOT EXISTS of another user's collection is WrongKind, not an answer" {
    mount_shared
    mkdir "$M/payroll"
    run as_nobody "$QUEUEFS_CTL" "$M" "DEFINE QUEUE IF NOT EXISTS payroll TIMEOUT 1m;"
    assert_failure
    assert_output --partial '"error":"WrongKind"'
    run as_nobody "$QUEUEFS_CTL" "$M" "DEFINE COLLECTION IF NOT EXISTS jobs;"
    assert_failure
    assert_output --partial '"error":"WrongKind"'
    run sql "INFO FOR TABLE payroll;"
    assert_output --partial '"kind":"collection"'
}

@test "permissions: only a table's owner may rename it (mv of its directory); the owner may" {
    mount_shared
    chmod 0777 "$M/jobs"
    run as_nobody mv -T "$M/jobs" "$M/mine"
    assert_failure
    assert_output --partial "Operation not permitted"
    run as_nobody "$RENAMEAT2" "$M/jobs" "$M/mine"
    assert_output EPERM
    assert_equal "$(count_records jobs)" 3
    run --separate-stderr sql "INFO FOR TABLE mine"
    assert_error NoSuchTable
    assert_equal "$(jqr .claims "$(cat "$M/jobs/stats")")" 0
    # nobody's own table is nobody's to rename.
    as_nobody mkdir "$M/theirs"
    run as_nobody mv -T "$M/theirs" "$M/still_theirs"
    assert_success
    run stat -c '%u' "$M/still_theirs"
    assert_output 65534
    run mv -T "$M/jobs" "$M/work"
    assert_success
    assert_equal "$(count_records work)" 3
}

@test "permissions: without default_permissions nothing is checked" {
    mount_fs -o allow_other
    echo 'DEFINE QUEUE jobs TIMEOUT 1m;' >"$M/ctl"
    printf '%s\n' '{"n":1}' >>"$M/jobs/new"
    chmod 0700 "$M/jobs"
    run as_nobody "$QUEUEFS_CTL" "$M" "CLAIM FROM jobs;"
    assert_success
    assert_equal "$(jqr '.[0].id' "$output")" "jobs:1"
}
