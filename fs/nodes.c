/* nodes.c — the inode table: inode numbers, the names they stand for,
 * and what each name is (nodes.h).
 *
 * Two chained hash tables index the same nodes: by number, and by
 * (parent, name) for the attached ones.  A node lives while the kernel
 * holds lookups of it or an attached child needs it for its table.  A
 * node keeps its kind, identity and fence; its table is the name of its
 * ancestor in the root, read when it is asked for. */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "../lang/buf.h"
#include "../lang/lang.h"
#include "../lang/view.h"
#include "names.h"
#include "nodes.h"

typedef struct Node {
    uint64_t ino;
    struct Node *parent; /* NULL for the root, and once detached */
    char *name;
    uint64_t lookups; /* the kernel's count */
    size_t children;  /* attached nodes naming this one their parent */
    uint32_t generation;
    InodeKind kind;
    int64_t fence;
    Value key;
    struct Node *next_by_ino;
    struct Node *next_by_name; /* while attached */
} Node;

struct Nodes {
    pthread_mutex_t lock;
    uint64_t next_ino;
    size_t count;    /* nodes in by_ino */
    size_t peak;     /* the most since fs_nodes_shrunk last said so */
    size_t nbuckets; /* both tables */
    Node **by_ino;
    Node **by_name;
    Node root;
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
    if (ino == FS_ROOT_INO)
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
    lang_value_free(&node->key);
    free(node);
}

Nodes *
fs_nodes_new(void)
{
    Nodes *n = lang_xcalloc(1, sizeof *n);
    pthread_mutex_init(&n->lock, NULL);
    n->next_ino = FS_ROOT_INO + 1;
    n->nbuckets = 1024;
    n->by_ino = lang_xcalloc(n->nbuckets, sizeof *n->by_ino);
    n->by_name = lang_xcalloc(n->nbuckets, sizeof *n->by_name);
    n->root.ino = FS_ROOT_INO;
    n->root.name = "";
    n->root.kind = KIND_ROOT;
    return n;
}

void
fs_nodes_free(Nodes *n)
{
    if (!n)
        return;
    for (size_t i = 0; i < n->nbuckets; i++)
        for (Node *node = n->by_ino[i], *next; node; node = next) {
            next = node->next_by_ino;
            free(node->name);
            lang_value_free(&node->key);
            free(node);
        }
    free(n->by_ino);
    free(n->by_name);
    pthread_mutex_destroy(&n->lock);
    free(n);
}

