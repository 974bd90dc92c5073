/* content.c — how far a record file's bytes have come (see content.h). */
#include "content.h"

static bool
blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

ContentState
fs_content_feed(ContentScan *scan, const char *data, size_t len)
{
    for (size_t i = 0; i < len && scan->state != CONTENT_INVALID; i++) {
        char c = data[i];
        switch (scan->state) {
        case CONTENT_EMPTY:
            if (c == '{') {
                scan->state = CONTENT_PARTIAL;
                scan->depth = 1;
            } else if (!blank(c)) {
                scan->state = CONTENT_INVALID;
            }
            break;
        case CONTENT_COMPLETE:
            if (!blank(c))
                scan->state = CONTENT_INVALID; /* a second object, or garbage */
            break;
        case CONTENT_PARTIAL:
            if (scan->quote) {
                if (scan->escape)
                    scan->escape = false;
                else if (c == '\\' && scan->quote != '`')
                    scan->escape = true;
                else if (c == scan->quote)
                    scan->quote = 0;
            } else if (c == '"' || c == '\'' || c == '`') {
                scan->quote = c;
            } else if (c == '{' || c == '[') {
                scan->depth++;
            } else if ((c == '}' || c == ']') && --scan->depth == 0) {
                scan->state = CONTENT_COMPLETE;
            }
            break;
        case CONTENT_INVALID: break;
        }
    }
    return scan->state;
}
