/* backend.h — what a storage backend gives store.c, and what status.c
 * gives every backend.
 *
 * store.h's functions are store.c's: each hands the call to the backend
 * of the Store (or StoreTxn) it is given, through that backend's table of
 * operations (ops.def lists them, once).  A backend's "struct Store" and
 * "struct StoreTxn" begin with
 * a pointer to its StoreOps (so store.c reads the table from any of them
 * without knowing the rest), and every operation has the meaning, errors
 * and memory rules store.h gives the function of the same name.
 *
 * The backends, each a library of its own that alone sees its database's
 * headers: LMDB (store/lmdb/) for a directory, PostgreSQL (store/pg/) for a
 * postgresql:// or postgres:// URI. */
#ifndef QUEUEFS_STORE_BACKEND_H
#define QUEUEFS_STORE_BACKEND_H

#include "store.h"

/* A backend's table of operations: one member for each of ops.def. */
typedef struct StoreOps {
    const char *name; /* "lmdb", "postgresql" */
#define STORE_OP(ret, op, params, args, self) ret(*op) params;
#define STORE_VOID_OP(op, params, args, self) void(*op) params;
#include "ops.def"
} StoreOps;

/* Forgets what store_error_detail() answered in this thread: store.c calls
 * it as each transaction begins. */
void store_error_detail_clear(void);

/* Sets what store_error_detail() answers in this thread (printf-style;
 * trailing newlines dropped). */
void store_error_detail_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A fork() of the process while a backend's own thread (LMDB's checkpoint
 * ticker, PostgreSQL's notifier and listener) is allocating would hand the
 * child a locked allocator under a malloc that has no fork handlers of its
 * own (the sanitizers' in this toolchain): the child's first allocation
 * would wait for ever.  So such a thread holds this lock shared while it
 * works (store_fork_hold … store_fork_release), and a fork takes it whole
 * (pthread_atfork, set up by store_fork_guard before the first such thread
 * starts): a fork waits for that work to end.  Only those threads are
 * covered: threads of the caller's that allocate while it forks are the
 * caller's to keep still (the tests that fork do so from one thread;
 * queuefs itself forks only before its threads start).  (store/fork.c) */
void store_fork_guard(void);
void store_fork_hold(void);
void store_fork_release(void);

extern const StoreOps store_lmdb_ops;
extern const StoreOps store_pg_ops;

#endif
