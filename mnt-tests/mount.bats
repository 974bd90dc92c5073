#!/usr/bin/env bats
# mount.bats — the queuefs mount through real shell commands: every row of
# SPEC section 2's file view, the identity <-> file name mapping, the ctl
# protocol (section 3), the errno of each refusal (section 4), queuefs-ctl,
# the mount's life cycle, durability, and several mounts on one store.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/mount.bats
#
# Needs root (or a user allowed to mount FUSE), fusermount3, mount.fuse3,
# mountpoint, jq, python3, and mnt-tests/renameat2 built in QUEUEFS_BUILD.

# The scripts given to bash -c are single-quoted on purpose: they expand
# $M and their arguments themselves.
# shellcheck disable=SC2016

load mount_helpers

# ---------------------------------------------------------------------------
# Life cycle of a mount
# ---------------------------------------------------------------------------

@test "lifecycle: queuefs returns once the mount answers: ls works at once" {
    run "$QUEUEFS" "$STORE" "$M" 3>&-
    track_mount "$M"
    assert_success
    # No polling here: the command promised the mount answers.
    run ls "$M"
    assert_success
    assert_equal "$(tr '\n' ' ' <<<"$output")" "ctl metrics "
    mountpoint -q "$M" || fail "$M is not a mount point"
}

@test "lifecycle: the store directory is created, mode 0700" {
    lmdb_only "a PostgreSQL store is a database, not a directory"
    [ ! -e "$STORE" ]
    mount_fs
    [ -d "$STORE" ] || fail "no store directory at $STORE"
    assert_equal "$(stat -c %a "$STORE")" 700
}

@test "lifecycle: fusermount3 -u unmounts and the daemon exits" {
    mount_fs
    pid=$(daemon_pid "$M") || fail "no daemon serves $M"
    run fusermount3 -u "$M"
    assert_success
    wait_gone "$pid" || fail "queuefs (pid $pid) still runs after fusermount3 -u"
    wait_unmounted "$M" || fail "$M still in /proc/mounts"
    run ls "$M"
    assert_success
    assert_output ""
}

@test "lifecycle: SIGTERM to the daemon unmounts cleanly" {
    mount_fs
    pid=$(daemon_pid "$M") || fail "no daemon serves $M"
    kill -TERM "$pid"
    wait_gone "$pid" || fail "queuefs (pid $pid) still runs 10 s after SIGTERM"
    wait_unmounted "$M" || fail "$M still in /proc/mounts after SIGTERM: $(grep -F " $M " /proc/mounts)"
    run ls "$M"
    assert_success
    assert_output ""
}

@test "lifecycle: a store path that is a file: non-zero exit, a message, no mount" {
    : >"$BATS_TEST_TMPDIR/afile"
    run "$QUEUEFS" "$BATS_TEST_TMPDIR/afile" "$M" 3>&-
    if mountpoint -q "$M"; then track_mount "$M"; fi
    assert_failure
    assert_output --partial "afile"
    ! mountpoint -q "$M" || fail "$M was mounted although queuefs failed"
    ! daemon_pid "$M" >/dev/null || fail "a queuefs process is left for $M"
}

@test "lifecycle: a mount point that does not exist: non-zero exit and a message" {
    run "$QUEUEFS" "$STORE" "$BATS_TEST_TMPDIR/nowhere" 3>&-
    assert_failure
    assert_output --partial "nowhere"
}

@test "lifecycle: -o sync= accepts full and none only" {
    run "$QUEUEFS" -o sync=sometimes "$STORE" "$M" 3>&-
    if mountpoint -q "$M"; then track_mount "$M"; fi
    assert_failure
    assert_output --partial "sync"
    ! mountpoint -q "$M" || fail "mounted with a bad sync option"
    mount_fs -o sync=none
    run ls "$M"
    assert_equal "$(tr '\n' ' ' <<<"$output")" "ctl metrics "
}

@test "lifecycle: queuefs --help and --version" {
    run "$QUEUEFS" --help
    assert_success
    assert_line --partial "usage: queuefs"
    assert_output --partial "consumer=NAME"
    assert_output --partial "sync=none"
    run "$QUEUEFS" --version
    assert_success
    assert_line -n 0 --regexp '^queuefs [0-9]+\.[0-9]+'
}

@test "lifecycle: the helper an fstab line runs passes our -o options through (mount.fuse3 ... -t fuse.queuefs)" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {};" >/dev/null
    bin="$BATS_TEST_TMPDIR/bin"
    mkdir -p "$bin"
    ln -s "$QUEUEFS" "$bin/queuefs"
    # Exactly what mount(8) runs for `STORE MNT fuse.queuefs sync=none,consumer=fst`.
    run env PATH="$bin:$PATH" mount.fuse3 "$STORE" "$M" -o rw,sync=none,consumer=fst -t fuse.queuefs 3>&-
    if wait_mounted "$M"; then track_mount "$M"; fi
    assert_success
    mountpoint -q "$M" || fail "not mounted: $output"
    run cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqr .claimed_by.consumer "$output")" fst
}

@test "lifecycle: an /etc/fstab line (STORE MNT fuse.queuefs sync=none,consumer=fst) mounts with mount(8)" {
    # mount(8) runs its helper without PATH, so /bin/sh looks for queuefs in
    # the default path only: give it one in a private mount namespace.
    sql "DEFINE QUEUE jobs TIMEOUT 30s; CREATE jobs:1 = {};" >/dev/null
    bin="$BATS_TEST_TMPDIR/bin"
    mkdir -p "$bin"
    ln -s "$QUEUEFS" "$bin/queuefs"
    printf '%s %s fuse.queuefs sync=none,consumer=fst 0 0\n' "$STORE" "$M" >"$BATS_TEST_TMPDIR/fstab"
    run unshare --mount --propagation private bash -c '
        trap "fusermount3 -u \"$M\" 2>/dev/null || fusermount3 -u -z \"$M\" 2>/dev/null" EXIT
        mount --bind "$1" /usr/local/bin || exit 10
        mount -T "$2" "$M" 3>&- || exit 11
        mountpoint -q "$M" || exit 12
        cat "$M/jobs/claim" || exit 13
    ' bash "$bin" "$BATS_TEST_TMPDIR/fstab"
    if pid=$(daemon_pid "$M"); then
        MOUNTS+=("$M")
        DAEMONS+=("$pid")
    fi
    assert_success
    assert_equal "$(jqr .claimed_by.consumer "$output")" fst
}

@test "lifecycle: records and holds survive unmount and remount" {
    mount_jobs
    run cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqr .id "$output")" "jobs:7"
    until_then=$(jqr .claimed_until "$output")
    unmount_fs "$M"
    mount_fs
    run cat "$M/jobs/7"
    assert_success
    assert_equal "$(jqr .attempts "$output")" 1
    assert_equal "$(jqr .claimed_until "$output")" "$until_then"
    [ "$(epoch_of "$until_then")" -gt "$(date +%s)" ] || fail "the hold is no longer in the future: $until_then"
    run cat "$M/jobs/claim"
    assert_success
    assert_equal "$(jqr .id "$output")" "jobs:8"
}

@test "lifecycle: SIGKILL of the daemon loses no committed record (sync=full)" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    for i in $(seq 40); do
        printf '{"n":%d}\n' "$i" >>"$M/jobs/new" || fail "write $i to new failed"
    done
    printf '{"url":"x"}\n' >"$M/jobs/100"
    pid=$(daemon_pid "$M")
    kill -9 "$pid"
    wait_gone "$pid" || fail "SIGKILL did not end queuefs"
    fusermount3 -u -z "$M"
    wait_unmounted "$M" || fail "the dead mount is still there"
    mount_fs
    run ls "$M/jobs"
    assert_success
    assert_equal "$(grep -c '^[0-9]' <<<"$output")" 41
    assert_equal "$(count_records jobs)" 41
    assert_equal "$(jqr .url "$(cat "$M/jobs/100")")" x
    assert_equal "$(jqr .n "$(cat "$M/jobs/40")")" 40
}

# ---------------------------------------------------------------------------
# The file view: claim, read, list
# ---------------------------------------------------------------------------

@test "claim: cat jobs/claim claims the head: one JSON line with id, attempts, claimed_until" {
    mount_jobs
    before=$(date +%s)
    run cat "$M/jobs/claim"
    assert_success
    assert_equal "${#lines[@]}" 1
    assert_equal "$(jqr .id "$output")" "jobs:7"
    assert_equal "$(jqr .url "$output")" a
    assert_equal "$(jqr .attempts "$output")" 1
    assert_near "$(epoch_of "$(jqr .claimed_until "$output")")" $((before + 30)) 3
    # The claim is in the store.
    assert_equal "$(sql 'SELECT attempts FROM jobs:7')" '[{"attempts":1}]'
}

@test "claim: every open is a new claim, in identity order, then empty output when nothing is claimable" {
    mount_jobs
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:8"
    run cat "$M/jobs/claim"
    assert_success
    assert_output ""
}

@test "claim: an empty queue reads empty and is not an error" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    run cat "$M/jobs/claim"
    assert_success
    assert_output ""
}

@test "claim: a collection has no claim file" {
    sql "DEFINE COLLECTION notes; CREATE notes:1 = {};" >/dev/null
    mount_fs
    run cat "$M/notes/claim"
    assert_failure
    assert_output --partial "No such file or directory"
    assert_equal "$(sql 'SELECT * FROM notes:1')" '[{"id":"notes:1"}]'
}

@test "read: cat jobs/7 never claims, held or not (attempts unchanged)" {
    mount_jobs
    for _ in 1 2 3; do
        run cat "$M/jobs/7"
        assert_success
        assert_output '{"id":"jobs:7","url":"a"}'
    done
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
    held=$output
    run cat "$M/jobs/7"
    assert_success
    assert_output "$held"
    assert_equal "$(jqr .attempts "$output")" 1
}

