#!/usr/bin/env bats
# admin.bats — queuefs as an administrator and a user's test suite meet it:
# mounting over a mount (live or dead), what the commands say when an
# argument is missing, their versions, the bats helper that `make install`
# installs (scripts/queuefs.bash, used here as users' suites use it), the
# systemd unit, and a mount made the way /etc/fstab makes one.
#
#   QUEUEFS_BUILD=/path/to/build bats mnt-tests/admin.bats

# Each @test runs in a process of its own, so what a test sets (M) is its
# own on purpose; $stderr is set by bats' run --separate-stderr.
# shellcheck disable=SC2030,SC2031,SC2154
load mount_helpers

eval "$(declare -f teardown | sed '1s/^teardown/mount_teardown/')"

teardown() {
    queuefs_unmount || true
    # A dead mount a test made: its daemon was killed.
    if [ -n "${M:-}" ] && grep -qF " $M " /proc/mounts; then
        fusermount3 -u -z "$M" 2>/dev/null || true
    fi
    mount_teardown
    if [ -n "${SHARED:-}" ]; then rm -rf "$SHARED"; fi
}

@test "a second queuefs on a queuefs mount point is refused and names the mount" {
    mount_fs
    run --separate-stderr "$QUEUEFS" "$STORE" "$M"
    [ "$status" -ne 0 ] || fail "the second mount succeeded"
    assert_output ""
    [[ $stderr == *"$M is a queuefs mount already (of $STORE)"* ]] || fail "stderr: $stderr"
    [[ $stderr == *"fusermount3 -u $M"* ]] || fail "stderr: $stderr"
    [ "$(grep -cF " $M fuse.queuefs " /proc/mounts)" -eq 1 ] || fail "the mounts stacked: $(grep -F " $M " /proc/mounts)"
    # The first mount still serves.
    run cat "$M/ctl"
    assert_success
}

@test "a dead mount point is named, with the command that clears it" {
    mount_fs
    kill -9 "$(daemon_pid "$M")"
    # The kernel answers ENOTCONN once the daemon is gone.
    for _ in $(seq 100); do
        stat "$M" >/dev/null 2>&1 || break
        sleep 0.05
    done
    run --separate-stderr "$QUEUEFS" "$STORE" "$M"
    [ "$status" -ne 0 ] || fail "mounting on a dead mount succeeded"
    [[ $stderr == *"$M is a dead mount"* ]] || fail "stderr: $stderr"
    [[ $stderr == *"Transport endpoint is not connected"* ]] || fail "stderr: $stderr"
    [[ $stderr == *"fusermount3 -u $M"* ]] || fail "stderr: $stderr"
    # The command it names clears it, and then queuefs mounts.
    fusermount3 -u "$M"
    mount_fs
    run cat "$M/ctl"
    assert_success
}

@test "queuefs with a missing argument says which, not the whole help" {
    run --separate-stderr "$QUEUEFS" "$STORE"
    [ "$status" -eq 2 ]
    [[ $stderr == "queuefs: no MOUNTPOINT given"* ]] || fail "stderr: $stderr"
    [ "$(printf '%s\n' "$stderr" | wc -l)" -le 2 ] || fail "stderr: $stderr"
    run --separate-stderr "$QUEUEFS"
    [ "$status" -eq 2 ]
    [[ $stderr == "queuefs: no STORE and no MOUNTPOINT given"* ]] || fail "stderr: $stderr"
    [ ! -e "$STORE" ] || fail "a store was made"
}

@test "queuefs-ctl and queuefs-work print the version queuefs prints" {
    local want
    want=$("$QUEUEFS" --version | awk '{ print $2 }')
    [ -n "$want" ]
    run "$QUEUEFS_CTL" --version
    assert_success
    assert_output "queuefs-ctl $want"
    run "$QUEUEFS_BUILD/queuefs-work" --version
    assert_success
    assert_output "queuefs-work $want"
}

