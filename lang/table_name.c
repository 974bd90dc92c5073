/* table_name.c — the one rule for what can name a table, which the parser
 * and the sessions both hold names to.  It needs nothing but the data
 * model, so whatever parses statements can link it alone. */
#include "lang.h"

LangErrorCode
lang_table_name_check(const char *name, size_t len, LangError *err)
{
    if (len == 0 || len > LANG_TABLE_NAME_MAX)
        return lang_error_set(err, LANG_PARSE_ERROR, "a table name is 1 to %d bytes, not %zu",
                              LANG_TABLE_NAME_MAX, len);
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
            return lang_error_set(err, LANG_PARSE_ERROR,
                                  "a table name cannot hold control characters");
    if (!lang_utf8_valid(name, len))
        return lang_error_set(err, LANG_PARSE_ERROR,
                              "a table name must be valid UTF-8, as a statement spells it");
    return LANG_OK;
}