@test "read: a missing record is ENOENT (NoSuchRecord) and does not block" {
    mount_jobs
    run timeout 10 cat "$M/jobs/99"
    assert_failure 1
    assert_output --partial "No such file or directory"
    assert_equal "$(errno_of 'open(a[2]).read()' "$M/jobs/99")" ENOENT
}

@test "list: ls jobs/ lists every record, held or not, and nothing else, and never claims" {
    mount_jobs
    run cat "$M/jobs/claim"      # jobs:7 held
    run ls "$M/jobs"
    assert_success
    assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "7 8 "
    run ls -l "$M/jobs"
    assert_success
    run ls "$M/jobs/released"
    assert_success
    assert_output ""
    # Listing claimed nothing: jobs:8 is still free, jobs:7 still attempt 1.
    assert_equal "$(sql 'SELECT id, attempts FROM jobs ORDER BY id' | jq -c .)" \
        '[{"attempts":1,"id":"jobs:7"},{"id":"jobs:8"}]'
}

@test "list: a collection lists its records only; the root lists ctl, metrics and every table" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE COLLECTION notes; CREATE notes:1 = {}; CREATE notes:'x' = {};" >/dev/null
    mount_fs
    run ls "$M/notes"
    assert_success
    assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "1 x "
    run ls "$M"
    assert_success
    assert_equal "$(sort <<<"$output" | tr '\n' ' ')" "ctl jobs metrics notes "
}

@test "list: ls of a large table lists every record once" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs -o sync=none
    seq 1500 | sed 's/.*/{"n":&}/' >>"$M/jobs/new"
    run ls "$M/jobs"
    assert_success
    assert_equal "$(grep -c '^[0-9]' <<<"$output")" 1500
    assert_equal "$(grep '^[0-9]' <<<"$output" | sort -u | wc -l)" 1500
}

# ---------------------------------------------------------------------------
# rm, mv into released/
# ---------------------------------------------------------------------------

@test "rm: rm jobs/7 deletes the record" {
    mount_jobs
    run cat "$M/jobs/claim"
    run rm "$M/jobs/7"
    assert_success
    assert_equal "$(sql 'SELECT * FROM jobs:7')" '[]'
    run ls "$M/jobs"
    refute_line 7
    run rm "$M/jobs/7"
    assert_failure
    assert_output --partial "No such file or directory"
}

@test "release: mv jobs/7 jobs/released/ releases the hold and keeps attempts" {
    mount_jobs
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
    run mv "$M/jobs/7" "$M/jobs/released/"
    assert_success
    run cat "$M/jobs/7"
    assert_output '{"attempts":1,"id":"jobs:7","url":"a"}'
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
    assert_equal "$(jqr .attempts "$output")" 2
}

@test "release: mv jobs/7 jobs/released/7 releases the hold" {
    mount_jobs
    run cat "$M/jobs/claim"
    run mv "$M/jobs/7" "$M/jobs/released/7"
    assert_success
    assert_equal "$(jqr 'has("claimed_until")' "$(cat "$M/jobs/7")")" false
    run ls "$M/jobs/released"
    assert_output ""
}

@test "release: renameat2 with RENAME_NOREPLACE (mv -n) into released/ releases too" {
    mount_jobs
    run cat "$M/jobs/claim"
    run renameat2 -n "$M/jobs/7" "$M/jobs/released/7"
    assert_success
    assert_output ""
    assert_equal "$(jqr 'has("claimed_until")' "$(cat "$M/jobs/7")")" false
}

@test "release: mv jobs/7 jobs/released/7@10m delays the record 10 minutes" {
    mount_jobs
    run cat "$M/jobs/claim"
    before=$(date +%s)
    run mv "$M/jobs/7" "$M/jobs/released/7@10m"
    assert_success
    rec=$(cat "$M/jobs/7")
    assert_equal "$(jqr 'has("claimed_until")' "$rec")" false
    assert_equal "$(jqr .attempts "$rec")" 1
    assert_near "$(epoch_of "$(jqr .due "$rec")")" $((before + 600)) 3
    # Not claimable: the next claim passes over it.
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:8"
    run cat "$M/jobs/claim"
    assert_output ""
}

@test "release: the delay after @ may be a duration (500ms, 1h30m) or a UTC datetime" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s NOT BEFORE due;
         CREATE jobs:1 = {}; CREATE jobs:2 = {}; CREATE jobs:3 = {};
         CLAIM 3 FROM jobs;" >/dev/null
    mount_fs
    before=$(date +%s)
    run mv "$M/jobs/1" "$M/jobs/released/1@1h30m"
    assert_success
    assert_near "$(epoch_of "$(jqr .due "$(cat "$M/jobs/1")")")" $((before + 5400)) 3
    run mv "$M/jobs/2" "$M/jobs/released/2@2099-01-01T00:00:00Z"
    assert_success
    assert_equal "$(jqr .due "$(cat "$M/jobs/2")")" "2099-01-01T00:00:00Z"
    run mv "$M/jobs/3" "$M/jobs/released/3@500ms"
    assert_success
    due=$(jqr .due "$(cat "$M/jobs/3")")
    assert_near "$(epoch_of "$due")" "$before" 2
    # 500 ms later jobs:3 is claimable again; 1 and 2 are not.
    for _ in $(seq 50); do
        out=$(cat "$M/jobs/claim")
        [ -n "$out" ] && break
        sleep 0.05
    done
    assert_equal "$(jqr .id "$out")" "jobs:3"
    run cat "$M/jobs/claim"
    assert_output ""
}

@test "release: a move into released/ of another table is EINVAL, never EXDEV" {
    mount_jobs
    sql "DEFINE QUEUE other TIMEOUT 30s;" >/dev/null
    run cat "$M/jobs/claim"
    held=$(cat "$M/jobs/7")
    run renameat2 "$M/jobs/7" "$M/other/released/7"
    assert_failure
    assert_output EINVAL
    run mv "$M/jobs/7" "$M/other/released/"
    assert_failure
    assert_equal "$(cat "$M/jobs/7")" "$held"
    assert_equal "$(count_records other)" 0
}

@test "release: a mismatched or malformed name in released/ is EINVAL and changes nothing" {
    mount_jobs
    run cat "$M/jobs/claim"
    held=$(cat "$M/jobs/7")
    for target in 8 8@10m 7@soon 7@ 77; do
        run renameat2 "$M/jobs/7" "$M/jobs/released/$target"
        assert_failure
        [ "$output" = EINVAL ] || fail "released/$target: expected EINVAL, got $output"
    done
    run mv "$M/jobs/7" "$M/jobs/released/8"
    assert_failure
    assert_equal "$(cat "$M/jobs/7")" "$held"
}

@test "release: mv to a malformed @WHEN names the bad name, not 'a subdirectory of itself'" {
    mount_jobs
    run cat "$M/jobs/claim"
    held=$(cat "$M/jobs/7")
    run mv "$M/jobs/7" "$M/jobs/released/7@tomorrow"
    assert_failure
    assert_output --partial "released/7@tomorrow': Invalid argument"
    refute_output --partial "subdirectory"
    # The name is refused where it is looked up.
    assert_equal "$(errno_of 'os.stat(a[2])' "$M/jobs/released/7@tomorrow")" EINVAL
    assert_equal "$(errno_of 'os.stat(a[2])' "$M/jobs/released/7@10m")" ENOENT
    assert_equal "$(cat "$M/jobs/7")" "$held"
}

@test "release: mv of another consumer's hold is EBUSY (Device or resource busy)" {
    mount_jobs -o consumer=a "$BATS_TEST_TMPDIR/a"
    mount_fs -o consumer=b "$BATS_TEST_TMPDIR/b"
    A=$BATS_TEST_TMPDIR/a B=$BATS_TEST_TMPDIR/b
    run cat "$A/jobs/claim"
    assert_equal "$(jqr .claimed_by.consumer "$output")" a
    held=$(cat "$A/jobs/7")
    run mv "$B/jobs/7" "$B/jobs/released/"
    assert_failure
    assert_output --partial "Device or resource busy"
    assert_equal "$(renameat2 "$B/jobs/7" "$B/jobs/released/7@10m")" EBUSY
    assert_equal "$(cat "$B/jobs/7")" "$held"
    # The holder itself releases it.
    run mv "$A/jobs/7" "$A/jobs/released/"
    assert_success
}

@test "release: @delay on a queue without NOT BEFORE is EOPNOTSUPP (Operation not supported)" {
    sql "DEFINE QUEUE plain TIMEOUT 30s; CREATE plain:1 = {}; CLAIM FROM plain;" >/dev/null
    mount_fs
    held=$(cat "$M/plain/1")
    run mv "$M/plain/1" "$M/plain/released/1@10m"
    assert_failure
    assert_output --partial "Operation not supported"
    assert_equal "$(renameat2 "$M/plain/1" "$M/plain/released/1@10m")" EOPNOTSUPP
    assert_equal "$(cat "$M/plain/1")" "$held"
}

# ---------------------------------------------------------------------------
# Writing records
# ---------------------------------------------------------------------------

@test "write: printf > jobs/9 creates jobs:9" {
    mount_jobs
    printf '%s\n' '{"url":"c"}' >"$M/jobs/9"
    assert_equal "$(sql 'SELECT * FROM jobs:9')" '[{"id":"jobs:9","url":"c"}]'
    run cat "$M/jobs/9"
    assert_output '{"id":"jobs:9","url":"c"}'
}

@test "write: cp FILE jobs/9 and cat FILE > jobs/9 create records" {
    mount_jobs
    printf '{"url":"c"}\n' >"$BATS_TEST_TMPDIR/rec"
    run cp "$BATS_TEST_TMPDIR/rec" "$M/jobs/9"
    assert_success
    run bash -c 'cat "$1" > "$M/jobs/10"' bash "$BATS_TEST_TMPDIR/rec"
    assert_success
    assert_equal "$(sql 'SELECT url FROM jobs:9')" '[{"url":"c"}]'
    assert_equal "$(sql 'SELECT url FROM jobs:10')" '[{"url":"c"}]'
}

