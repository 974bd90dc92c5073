/* ast.h — the syntax tree the parser builds and the evaluator walks.
 *
 * Every node is heap-allocated and owned by its parent; lang_stmt_free() and
 * lang_expr_free() release a whole tree.  Strings are NUL-terminated copies. */
#ifndef QUEUEFS_AST_H
#define QUEUEFS_AST_H

#include <stdbool.h>
#include <stdint.h>

#include "value.h"

/* ---- expressions ---- */

typedef enum ExprKind {
    EX_LITERAL, /* a constant: numbers, strings, d'…', durations, record ids, true/false/null/NONE */
    EX_FIELD,  /* a field path: a.b.c (also `id`) */
    EX_OBJECT, /* { key: expr, … } */
    EX_ARRAY,  /* [ expr, … ] */
    EX_UNARY,  /* NOT x, !x, -x */
    EX_BINARY, /* x op y */
    EX_CALL,   /* name::space(args) */
} ExprKind;

typedef enum ExprOp {
    OP_EQ,
    OP_NE,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE, /* = == != < <= > >= */
    OP_AND,
    OP_OR, /* AND && OR || */
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV, /* + - * / */
    OP_NOT,
    OP_NEG, /* unary NOT / !, unary - */
} ExprOp;

typedef struct Expr Expr;
struct Expr {
    ExprKind kind;
    union {
        Value literal; /* EX_LITERAL */
        struct {
            char **parts;
            size_t len;
        } path; /* EX_FIELD */
        struct {
            char **keys;
            Expr **vals;
            size_t len;
        } object; /* EX_OBJECT, keys in source order */
        struct {
            Expr **items;
            size_t len;
        } array; /* EX_ARRAY */
        struct {
            ExprOp op;
            Expr *arg;
        } unary; /* EX_UNARY */
        struct {
            ExprOp op;
            Expr *lhs, *rhs;
        } binary; /* EX_BINARY */
        struct {
            char *name;
            Expr **args;
            size_t len;
        } call; /* EX_CALL, name like "time::now" */
    } u;
};

/* Frees "e" (NULL is allowed) and every node below it (parse_expr.c). */
void lang_expr_free(Expr *e);

/* ---- statements ---- */

typedef enum StmtKind {
    ST_DEFINE_QUEUE,
    ST_DEFINE_COLLECTION,
    ST_DEFINE_FIELD,
    ST_DEFINE_INDEX,
    ST_CREATE,
    ST_UPDATE,
    ST_UPSERT, /* the file view's write: CREATE when absent, else a whole-record UPDATE */
    ST_DELETE,
    ST_SELECT,
    ST_CLAIM,
    ST_RELEASE,
    ST_RELEASE_ALL,
    ST_TOUCH,
    ST_RETRY,       /* RETRY record */
    ST_RETRY_ALL,   /* RETRY ALL FROM table [WHERE expr] */
    ST_PAUSE,       /* PAUSE QUEUE name */
    ST_RESUME,      /* RESUME QUEUE name */
    ST_ALTER_QUEUE, /* ALTER QUEUE name clause {clause} */
    ST_USE_CONSUMER,
    ST_BEGIN,
    ST_COMMIT,
    ST_CANCEL,
    ST_INFO_TABLE,
    ST_DROP,
} StmtKind;

typedef enum SchemaMode {
    SCHEMA_UNSPECIFIED = 0, /* neither word given: lenient */
    SCHEMA_FULL,
    SCHEMA_LESS,
} SchemaMode;

/* The most AT MOST … PER clauses a queue declares. */
#define LANG_PER_MAX 4

/* One AT MOST n PER f clause: at most "limit" records sharing a value of
 * field "field" held at once.  In ALTER QUEUE's DROP, "limit" 0 drops the
 * clause of "field" (NULL: every one). */
typedef struct PerKey {
    int64_t limit;
    char *field;
} PerKey;

/* What DEFINE QUEUE / DEFINE COLLECTION declares. */
typedef struct TableDecl {
    char *name;
    bool if_not_exists; /* DEFINE … IF NOT EXISTS name */
    /* queue only: */
    int64_t timeout_ns;       /* TIMEOUT d (required for a queue) */
    int64_t attempts;         /* ATTEMPTS n; 0 = not given (unlimited) */
    char *priority_by;        /* PRIORITY BY f, or NULL */
    char *not_before;         /* NOT BEFORE f, or NULL */
    int64_t deduplicate_ns;   /* DEDUPLICATE d; 0 = not given */
    PerKey per[LANG_PER_MAX]; /* AT MOST n PER f clauses, as declared */
    size_t nper;              /* … how many */
    int64_t rate;             /* AT MOST n EVERY d: n; 0 = not given */
    int64_t rate_window_ns;   /* … and its window d */
    int64_t keep_ns;          /* KEEP d: a finish keeps the record done for d; 0 = not given */
    bool coalesce;            /* COALESCE: a CREATE of an outstanding identity is demand */
    /* both kinds: */
    SchemaMode schema; /* SCHEMAFULL | SCHEMALESS | neither */
    char *graph;       /* IN g, or NULL */
    int64_t mode;      /* the file view's mkdir: permission bits; -1 or 0: 0755 */
} TableDecl;

/* The clauses of a queue, as bits: what ALTER QUEUE names (and what a
 * DEFINE QUEUE has given so far, so none is given twice). */
