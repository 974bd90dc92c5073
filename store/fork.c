/* fork.c — the lock that keeps a fork() of the process from happening
 * while a backend's own thread allocates (see backend.h). */
#include "backend.h"

#include <pthread.h>

static pthread_rwlock_t fork_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_once_t fork_hooked = PTHREAD_ONCE_INIT;

static void
fork_prepare(void)
{
    pthread_rwlock_wrlock(&fork_lock);
}

static void
fork_parent(void)
{
    pthread_rwlock_unlock(&fork_lock);
}

/* The child's only thread is not the one that locked it (another thread
 * id): the lock is made anew. */
static void
fork_child(void)
{
    pthread_rwlock_init(&fork_lock, NULL);
}

static void
fork_hook(void)
{
    pthread_atfork(fork_prepare, fork_parent, fork_child);
}

void
store_fork_guard(void)
{
    pthread_once(&fork_hooked, fork_hook);
}

void
store_fork_hold(void)
{
    pthread_rwlock_rdlock(&fork_lock);
}

void
store_fork_release(void)
{
    pthread_rwlock_unlock(&fork_lock);
}