@test "write: mv of an ordinary file into a table creates the record" {
    mount_jobs
    printf '{"url":"m"}\n' >"$BATS_TEST_TMPDIR/rec"
    run mv "$BATS_TEST_TMPDIR/rec" "$M/jobs/9"
    assert_success
    [ ! -e "$BATS_TEST_TMPDIR/rec" ] || fail "mv left the source"
    assert_equal "$(sql 'SELECT url FROM jobs:9')" '[{"url":"m"}]'
}

@test "write: overwriting a held record is a whole-record update that keeps the hold" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    printf '%s\n' '{"url":"a"}' >"$M/jobs/9"
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:9"
    claimed=$output
    printf '%s\n' '{"url":"z","extra":1}' >"$M/jobs/9"
    rec=$(cat "$M/jobs/9")
    assert_equal "$(jqr .url "$rec")" z
    assert_equal "$(jqr .extra "$rec")" 1
    assert_equal "$(jqr .attempts "$rec")" 1
    assert_equal "$(jqr .claimed_until "$rec")" "$(jqr .claimed_until "$claimed")"
    # Still held: the claim file does not hand it out again.
    run cat "$M/jobs/claim"
    assert_success
    assert_output ""
}

@test "write: a record read back can be written back unchanged (the engine's fields repeated)" {
    mount_jobs
    run cat "$M/jobs/claim"
    cat "$M/jobs/7" >"$BATS_TEST_TMPDIR/rec"
    run cp "$BATS_TEST_TMPDIR/rec" "$M/jobs/7"
    assert_success
    assert_equal "$(cat "$M/jobs/7")" "$(cat "$BATS_TEST_TMPDIR/rec")"
}

@test "write: set -o noclobber refuses an existing record (EEXIST) and creates a new one" {
    mount_jobs
    run bash -c 'set -o noclobber; printf "%s\n" "{\"url\":\"z\"}" > "$M/jobs/7"'
    assert_failure
    assert_output --partial "cannot overwrite existing file"
    assert_equal "$(errno_of 'os.open(a[2], os.O_WRONLY | os.O_CREAT | os.O_EXCL)' "$M/jobs/7")" EEXIST
    assert_equal "$(sql 'SELECT url FROM jobs:7')" '[{"url":"a"}]'
    run bash -c 'set -o noclobber; printf "%s\n" "{\"url\":\"n\"}" > "$M/jobs/9"'
    assert_success
    assert_equal "$(sql 'SELECT url FROM jobs:9')" '[{"url":"n"}]'
}

@test "write: content that does not parse fails close() with EINVAL and stores nothing (cp)" {
    mount_jobs
    printf '{"url": \n' >"$BATS_TEST_TMPDIR/bad"
    run cp "$BATS_TEST_TMPDIR/bad" "$M/jobs/9"
    assert_failure
    assert_output --partial "Invalid argument"
    assert_equal "$(sql 'SELECT * FROM jobs:9')" '[]'
    run ls "$M/jobs"
    refute_line 9
}

@test "write: content that does not parse fails close() with EINVAL (python: open, write, close)" {
    mount_jobs
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_CREAT | os.O_TRUNC); os.write(fd, b"{nope\n"); os.close(fd)' "$M/jobs/9"
    assert_output EINVAL
    assert_equal "$(sql 'SELECT * FROM jobs:9')" '[]'
    # An existing record keeps its content.
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_TRUNC); os.write(fd, b"[1,2"); os.close(fd)' "$M/jobs/7"
    assert_output EINVAL
    assert_equal "$(cat "$M/jobs/7")" '{"id":"jobs:7","url":"a"}'
}

# write_steps PATH FLAGS CHUNK… — opens PATH (FLAGS: "trunc", "excl"), writes
# each CHUNK with its own write(), then closes; prints one word a step:
# OK or the errno name, "write:" or "close:" before it.
write_steps() {
    python3 -c '
import errno, os, sys
path, flags, chunks = sys.argv[1], sys.argv[2], sys.argv[3:]
f = os.O_WRONLY | os.O_CREAT | (os.O_EXCL if flags == "excl" else os.O_TRUNC)
fd = os.open(path, f)
out = []
for c in chunks:
    try:
        os.write(fd, c.encode()); out.append("write:OK")
    except OSError as e:
        out.append("write:" + errno.errorcode[e.errno])
try:
    os.close(fd); out.append("close:OK")
except OSError as e:
    out.append("close:" + errno.errorcode[e.errno])
print(" ".join(out))
' "$@"
}

@test "write: the write() that completes or cannot begin a record gets its error, not the close()" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s; DEFINE FIELD n ON jobs TYPE option<int>;" >/dev/null
    mount_fs
    # The shell reports it: echo's write fails.
    run bash -c 'echo "not json" > "$M/jobs/9"'
    assert_failure
    assert_output --partial "write error: Invalid argument"
    # Each case: chunks, then what each write() and the close() answered.
    while IFS='|' read -r want chunks; do
        local -a parts
        IFS=';' read -r -a parts <<<"$chunks"
        run write_steps "$M/jobs/9" trunc "${parts[@]}"
        assert_output "$want"
        assert_equal "$(sql 'SELECT * FROM jobs:9')" '[]'
    done <<'CASES'
write:EINVAL close:OK|not json
write:EINVAL close:OK|[1,2]
write:EINVAL close:OK|{"a":1}{"b":2}
write:EINVAL close:OK|{"n":"text"}
write:EPERM close:OK|{"attempts":3}
write:OK close:EINVAL|{"a":
write:OK write:OK close:EINVAL|{"a":1;x
CASES
}

@test "write: an object completed by a later write() is stored then, before the close()" {
    mount_jobs
    run python3 -c '
import os, subprocess, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_EXCL)
os.write(fd, b"{\"url\": ")
before = subprocess.run(sys.argv[2:] + ["SELECT url FROM jobs:9"], capture_output=True, text=True).stdout.strip()
os.write(fd, b"\"z\"}")
after = subprocess.run(sys.argv[2:] + ["SELECT url FROM jobs:9"], capture_output=True, text=True).stdout.strip()
os.write(fd, b"\n")   # blanks after the object store nothing more (O_EXCL: no EEXIST)
os.close(fd)
print(before, after)
' "$M/jobs/9" "$QUEUEFS_SQL" "$STORE"
    assert_success
    assert_output '[] [{"url":"z"}]'
    # More than blanks after a stored object is refused and changes nothing.
    run write_steps "$M/jobs/7" trunc '{"url":"b"}' ' {"url":"c"}'
    assert_output "write:OK write:EINVAL close:OK"
    assert_equal "$(cat "$M/jobs/7")" '{"id":"jobs:7","url":"b"}'
}

@test "write: open(O_RDWR|O_TRUNC) (python 'w+') replaces the record with what is written" {
    mount_jobs
    printf '{"url":"a-much-longer-value"}\n' >"$M/jobs/7"
    python3 -c 'import sys; f = open(sys.argv[1], "w+"); f.write("{\"u\":1}\n"); f.close()' "$M/jobs/7"
    assert_equal "$(cat "$M/jobs/7")" '{"id":"jobs:7","u":1}'
    # O_RDWR without O_TRUNC starts from the record's content (r+).
    python3 -c 'import sys; f = open(sys.argv[1], "r+"); line = f.read(); f.seek(0); f.write(line.replace("1", "2")); f.close()' "$M/jobs/7"
    assert_equal "$(cat "$M/jobs/7")" '{"id":"jobs:7","u":2}'
}

@test "write: cat FILE > jobs/9 with content that does not parse fails and stores nothing" {
    mount_jobs
    printf '{"url": \n' >"$BATS_TEST_TMPDIR/bad"
    run bash -c 'cat "$1" > "$M/jobs/9"' bash "$BATS_TEST_TMPDIR/bad"
    assert_failure
    assert_output --partial "Invalid argument"
    assert_equal "$(sql 'SELECT * FROM jobs:9')" '[]'
}

@test "write: cat FILE > TABLE/ID stores the content on a table with a REQUIRED field" {
    sql "DEFINE COLLECTION people; DEFINE FIELD name ON people TYPE string REQUIRED;" >/dev/null
    mount_fs
    printf '{"name":"ada"}\n' >"$BATS_TEST_TMPDIR/rec"
    run bash -c 'cat "$1" > "$M/people/1"' bash "$BATS_TEST_TMPDIR/rec"
    assert_success
    assert_equal "$(sql 'SELECT * FROM people')" '[{"id":"people:1","name":"ada"}]'
}

@test "write: a SchemaViolation through a record file is EINVAL and stores nothing" {
    sql "DEFINE COLLECTION people; DEFINE FIELD name ON people TYPE string REQUIRED;" >/dev/null
    mount_fs
    printf '{"name":42}\n' >"$BATS_TEST_TMPDIR/rec"
    run cp "$BATS_TEST_TMPDIR/rec" "$M/people/1"
    assert_failure
    assert_output --partial "Invalid argument"
    assert_equal "$(sql 'SELECT * FROM people')" '[]'
}

@test "write: introducing attempts on a queue through a file is EPERM (Operation not permitted)" {
    mount_jobs
    printf '{"url":"a","attempts":1}\n' >"$BATS_TEST_TMPDIR/rec"
    run bash -c 'cat "$1" > "$M/jobs/7"' bash "$BATS_TEST_TMPDIR/rec"
    assert_failure
    assert_output --partial "Operation not permitted"
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_TRUNC); os.write(fd, open(a[3], "rb").read()); os.close(fd)' \
        "$M/jobs/7" "$BATS_TEST_TMPDIR/rec"
    assert_output EPERM
    assert_equal "$(cat "$M/jobs/7")" '{"id":"jobs:7","url":"a"}'
}

