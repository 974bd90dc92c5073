/* nodes.c — inode numbers and the names they stand for (nodes.h).
 *
 * Two chained hash tables index the same nodes: by number, and by
 * (parent, name) for the attached ones.  A node lives while the kernel
 * holds lookups of it or an attached child needs it for its path. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../lang/buf.h"
#include "nodes.h"

typedef struct Node {
    uint64_t     ino;
    struct Node *parent;     /* NULL for the root, and once detached */
    char        *name;
    uint64_t     lookups;    /* the kernel's count */
    size_t       children;   /* attached nodes naming this one their parent */
    uint32_t     generation;
    struct Node *next_by_ino;
    struct Node *next_by_name;   /* while attached */
} Node;

struct Nodes {
    pthread_mutex_t lock;
    uint64_t        next_ino;
    size_t          count;      /* nodes in by_ino */
    size_t          peak;       /* the most since nodes_shrunk last said so */
    size_t          nbuckets;   /* both tables */
    Node          **by_ino;
    Node          **by_name;
    Node            root;
};

static size_t
ino_bucket(const Nodes *n, uint64_t ino)
{
    return (size_t)((ino * 0x9E3779B97F4A7C15u) >> 17) & (n->nbuckets - 1);
}

static size_t
name_bucket(const Nodes *n, uint64_t parent, const char *name)
{
    uint64_t h = 0xcbf29ce484222325u ^ parent;
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = (h ^ *c) * 0x100000001b3u;
    return (size_t)(h ^ (h >> 29)) & (n->nbuckets - 1);
}

static Node *
find_ino(const Nodes *n, uint64_t ino)
{
    if (ino == NODES_ROOT)
        return (Node *)&n->root;
    Node *node = n->by_ino[ino_bucket(n, ino)];
    while (node && node->ino != ino)
        node = node->next_by_ino;
    return node;
}

static Node **
find_name(Nodes *n, const Node *parent, const char *name)
{
    Node **at = &n->by_name[name_bucket(n, parent->ino, name)];
    while (*at && ((*at)->parent != parent || strcmp((*at)->name, name) != 0))
        at = &(*at)->next_by_name;
    return at;
}

static void rehash(Nodes *n, size_t nbuckets);

/* Doubles both tables when they hold more nodes than buckets. */
static void
grow(Nodes *n)
{
    if (n->count >= n->nbuckets)
        rehash(n, 2 * n->nbuckets);
}

static void release_if_unused(Nodes *n, Node *node);

/* Takes attached "node" out of the name table; its parent may go. */
static void
unhook(Nodes *n, Node *node)
{
    Node **at = find_name(n, node->parent, node->name);
    *at = node->next_by_name;
    Node *parent = node->parent;
    node->parent = NULL;
    parent->children--;
    release_if_unused(n, parent);
}

/* Frees "node" once nothing needs it: no lookups the kernel holds, no
 * attached children. */
static void
release_if_unused(Nodes *n, Node *node)
{
    if (node == &n->root || node->lookups > 0 || node->children > 0)
        return;
    if (node->parent)
        unhook(n, node);
    Node **at = &n->by_ino[ino_bucket(n, node->ino)];
    while (*at != node)
        at = &(*at)->next_by_ino;
    *at = node->next_by_ino;
    n->count--;
    free(node->name);
    free(node);
}

Nodes *
nodes_new(void)
{
    Nodes *n = xcalloc(1, sizeof *n);
    pthread_mutex_init(&n->lock, NULL);
    n->next_ino = NODES_ROOT + 1;
    n->nbuckets = 1024;
    n->by_ino = xcalloc(n->nbuckets, sizeof *n->by_ino);
    n->by_name = xcalloc(n->nbuckets, sizeof *n->by_name);
    n->root.ino = NODES_ROOT;
    n->root.name = "";
    return n;
}

void
nodes_free(Nodes *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nbuckets; i++)
        for (Node *node = n->by_ino[i], *next; node; node = next) {
            next = node->next_by_ino;
            free(node->name);
            free(node);
        }
    free(n->by_ino);
    free(n->by_name);
    pthread_mutex_destroy(&n->lock);
    free(n);
}

uint64_t
nodes_lookup(Nodes *n, uint64_t parent_ino, const char *name, uint32_t generation)
{
    pthread_mutex_lock(&n->lock);
    uint64_t ino = 0;
    Node *parent = find_ino(n, parent_ino);
    if (!parent || (parent != &n->root && !parent->parent))
        goto out;   /* the directory is gone */
    Node *node = *find_name(n, parent, name);
    if (node && node->generation != generation) {
        parent->children++;   /* keeps the parent while the old name goes */
        unhook(n, node);
        release_if_unused(n, node);
        parent->children--;
        node = NULL;
    }
    if (!node) {
        grow(n);
        node = xcalloc(1, sizeof *node);
        node->ino = n->next_ino++;
        node->parent = parent;
        node->name = xstrdup(name);
        node->generation = generation;
        parent->children++;
        size_t b = ino_bucket(n, node->ino);
        node->next_by_ino = n->by_ino[b];
        n->by_ino[b] = node;
        b = name_bucket(n, parent->ino, name);
        node->next_by_name = n->by_name[b];
        n->by_name[b] = node;
        n->count++;
        if (n->count > n->peak)
            n->peak = n->count;
    }
    node->lookups++;
    ino = node->ino;
out:
    pthread_mutex_unlock(&n->lock);
    return ino;
}

