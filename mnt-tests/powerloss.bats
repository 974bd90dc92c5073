#!/usr/bin/env bats
# powerloss.bats — a power cut loses nothing queuefs acknowledged
# (scripts/powerloss): queuefs's store on ext4 on a loop device over
# powerfs, a disk that drops (or tears) what it had not flushed when the
# power goes, checked after the disk is attached again on the same loop
# device, on another one, and after torn writes; and the checker caught
# failing when sync=none loses what it acknowledged.  First powerfs itself.
#
# Needs root, loop devices and /dev/fuse (CI runs as root): without them
# the suite fails, it does not skip.  LMDB only: the disk under test is the
# store's own.

# Each @test runs in a process of its own: the $output a test's run sets is
# its own on purpose.
# shellcheck disable=SC2030,SC2031
load helpers

POWERLOSS="$BATS_TEST_DIRNAME/../scripts/powerloss"
POWERFS="$QUEUEFS_BUILD/mnt-tests/powerfs"

setup() {
    lmdb_only "the power cut is under the LMDB store's own disk"
    [ "$(id -u)" = 0 ] || fail "the power-loss test needs root (loop devices, mount); run it as root"
    [ -c /dev/fuse ] || fail "the power-loss test needs /dev/fuse"
    local tool
    for tool in losetup mkfs.ext4 e2fsck fusermount3; do
        command -v "$tool" >/dev/null || fail "the power-loss test needs $tool"
    done
    [ -x "$POWERFS" ] || fail "no powerfs at $POWERFS (build it, or set QUEUEFS_BUILD)"
    [ -x "$QUEUEFS_BUILD/mnt-tests/powerload" ] || fail "no $QUEUEFS_BUILD/mnt-tests/powerload"
    [ -x "$QUEUEFS_BUILD/queuefs" ] || fail "no queuefs at $QUEUEFS_BUILD/queuefs"
    export TMPDIR="$BATS_TEST_TMPDIR"
}