@test "write: a datetime NOT BEFORE field written as an ISO-8601 string delays the record" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s NOT BEFORE due; DEFINE FIELD due ON jobs TYPE option<datetime>;" >/dev/null
    mount_fs
    printf '{"due":"2099-01-01T00:00:00Z"}\n' >"$M/jobs/1"
    printf '{}\n' >"$M/jobs/2"
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:2"
    run cat "$M/jobs/claim"
    assert_output ""
}

# ---------------------------------------------------------------------------
# new
# ---------------------------------------------------------------------------

@test "new: jq -c '.[]' batch.json >> jobs/new creates one record per line with store-assigned ids" {
    mount_jobs
    printf '[{"url":"x"},{"url":"y"},{"url":"z"}]\n' >"$BATS_TEST_TMPDIR/batch.json"
    run bash -c 'jq -c ".[]" "$1" >> "$M/jobs/new"' bash "$BATS_TEST_TMPDIR/batch.json"
    assert_success
    assert_equal "$(sql 'SELECT id, url FROM jobs ORDER BY id' | jq -c '[.[] | [.id, .url]]')" \
        '[["jobs:7","a"],["jobs:8","b"],["jobs:9","x"],["jobs:10","y"],["jobs:11","z"]]'
    run ls "$M/jobs"
    assert_line 11
}

@test "new: at the largest integer identity a write to new is EOVERFLOW and replaces no record" {
    sql "DEFINE QUEUE ov TIMEOUT 30s; CREATE ov:9223372036854775806 = {n: 0}" >/dev/null
    mount_fs
    # Three lines in one write: only one identity is left, so none is stored.
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND)
try:
    os.write(fd, b"{\"n\":1}\n{\"n\":2}\n{\"n\":3}\n")
finally:
    os.close(fd)' "$M/ov/new"
    assert_output EOVERFLOW
    if on_postgresql; then
        # The identity the rolled-back write drew from the table's sequence
        # is not handed out again (queuefs(1), POSTGRESQL): none is left.
        run bash -c 'printf "%s\n" "{\"n\":4}" >> "$M/ov/new"'
        assert_failure
        assert_output --partial "Value too large"
        assert_equal "$(sql 'SELECT id, n FROM ov ORDER BY n' | jq -c '[.[] | [.id, .n]]')" \
            '[["ov:9223372036854775806",0]]'
        return
    fi
    printf '%s\n' '{"n":4}' >>"$M/ov/new"
    run bash -c 'printf "%s\n" "{\"n\":5}" >> "$M/ov/new"'
    assert_failure
    assert_output --partial "Value too large"
    run ctl "CREATE ov = {n: 6};"
    assert_failure
    assert_output --partial '"error":"IdentitiesExhausted"'
    assert_equal "$(sql 'SELECT id, n FROM ov ORDER BY n' | jq -c '[.[] | [.id, .n]]')" \
        '[["ov:9223372036854775806",0],["ov:9223372036854775807",4]]'
}

@test "new: printf lines >> jobs/new; a last line without newline counts at close" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    printf '{"n":1}\n{"n":2}\n' >>"$M/jobs/new"
    printf '{"n":3}' >>"$M/jobs/new"
    assert_equal "$(sql 'SELECT n FROM jobs ORDER BY id' | jq -c '[.[].n]')" '[1,2,3]'
    # new reads empty and is not listed as a record.
    run cat "$M/jobs/new"
    assert_output ""
}

@test "new: a line split across two writes is one record" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    run python3 -c '
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
os.write(fd, b"{\"n\":")
os.write(fd, b"1}\n{\"n\":2}\n")
os.close(fd)' "$M/jobs/new"
    assert_success
    assert_equal "$(sql 'SELECT n FROM jobs ORDER BY id' | jq -c '[.[].n]')" '[1,2]'
}

@test "new: one write() with a bad line creates none of its lines and fails (dd)" {
    mount_jobs
    run bash -c "printf '{\"url\":\"ok1\"}\n{bad\n{\"url\":\"ok2\"}\n' | dd of=\"\$M/jobs/new\" oflag=append conv=notrunc status=none"
    assert_failure
    assert_output --partial "Invalid argument"
    assert_equal "$(count_records jobs)" 2
    run ls "$M/jobs"
    assert_equal "$(grep -c '^[0-9]' <<<"$output")" 2
}

@test "new: a line the schema refuses, amid good ones, stores none of the write's lines" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL; DEFINE FIELD n ON jobs TYPE int REQUIRED;" >/dev/null
    mount_fs
    # one write() each: a line of the wrong type, one that sets an engine
    # field, one the schema does not declare
    for case in '{"n":"two"} EINVAL' '{"n":2,"attempts":3} EPERM' '{"m":2} EINVAL'; do
        bad=${case% *}
        run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND)
try:
    os.write(fd, a[3].encode())
finally:
    os.close(fd)' "$M/jobs/new" "$(printf '{"n":1}\n%s\n{"n":3}\n' "$bad")"
        assert_output "${case##* }"
    done
    assert_equal "$(count_records jobs)" 0
    printf '{"n":1}\n{"n":2}\n' >>"$M/jobs/new"
    # The identity each failed write drew for its good first line is not
    # handed out again on PostgreSQL (a sequence's: queuefs(1), POSTGRESQL).
    local first=1
    if on_postgresql; then first=4; fi
    assert_equal "$(sql 'SELECT id, n FROM jobs ORDER BY n' | jq -c '[.[] | [.id, .n]]')" \
        "[[\"jobs:$first\",1],[\"jobs:$((first + 1))\",2]]"
}

@test "new: a write of 1,000 lines whose last the schema refuses stores none of them; 1,000 good ones, all" {
    # (On PostgreSQL the good lines go to the server as one INSERT that
    # carries the commit when nothing follows it: not when a line failed.)
    sql "DEFINE QUEUE jobs TIMEOUT 30s SCHEMAFULL; DEFINE FIELD n ON jobs TYPE int REQUIRED;" >/dev/null
    mount_fs
    local good
    good=$(seq 1 999 | sed 's/.*/{"n":&}/')
    # (the newline after the last line added here: $(…) drops it)
    run errno_of 'fd = os.open(a[2], os.O_WRONLY | os.O_APPEND)
try:
    os.write(fd, (a[3] + "\n").encode())
finally:
    os.close(fd)' "$M/jobs/new" "$(printf '%s\n{"n":"last"}' "$good")"
    assert_output EINVAL
    assert_equal "$(count_records jobs)" 0
    printf '%s\n{"n":1000}\n' "$good" >>"$M/jobs/new"
    assert_equal "$(count_records jobs)" 1000
    assert_equal "$(sql 'SELECT n FROM jobs ORDER BY n DESC LIMIT 1' | jq -c '[.[].n]')" "[1000]"
}

@test "new: store-assigned identities follow arrival order across writes, and after a named line" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    # shellcheck disable=SC2129 # three opens and writes: three transactions
    printf '{"n":1}\n{"n":2}\n{"n":3}\n' >>"$M/jobs/new"
    printf '{"n":4}\n{"id":10,"n":5}\n{"n":6}\n{"n":7}\n' >>"$M/jobs/new"
    printf '{"n":8}\n' >>"$M/jobs/new"
    assert_equal "$(sql 'SELECT id, n FROM jobs ORDER BY n' | jq -c '[.[] | [.id, .n]]')" \
        '[["jobs:1",1],["jobs:2",2],["jobs:3",3],["jobs:4",4],["jobs:10",5],["jobs:11",6],["jobs:12",7],["jobs:13",8]]'
    # claimed in arrival order
    for want in 1 2 3 4 5 6 7 8; do
        assert_equal "$(jq -r .n <"$M/jobs/claim")" "$want"
    done
}

# write_new KIND SIZE — one write() of SIZE bytes of lines to $M/jobs/new
# from a page-aligned buffer (as dd's): 100-byte lines {"n":I,"p":"…"},
# the last padded to fill SIZE; with KIND bad the last line does not
# parse.  Prints the count write() returned (or the errno's name) and the
# number of lines, then "close ERRNO" when close() fails.
write_new() {
    python3 -c '
import errno, mmap, os, sys
path, kind, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines, n = [], 0
while size - sum(map(len, lines)) > 200:
    n += 1
    head = b"{\"n\":%d,\"p\":\"" % n
    lines.append(head + b"x" * (100 - len(head) - 3) + b"\"}\n")
n += 1
head = b"{\"n\":%d,\"p\":\"" % n
rest = size - sum(map(len, lines)) - len(head)
lines.append(head + b"x" * (rest - 3) + (b"\"}\n" if kind == "good" else b"  \n"))
buf = mmap.mmap(-1, size)
buf.write(b"".join(lines))
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
try:
    print(os.write(fd, buf), n)
except OSError as e:
    print(errno.errorcode[e.errno], n)
try:
    os.close(fd)
except OSError as e:
    print("close", errno.errorcode[e.errno])' "$M/jobs/new" "$1" "$2"
}

@test "new: one write() of 1 MiB is one transaction: a bad last line stores none of its lines" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    run write_new bad 1048576
    assert_output "EINVAL 10485"
    assert_equal "$(count_records jobs)" 0
    run write_new good 1048576
    assert_output "1048576 10485"
    assert_equal "$(sql 'SELECT n FROM jobs' | jq -c '[.[].n] == [range(1; 10486)]')" true
}

@test "new: a write() larger than 1 MiB commits piece by piece, and never splits a line" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    # 3 MiB: lines straddle the places where the kernel cuts the write.
    # Half a line would not parse: the write succeeding whole, with every
    # line stored once, is every line arriving whole.
    run write_new good $((3 * 1048576))
    assert_output "$((3 * 1048576)) 31457"
    assert_equal "$(sql 'SELECT n FROM jobs' | jq -c '[.[].n] == [range(1; 31458)]')" true
    # A bad line in the last piece: the two pieces before it stay, and the
    # write() says so by returning their bytes; the line the last piece
    # would have completed fails the close().
    sql "DELETE jobs;" >/dev/null
    run write_new bad $((3 * 1048576))
    assert_output "$(printf '%s\n' "$((2 * 1048576)) 31457" "close EINVAL")"
    assert_equal "$(count_records jobs)" $((2 * 1048576 / 100))
}

