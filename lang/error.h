/* error.h — the named errors of queuefs (SPEC section 4) and their errnos.
 *
 * Every failure a user can see carries one of these codes and a message.
 * The name and the errno for each code live in one table in error.c, so
 * the ctl file, queuefs-sql and the file operations all agree. */
#ifndef QUEUEFS_ERROR_H
#define QUEUEFS_ERROR_H

typedef enum LangErrorCode {
    LANG_OK = 0,
    LANG_PARSE_ERROR,      /* ParseError              EINVAL */
    LANG_RECORD_EXISTS,    /* RecordExists            EEXIST */
    LANG_NO_SUCH_TABLE,    /* NoSuchTable             ENOENT */
    LANG_NO_SUCH_RECORD,   /* NoSuchRecord            ENOENT */
    LANG_ENGINE_FIELD,     /* QueueFieldIsTheEngines  EPERM */
    LANG_HELD_BY_OTHER,    /* HeldByAnotherConsumer   EBUSY */
    LANG_CLAIM_CEILING,    /* ClaimAboveCeiling       ERANGE */
    LANG_NO_DELAY_FIELD,   /* NoDelayField            EOPNOTSUPP */
    LANG_WRONG_KIND,       /* WrongKind               EINVAL */
    LANG_SCHEMA_VIOLATION, /* SchemaViolation         EINVAL */
    LANG_STORE_FULL,       /* StoreFull               ENOSPC */
    LANG_TABLE_EXISTS,     /* TableExists             EEXIST */
    LANG_TYPE_ERROR,       /* TypeError               EINVAL */
    LANG_TOO_LARGE,        /* TooLarge                EFBIG */
    LANG_STORE_ERROR,      /* StoreError              EIO */
    LANG_NOT_EMPTY,        /* TableNotEmpty           ENOTEMPTY */
    LANG_NOT_HELD,         /* NotHeld                 ENOLCK */
    LANG_INTERRUPTED,      /* Interrupted             EINTR */
    LANG_PERMISSION,       /* PermissionDenied        EACCES */
    LANG_IDS_EXHAUSTED,    /* IdentitiesExhausted     EOVERFLOW */
    LANG_SESSION_BUSY,     /* SessionBusy             EBUSY */
} LangErrorCode;

/* A failure: its code and a human-readable message (no trailing newline). */
typedef struct LangError {
    LangErrorCode code;
    char message[512];
} LangError;

/* The error's name as users see it ("ParseError"); "OK" for LANG_OK. */
const char *lang_error_name(LangErrorCode code);
/* The errno a system call reports for it (positive); 0 for LANG_OK. */
int lang_error_errno(LangErrorCode code);
/* Fills "err" with "code" and a printf-formatted message, unless "err"
 * already holds an error (the first error wins).  Returns "code". */
LangErrorCode lang_error_set(LangError *err, LangErrorCode code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Appends {"error":"Name","message":"…"} (compact JSON) to "out". */
struct Buf;
void lang_error_to_json(const LangError *err, struct Buf *out);

#endif
