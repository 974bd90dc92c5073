/* error.c — the one table from error code to name and errno. */
#include "error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "value.h"

static const struct {
    const char *name;
    int errnum;
} error_table[] = {
    [LANG_OK] = {"OK", 0},
    [LANG_PARSE_ERROR] = {"ParseError", EINVAL},
    [LANG_RECORD_EXISTS] = {"RecordExists", EEXIST},
    [LANG_NO_SUCH_TABLE] = {"NoSuchTable", ENOENT},
    [LANG_NO_SUCH_RECORD] = {"NoSuchRecord", ENOENT},
    [LANG_ENGINE_FIELD] = {"QueueFieldIsTheEngines", EPERM},
    [LANG_HELD_BY_OTHER] = {"HeldByAnotherConsumer", EBUSY},
    [LANG_CLAIM_CEILING] = {"ClaimAboveCeiling", ERANGE},
    [LANG_NO_DELAY_FIELD] = {"NoDelayField", EOPNOTSUPP},
    [LANG_WRONG_KIND] = {"WrongKind", EINVAL},
    [LANG_SCHEMA_VIOLATION] = {"SchemaViolation", EINVAL},
    [LANG_STORE_FULL] = {"StoreFull", ENOSPC},
    [LANG_TABLE_EXISTS] = {"TableExists", EEXIST},
    [LANG_TYPE_ERROR] = {"TypeError", EINVAL},
    [LANG_TOO_LARGE] = {"TooLarge", EFBIG},
    [LANG_STORE_ERROR] = {"StoreError", EIO},
    [LANG_NOT_EMPTY] = {"TableNotEmpty", ENOTEMPTY},
    [LANG_NOT_HELD] = {"NotHeld", ENOLCK},
    [LANG_INTERRUPTED] = {"Interrupted", EINTR},
    [LANG_PERMISSION] = {"PermissionDenied", EACCES},
    [LANG_IDS_EXHAUSTED] = {"IdentitiesExhausted", EOVERFLOW},
    [LANG_SESSION_BUSY] = {"SessionBusy", EBUSY},
};

const char *
lang_error_name(LangErrorCode code)
{
    if ((unsigned)code >= sizeof error_table / sizeof error_table[0])
        return "StoreError";
    return error_table[code].name;
}

int
lang_error_errno(LangErrorCode code)
{
    if ((unsigned)code >= sizeof error_table / sizeof error_table[0])
        return EIO;
    return error_table[code].errnum;
}

LangErrorCode
lang_error_set(LangError *err, LangErrorCode code, const char *fmt, ...)
{
    if (!err || err->code != LANG_OK)
        return err ? err->code : code;
    err->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return code;
}

void
lang_error_to_json(const LangError *err, Buf *out)
{
    lang_buf_puts(out, "{\"error\":\"");
    lang_buf_puts(out, lang_error_name(err->code));
    lang_buf_puts(out, "\",\"message\":");
    Value msg = lang_value_cstring(err->message);
    lang_value_to_json(&msg, out);
    lang_value_free(&msg);
    lang_buf_putc(out, '}');
}
