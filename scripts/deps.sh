# shellcheck shell=bash
# deps.sh — sourced by scripts/run and scripts/test: makes sure the Debian
# packages queuefs builds and tests with are installed.  As root it installs
# what is missing with apt-get; otherwise it prints the command and fails.

# What building and running queuefs needs (jq: the README's examples; tzdata: the
# time zones of NOT BEFORE CRON … IN 'zone'), and what the
# test suite needs besides (clang: the fuzz targets; clang-format: make
# format-check; systemd: checking the unit file; rsync: the tools walked
# over a mount; shellcheck and cppcheck: `make shellcheck` and `make
# cppcheck`; postgresql: the private servers the PostgreSQL backend's
# tests start).
QUEUEFS_RUN_PACKAGES="autoconf automake make gcc pkg-config liblmdb-dev libpq-dev zlib1g-dev libfuse3-dev fuse3 jq tzdata"
QUEUEFS_TEST_PACKAGES="$QUEUEFS_RUN_PACKAGES lmdb-utils bats bats-assert bats-support clang clang-format libclang-rt-14-dev systemd rsync shellcheck cppcheck postgresql mandoc man-db"

# queuefs_install_deps [--run] [PACKAGE…] — the test suite's packages (with
# --run, only what running needs), and PACKAGE….
queuefs_install_deps() {
    local missing=() pkg list=$QUEUEFS_TEST_PACKAGES
    if [ "${1:-}" = --run ]; then
        list=$QUEUEFS_RUN_PACKAGES
        shift
    fi
    for pkg in $list "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'ok installed' ||
            missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        echo "queuefs needs these Debian packages; install them with:" >&2
        echo "  sudo apt-get install -y ${missing[*]}" >&2
        return 1
    fi
    echo "installing ${missing[*]}" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >&2
}

# Configures (once) and builds the tree at the current directory.
queuefs_build() {
    if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt configure ]; then
        autoreconf -fi >/dev/null 2>&1 || { autoreconf -fi; return 1; }
    fi
    if [ ! -f Makefile ] || [ configure -nt Makefile ]; then
        # shellcheck disable=SC2086 # the flags are several words, split on purpose
        ./configure ${QUEUEFS_CONFIGURE_FLAGS:-} >/dev/null || return 1
    fi
    make -j"$(nproc)" >/dev/null
}
