/* nodes.h — the inode numbers a mount hands the kernel, and the names they
 * stand for.
 *
 * The kernel knows a file by the number a lookup gave it, and counts its
 * lookups; it forgets the number (FORGET) once its cache drops the file.
 * A number stands for one name in one directory (its path) from the lookup
 * that made it until the name is removed or renamed (nodes_detach); then it
 * names nothing, and requests on it find no path.  A second lookup of an
 * attached name gives the same number, as the kernel expects of a name
 * that has not changed.  Numbers are never reused.  Thread-safe. */
#ifndef QUEUEFS_NODES_H
#define QUEUEFS_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The root directory's number (FUSE_ROOT_ID). */
#define NODES_ROOT 1

typedef struct Nodes Nodes;

Nodes *nodes_new(void);
void nodes_free(Nodes *n);

/* The number of "name" in directory "parent", counting one more lookup of
 * it; made when the name has none.  "generation" tells versions of a name
 * apart: when it differs from the attached number's, that number is
 * detached and a new one made, so the kernel drops what it cached under
 * the old one.  0 when "parent" names nothing. */
uint64_t nodes_lookup(Nodes *n, uint64_t parent, const char *name, uint32_t generation);

/* Writes the path of "ino" ("/" for the root, else "/a/b") into "out";
 * 0, or -ENOENT when it names nothing now (detached, or forgotten), or
 * -ENAMETOOLONG when it does not fit in "size" bytes. */
int nodes_path(Nodes *n, uint64_t ino, char *out, size_t size);

/* The kernel forgets "count" lookups of "ino". */
void nodes_forget(Nodes *n, uint64_t ino, uint64_t count);

/* "name" in "parent" is gone (removed, or renamed away): its number, if it
 * has one, names nothing from now on. */
void nodes_detach(Nodes *n, uint64_t parent, const char *name);

/* "name" in "parent" was renamed to "new_name" in "new_parent": its
 * number, if it has one, now stands for the new name (as the kernel's
 * does), and a number the new name had names nothing. */
void nodes_rename(Nodes *n, uint64_t parent, const char *name, uint64_t new_parent,
                  const char *new_name);

/* How many numbers are remembered (for tests of forgetting). */
size_t nodes_count(Nodes *n);

/* True once the numbers remembered have fallen to half of the most there
 * were since the last time it answered true (and that most was at least
 * NODES_SHRINK_MIN): the moment to give freed memory back to the system
 * (malloc_trim), after the kernel forgot a large listing. */
#define NODES_SHRINK_MIN 4096
bool nodes_shrunk(Nodes *n);

#endif
