/* nodes.h — the inode numbers a mount hands the kernel, and what each one
 * is.
 *
 * The kernel knows a file by the number a lookup gave it, and counts its
 * lookups; it forgets the number (FORGET) once its cache drops the file.
 * A number stands for one name in one directory from the lookup that made
 * it until the name is removed or renamed (fs_nodes_detach); then it names
 * nothing, and requests on it find nothing.  A second lookup of an
 * attached name gives the same number, as the kernel expects of a name
 * that has not changed.  Numbers are never reused.
 *
 * What a name is follows from its directory and itself alone, so it is
 * decided once, when its number is made (fs_nodes_child says what a name
 * would be before it has one): the kind of file (InodeKind), the table it
 * belongs to, and for a record's name the identity and the fence it
 * promises.  A table's name is its directory's, so renaming the directory
 * (fs_nodes_rename) renames the table of everything in it.  Thread-safe. */
#ifndef QUEUEFS_NODES_H
#define QUEUEFS_NODES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../lang/value.h"

/* The root directory's number (FUSE_ROOT_ID). */
#define FS_ROOT_INO 1

/* What a name of the mount is (SPEC section 2). */
typedef enum InodeKind {
    KIND_ROOT,
    KIND_CTL,            /* /ctl */
    KIND_METRICS,        /* /metrics */
    KIND_TABLE,          /* /T */
    KIND_CLAIM,          /* /T/claim */
    KIND_WAIT,           /* /T/wait */
    KIND_NEW,            /* /T/new */
    KIND_STATS,          /* /T/stats */
    KIND_RELEASED,       /* /T/released */
    KIND_HELD,           /* /T/held */
    KIND_DEAD,           /* /T/dead */
    KIND_DONE,           /* /T/done */
    KIND_BLOCKED,        /* /T/blocked */
    KIND_RELEASED_ENTRY, /* /T/released/ID@WHEN */
    KIND_HELD_ENTRY,     /* /T/held/ID~N */
    KIND_DEAD_ENTRY,     /* /T/dead/ID */
    KIND_DONE_ENTRY,     /* /T/done/ID */
    KIND_BLOCKED_ENTRY,  /* /T/blocked/ID */
    KIND_RECORD,         /* /T/ID */
    KIND_NONE,           /* names nothing that can exist */
    KIND_TOOLONG,        /* a name longer than any table's or identity's */
} InodeKind;

/* The longest table name plus its NUL (NAME_MAX: the language refuses
 * longer ones), and the longest other name plus its NUL: an identity's
 * name is at most 3 * STORE_MAX_KEY bytes, plus "@" and a datetime in
 * released/.  Longer names are KIND_TOOLONG. */
#define INODE_TABLE_MAX 256
#define INODE_NAME_MAX 1280

/* What an inode is, as the kernel asks about it. */
typedef struct Inode {
    InodeKind kind;
    char table[INODE_TABLE_MAX]; /* the table it belongs to ("" for the
                                        * root, ctl and metrics) */
    char name[INODE_NAME_MAX];   /* its name in its directory ("" for the
                                        * root) */
    Value key;                   /* a record's, or a held/ or dead/ entry's identity;
                        * VAL_NONE when the name is no identity's (or for any
                        * other kind) */
    int64_t fence;               /* what the name promises of its record (LANG_FENCE_DEAD
                        * in dead/, the hold's number in held/, else 0) */
} Inode;

/* Frees what "in" holds (its key). */
void fs_inode_clear(Inode *in);
/* Makes "name" (cut to INODE_NAME_MAX - 1 bytes) the name of "in". */
void fs_inode_set_name(Inode *in, const char *name);

typedef struct Nodes Nodes;

/* An empty table (the root only); free with fs_nodes_free. */
Nodes *fs_nodes_new(void);
void fs_nodes_free(Nodes *n);

/* What inode "ino" is, into "*out" (fs_inode_clear it): 0, or -ENOENT
 * when it names nothing now (detached, in a directory detached, or
 * forgotten). */
int fs_nodes_get(Nodes *n, uint64_t ino, Inode *out);

/* What "name" in directory "parent" is, into "*out" (fs_inode_clear it),
 * whether or not it has a number: 0, or -ENOENT when "parent" names
 * nothing now. */
int fs_nodes_child(Nodes *n, uint64_t parent, const char *name, Inode *out);

/* The number of "child" (child->name, what fs_nodes_child or a listing
 * says it is) in directory "parent", counting one more lookup of it; made
 * when the name has none, keeping a copy of what "child" says.
 * "generation" tells versions of a name apart: when it differs from the
 * attached number's, that number is detached and a new one made, so the
 * kernel drops what it cached under the old one.  0 when "parent" names
 * nothing. */
uint64_t fs_nodes_lookup(Nodes *n, uint64_t parent, const Inode *child, uint32_t generation);

/* The kernel forgets "count" lookups of "ino". */
void fs_nodes_forget(Nodes *n, uint64_t ino, uint64_t count);

/* "name" in "parent" is gone (removed, or renamed away): its number, if it
 * has one, names nothing from now on. */
void fs_nodes_detach(Nodes *n, uint64_t parent, const char *name);

/* Directory "name" in "parent" was renamed to "new_name" in "new_parent":
 * its number, if it has one, now stands for the new name (as the kernel's
 * does) and so do the numbers in it — a table's, for the renamed table —
 * and a number the new name had names nothing. */
void fs_nodes_rename(Nodes *n, uint64_t parent, const char *name, uint64_t new_parent,
                     const char *new_name);

/* How many numbers are remembered (the figure /metrics shows). */
size_t fs_nodes_count(Nodes *n);

/* True once the numbers remembered have fallen to half of the most there
 * were since the last time it answered true (and that most was at least
 * FS_NODES_SHRINK_MIN): the moment to give freed memory back to the system
 * (malloc_trim), after the kernel forgot a large listing. */
#define FS_NODES_SHRINK_MIN 4096
bool fs_nodes_shrunk(Nodes *n);

#endif
