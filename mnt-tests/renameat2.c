/* renameat2.c — rename(2) as the shell cannot spell it, for the mount tests.
 *
 *     renameat2 [-n] FROM TO
 *
 * Calls renameat2(AT_FDCWD, FROM, AT_FDCWD, TO, FLAGS) with FLAGS 0, or
 * RENAME_NOREPLACE with -n (what `mv -n` asks for).  Prints nothing and exits
 * 0 on success; otherwise prints the errno's name (e.g. "EXDEV") on stdout
 * and exits 1, so a test can compare the exact errno.  Exit 2: bad usage. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int
main(int argc, char **argv)
{
    unsigned int flags = 0;
    int i = 1;
    if (argc == 4 && strcmp(argv[1], "-n") == 0) {
        flags = RENAME_NOREPLACE;
        i = 2;
    } else if (argc != 3) {
        fputs("usage: renameat2 [-n] FROM TO\n", stderr);
        return 2;
    }
    if (renameat2(AT_FDCWD, argv[i], AT_FDCWD, argv[i + 1], flags) == 0)
        return 0;
    const char *name = strerrorname_np(errno);
    if (name)
        puts(name);
    else
        printf("%d\n", errno);
    return 1;
}