enum {
    CLAUSE_TIMEOUT = 1u << 0,
    CLAUSE_ATTEMPTS = 1u << 1,
    CLAUSE_PRIORITY_BY = 1u << 2,
    CLAUSE_NOT_BEFORE = 1u << 3,
    CLAUSE_DEDUPLICATE = 1u << 4,
    CLAUSE_PER = 1u << 5,    /* AT MOST n PER f */
    CLAUSE_EVERY = 1u << 6,  /* AT MOST n EVERY d */
    CLAUSE_SCHEMA = 1u << 7, /* SCHEMAFULL | SCHEMALESS */
    CLAUSE_IN = 1u << 8,
    CLAUSE_KEEP = 1u << 9,
    CLAUSE_COALESCE = 1u << 10,
};

/* The greatest n of AT MOST n PER f and AT MOST n EVERY d. */
#define LANG_AT_MOST_MAX 1000000

/* A statement target: a whole table, or one record of it. */
typedef struct Target {
    char *table;
    Value id; /* VAL_RECORD for `table:key`, VAL_NONE for the whole table */
} Target;

/* A record that DELETE or RELEASE names after its first (`DELETE q:1, q:2`),
 * and its fence (`q:2~N`: act only while the record's live hold is number
 * N; 0 = no fence). */
typedef struct MoreTarget {
    Target target;
    int64_t fence;
} MoreTarget;

typedef enum WriteMode {
    WRITE_CONTENT, /* = expr  or  CONTENT expr: the whole record */
    WRITE_MERGE,   /* MERGE expr */
    WRITE_NONE,    /* CREATE t with no content: an empty record */
} WriteMode;

typedef struct SelectField {
    Expr *expr;  /* EX_FIELD mostly */
    char *alias; /* AS name, or NULL: then the path's text names it */
} SelectField;

typedef struct OrderTerm {
    char **parts; /* field path */
    size_t len;
    bool descending;
} OrderTerm;

typedef struct Stmt Stmt;
struct Stmt {
    StmtKind kind;
    int line; /* 1-based line where the statement starts */
    union {
        TableDecl define_table; /* ST_DEFINE_QUEUE, ST_DEFINE_COLLECTION */
        struct {                /* ST_DEFINE_FIELD */
            char *name;         /* field name (a path like a.b allowed, kept as text) */
            char *table;
            char *
                type; /* NULL, or: any bool int float number string datetime duration object array record */
            bool required;
        } define_field;
        struct { /* ST_DEFINE_INDEX */
            char *name;
            char *table;
            char **fields;
            size_t nfields;
        } define_index;
        struct { /* ST_CREATE, ST_UPDATE, ST_UPSERT */
            Target target;
            WriteMode mode;
            Expr *content; /* NULL with WRITE_NONE */
            Expr *where;   /* UPDATE … WHERE, or NULL */
            Target *after; /* CREATE … AFTER: the records it waits for */
            size_t nafter;
        } write;
        struct { /* ST_DELETE */
            Target target;
            Expr *where;      /* or NULL */
            int64_t fence;    /* q:7~N or the file view's held/ID~N: act only
                                     while the live hold is number N; 0 = no
                                     fence */
            MoreTarget *more; /* the records named after the first, or NULL */
            size_t nmore;
        } del;
        struct {       /* ST_SELECT */
            bool star; /* SELECT * */
            SelectField *fields;
            size_t nfields;
            Target from;
            Expr *where;
            OrderTerm *order;
            size_t norder;
            int64_t limit; /* -1 = none */
        } select;
        struct {             /* ST_CLAIM */
            int64_t count;   /* CLAIM n FROM t; 1 by default; parser refuses 0 */
            Target target;   /* FROM table, or the record named */
            int64_t wait_ns; /* … WAIT d: block up to d for a record; INT64_MAX for
                                     WAIT alone; 0 = answer at once */
            bool explain;    /* … EXPLAIN */
        } claim;
        struct {                /* ST_RELEASE, ST_RELEASE_ALL, ST_TOUCH, ST_RETRY, ST_RETRY_ALL */
            Target target;      /* the record (RELEASE, TOUCH, RETRY) or the table (… ALL) */
            Expr *not_before;   /* NOT BEFORE expr, or NULL */
            char *for_consumer; /* FOR CONSUMER 'name', or NULL (RELEASE) */
            char *because;      /* BECAUSE 'text', or NULL (RELEASE) */
            Expr *where;        /* RETRY ALL … WHERE expr, or NULL */
            int64_t fence;      /* as for DELETE */
            MoreTarget *more;   /* as for DELETE (RELEASE) */
            size_t nmore;
        } release;
        struct { /* ST_ALTER_QUEUE */
            char *table;
            TableDecl set;  /* the clauses given, as DEFINE QUEUE holds them
                                     (a dropped one as if absent; set.name unused) */
            unsigned given; /* the ALTER_* bits of the clauses given, set or
                                     dropped */
        } alter;
        struct { /* ST_USE_CONSUMER */
            char *name;
        } use_consumer;
        struct { /* ST_INFO_TABLE, ST_DROP, ST_PAUSE, ST_RESUME */
            char *table;
            int kind; /* ST_DROP: 1 = DROP QUEUE, 2 = DROP COLLECTION */
        } table_op;
    } u;
};

/* Frees "s" (NULL is allowed) and everything it owns (parse_stmt.c). */
void lang_stmt_free(Stmt *s);
/* Frees the strings "d" owns (parse_stmt.c); "d" itself is the caller's. */
void lang_table_decl_free(TableDecl *d);

#endif