# Nothing of a test stays mounted, attached or running, whatever happened.
teardown() {
    local left='' p a dev file
    local -a args
    on_postgresql && return 0
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
    # Deepest first: a queuefs mount, then ext4, then powerfs.
    while read -r p; do
        left+=" mount $p"
        fusermount3 -u -z "$p" 2>/dev/null || umount -l "$p"
    done < <(awk -v d="$BATS_TEST_TMPDIR/" 'index($2, d) == 1 { print $2 }' /proc/mounts | sort -r)
    while read -r dev file; do
        [[ $file == "$BATS_TEST_TMPDIR"/* ]] || continue
        left+=" $dev"
        losetup -d "$dev"
    done < <(losetup -n -O NAME,BACK-FILE 2>/dev/null)
    [ -z "$left" ] || fail "the test left behind:$left"
}

# pfs_start — powerfs on a fresh 1 MiB IMG at PFS.
pfs_start() {
    IMG="$BATS_TEST_TMPDIR/img"
    PFS="$BATS_TEST_TMPDIR/pfs"
    mkdir -p "$PFS"
    truncate -s 1M "$IMG"
    "$POWERFS" -f "$IMG" "$PFS" 2>"$BATS_TEST_TMPDIR/powerfs.err" 3>&- &
    PFS_PID=$!
    local i
    for ((i = 0; i < 100; i++)); do
        grep -qF " $PFS fuse.powerfs " /proc/mounts && return 0
        sleep 0.05
    done
    fail "powerfs did not mount: $(cat "$BATS_TEST_TMPDIR/powerfs.err")"
}

pfs_stop() {
    fusermount3 -u "$PFS" || fail "fusermount3 -u $PFS failed"
    wait "$PFS_PID" || fail "powerfs exited $?"
}

# disk PYCODE — runs python3 with fd d open on PFS/disk, S = 512 bytes of
# each of 'a'..; prints its lines.
disk() {
    python3 -c '
import os, sys
d = os.open(sys.argv[2] + "/disk", os.O_RDWR)
def sector(c, n=1): return c.encode() * (512 * n)
def errno_of(f):
    try:
        f()
        return "OK"
    except OSError as e:
        return os.strerror(e.errno)
exec(sys.argv[1])
' "$1" "$PFS"
}

@test "powerfs: reads see unflushed writes, a flush makes them durable, a cut drops the rest and the disk is gone" {
    pfs_start
    run disk '
os.pwrite(d, sector("a", 8), 0)
os.fsync(d)
os.pwrite(d, sector("b", 8), 4096)
print(os.pread(d, 8192, 0) == sector("a", 8) + sector("b", 8))'
    assert_success
    assert_output True
    run cat "$PFS/ctl"
    assert_line "flushes 1"
    assert_line "pending 1 4096"
    assert_line "cut no"
    echo "cut now" >"$PFS/ctl"
    run cat "$PFS/ctl"
    assert_line --regexp "^cut yes 2 0 8 [0-9]+$"
    assert_line "pending 0 0"
    run disk '
print(errno_of(lambda: os.pwrite(d, b"x", 0)), errno_of(lambda: os.pread(d, 1, 0)), errno_of(lambda: os.fsync(d)))'
    assert_output "Input/output error Input/output error Input/output error"
    pfs_stop
    run python3 -c 'import sys; b = open(sys.argv[1], "rb").read(8192); print(b == b"a" * 4096 + bytes(4096))' "$IMG"
    assert_output True
}

@test "powerfs: a cut armed at flush N replaces it; torn keeps some of the unflushed sectors, each whole" {
    pfs_start
    echo "torn 7" >"$PFS/ctl"
    echo "cut 2" >"$PFS/ctl"
    run disk '
os.pwrite(d, sector("a"), 0)
os.fsync(d)
os.pwrite(d, sector("c", 16), 0)
print(errno_of(lambda: os.fsync(d)))'
    assert_output "Input/output error"
    run awk '$1 == "cut" { print $2, $3, $4, $5 }' "$PFS/ctl"
    assert_output --regexp "^yes 2 [0-9]+ 16$"
    local kept
    kept=$(awk '$1 == "cut" { print $4 }' "$PFS/ctl")
    [ "$kept" -gt 0 ] && [ "$kept" -lt 16 ] || fail "torn kept $kept of 16 sectors"
    run bash -c 'echo "cut sometime" >"$1/ctl"' _ "$PFS"
    assert_failure
    pfs_stop
    # Each sector of the image is one write's whole: a's, c's or zeros.
    run python3 -c '
import sys
b = open(sys.argv[1], "rb").read(8192)
s = [b[i:i + 512] for i in range(0, 8192, 512)]
ok = all(x in (b"a" * 512, b"c" * 512, bytes(512)) for x in s) and s[0] in (b"a" * 512, b"c" * 512)
print(ok, sum(x == b"c" * 512 for x in s))' "$IMG"
    assert_output "True $kept"
}

# The sweeps: the uncut run first (it must pass: no false alarm), then a
# few cut points spread over its flushes.

@test "powerloss same: power cuts, the disk attached again on the same loop device, lose nothing" {
    run "$POWERLOSS" 4 --variant same --seconds 2
    echo "$output"
    assert_success
    assert_output --partial "uncut (same, no cut)"
    assert_output --partial "no losses"
}

@test "powerloss moved: power cuts, the disk attached again on another loop device, lose nothing" {
    run "$POWERLOSS" 4 --variant moved --seconds 2
    echo "$output"
    assert_success
    assert_output --partial "no losses"
}

@test "powerloss torn: power cuts keeping a random half of the unflushed sectors lose nothing" {
    run "$POWERLOSS" 3 --variant torn --seconds 2
    echo "$output"
    assert_success
    assert_output --partial "no losses"
}

@test "powerloss --control: sync=none under the same cuts loses acknowledged writes, and the checker says so" {
    run "$POWERLOSS" --control --seconds 2
    echo "$output"
    assert_success
    assert_output --partial "control passed"
}