@test "queuefs-ctl runs every statement argument, their last ';' optional" {
    sql "DEFINE QUEUE jobs TIMEOUT 30s;" >/dev/null
    mount_fs
    run --separate-stderr ctl "CREATE jobs:1 = {a: 1}" "CREATE jobs:2 = {a: 2};" "SELECT * FROM jobs"
    assert_success
    assert_line --index 0 '[{"a":1,"id":"jobs:1"}]'
    assert_line --index 1 '[{"a":2,"id":"jobs:2"}]'
    assert_line --index 2 '[{"a":1,"id":"jobs:1"},{"a":2,"id":"jobs:2"}]'
    [ "${#lines[@]}" -eq 3 ]
}

@test "queuefs --bats-helper names the helper make install installs" {
    run "$QUEUEFS" --bats-helper
    assert_success
    local path=$output
    [[ $path == /*/queuefs.bash ]] || fail "not a path to queuefs.bash: $path"
    local dest="$BATS_TEST_TMPDIR/dest"
    make -s -C "$QUEUEFS_BUILD" install-dist_pkgdataDATA DESTDIR="$dest" >/dev/null ||
        fail "make install-dist_pkgdataDATA failed"
    [ -f "$dest$path" ] || fail "make install put nothing at $path"
    cmp "$dest$path" "$BATS_TEST_DIRNAME/../scripts/queuefs.bash"
}

@test "the bats helper mounts a fresh store, passes options on, and unmounts cleanly" {
    QUEUEFS_BIN=$QUEUEFS queuefs_mount -o consumer=helper-test
    [ -n "$QUEUEFS_MOUNT" ] && [ -n "$QUEUEFS_STORE" ]
    mountpoint -q "$QUEUEFS_MOUNT" || fail "$QUEUEFS_MOUNT is not mounted"
    local dir=${QUEUEFS_MOUNT%/mnt} pid
    pid=$(queuefs_daemon_pid "$QUEUEFS_MOUNT")
    [ -n "$pid" ]
    echo 'DEFINE QUEUE jobs TIMEOUT 30s;' >"$QUEUEFS_MOUNT/ctl"
    echo '{"url":"a"}' >>"$QUEUEFS_MOUNT/jobs/new"
    run jq -r .claimed_by.consumer "$QUEUEFS_MOUNT/jobs/claim"
    assert_output helper-test
    queuefs_unmount
    [ -z "${QUEUEFS_MOUNT:-}" ] || fail "QUEUEFS_MOUNT still set"
    ! alive "$pid" || fail "the daemon $pid is still running"
    [ ! -e "$dir" ] || fail "$dir was not removed"
    # Unmounting again, with nothing mounted, is harmless.
    queuefs_unmount
}

@test "the bats helper says why it cannot mount and leaves nothing behind" {
    # shellcheck disable=SC2016 # the script's $ are its own
    run --separate-stderr env QUEUEFS_BIN="$QUEUEFS" bash -c '
        . "$1"
        queuefs_mount -o sync=sometimes && exit 9
        echo "left: $(ls "${BATS_TEST_TMPDIR:-/tmp}" | grep -c "^queuefs\.")"
    ' _ "$BATS_TEST_DIRNAME/../scripts/queuefs.bash"
    assert_success
    assert_output "left: 0"
    [[ $stderr == *"sync=sometimes"* ]] || fail "stderr: $stderr"
    # shellcheck disable=SC2016 # the script's $ are its own
    run --separate-stderr env QUEUEFS_BIN="$QUEUEFS" QUEUEFS_TEST_STORE=/somewhere bash -c '
        . "$1"; queuefs_mount' _ "$BATS_TEST_DIRNAME/../scripts/queuefs.bash"
    [ "$status" -ne 0 ]
    [[ $stderr == *QUEUEFS_TEST_STORE* ]] || fail "stderr: $stderr"
}

@test "the bats helper reports a daemon that does not exit after its unmount" {
    QUEUEFS_BIN=$QUEUEFS queuefs_mount
    local pid
    pid=$(queuefs_daemon_pid "$QUEUEFS_MOUNT")
    kill -STOP "$pid"
    # Unmounting lazily leaves the stopped daemon running: the helper must
    # say so, kill it, and fail.
    fusermount3 -u -z "$QUEUEFS_MOUNT"
    run --separate-stderr queuefs_unmount
    kill -9 "$pid" 2>/dev/null || true
    [ "$status" -ne 0 ] || fail "a daemon left running went unreported"
    [[ $stderr == *"did not exit"* ]] || fail "stderr: $stderr"
    wait_gone "$pid" || fail "the daemon $pid was not killed"
}

@test "the systemd unit parses, with the installed queuefs as its command" {
    command -v systemd-analyze >/dev/null || fail "systemd-analyze is missing (Debian package systemd)"
    local unit="$BATS_TEST_TMPDIR/queuefs@demo.service"
    sed -e "s|[@]bindir[@]|$QUEUEFS_BUILD|g" "$BATS_TEST_DIRNAME/../systemd/queuefs@.service.in" >"$unit"
    run systemd-analyze verify --man=no "$unit"
    assert_success
    assert_output ""
    grep -qx "ExecStart=$QUEUEFS_BUILD/queuefs -o \${OPTIONS} \${STORE} \${MOUNTPOINT}" "$unit"
    grep -qx 'Environment=OPTIONS=allow_other,default_permissions' "$unit"
    # The generated unit names the configured bindir.
    grep -q '^ExecStart=/.*/queuefs ' "$QUEUEFS_BUILD/systemd/queuefs@.service" ||
        fail "the built unit has no ExecStart path: $(grep ExecStart "$QUEUEFS_BUILD/systemd/queuefs@.service")"
}

@test "a mount made as /etc/fstab makes it serves other users by the tables' modes" {
    # mount(8) runs mount.fuse3 for a fuse.queuefs line; the type's program
    # is given by path here because this queuefs is not installed.  The
    # mount point must be reachable by the second user.
    SHARED=$(mktemp -d /tmp/queuefs-admin.XXXXXX)
    chmod 0755 "$SHARED"
    M=$SHARED/m
    mkdir "$M"
    mount.fuse3 "$QUEUEFS#$STORE" "$M" -o allow_other,default_permissions 3>&-
    wait_mounted "$M" || fail "not mounted"
    track_mount "$M"
    grep -F " $M fuse.queuefs " /proc/mounts | grep -q allow_other
    echo 'DEFINE QUEUE open TIMEOUT 30s; DEFINE QUEUE closed TIMEOUT 30s;' >"$M/ctl"
    echo '{"a":1}' >>"$M/open/new"
    echo '{"a":1}' >>"$M/closed/new"
    chmod 777 "$M/open"
    chmod 700 "$M/closed"
    run setpriv --reuid=65534 --regid=65534 --clear-groups cat "$M/open/1"
    assert_success
    assert_output '{"a":1,"id":"open:1"}'
    run setpriv --reuid=65534 --regid=65534 --clear-groups cat "$M/closed/1"
    assert_failure
    assert_output --partial "Permission denied"
}

@test "a store that cannot be opened is named once in the message" {
    local file="$BATS_TEST_TMPDIR/afile"
    touch "$file"
    run --separate-stderr "$QUEUEFS_SQL" "$file" "SELECT 1;"
    assert_failure
    [[ $stderr == "queuefs-sql: cannot open store $file: "* ]] || fail "stderr: $stderr"
    [ "$(grep -o "$file" <<<"$stderr" | wc -l)" -eq 1 ] || fail "the path is named more than once: $stderr"
    run --separate-stderr "$QUEUEFS" "$file" "$M"
    assert_failure
    [[ $stderr == "queuefs: cannot open store $file: "* ]] || fail "stderr: $stderr"
    [ "$(grep -o "$file" <<<"$stderr" | wc -l)" -eq 1 ] || fail "the path is named more than once: $stderr"
}

@test "the daemon logs refused ctl statements (stderr with -f), naming who and why" {
    local log="$BATS_TEST_TMPDIR/daemon.log"
    "$QUEUEFS" -f "$STORE" "$M" 2>"$log" 3>&- &
    wait_mounted "$M" || fail "not mounted; log: $(cat "$log")"
    track_mount "$M"
    run bash -c 'echo "CLAIM FORM jobs;" > "$M/ctl"'
    assert_failure
    assert_output --partial "Invalid argument"
    grep -Eq "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}[+-][0-9]{4} queuefs: ctl\.c:[0-9]+: ctl: uid 0: ParseError: " "$log" ||
        fail "no log line for the refused statement: $(cat "$log")"
    grep -q "serving the store $STORE at $M" "$log" || fail "no start line: $(cat "$log")"
}