uint64_t
fs_nodes_lookup(Nodes *n, uint64_t parent_ino, const Inode *child, uint32_t generation)
{
    const char *name = child->name;
    pthread_mutex_lock(&n->lock);
    uint64_t ino = 0;
    Node *parent = find_ino(n, parent_ino);
    if (!parent || (parent != &n->root && !parent->parent))
        goto out; /* the directory is gone */
    Node *node = *find_name(n, parent, name);
    if (node && node->generation != generation) {
        parent->children++; /* keeps the parent while the old name goes */
        unhook(n, node);
        release_if_unused(n, node);
        parent->children--;
        node = NULL;
    }
    if (!node) {
        grow(n);
        node = lang_xcalloc(1, sizeof *node);
        node->ino = n->next_ino++;
        node->parent = parent;
        node->name = lang_xstrdup(name);
        node->generation = generation;
        node->kind = child->kind;
        node->key = lang_value_clone(&child->key);
        node->fence = child->fence;
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

/* What each name a table directory reserves (names.h) is. */
static const InodeKind reserved_kinds[FS_RESERVED_N] = {
    [FS_NEW] = KIND_NEW,     [FS_CLAIM] = KIND_CLAIM,       [FS_WAIT] = KIND_WAIT,
    [FS_STATS] = KIND_STATS, [FS_RELEASED] = KIND_RELEASED, [FS_HELD] = KIND_HELD,
    [FS_DEAD] = KIND_DEAD,   [FS_DONE] = KIND_DONE,         [FS_BLOCKED] = KIND_BLOCKED,
};

/* Copies "src" into "dst" of "size" bytes, cut to fit. */
static void
copy_name(char *dst, size_t size, const char *src)
{
    size_t len = strnlen(src, size - 1);
    memcpy(dst, src, len);
    dst[len] = '\0';
}

void
fs_inode_set_name(Inode *in, const char *name)
{
    copy_name(in->name, sizeof in->name, name);
}

/* What "name" is in a directory of kind "parent", into "out", whose table
 * is already its directory's. */
static void
describe(InodeKind parent, const char *name, Inode *out)
{
    size_t len = strlen(name);
    if (parent == KIND_ROOT)
        copy_name(out->table, sizeof out->table, name);
    fs_inode_set_name(out, name);
    out->key = lang_value_none();
    out->fence = 0;
    out->kind = KIND_NONE;
    if (parent == KIND_ROOT) {
        out->kind = len >= sizeof out->table       ? KIND_TOOLONG
                    : strcmp(name, "ctl") == 0     ? KIND_CTL
                    : strcmp(name, "metrics") == 0 ? KIND_METRICS
                                                   : KIND_TABLE;
        return;
    }
    if (len >= sizeof out->name) {
        out->kind = KIND_TOOLONG;
        return;
    }
    char id[INODE_NAME_MAX];
    const char *identity = name;
    int reserved;
    size_t id_len;
    switch (parent) {
    case KIND_TABLE:
        if ((reserved = fs_name_reserved(name)) >= 0) {
            out->kind = reserved_kinds[reserved];
            return;
        }
        out->kind = KIND_RECORD;
        break;
    case KIND_RELEASED: out->kind = KIND_RELEASED_ENTRY; return;
    case KIND_HELD:
        out->kind = KIND_HELD_ENTRY;
        if (!(out->fence = fs_name_fence(name, &id_len)))
            return; /* no hold's number: the name of no record */
        memcpy(id, name, id_len);
        id[id_len] = '\0';
        identity = id;
        break;
    case KIND_DEAD:
        out->kind = KIND_DEAD_ENTRY;
        out->fence = LANG_FENCE_DEAD;
        break;
    case KIND_DONE:
        out->kind = KIND_DONE_ENTRY;
        out->fence = LANG_FENCE_DONE;
        break;
    case KIND_BLOCKED:
        out->kind = KIND_BLOCKED_ENTRY;
        out->fence = LANG_FENCE_BLOCKED;
        break;
    default: return; /* nothing is in a file, or in a view's entry */
    }
    if (fs_name_to_key(identity, &out->key) < 0)
        out->key = lang_value_none();
}

/* What attached "node" is, into "out"; -ENOENT when it, or a directory
 * above it, is detached.  Called with the lock held. */
static int
node_describe(const Nodes *n, const Node *node, Inode *out)
{
    const Node *top = node;
    for (const Node *at = node; at != &n->root; at = at->parent) {
        if (!at->parent)
            return -ENOENT;
        top = at;
    }
    out->kind = node->kind;
    copy_name(out->table, sizeof out->table, top->name);
    fs_inode_set_name(out, node->name);
    out->key = lang_value_clone(&node->key);
    out->fence = node->fence;
    return 0;
}

void
fs_inode_clear(Inode *in)
{
    lang_value_free(&in->key);
}

int
fs_nodes_get(Nodes *n, uint64_t ino, Inode *out)
{
    pthread_mutex_lock(&n->lock);
    const Node *node = find_ino(n, ino);
    int rc = node ? node_describe(n, node, out) : -ENOENT;
    pthread_mutex_unlock(&n->lock);
    return rc;
}

int
fs_nodes_child(Nodes *n, uint64_t parent, const char *name, Inode *out)
{
    pthread_mutex_lock(&n->lock);
    const Node *node = find_ino(n, parent);
    int rc = node ? node_describe(n, node, out) : -ENOENT;
    pthread_mutex_unlock(&n->lock);
    if (rc)
        return rc;
    lang_value_free(&out->key);
    describe(out->kind, name, out);
    return 0;
}
void
fs_nodes_forget(Nodes *n, uint64_t ino, uint64_t count)
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
fs_nodes_detach(Nodes *n, uint64_t parent_ino, const char *name)
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
fs_nodes_rename(Nodes *n, uint64_t parent_ino, const char *name, uint64_t new_parent_ino,
                const char *new_name)
{
    pthread_mutex_lock(&n->lock);
    Node *parent = find_ino(n, parent_ino), *to = find_ino(n, new_parent_ino);
    Node *node = parent ? *find_name(n, parent, name) : NULL;
    if (node && to && (to == &n->root || to->parent)) {
        to->children++; /* the renamed node's, from now on */
        Node *old = *find_name(n, to, new_name);
        if (old && old != node) {
            unhook(n, old);
            release_if_unused(n, old);
        }
        unhook(n, node);
        free(node->name);
        node->name = lang_xstrdup(new_name);
        node->parent = to;
        size_t b = name_bucket(n, to->ino, new_name);
        node->next_by_name = n->by_name[b];
        n->by_name[b] = node;
    } else if (node) {
        unhook(n, node); /* its new directory is gone: it names nothing */
        release_if_unused(n, node);
    }
    pthread_mutex_unlock(&n->lock);
}

size_t
fs_nodes_count(Nodes *n)
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
    n->by_ino = lang_xcalloc(n->nbuckets, sizeof *n->by_ino);
    n->by_name = lang_xcalloc(n->nbuckets, sizeof *n->by_name);
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
fs_nodes_shrunk(Nodes *n)
{
    pthread_mutex_lock(&n->lock);
    bool shrunk = n->peak >= FS_NODES_SHRINK_MIN && n->count <= n->peak / 2;
    if (shrunk) {
        n->peak = n->count;
        size_t want = 1024;
        while (want < n->count)
            want *= 2;
        if (want < n->nbuckets)
            rehash(n, want); /* the tables shrink with what they hold */
    }
    pthread_mutex_unlock(&n->lock);
    return shrunk;
}
