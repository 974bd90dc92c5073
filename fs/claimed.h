/* claimed.h — the records this mount just claimed, remembered for the
 * lookup of the record's name that follows its claim.
 *
 * A worker that claimed record 7 names it next (rm jobs/7, cat jobs/7,
 * mv jobs/7 jobs/released/…), and the kernel looks the name up first.
 * The claim's answer already holds what that lookup asks of the store — the
 * record's figures and its table's — so the lookup takes them from here
 * instead, once, within CLAIMED_KEEP_NS of the claim: as a listing's
 * entries do (attr.c), it may show what the claim stored for that long
 * even when another mount changed the record meanwhile; what this mount
 * changes of a record (by any of its names, by a statement) it forgets. */
#ifndef QUEUEFS_CLAIMED_H
#define QUEUEFS_CLAIMED_H

#include <stdbool.h>
#include <stdint.h>

#include "../lang/lang.h"
#include "../lang/view.h"

/* How long a claim's record is remembered: one second, as long as a
 * listing's entries are kept. */
#define CLAIMED_KEEP_NS 1000000000LL

typedef struct Claimed Claimed;

Claimed *fs_claimed_new(void);
void fs_claimed_free(Claimed *c);
/* Remembers the record claim "told" took from "table" for user "uid"
 * (nothing when it took none), in place of the oldest remembered when
 * full. */
void fs_claimed_note(Claimed *c, const char *table, uint32_t uid, const LangClaimed *told);
/* What was remembered of record "key" of "table" claimed for user "uid"
 * (only they are told: another user's lookup is checked by the store)
 * within the last CLAIMED_KEEP_NS, into "*stat" and "*info", and
 * forgotten: true; false when nothing is. */
bool fs_claimed_take(Claimed *c, const char *table, const Value *key, uint32_t uid,
                     LangRecordStat *stat, LangTableInfo *info);
/* Forgets what is remembered of record "key" of "table": this mount is
 * changing it (rm, mv, touch of one of its names). */
void fs_claimed_forget_record(Claimed *c, const char *table, const Value *key);
/* Forgets everything remembered: a write through the mount may have
 * changed any of it (a statement, a new record). */
void fs_claimed_forget(Claimed *c);

#endif
