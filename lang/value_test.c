/* value_test.c — unit tests for value.c: objects, copies, truthiness
 * and kind names. */

#include "value_test.h"

/* ---- objects ---- */

static void
test_objects(void)
{
    static const char *keys[] = {"m", "b", "z", "a", "mm", "", "B", "y", "c"};
    static const char *sorted[] = {"", "B", "a", "b", "c", "m", "mm", "y", "z"};
    size_t n = sizeof keys / sizeof keys[0];
    Value o = value_object();
    for (size_t i = 0; i < n; i++)
        value_object_set(&o, keys[i], value_int((int64_t)i));
    CHECK(o.u.obj.len == n, "len %zu", o.u.obj.len);
    for (size_t i = 0; i < n; i++)
        CHECK_STR(o.u.obj.keys[i], sorted[i]);
    for (size_t i = 0; i < n; i++) {
        const Value *v = value_object_get(&o, keys[i]);
        CHECK(v && v->kind == VAL_INT && v->u.i == (int64_t)i, "get %s", keys[i]);
    }
    CHECK(value_object_get(&o, "nope") == NULL, "absent key");

    /* replacing keeps one entry */
    value_object_set(&o, "m", value_cstring("new"));
    CHECK(o.u.obj.len == n, "replace keeps len");
    const Value *m = value_object_get(&o, "m");
    CHECK(m && m->kind == VAL_STRING && strcmp(m->u.str.s, "new") == 0, "replaced");

    /* NONE removes */
    value_object_set(&o, "m", value_none());
    CHECK(value_object_get(&o, "m") == NULL, "NONE removes");
    CHECK(o.u.obj.len == n - 1, "len after NONE");
    value_object_set(&o, "never", value_none());
    CHECK(o.u.obj.len == n - 1, "NONE on absent key adds nothing");

    CHECK(value_object_remove(&o, "a"), "remove present");
    CHECK(!value_object_remove(&o, "a"), "remove absent");
    CHECK(!value_object_remove(&o, "zz"), "remove never-present");
    CHECK(value_object_get(&o, "a") == NULL, "removed");
    char *j = json_take(o);
    CHECK_STR(j, "{\"\":5,\"B\":6,\"b\":1,\"c\":8,\"mm\":4,\"y\":7,\"z\":2}");
    free(j);

    /* remove everything, in an awkward order */
    o = obj(3, "a", value_int(1), "b", value_int(2), "c", value_int(3));
    CHECK(value_object_remove(&o, "b") && value_object_remove(&o, "c") &&
              value_object_remove(&o, "a"), "remove all");
    CHECK(o.u.obj.len == 0, "empty");
    value_object_set(&o, "again", value_null());
    CHECK(o.u.obj.len == 1, "reuse after emptying");
    value_free(&o);
    CHECK(o.kind == VAL_NONE, "free leaves NONE");
    value_free(&o);   /* safe on NONE */
    CHECK(o.kind == VAL_NONE, "free twice");
}

static void
test_clone(void)
{
    Value v = obj(3, "list", arr(2, value_int(1), value_cstring("two")),
                  "rec", rec_str("t", "k/1"), "s", value_string("a\0b", 3));
    Value c = value_clone(&v);
    CHECK(value_equal(&v, &c), "clone equal");
    value_object_set(&c, "s", value_cstring("changed"));
    value_array_push((Value *)value_object_get(&c, "list"), value_null());
    CHECK(!value_equal(&v, &c), "clone independent");
    const Value *s = value_object_get(&v, "s");
    CHECK(s && s->u.str.len == 3 && memcmp(s->u.str.s, "a\0b", 3) == 0, "original intact");
    value_free(&c);
    value_free(&v);
}

static void
test_truthy(void)
{
    struct {
        Value v;
        bool  want;
    } cases[] = {
        {value_none(), false},           {value_null(), false},
        {value_bool(false), false},      {value_bool(true), true},
        {value_int(0), false},           {value_int(-1), true},
        {value_float(0.0), false},       {value_float(-0.0), false},
        {value_float(0.5), true},        {value_string("", 0), false},
        {value_cstring("0"), true},      {value_array(), false},
        {arr(1, value_null()), true},    {value_object(), false},
        {obj(1, "a", value_bool(false)), true},
        {value_duration(1), true},       {rec_int("t", 0), true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(value_truthy(&cases[i].v) == cases[i].want, "truthy case %zu (%s)", i,
              value_kind_name(cases[i].v.kind));
        value_free(&cases[i].v);
    }
}

static void
test_kind_names(void)
{
    CHECK_STR(value_kind_name(VAL_NONE), "none");
    CHECK_STR(value_kind_name(VAL_STRING), "string");
    CHECK_STR(value_kind_name(VAL_DATETIME), "datetime");
    CHECK_STR(value_kind_name(VAL_OBJECT), "object");
}

int
main(void)
{
    test_objects();
    test_clone();
    test_truthy();
    test_kind_names();
    return unit_test_summary();
}
