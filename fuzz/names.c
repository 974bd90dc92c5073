/* names.c — libFuzzer target: record identities as file names.
 *
 * Three properties over any bytes:
 *  - the input as a file name: when fs_name_to_key accepts it,
 *    fs_name_from_key of that key gives back exactly the name (one name per
 *    identity);
 *  - the input as a string identity: when it is valid UTF-8 (as every
 *    identity the language makes is), fs_name_from_key gives a name that is
 *    a single path component without control bytes, and fs_name_to_key of
 *    it gives back the same key; invalid UTF-8 names nothing;
 *  - an integer identity (the first 8 bytes) is named by its digits, which
 *    read back as the same integer.
 * Any mismatch aborts.  Built by scripts/fuzz. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../fs/names.h"

/* Aborts with "why" and the name involved when "ok" is false. */
static void
check(int ok, const char *why, const char *name)
{
    if (!ok) {
        fprintf(stderr, "names: %s: \"%s\"\n", why, name ? name : "");
        abort();
    }
}

/* Checks both properties on "size" bytes of "data"; returns 0. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* As a file name: a C string, so up to the first NUL. */
    char *name = malloc(size + 1);
    memcpy(name, data, size);
    name[size] = '\0';
    Value key;
    if (fs_name_to_key(name, &key) == 0) {
        check(key.kind == VAL_INT || key.kind == VAL_STRING, "a key of another kind", name);
        Buf back = {0};
        fs_name_from_key(&key, &back);
        check(back.data && strcmp(back.data, name) == 0,
              "fs_name_from_key(fs_name_to_key(name)) != name", name);
        lang_buf_free(&back);
        lang_value_free(&key);
    }
    free(name);

    /* As a string identity: every byte counts, NULs included.  The empty
     * string is no identity (the language refuses it) and has no name. */
    if (size == 0)
        return 0;
    Value skey = lang_value_string((const char *)data, size);
    Buf n = {0};
    fs_name_from_key(&skey, &n);
    check(n.data != NULL && n.len > 0, "an empty name", n.data);
    check(strlen(n.data) == n.len, "a name holding a NUL byte", n.data);
    check(strchr(n.data, '/') == NULL, "a name holding '/'", n.data);
    check(strcmp(n.data, ".") != 0 && strcmp(n.data, "..") != 0, "a name that is . or ..", n.data);
    check(fs_name_reserved(n.data) < 0, "a string identity named like a reserved file", n.data);
    for (size_t i = 0; i < n.len; i++)
        check((unsigned char)n.data[i] >= 0x20 && n.data[i] != 0x7f, "a control byte in a name",
              n.data);
    Value back;
    int rc = fs_name_to_key(n.data, &back);
    if (lang_utf8_valid((const char *)data, size)) {
        check(rc == 0, "fs_name_to_key refused fs_name_from_key's name", n.data);
        check(back.kind == VAL_STRING && lang_value_equal(&skey, &back),
              "fs_name_to_key(fs_name_from_key(key)) != key", n.data);
        lang_value_free(&back);
    } else {
        check(rc == -1, "a name for invalid UTF-8 named an identity", n.data);
    }
    lang_buf_free(&n);
    lang_value_free(&skey);

    /* Integers: the name is the decimal digits and reads back. */
    if (size >= 8) {
        int64_t i;
        memcpy(&i, data, sizeof i);
        Value ikey = lang_value_int(i), iback;
        Buf in = {0};
        fs_name_from_key(&ikey, &in);
        check(fs_name_to_key(in.data, &iback) == 0 && iback.kind == VAL_INT && iback.u.i == i,
              "an integer identity does not read back", in.data);
        lang_buf_free(&in);
    }
    return 0;
}