@test "new: cat FILE >> jobs/new with a bad line fails and creates nothing" {
    mount_jobs
    printf '{"url":"ok1"}\n{"url":"ok2"}\nnot json\n' >"$BATS_TEST_TMPDIR/lines"
    run bash -c 'cat "$1" >> "$M/jobs/new"' bash "$BATS_TEST_TMPDIR/lines"
    assert_failure
    assert_equal "$(count_records jobs)" 2
    # The next good write on a fresh open works.
    printf '{"url":"ok3"}\n' >>"$M/jobs/new"
    assert_equal "$(count_records jobs)" 3
}

# ---------------------------------------------------------------------------
# Tables as directories
# ---------------------------------------------------------------------------

@test "mkdir: mkdir notes defines a collection" {
    mount_fs
    run mkdir "$M/notes"
    assert_success
    assert_equal "$(sql 'INFO FOR TABLE notes' | jq -r .kind)" collection
    run ls "$M"
    assert_line notes
    printf '{"t":"hi"}\n' >"$M/notes/1"
    assert_equal "$(sql 'SELECT * FROM notes')" '[{"id":"notes:1","t":"hi"}]'
    run mkdir "$M/notes"
    assert_failure
    assert_output --partial "File exists"
}

@test "mkdir: a name no statement can spell is EINVAL; any name one can spell works through ctl" {
    mount_fs
    run errno_of 'os.mkdir(a[2].encode() + b"/\xff")' "$M"
    assert_output EINVAL
    run errno_of 'os.mkdir(a[2].encode() + b"/a\x7fb")' "$M"
    assert_output EINVAL
    run ls "$M"
    assert_output "$(printf 'ctl\nmetrics')"
    # UTF-8, a space, a backtick and a backslash: ctl names it in backticks.
    mkdir "$M/café \`x\\"
    run ctl 'CREATE `café \`x\\`:1 = {n: 1}; INFO FOR TABLE `café \`x\\`;'
    assert_success
    assert_line -n 0 '[{"id":"café `x\\:1","n":1}]'
    assert_equal "$(jqr .definition "${lines[1]}")" 'DEFINE COLLECTION `café \`x\\`'
    assert_equal "$(cat "$M/café \`x\\/1")" '{"id":"café `x\\:1","n":1}'
}

@test "rmdir: rmdir drops an empty table" {
    sql "DEFINE COLLECTION notes;" >/dev/null
    mount_fs
    run rmdir "$M/notes"
    assert_success
    run ls "$M"
    refute_line notes
    run --separate-stderr sql 'INFO FOR TABLE notes'
    assert_failure
}

@test "rmdir: rmdir of a non-empty table is ENOTEMPTY (Directory not empty) and keeps it" {
    sql "DEFINE COLLECTION notes; CREATE notes:1 = {};" >/dev/null
    mount_fs
    run rmdir "$M/notes"
    assert_failure
    assert_output --partial "Directory not empty"
    assert_equal "$(errno_of 'os.rmdir(a[2])' "$M/notes")" ENOTEMPTY
    assert_equal "$(sql 'SELECT * FROM notes')" '[{"id":"notes:1"}]'
}

@test "cross-table: rename(2) of jobs/7 to other/7 is EXDEV and changes nothing" {
    mount_jobs
    sql "DEFINE COLLECTION other;" >/dev/null
    run renameat2 "$M/jobs/7" "$M/other/7"
    assert_failure
    assert_output EXDEV
    assert_equal "$(errno_of 'os.rename(a[2], a[3])' "$M/jobs/7" "$M/other/7")" EXDEV
    assert_equal "$(count_records other)" 0
    assert_equal "$(cat "$M/jobs/7")" '{"id":"jobs:7","url":"a"}'
}

@test "cross-table: mv jobs/7 other/7 falls back to copy and delete" {
    mount_jobs
    sql "DEFINE COLLECTION other;" >/dev/null
    run mv "$M/jobs/7" "$M/other/7"
    assert_success
    assert_equal "$(sql 'SELECT url FROM other:7')" '[{"url":"a"}]'
    assert_equal "$(sql 'SELECT * FROM jobs:7')" '[]'
}

# ---------------------------------------------------------------------------
# Renaming a table: mv jobs work
# ---------------------------------------------------------------------------

# figures JSON — the counters and counts of a stats line that a rename keeps.
figures() {
    jq -c '{records, ready, held, dead, claims, releases, lapses, deletes}' <<<"$1"
}

@test "rename: mv mvq mvq2 renames the table: records, holds, counters and definition go with it, nothing is claimed" {
    sql "DEFINE QUEUE mvq TIMEOUT 5m ATTEMPTS 3;
         CREATE mvq:1 = { n: 1 }; CREATE mvq:2 = { n: 2 }; CREATE mvq:3 = { n: 3 }" >/dev/null
    mount_fs
    mount_fs "$BATS_TEST_TMPDIR/b"
    local B=$BATS_TEST_TMPDIR/b
    run cat "$M/mvq/claim"
    assert_equal "$(jqr .id "$output")" mvq:1
    rm "$M/mvq/3"
    local held before
    held=$(ls "$M/mvq/held/")
    [[ "$held" == 1~* ]] || fail "held/ shows '$held'"
    before=$(figures "$(cat "$M/mvq/stats")")
    # The other mount has used the old names (the kernel keeps some).
    cat "$B/mvq/stats" "$B/mvq/2" >/dev/null
    ls "$B/mvq" >/dev/null

    run mv "$M/mvq" "$M/mvq2"
    assert_success
    assert_output ""

    # The old name is gone at once, through both mounts, whatever was kept.
    local mnt
    for mnt in "$M" "$B"; do
        assert_equal "$(errno_of 'os.stat(a[2])' "$mnt/mvq")" ENOENT
        assert_equal "$(errno_of 'os.open(a[2], os.O_RDONLY)' "$mnt/mvq/claim")" ENOENT
        assert_equal "$(errno_of 'os.open(a[2], os.O_RDONLY)' "$mnt/mvq/2")" ENOENT
        assert_equal "$(errno_of 'os.open(a[2], os.O_RDONLY)' "$mnt/mvq/stats")" ENOENT
    done
    run --separate-stderr sql "INFO FOR TABLE mvq"
    assert_error NoSuchTable
    # Everything under the new name, and no claim was made.
    for mnt in "$M" "$B"; do
        assert_equal "$(figures "$(cat "$mnt/mvq2/stats")")" "$before"
        assert_equal "$(jqc '[.id, .n]' "$(cat "$mnt/mvq2/2")")" '["mvq2:2",2]'
        assert_equal "$(ls "$mnt/mvq2/held/")" "$held"
    done
    assert_equal "$(jqr '.[0].attempts' "$(sql 'SELECT attempts FROM mvq2:1')")" 1
    assert_equal "$(sql 'SELECT * FROM mvq2:2')" '[{"id":"mvq2:2","n":2}]'
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE mvq2')")" "DEFINE QUEUE mvq2 TIMEOUT 5m ATTEMPTS 3"
    # The hold goes on under the new name: its held/ name finishes it.
    run rm "$M/mvq2/held/$held"
    assert_success
    # A queue with nothing claimable renames as well, and claims nothing.
    rm "$M/mvq2/2"
    run timeout 10 mv "$M/mvq2" "$M/mvq3"
    assert_success
    assert_equal "$(jqc '[.records, .claims, .deletes]' "$(cat "$M/mvq3/stats")")" '[0,1,3]'
    run cat "$M/mvq3/claim"
    assert_success
    assert_output ""
    # The old name may be defined anew, empty.
    mkdir "$M/mvq"
    assert_equal "$(count_records mvq)" 0
}

@test "rename: mv onto an existing table is EEXIST, into one EPERM, and changes nothing" {
    sql "DEFINE QUEUE a TIMEOUT 5m; CREATE a:1 = { n: 1 };
         DEFINE COLLECTION b; CREATE b:1 = { m: 1 }" >/dev/null
    mount_fs
    run renameat2 "$M/a" "$M/b"
    assert_output EEXIST
    run renameat2 -n "$M/a" "$M/b"
    assert_output EEXIST
    run mv -T "$M/a" "$M/b"
    assert_failure
    assert_output --partial "File exists"
    # mv a b with b a directory moves a into it: a table holds no tables.
    run mv "$M/a" "$M/b"
    assert_failure
    assert_output --partial "Operation not permitted"
    run renameat2 "$M/a" "$M/b/a"
    assert_output EPERM
    run renameat2 "$M/a" "$M/ctl"
    assert_output ENOTDIR
    assert_equal "$(sql 'SELECT * FROM a')" '[{"id":"a:1","n":1}]'
    assert_equal "$(sql 'SELECT * FROM b')" '[{"id":"b:1","m":1}]'
    assert_equal "$(jqr .claims "$(cat "$M/a/stats")")" 0
    assert_equal "$(jqr .definition "$(sql 'INFO FOR TABLE b')")" "DEFINE COLLECTION b"
    # A name that cannot be a table's is EINVAL; the same name is a no-op.
    assert_equal "$(errno_of 'os.rename(a[2], a[3])' "$M/a" "$M/$(printf 'x\001')")" EINVAL
    assert_equal "$(errno_of 'os.rename(a[2], a[3])' "$M/a" "$M/a")" OK
    assert_equal "$(sql 'SELECT * FROM a')" '[{"id":"a:1","n":1}]'
}

# ---------------------------------------------------------------------------
# Identities as file names
# ---------------------------------------------------------------------------

