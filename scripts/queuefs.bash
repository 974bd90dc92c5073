# queuefs.bash — a fresh queuefs mount for each test of a bats suite.
#
#     load "$(queuefs --bats-helper)"
#
#     setup()    { queuefs_mount; }        # options go to queuefs: queuefs_mount -o sync=none
#     teardown() { queuefs_unmount; }
#
#     @test "the worker finishes what it claims" {
#         echo 'DEFINE QUEUE jobs TIMEOUT 30s;' > "$QUEUEFS_MOUNT/ctl"
#         echo '{"url":"a"}' >> "$QUEUEFS_MOUNT/jobs/new"
#         run my-worker "$QUEUEFS_MOUNT/jobs"
#         [ "$(ls "$QUEUEFS_MOUNT/jobs")" = "" ]
#     }
#
# queuefs_mount [OPTION…]   mounts a new, empty store in a temporary
#                           directory (under $BATS_TEST_TMPDIR when bats
#                           sets it) and exports QUEUEFS_MOUNT (the mount
#                           point) and QUEUEFS_STORE (the store); returns
#                           non-zero, saying why on stderr, when queuefs
#                           cannot mount.  OPTIONs are queuefs's own
#                           (-o sync=none, -o consumer=NAME, …).
# queuefs_unmount           unmounts what queuefs_mount mounted, checks that
#                           the daemon exited (a daemon that stays is killed
#                           and reported: non-zero), and removes the
#                           directory.  Safe when nothing is mounted, so
#                           teardown may always call it, even after a test
#                           failed half-way.
#
# QUEUEFS_BIN               the queuefs to run (default: queuefs on PATH).
# QUEUEFS_TEST_STORE        where stores are made: unset for a directory
#                           store; a postgresql:// URI names a server, on
#                           which each test gets a database of its own.
#
# The daemon is started with fd 3 closed, so bats does not wait on it.  The
# queuefs_* functions below are what the helper itself uses and may be
# called by a suite too.

# True while process PID exists and is not a zombie.
queuefs_alive() {
    local state
    state=$(awk '{ sub(/.*\) /, ""); print $1 }' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$state" ] && [ "$state" != Z ]
}

# Polls until process PID has exited; false after 10 s.
queuefs_wait_gone() {
    for _ in $(seq 200); do
        queuefs_alive "$1" || return 0
        sleep 0.05
    done
    return 1
}

# Polls until MNT is a mount point; false after 5 s.
queuefs_wait_mounted() {
    for _ in $(seq 100); do
        mountpoint -q "$1" && return 0
        sleep 0.05
    done
    return 1
}

# True while MNT is in /proc/mounts (even as a dead mount).
queuefs_is_mounted() {
    grep -qF " $1 fuse.queuefs " /proc/mounts
}

# Polls until MNT is no longer in /proc/mounts; false after 5 s.
queuefs_wait_unmounted() {
    for _ in $(seq 100); do
        queuefs_is_mounted "$1" || return 0
        sleep 0.05
    done
    return 1
}

# The pid of the queuefs daemon serving MNT (the absolute path it was given).
queuefs_daemon_pid() {
    local mnt=$1 p a
    local -a args
    for p in /proc/[0-9]*; do
        { mapfile -d '' -t args <"$p/cmdline"; } 2>/dev/null || continue
        [ "${#args[@]}" -gt 1 ] || continue
        [ "${args[0]##*/}" = queuefs ] || continue
        for a in "${args[@]:1}"; do
            if [ "$a" = "$mnt" ]; then
                echo "${p#/proc/}"
                return 0
            fi
        done
    done
    return 1
}

queuefs_mount() {
    queuefs_unmount || return 1
    case ${QUEUEFS_TEST_STORE:-} in
    "") ;;
    postgres://* | postgresql://*)
        echo "queuefs_mount: QUEUEFS_TEST_STORE names a PostgreSQL server, and this queuefs has no PostgreSQL backend" >&2
        return 1 ;;
    *)
        echo "queuefs_mount: QUEUEFS_TEST_STORE must be unset or a postgresql:// URI, not '$QUEUEFS_TEST_STORE'" >&2
        return 1 ;;
    esac
    _queuefs_dir=$(mktemp -d "${BATS_TEST_TMPDIR:-${TMPDIR:-/tmp}}/queuefs.XXXXXX") || return 1
    QUEUEFS_STORE=$_queuefs_dir/store
    QUEUEFS_MOUNT=$_queuefs_dir/mnt
    export QUEUEFS_STORE QUEUEFS_MOUNT
    mkdir "$QUEUEFS_MOUNT" || return 1
    local out
    if ! out=$("${QUEUEFS_BIN:-queuefs}" "$@" "$QUEUEFS_STORE" "$QUEUEFS_MOUNT" 2>&1 3>&-); then
        echo "queuefs_mount: ${QUEUEFS_BIN:-queuefs} $* $QUEUEFS_STORE $QUEUEFS_MOUNT failed: $out" >&2
        queuefs_unmount
        return 1
    fi
    if ! queuefs_wait_mounted "$QUEUEFS_MOUNT"; then
        echo "queuefs_mount: queuefs returned but $QUEUEFS_MOUNT is not mounted" >&2
        queuefs_unmount
        return 1
    fi
    _queuefs_pid=$(queuefs_daemon_pid "$QUEUEFS_MOUNT")
}

queuefs_unmount() {
    [ -n "${_queuefs_dir:-}" ] || return 0
    local mnt=$_queuefs_dir/mnt rc=0 pid=${_queuefs_pid:-}
    [ -n "$pid" ] || pid=$(queuefs_daemon_pid "$mnt")
    if queuefs_is_mounted "$mnt"; then
        fusermount3 -u "$mnt" 2>/dev/null || fusermount3 -u -z "$mnt" 2>/dev/null
    fi
    if [ -n "$pid" ] && ! queuefs_wait_gone "$pid"; then
        echo "queuefs_unmount: queuefs (pid $pid) did not exit after $mnt was unmounted" >&2
        kill -9 "$pid" 2>/dev/null
        queuefs_wait_gone "$pid"
        rc=1
    fi
    if ! queuefs_wait_unmounted "$mnt"; then
        echo "queuefs_unmount: $mnt is still mounted" >&2
        rc=1
    else
        rm -rf "$_queuefs_dir"
    fi
    unset _queuefs_dir _queuefs_pid QUEUEFS_MOUNT QUEUEFS_STORE
    return $rc
}
