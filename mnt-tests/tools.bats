#!/usr/bin/env bats
# tools.bats — the tools people already point at directories, run on a
# real mount: none of them claims a record (stats' claims stay as they
# were), blocks on `wait`, or errs on a reserved name, on a queue with
# ready records and on an empty one.  A table's listing is its records
# and nothing else; the reserved names resolve when named.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/tools.bats
#
# Needs what mount.bats needs, and rsync.

load mount_helpers

# A mount with the queue jobs holding three ready records and one held,
# the empty queue idle, and the collection notes with one record.
mount_tools() {
    sql "DEFINE QUEUE jobs TIMEOUT 5m; DEFINE QUEUE idle TIMEOUT 5m; DEFINE COLLECTION notes;
         CREATE jobs:1 = {url: 'a'}; CREATE jobs:2 = {url: 'b'}; CREATE jobs:3 = {url: 'c'};
         CREATE jobs:4 = {url: 'd'}; CLAIM jobs:4; CREATE notes:1 = {text: 'x'};" >/dev/null ||
        fail "could not set up the tables"
    mount_fs
}

# The claims counter of every queue, as one line.
claims() {
    echo "jobs=$(jq .claims "$M/jobs/stats") idle=$(jq .claims "$M/idle/stats")"
}

# run_tool CMD… — runs CMD… with a 20 s limit (a tool that blocks on wait
# fails), from the mount's parent directory.
run_tool() {
    run --separate-stderr timeout 20 "$@"
    [ "$status" -ne 124 ] || fail "$* blocked (killed after 20 s)"
}

@test "tools: ls of a table shows its records and nothing else; reserved names still resolve" {
    mount_tools
    run ls "$M/jobs"
    assert_success
    assert_equal "$(tr '\n' ' ' <<<"$output")" "1 2 3 4 "
    run ls -a "$M/idle"
    assert_equal "$(tr '\n' ' ' <<<"$output")" ". .. "
    run ls "$M/notes"
    assert_output 1
    for name in claim wait new stats held dead released; do
        [ -e "$M/jobs/$name" ] || fail "jobs/$name does not resolve"
    done
    run ls "$M/jobs/held"
    assert_output "4~1"
}

@test "tools: read-only tools walk the mount without claiming, blocking or erring" {
    mount_tools
    local before out=$BATS_TEST_TMPDIR/out
    before=$(claims)
    mkdir -p "$out"
    local -a tools=(
        "grep -r url $M"
        "tar -cf $out/all.tar -C $M ."
        "rsync -a $M/ $out/rsync/"
        "cp -r $M $out/cp"
        "find $M -type f -exec cat {} +"
        "du -a $M"
    )
    local t
    for t in "${tools[@]}"; do
        # shellcheck disable=SC2086 # the command and its arguments, split on purpose
        run_tool $t
        [ "$status" -eq 0 ] || fail "$t exited $status: $stderr"
        [ -z "$stderr" ] || fail "$t complained: $stderr"
        assert_equal "$(claims)" "$before"
    done
    # Globs over a table read its records.
    # shellcheck disable=SC2016 # the script's $ are its own
    run_tool bash -c 'cat "$1"/jobs/*' _ "$M"
    assert_success
    assert_equal "${#lines[@]}" 4
    # shellcheck disable=SC2016 # the script's $ are its own
    run_tool bash -c 'wc -l "$1"/jobs/* "$1"/idle/*' _ "$M"
    assert_equal "$(claims)" "$before"
    # What the copies hold: the records, and no reserved name.
    tar -tf "$out/all.tar" | grep -qx './jobs/1' || fail "tar lacks jobs/1: $(tar -tf "$out/all.tar")"
    ! tar -tf "$out/all.tar" | grep -E '/(claim|wait|new|stats|held|dead|released)$' ||
        fail "tar copied a reserved name"
    assert_equal "$(cat "$out/rsync/jobs/2")" '{"id":"jobs:2","url":"b"}'
    # shellcheck disable=SC2012 # the names are plain
    assert_equal "$(ls "$out/cp/jobs" | tr '\n' ' ')" "1 2 3 4 "
    # The records are as they were: three ready, one held by its first claim.
    stats=$(cat "$M/jobs/stats")
    assert_equal "$(jq -c '[.ready, .held, .claims]' <<<"$stats")" "[3,1,1]"
}

@test "tools: rm -r of a table removes its records and then the table, without an error" {
    mount_tools
    run rm -r "$M/jobs"
    assert_success
    assert_output ""
    [ ! -e "$M/jobs" ] || fail "jobs is still there"
    run --separate-stderr sql "INFO FOR TABLE jobs"
    assert_error NoSuchTable
    run rm -r "$M/idle"
    assert_success
    [ ! -e "$M/idle" ]
}
