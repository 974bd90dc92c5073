#!/usr/bin/env bats
# docs.bats — the documentation keeps its promises: the README stays short
# enough to be read first, every man page renders and is mandoc-lint
# clean, every page is installed, and the one table of errors (queuefs.7,
# ERRORS) is exactly lang/error.c's: the same names, each with the same
# errno, and no other.  It touches no store, so it runs the same with
# QUEUEFS_TEST_PG set.
#
#   bats mnt-tests/docs.bats
#
# Needs man (man-db) and mandoc (scripts/deps.sh installs them).

bats_require_minimum_version 1.5.0

load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

TOP="$BATS_TEST_DIRNAME/.."
PAGES=(queuefs.1 queuefs-sql.1 queuefs-ctl.1 queuefs-work.1 queuefs.7)

# error_c_table — "Name ERRNO" for every entry of lang/error.c's table, one
# a line, sorted (OK, which is no error, left out).
error_c_table() {
    sed -n 's/^ *\[LANG_[A-Z_]*\] = {"\([A-Za-z]*\)", \(E[A-Z0-9]*\)},.*/\1 \2/p' \
        "$TOP/lang/error.c" | sort
}

# page_error_table — "Name ERRNO" for every row of the table in queuefs.7's
# ERRORS section, one a line, sorted.  A row is "Name<TAB>T{", its text,
# then "T}<TAB>ERRNO"; or "Name<TAB>text<TAB>ERRNO" on one line.  Prints
# "TABLES n" first when the section holds other than one table.
page_error_table() {
    awk -F '\t' '
        /^\.SH / { inerr = ($0 ~ /^\.SH ERRORS/); next }
        inerr && /^\.TS/ { intab = 1; tables++; next }
        inerr && /^\.TE/ { intab = 0; next }
        !intab { next }
        NF == 2 && $2 == "T{" { name = $1; next }
        NF == 2 && $1 == "T}" { print name, $2; name = ""; next }
        NF == 3 && $3 ~ /^E[A-Z0-9]+$/ { print $1, $3 }
        END { if (tables != 1) print "TABLES " tables + 0 }' "$TOP/queuefs.7" | sort
}

@test "docs: the README has at most 300 lines" {
    local n
    n=$(wc -l <"$TOP/README.md")
    [ "$n" -le 300 ] || fail "README.md has $n lines: move what a newcomer need not read first to a man page or doc/"
}

@test "docs: every file the README sends the reader to exists" {
    local f
    for f in HACKING doc/store.md doc/reliability.md doc/performance.md; do
        grep -qF "$f" "$TOP/README.md" || fail "the README does not point to $f"
        [ -f "$TOP/$f" ] || fail "$f is missing"
    done
}

@test "docs: every man page renders with man -l, with nothing on stderr" {
    command -v man >/dev/null || fail "man is not installed (apt-get install man-db)"
    local p
    for p in "${PAGES[@]}"; do
        run --separate-stderr env MANWIDTH=80 man -l "$TOP/$p"
        [ "$status" -eq 0 ] || fail "man -l $p exited $status: $stderr"
        [ -z "$stderr" ] || fail "man -l $p: $stderr"
        [ "${#lines[@]}" -gt 20 ] || fail "man -l $p rendered only ${#lines[@]} lines"
    done
}

@test "docs: every man page is mandoc -T lint clean" {
    command -v mandoc >/dev/null || fail "mandoc is not installed (apt-get install mandoc)"
    local p
    for p in "${PAGES[@]}"; do
        run mandoc -T lint "$TOP/$p"
        [ -z "$output" ] || fail "mandoc -T lint $p:
$output"
    done
}

@test "docs: every man page is installed (dist_man_MANS)" {
    local line p
    line=$(grep '^dist_man_MANS' "$TOP/Makefile.am")
    for p in "${PAGES[@]}"; do
        [[ " $line " == *" $p "* ]] || fail "Makefile.am's dist_man_MANS does not install $p"
    done
}

@test "docs: queuefs.7's error table is lang/error.c's, name for name and errno for errno" {
    local code page
    code=$(error_c_table)
    page=$(page_error_table)
    [ "$(wc -l <<<"$code")" -ge 20 ] || fail "read too few errors from lang/error.c: $code"
    # The same names, with the same errno; nothing missing, nothing more.
    run diff <(echo "$code") <(echo "$page")
    [ "$status" -eq 0 ] || fail "queuefs.7 ERRORS differs from lang/error.c (< error.c, > queuefs.7):
$output"
    # And each name once.
    [ "$(cut -d' ' -f1 <<<"$page" | sort | uniq -d)" = "" ] || fail "a name appears twice in queuefs.7's table"
}

@test "docs: every command, man page and the Debian changelog state configure.ac's version" {
    local version cmd page
    version=$(sed -n 's/^AC_INIT(\[queuefs\], \[\([^]]*\)\].*/\1/p' "$TOP/configure.ac")
    [ -n "$version" ] || fail "no version in configure.ac's AC_INIT"
    for cmd in queuefs queuefs-sql queuefs-work scripts/queuefs-ctl; do
        run "$TOP/$cmd" --version
        assert_success
        assert_output --regexp "^${cmd#scripts/} ${version//./\\.}( |\$)"
    done
    for page in "${PAGES[@]}"; do
        run sed -n 's/^\.TH [^"]*"queuefs \([^"]*\)".*/\1/p' "$TOP/$page"
        assert_output "$version"
    done
    run sed -n '1s/^queuefs (\([^)]*\)).*/\1/p' "$TOP/debian/changelog"
    assert_output "$version"
}