int
nodes_path(Nodes *n, uint64_t ino, char *out, size_t size)
{
    pthread_mutex_lock(&n->lock);
    int rc = 0;
    Node *node = find_ino(n, ino);
    if (!node) {
        rc = -ENOENT;
        goto out;
    }
    /* Written from the end of "out" backwards, then moved to its start. */
    size_t at = size;
    for (; node != &n->root; node = node->parent) {
        if (!node->parent) {
            rc = -ENOENT;   /* it, or a directory on its path, is detached */
            goto out;
        }
        size_t len = strlen(node->name);
        if (len + 1 > at) {
            rc = -ENAMETOOLONG;
            goto out;
        }
        at -= len;
        memcpy(out + at, node->name, len);
        out[--at] = '/';
    }
    if (at == size) {
        if (size < 2) {
            rc = -ENAMETOOLONG;
            goto out;
        }
        out[--at] = '/';
    }
    if (at == 0) {
        rc = -ENAMETOOLONG;   /* no room for the terminating NUL */
        goto out;
    }
    memmove(out, out + at, size - at);
    out[size - at] = '\0';
out:
    pthread_mutex_unlock(&n->lock);
    return rc;
}

void
nodes_forget(Nodes *n, uint64_t ino, uint64_t count)
{
    pthread_mutex_lock(&n->lock);
    Node *node = find_ino(n, ino);
    if (node && node != &n->root) {
        node->lookups = count < node->lookups ? node->lookups - count : 0;
        release_if_unused(n, node);
    }
    pthread_mutex_unlock(&n->lock);
}

void
nodes_detach(Nodes *n, uint64_t parent_ino, const char *name)
{
    pthread_mutex_lock(&n->lock);
    Node *parent = find_ino(n, parent_ino);
    Node *node = parent ? *find_name(n, parent, name) : NULL;
    if (node) {
        unhook(n, node);
        release_if_unused(n, node);
    }
    pthread_mutex_unlock(&n->lock);
}

void
nodes_rename(Nodes *n, uint64_t parent_ino, const char *name, uint64_t new_parent_ino,
             const char *new_name)
{
    pthread_mutex_lock(&n->lock);
    Node *parent = find_ino(n, parent_ino), *to = find_ino(n, new_parent_ino);
    Node *node = parent ? *find_name(n, parent, name) : NULL;
    if (node && to && (to == &n->root || to->parent)) {
        to->children++;   /* the renamed node's, from now on */
        Node *old = *find_name(n, to, new_name);
        if (old && old != node) {
            unhook(n, old);
            release_if_unused(n, old);
        }
        unhook(n, node);
        free(node->name);
        node->name = xstrdup(new_name);
        node->parent = to;
        size_t b = name_bucket(n, to->ino, new_name);
        node->next_by_name = n->by_name[b];
        n->by_name[b] = node;
    } else if (node) {
        unhook(n, node);   /* its new directory is gone: it names nothing */
        release_if_unused(n, node);
    }
    pthread_mutex_unlock(&n->lock);
}

size_t
nodes_count(Nodes *n)
{
    pthread_mutex_lock(&n->lock);
    size_t count = n->count;
    pthread_mutex_unlock(&n->lock);
    return count;
}

/* Rebuilds both tables with "nbuckets" buckets (a power of two). */
static void
rehash(Nodes *n, size_t nbuckets)
{
    size_t old = n->nbuckets;
    Node **by_ino = n->by_ino, **by_name = n->by_name;
    n->nbuckets = nbuckets;
    n->by_ino = xcalloc(n->nbuckets, sizeof *n->by_ino);
    n->by_name = xcalloc(n->nbuckets, sizeof *n->by_name);
    for (size_t i = 0; i < old; i++) {
        for (Node *node = by_ino[i], *next; node; node = next) {
            next = node->next_by_ino;
            size_t b = ino_bucket(n, node->ino);
            node->next_by_ino = n->by_ino[b];
            n->by_ino[b] = node;
        }
        for (Node *node = by_name[i], *next; node; node = next) {
            next = node->next_by_name;
            size_t b = name_bucket(n, node->parent->ino, node->name);
            node->next_by_name = n->by_name[b];
            n->by_name[b] = node;
        }
    }
    free(by_ino);
    free(by_name);
}

bool
nodes_shrunk(Nodes *n)
{
    pthread_mutex_lock(&n->lock);
    bool shrunk = n->peak >= NODES_SHRINK_MIN && n->count <= n->peak / 2;
    if (shrunk) {
        n->peak = n->count;
        size_t want = 1024;
        while (want < n->count)
            want *= 2;
        if (want < n->nbuckets)
            rehash(n, want);   /* the tables shrink with what they hold */
    }
    pthread_mutex_unlock(&n->lock);
    return shrunk;
}