@test "names: string identities map to file names one-to-one, both ways" {
    mount_jobs
    # identity (as CREATE writes it) | file name
    local cases=(
        "'bucket/key'" "bucket%2Fkey"
        "'007'" "%3007"
        "claim" "%63laim"
        "'new'" "%6Eew"
        "'a@b~c'" "a%40b%7Ec"
        "'.hidden'" "%2Ehidden"
        "'-3'" "%2D3"
        "'50%'" "50%25"
        "hello" "hello"
    )
    local i key name errors=""
    for ((i = 0; i < ${#cases[@]}; i += 2)); do
        key=${cases[i]} name=${cases[i + 1]}
        ctl "CREATE jobs:$key = { k: \"$name\" };" >/dev/null || fail "CREATE jobs:$key failed"
        # shellcheck disable=SC2010  # ls is what is under test
        ls "$M/jobs" | grep -qxF -- "$name" || errors+="jobs:$key is not listed as $name; "
        got=$(cat "$M/jobs/$name" 2>&1) || { errors+="cat jobs/$name: $got; "; continue; }
        [ "$(jqr .k "$got")" = "$name" ] || errors+="jobs/$name reads $got; "
        want_id=$(sql "SELECT id FROM jobs:$key" | jq -r '.[0].id')
        [ "$(jqr .id "$got")" = "$want_id" ] || errors+="jobs/$name has id $(jqr .id "$got"), want $want_id; "
    done
    [ -z "$errors" ] || fail "$errors"
}

@test "names: writing a file named hello creates jobs:hello; bucket%2Fkey creates jobs:'bucket/key'" {
    mount_jobs
    printf '{"v":1}\n' >"$M/jobs/hello"
    printf '{"v":2}\n' >"$M/jobs/bucket%2Fkey"
    printf '{"v":3}\n' >"$M/jobs/%3007"
    assert_equal "$(sql 'SELECT id, v FROM jobs:hello' | jq -c .)" '[{"id":"jobs:hello","v":1}]'
    assert_equal "$(sql "SELECT v FROM jobs:'bucket/key'")" '[{"v":2}]'
    assert_equal "$(sql "SELECT v FROM jobs:'007'")" '[{"v":3}]'
    assert_equal "$(ctl "SELECT v FROM jobs:hello;")" '[{"v":1}]'
}

@test "names: a name that is not an identity's exact spelling names nothing" {
    mount_jobs
    ctl "CREATE jobs:A = {};" >/dev/null
    for name in 007 %41 +7 %2fx; do
        run cat "$M/jobs/$name"
        assert_failure
        assert_output --partial "No such file or directory"
    done
    assert_equal "$(errno_of 'open(a[2], "w").write("{}")' "$M/jobs/007")" EINVAL
    assert_equal "$(count_records jobs)" 3
}

# ---------------------------------------------------------------------------
# The ctl file (SPEC section 3)
# ---------------------------------------------------------------------------

@test "ctl: exec 3<>ctl; one write, one line per statement; reading again gives nothing" {
    mount_jobs
    run bash -c '
        exec 3<>"$M/ctl"
        echo "SELECT * FROM jobs:7; CREATE jobs:9 = {url: \"c\"}; DEFINE COLLECTION notes;" >&3 || exit 7
        cat <&3
        echo "--"
        cat <&3
        echo "--"
        echo "SELECT url FROM jobs:9;" >&3
        cat <&3'
    assert_success
    assert_equal "$output" '[{"id":"jobs:7","url":"a"}]
[{"id":"jobs:9","url":"c"}]
null
--
--
[{"url":"c"}]'
}

@test "ctl: the first error stops execution, fails the write with its errno, and its line is readable" {
    mount_jobs
    run --separate-stderr bash -c '
        exec 3<>"$M/ctl"
        echo "CREATE jobs:20 = {}; CLAIM 0 FROM jobs; CREATE jobs:21 = {};" >&3
        echo "status $?"
        cat <&3'
    assert_success
    assert_equal "${#lines[@]}" 3
    assert_line -n 0 'status 1'
    assert_line -n 1 '[{"id":"jobs:20"}]'
    assert_equal "$(jqr .error "${lines[2]}")" ParseError
    [ -n "$(jqr .message "${lines[2]}")" ] || fail "no message: ${lines[2]}"
    [[ "$stderr" == *"write error: Invalid argument"* ]] || fail "stderr: $stderr"
    assert_equal "$(sql 'SELECT id FROM jobs:20')" '[{"id":"jobs:20"}]'
    assert_equal "$(sql 'SELECT id FROM jobs:21')" '[]'
}

@test "ctl: echo 'DEFINE QUEUE jobs TIMEOUT 30s;' > ctl works (the truncate is ignored)" {
    mount_fs
    run bash -c 'echo "DEFINE QUEUE jobs TIMEOUT 30s;" > "$M/ctl"'
    assert_success
    assert_output ""
    assert_equal "$(sql 'INFO FOR TABLE jobs' | jq -r .definition)" "DEFINE QUEUE jobs TIMEOUT 30s"
    # An empty queue lists nothing; its reserved names resolve.
    run ls "$M/jobs"
    assert_output ""
    [ -e "$M/jobs/claim" ] && [ -d "$M/jobs/held" ] || fail "the queue's reserved names do not resolve"
}

@test "ctl: a session starts as the mount's identity (-o consumer=billing)" {
    mount_jobs -o consumer=billing
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .claimed_by.consumer "$output")" billing
    file_instance=$(jqr .claimed_by.instance "$output")
    run ctl "CLAIM FROM jobs;"
    assert_success
    assert_equal "$(jqr '.[0].claimed_by.consumer' "$output")" billing
    assert_equal "$(jqr '.[0].claimed_by.instance' "$output")" "$file_instance"
    # RELEASE ALL in a ctl session reaches the holds taken through the files.
    run ctl "RELEASE ALL FROM jobs;"
    assert_success
    assert_equal "$(jqr '[.[].id] | sort | join(",")' "$output")" "jobs:7,jobs:8"
    assert_equal "$(sql 'SELECT * FROM jobs' | jq '[.[] | select(has("claimed_until"))] | length')" 0
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
}

@test "ctl: without -o consumer, RELEASE ALL in a ctl session reaches the mount's unsigned holds" {
    mount_jobs
    run cat "$M/jobs/claim"
    assert_equal "$(jqr 'has("claimed_by")' "$output")" false
    run ctl "RELEASE ALL FROM jobs;"
    assert_success
    assert_equal "$(jqr '.[0].id' "$output")" "jobs:7"
    assert_equal "$(jqr 'has("claimed_until")' "$(cat "$M/jobs/7")")" false
}

@test "ctl: USE CONSUMER persists across writes on one open file" {
    mount_jobs
    run bash -c '
        exec 3<>"$M/ctl"
        echo "USE CONSUMER '\''w1'\'';" >&3 || exit 7
        cat <&3 >/dev/null
        echo "CLAIM FROM jobs;" >&3 || exit 8
        cat <&3'
    assert_success
    assert_equal "$(jqr '.[0].claimed_by.consumer' "$output")" w1
    # Another open of ctl is another session: back to the mount's identity.
    run ctl "CLAIM FROM jobs;"
    assert_equal "$(jqr '.[0].id' "$output")" "jobs:8"
    assert_equal "$(jqr '.[0] | has("claimed_by")' "$output")" false
}

@test "ctl: BEGIN in one write and COMMIT in a later one: the claims run at COMMIT" {
    mount_jobs
    fifo="$BATS_TEST_TMPDIR/go"
    mkfifo "$fifo"
    bash -c '
        exec 3<>"$M/ctl"
        echo "BEGIN; CLAIM FROM jobs; CREATE jobs:30 = {};" >&3 || exit 7
        cat <&3 >"$1.begin"
        read -r _ <"$2"
        echo "COMMIT;" >&3 || exit 8
        cat <&3 >"$1.commit"' bash "$BATS_TEST_TMPDIR/out" "$fifo" 3>&- &
    session=$!
    for _ in $(seq 100); do [ -s "$BATS_TEST_TMPDIR/out.begin" ] && break; sleep 0.05; done
    # Between the writes nothing has run, and the store is not locked.
    run timeout 10 "$QUEUEFS_SQL" "$STORE" "SELECT id, attempts FROM jobs; CREATE jobs:31 = {};"
    echo go >"$fifo"
    wait "$session" || fail "the session script failed: $?"
    assert_success
    assert_line -n 0 '[{"id":"jobs:7"},{"id":"jobs:8"}]'
    run cat "$BATS_TEST_TMPDIR/out.commit"
    assert_equal "${#lines[@]}" 3
    assert_equal "$(jqr '.[0].id' "${lines[0]}")" "jobs:7"
    assert_equal "$(jqr '.[0].attempts' "${lines[0]}")" 1
    assert_line -n 1 '[{"id":"jobs:30"}]'
    assert_line -n 2 'null'
    assert_equal "$(sql 'SELECT attempts FROM jobs:7')" '[{"attempts":1}]'
}

@test "ctl: a ctl file closed inside BEGIN cancels the transaction" {
    mount_jobs
    run bash -c '
        exec 3<>"$M/ctl"
        echo "BEGIN; CLAIM FROM jobs; CREATE jobs:30 = {};" >&3 || exit 7
        exec 3>&-'
    assert_success
    assert_equal "$(sql 'SELECT * FROM jobs:30')" '[]'
    assert_equal "$(sql 'SELECT * FROM jobs:7')" '[{"id":"jobs:7","url":"a"}]'
    run cat "$M/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
}

@test "ctl: CLAIM above the ceiling: echo reports Numerical result out of range" {
    mount_jobs
    run bash -c 'echo "CLAIM 1001 FROM jobs;" > "$M/ctl"'
    assert_failure
    assert_output --partial "write error: Numerical result out of range"
    assert_equal "$(sql 'SELECT * FROM jobs' | jq '[.[] | select(has("attempts"))] | length')" 0
}

# ---------------------------------------------------------------------------
# Errors: the errno of each refusal (SPEC section 4)
# ---------------------------------------------------------------------------

@test "errors: each refusal written to ctl fails the write with its errno and names itself" {
    mount_jobs
    sql "DEFINE QUEUE plain TIMEOUT 30s; CREATE plain:1 = {}; CLAIM FROM plain;
         DEFINE COLLECTION notes;
         DEFINE COLLECTION people; DEFINE FIELD name ON people TYPE string REQUIRED;
         USE CONSUMER 'x'; CLAIM jobs:8;" >/dev/null
    # statement | errno and error name
    local cases=(
        "CLAIM 0 FROM jobs;" "EINVAL ParseError"
        "DEFINE QUEUE q2;" "EINVAL ParseError"
        "SELEKT * FROM jobs;" "EINVAL ParseError"
        "CREATE jobs:7 = {};" "EEXIST RecordExists"
        "SELECT * FROM nosuch;" "ENOENT NoSuchTable"
        "DELETE jobs:99;" "ENOENT NoSuchRecord"
        "CLAIM jobs:99;" "ENOENT NoSuchRecord"
        "UPDATE jobs:7 = { url: 'a', attempts: 1 };" "EPERM QueueFieldIsTheEngines"
        "USE CONSUMER 'y'; RELEASE jobs:8;" "EBUSY HeldByAnotherConsumer"
        "CLAIM 1001 FROM jobs;" "ERANGE ClaimAboveCeiling"
        "RELEASE plain:1 NOT BEFORE 10m;" "EOPNOTSUPP NoDelayField"
        "DROP QUEUE notes;" "EINVAL WrongKind"
        "CREATE people:1 = {};" "EINVAL SchemaViolation"
    )
    local i got errors=""
    for ((i = 0; i < ${#cases[@]}; i += 2)); do
        got=$(ctl_errno "${cases[i]}")
        [ "$got" = "${cases[i + 1]}" ] || errors+="
  ${cases[i]}  ->  $got (want ${cases[i + 1]})"
    done
    [ -z "$errors" ] || fail "wrong refusals:$errors"
    # Nothing is half-written.
    assert_equal "$(sql 'SELECT * FROM jobs:7')" '[{"id":"jobs:7","url":"a"}]'
    assert_equal "$(count_records people)" 0
}

@test "errors: NoSuchRecord and NoSuchTable through files are ENOENT" {
    mount_jobs
    assert_equal "$(errno_of 'os.unlink(a[2])' "$M/jobs/99")" ENOENT
    assert_equal "$(errno_of 'open(a[2]).read()' "$M/nosuch/claim")" ENOENT
    assert_equal "$(errno_of 'os.listdir(a[2])' "$M/nosuch")" ENOENT
    assert_equal "$(errno_of 'open(a[2], "w").write("{}")' "$M/nosuch/1")" ENOENT
}

@test "errors: RecordExists through ctl is EEXIST (File exists)" {
    mount_jobs
    run bash -c 'echo "CREATE jobs:7 = {};" > "$M/ctl"'
    assert_failure
    assert_output --partial "write error: File exists"
}

# ---------------------------------------------------------------------------
# queuefs-ctl
# ---------------------------------------------------------------------------

@test "queuefs-ctl: prints one result line per statement, exit 0" {
    mount_jobs
    run --separate-stderr "$QUEUEFS_CTL" "$M" "CREATE jobs:9 = { url: 'c' };" "SELECT url FROM jobs:9; DEFINE COLLECTION notes;"
    assert_success
    [ -z "$stderr" ] || fail "stderr: $stderr"
    assert_equal "$output" '[{"id":"jobs:9","url":"c"}]
[{"url":"c"}]
null'
}

@test "queuefs-ctl: on error the error line goes to stderr, the earlier lines to stdout, exit 1" {
    mount_jobs
    run --separate-stderr "$QUEUEFS_CTL" "$M" "CREATE jobs:9 = {}; CREATE jobs:7 = {}; CREATE jobs:10 = {};"
    assert_failure 1
    assert_output '[{"id":"jobs:9"}]'
    assert_equal "$(jqr .error "$stderr")" RecordExists
    assert_equal "$(count_records jobs)" 3
}

@test "queuefs-ctl: statements from standard input" {
    mount_jobs
    run bash -c 'printf "SELECT url FROM jobs:7;\nSELECT url FROM jobs:8;\n" | "$QUEUEFS_CTL" "$M"'
    assert_success
    assert_equal "$output" '[{"url":"a"}]
[{"url":"b"}]'
}

@test "queuefs-ctl: a directory that is not a queuefs mount is refused" {
    run --separate-stderr "$QUEUEFS_CTL" "$BATS_TEST_TMPDIR" "SELECT * FROM jobs;"
    assert_failure
    [ -n "$stderr" ] || fail "no message on stderr"
}

# ---------------------------------------------------------------------------
# Consumers, several mounts, concurrency
# ---------------------------------------------------------------------------

@test "consumer: -o consumer signs holds with the name and a 32-hex instance per mount" {
    mount_jobs -o consumer=billing "$BATS_TEST_TMPDIR/a"
    mount_fs -o consumer=billing "$BATS_TEST_TMPDIR/b"
    one=$(cat "$BATS_TEST_TMPDIR/a/jobs/claim")
    two=$(cat "$BATS_TEST_TMPDIR/b/jobs/claim")
    assert_equal "$(jqr .claimed_by.consumer "$one")" billing
    assert_equal "$(jqr .claimed_by.consumer "$two")" billing
    i1=$(jqr .claimed_by.instance "$one") i2=$(jqr .claimed_by.instance "$two")
    [[ "$i1" =~ ^[0-9a-f]{32}$ ]] || fail "instance $i1 is not 32 hex digits"
    [[ "$i2" =~ ^[0-9a-f]{32}$ ]] || fail "instance $i2 is not 32 hex digits"
    [ "$i1" != "$i2" ] || fail "two mounts share the instance $i1"
    # Same name, other instance: b cannot release a's hold.
    run mv "$BATS_TEST_TMPDIR/b/jobs/7" "$BATS_TEST_TMPDIR/b/jobs/released/"
    assert_failure
    assert_output --partial "Device or resource busy"
}

@test "consumer: a remount mints a new instance" {
    mount_jobs -o consumer=billing
    one=$(cat "$M/jobs/claim")
    unmount_fs "$M"
    mount_fs -o consumer=billing
    two=$(cat "$M/jobs/claim")
    [ "$(jqr .claimed_by.instance "$one")" != "$(jqr .claimed_by.instance "$two")" ] ||
        fail "the instance did not change across mounts"
}

@test "multi: several mounts and queuefs-sql on one store see each other's writes" {
    mount_jobs "$BATS_TEST_TMPDIR/a"
    mount_fs "$BATS_TEST_TMPDIR/b"
    A=$BATS_TEST_TMPDIR/a B=$BATS_TEST_TMPDIR/b
    printf '{"src":"a"}\n' >"$A/jobs/20"
    assert_equal "$(cat "$B/jobs/20")" '{"id":"jobs:20","src":"a"}'
    assert_equal "$(sql 'SELECT src FROM jobs:20')" '[{"src":"a"}]'
    sql "CREATE jobs:21 = { src: 'sql' };" >/dev/null
    run ls "$A/jobs"
    assert_line 21
    run cat "$B/jobs/21"
    assert_output '{"id":"jobs:21","src":"sql"}'
    rm "$B/jobs/20"
    run cat "$A/jobs/20"
    assert_failure
    mkdir "$A/notes"
    run ls "$B"
    assert_line notes
    run cat "$A/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:7"
    run cat "$B/jobs/claim"
    assert_equal "$(jqr .id "$output")" "jobs:8"
    assert_equal "$(sql 'CLAIM FROM jobs' | jq -r '.[0].id')" "jobs:21"
}

@test "multi: two mounts, four shell workers take 400 records, none handed out twice" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    mount_fs "$BATS_TEST_TMPDIR/a"
    mount_fs "$BATS_TEST_TMPDIR/b"
    seq 400 | sed 's/.*/{"n":&}/' >>"$BATS_TEST_TMPDIR/a/jobs/new"
    assert_equal "$(count_records jobs)" 400
    tmp=$BATS_TEST_TMPDIR
    worker() {
        local mnt=$1 w=$2 line id
        : >"$tmp/taken.$w"
        while line=$(cat "$mnt/jobs/claim") && [ -n "$line" ]; do
            id=$(jq -r .id <<<"$line")
            echo "$id" >>"$tmp/taken.$w"
            rm "$mnt/jobs/${id#jobs:}" || echo "rm $id failed" >>"$tmp/errors"
        done
        [ -z "$line" ] || echo "worker $w: claim failed" >>"$tmp/errors"
    }
    worker "$tmp/a" 1 3>&- &
    p1=$!
    worker "$tmp/a" 2 3>&- &
    p2=$!
    worker "$tmp/b" 3 3>&- &
    p3=$!
    worker "$tmp/b" 4 3>&- &
    p4=$!
    wait "$p1" "$p2" "$p3" "$p4"
    [ ! -s "$tmp/errors" ] || fail "$(cat "$tmp/errors")"
    assert_equal "$(cat "$tmp"/taken.* | wc -l)" 400
    assert_equal "$(cat "$tmp"/taken.* | sort -u | wc -l)" 400
    assert_equal "$(count_records jobs)" 0
    for w in 1 2 3 4; do
        [ -s "$tmp/taken.$w" ] || echo "# worker $w took nothing" >&3
    done
    run cat "$tmp/a/jobs/claim"
    assert_output ""
}

@test "multi: a queue dropped through another mount is gone here at once, however its names were used" {
    mount_jobs "$BATS_TEST_TMPDIR/a"
    mount_fs "$BATS_TEST_TMPDIR/b"
    A=$BATS_TEST_TMPDIR/a B=$BATS_TEST_TMPDIR/b
    # Every name on a worker's path used through B first.
    cat "$B/jobs/claim" >/dev/null
    ls "$B/jobs" >/dev/null
    printf '{"n":1}\n' >>"$B/jobs/new"
    echo 'DROP QUEUE jobs;' >"$A/ctl"
    run cat "$B/jobs/claim"
    assert_failure
    assert_output --partial "No such file or directory"
    run ls "$B/jobs"
    assert_failure
    run bash -c "printf '{\"n\":2}\n' >>'$B/jobs/new'"
    assert_failure
    [ ! -e "$B/jobs" ] || fail "$B/jobs still exists"
    # Made anew through B at once (no stale EEXIST), a collection now:
    # B shows no queue files, and A sees it.
    mkdir "$B/jobs"
    run ls "$B/jobs"
    assert_success
    assert_output ""
    [ -e "$B/jobs/new" ] || fail "the collection has no new"
    run cat "$B/jobs/claim"
    assert_failure
    run ls -d "$A/jobs"
    assert_success
    run cat "$A/jobs/claim"
    assert_failure
}

@test "multi: a record deleted through another mount can be made anew here with O_EXCL (no stale EEXIST)" {
    mount_jobs "$BATS_TEST_TMPDIR/a"
    mount_fs "$BATS_TEST_TMPDIR/b"
    A=$BATS_TEST_TMPDIR/a B=$BATS_TEST_TMPDIR/b
    cat "$B/jobs/7" >/dev/null
    rm "$A/jobs/7"
    run bash -c "set -o noclobber; printf '{\"url\":\"again\"}\n' >'$B/jobs/7'"
    assert_success
    assert_equal "$(jqr .url "$(cat "$A/jobs/7")")" again
    # And the other way: made through A, B's O_EXCL create is refused.
    printf '{"url":"c"}\n' >"$A/jobs/30"
    run bash -c "set -o noclobber; printf '{\"url\":\"d\"}\n' >'$B/jobs/30'"
    assert_failure
    assert_output --partial "cannot overwrite existing file"
}

@test "lifecycle: the daemon forgets the files the kernel forgets (metrics: queuefs_mount_inodes)" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    mount_fs
    seq 2000 | sed 's/.*/{"n":&}/' >>"$M/jobs/new"
    inodes() { sed -n 's/^queuefs_mount_inodes //p' "$M/metrics"; }
    # Records looked up and kept are held.
    for i in $(seq 10); do stat "$M/jobs/$i" >/dev/null; done
    [ "$(inodes)" -ge 10 ] || fail "queuefs_mount_inodes is $(inodes) with 10 records looked up"
    # Claimed, looked up and removed: let go.
    python3 - "$M/jobs" <<'PY'
import os, sys, json
d = sys.argv[1]
while True:
    with open(os.path.join(d, "claim")) as f:
        line = f.read()
    if not line:
        break
    name = json.loads(line)["id"].split(":")[1]
    os.stat(os.path.join(d, name))
    os.unlink(os.path.join(d, name))
PY
    assert_equal "$(count_records jobs)" 0
    echo 2 >/proc/sys/vm/drop_caches   # the kernel lets go of what it keeps unused
    [ "$(inodes)" -lt 20 ] || fail "queuefs_mount_inodes is $(inodes) after 2,000 records came and went"
}

# listed DIR — "name size mode uid gid" of every entry of DIR as ls -l gives
# them, sorted; stated DIR — the same from stat of each name.
listed() {
    # shellcheck disable=SC2012 # what ls shows is what is checked; the names are plain
    ls -ln --time-style=+%s "$1" | awk 'NR > 1 { print $7, $5, $1, $3, $4 }' | sort
}
stated() {
    local f
    # shellcheck disable=SC2045 # the names ls lists are what is checked; they are plain
    for f in $(ls "$1"); do
        stat -c '%n %s %A %u %g' "$1/$f" | sed "s|^$1/||"
    done | sort
}

@test "listing: ls -l shows every record's size, mode and owner exactly as stat does, held and dead views too" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m ATTEMPTS 1; DEFINE COLLECTION notes;" >/dev/null
    mount_fs
    seq 300 | sed 's/.*/{"n":&,"pad":"&&&"}/' >>"$M/jobs/new"
    cat "$M/jobs/claim" >/dev/null    # jobs:1 held: its JSON grows
    mv "$M/jobs/1" "$M/jobs/released/"   # and at its ceiling: dead
    cat "$M/jobs/claim" >/dev/null    # jobs:2 held
    echo '{"a":1}' >"$M/notes/x"
    chmod 0750 "$M/jobs"
    chown 12:34 "$M/notes"
    for dir in jobs jobs/held jobs/dead notes; do
        listed "$M/$dir" >"$BATS_TEST_TMPDIR/ls"
        stated "$M/$dir" >"$BATS_TEST_TMPDIR/stat"
        [ "$(wc -l <"$BATS_TEST_TMPDIR/ls")" -gt 0 ] || fail "ls -l $dir lists nothing"
        diff "$BATS_TEST_TMPDIR/ls" "$BATS_TEST_TMPDIR/stat" >&2 || fail "ls -l of $dir differs from stat"
    done
    assert_equal "$(listed "$M/jobs" | awk '$1 ~ /^[0-9]+$/ && $3 == "-rw-r-----"' | wc -l)" 300
    assert_equal "$(listed "$M/jobs/held" | cut -d' ' -f1)" "2~$(jq .hold "$M/jobs/2")"
    assert_equal "$(listed "$M/jobs/dead" | cut -d' ' -f1)" "1"
    assert_equal "$(listed "$M/notes" | grep '^x ')" "x 23 -rw-r--r-- 12 34"   # {"a":1,"id":"notes:x"}
}

@test "listing: a listing gives each name of a table the inode number stat gives it (d_ino)" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    mount_fs
    seq 8 | sed 's/.*/{"n":&}/' >>"$M/jobs/new"
    # scandir's inode() is the listing's d_ino, which find, rsync and the
    # like trust without a stat.
    run python3 - "$M/jobs" <<'PY'
import os, sys
for e in sorted(os.scandir(sys.argv[1]), key=lambda e: e.name):
    print(e.name, e.inode(), os.stat(e.path).st_ino)
PY
    assert_success
    assert_equal "${#lines[@]}" 8    # the 8 records: nothing else is listed
    local line
    for line in "${lines[@]}"; do
        read -r name listed stated <<<"$line"
        assert_equal "$name $listed" "$name $stated"
    done
}

@test "listing: ls -l of 20,000 records completes, and what the kernel then forgets the daemon forgets too" {
    sql "DEFINE QUEUE jobs TIMEOUT 5m;" >/dev/null
    mount_fs
    seq 20000 | sed 's/.*/{"n":&}/' >>"$M/jobs/new"
    inodes() { sed -n 's/^queuefs_mount_inodes //p' "$M/metrics"; }
    run ls -l "$M/jobs"
    assert_success
    assert_equal "${#lines[@]}" 20001    # total and the 20,000 records
    assert_equal "$(awk '$5 == 22' <<<"$output" | wc -l)" 9   # {"id":"jobs:1","n":1} … 9
    # Each name the kernel still keeps is one the daemon keeps; once the
    # kernel drops them, the daemon has let them go.
    [ "$(inodes)" -le 20010 ] || fail "queuefs_mount_inodes is $(inodes) after listing 20,000"
    echo 2 >/proc/sys/vm/drop_caches
    [ "$(inodes)" -lt 20 ] || fail "queuefs_mount_inodes is $(inodes) after the kernel dropped its caches"
}

# ---------------------------------------------------------------------------
# Times from the store
# ---------------------------------------------------------------------------

# ns_times FILE… — "mtime ctime" of each FILE in nanoseconds, a line each.
ns_times() {
    python3 -c '
import os, sys
for f in sys.argv[1:]:
    st = os.stat(f)
    print(st.st_mtime_ns, st.st_ctime_ns)' "$@"
}

@test "times: mtime is the content's last write, ctime the hold's last change, held/ID~N's mtime its claim; every mount agrees" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    mount_fs "$BATS_TEST_TMPDIR/m2"
    local M2=$BATS_TEST_TMPDIR/m2 m1 c1 m2 c2 m1b c1b hm
    echo '{"n":1}' >>"$M/jobs/new"
    echo '{"n":2}' >>"$M/jobs/new"
    read -r m1 c1 < <(ns_times "$M/jobs/1")
    read -r m2 c2 < <(ns_times "$M/jobs/2")
    [ "$m1" -eq "$c1" ] && [ "$m1" -lt "$m2" ] || fail "created: 1=($m1 $c1) 2=($m2 $c2)"
    # A claim changes the hold: ctime moves, mtime stays.
    cat "$M/jobs/claim" >/dev/null
    read -r m1b c1b < <(ns_times "$M/jobs/1")
    [ "$m1b" -eq "$m1" ] || fail "a claim moved mtime: $m1 -> $m1b"
    [ "$c1b" -gt "$m2" ] || fail "a claim did not move ctime past the later create: $c1b"
    read -r hm _ < <(ns_times "$M/jobs/held/1~$(jq .hold "$M/jobs/1")")
    assert_equal "$hm" "$c1b"
    # The other mount shows the same instants.
    assert_equal "$(ns_times "$M2/jobs/1" "$M2/jobs/2")" "$(ns_times "$M/jobs/1" "$M/jobs/2")"
    # ls -t and find -newer follow the content's writes.
    # shellcheck disable=SC2012 # ls's order is what is checked
    assert_equal "$(ls -t "$M/jobs" | tr '\n' ' ')" "2 1 "
    assert_equal "$(cd "$M/jobs" && find . -type f -newer 1)" "./2"
    echo '{"n":10}' >"$M/jobs/1"
    # shellcheck disable=SC2012 # ls's order is what is checked
    assert_equal "$(ls -t "$M/jobs" | tr '\n' ' ')" "1 2 "
    # A release changes the hold again.
    mv "$M/jobs/1" "$M/jobs/released/"
    local m1c c1c
    read -r m1c c1c < <(ns_times "$M2/jobs/1")
    [ "$c1c" -gt "$c1b" ] || fail "a release did not move ctime: $c1b -> $c1c"
    [ "$m1c" -gt "$m2" ] || fail "the write did not move mtime: $m1c"
}
