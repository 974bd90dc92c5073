/* lmdb.h, as every part of queuefs but the LMDB backend sees it: the
 * build's guard of the arrows fs -> lang -> store (HACKING).  <lmdb.h>
 * is a system header, found by any compiler; this directory comes first
 * on the include path of lang, fs, the store's core and the PostgreSQL
 * backend, so that naming it there fails to build. */
#error "only the LMDB backend (store/lmdb/) includes <lmdb.h>"
