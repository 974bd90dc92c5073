/* work.h — what the files of queuefs-work share: the run's settings, a
 * claimed record and a group of records that end together, and the
 * functions each file offers the others.
 *
 *     queuefs_work.c  the options, the queue, the process and its workers
 *     work_worker.c   a worker's event loop: claims, the command, holds
 *                     touched, grace, cancels, keepers
 *     work_claim.c    the records a claim read
 *     work_command.c  the command: started, its stderr passed on, its
 *                     failure put in words
 *     work_end.c      how records end through the mount (fenced names, one
 *                     ctl commit a batch), the ctl exchange, the log
 *
 * queuefs-work talks to the daemon only through the mount's files, as its
 * manual (queuefs-work.1) says. */
#ifndef QUEUEFS_WORK_H
#define QUEUEFS_WORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../lang/buf.h"

/* The run's settings, read once at start and shared by every worker. */
typedef struct WorkConfig {
    int workers;        /* -n */
    int batch;          /* --batch N, or 0 */
    int64_t backoff_ms; /* -b */
    int64_t cap_ms;     /* -c */
    int64_t grace_ms;   /* -g */
    int64_t touch_ms;   /* -t, or a third of TIMEOUT; 0 never */
    const char *queue;  /* MOUNT/QUEUE, trailing '/' taken off: QUEUEFS_QUEUE */
    char *table;        /* QUEUE */
    char *mount_dir;    /* MOUNT */
    char *ctl_path;     /* MOUNT/ctl */
    char *wait_path;    /* MOUNT/QUEUE/wait */
    char *held_dir;     /* MOUNT/QUEUE/held */
    bool not_before;    /* the queue declares NOT BEFORE */
    char *rearm_when;   /* "@cron EXPR [in ZONE]" for a released/ name, or NULL */
    char **command;     /* COMMAND ARG…, NULL-terminated */
} WorkConfig;

/* What becomes of a record. */
typedef enum WorkOutcome {
    WORK_FINISHED,
    WORK_REARMED,
    WORK_RELEASED,
    WORK_LOST,
    WORK_KILLED,
    WORK_RETURNED,
    WORK_CANCELLED,
    WORK_ERROR,
} WorkOutcome;

/* A claimed record: what the claim said of it, and how it is to end. */
typedef struct WorkRecord {
    char *id;         /* the JSON's "id", "jobs:7": QUEUEFS_RECORD */
    char *name;       /* its file name in the queue directory: QUEUEFS_ID */
    char *held;       /* MOUNT/QUEUE/held/NAME~HOLD */
    char *target;     /* the fenced target of a statement, jobs:7~HOLD */
    int64_t attempts; /* QUEUEFS_ATTEMPTS */
    int64_t hold;     /* QUEUEFS_HOLD */
    WorkOutcome end;  /* finished, rearmed, released, killed or returned */
    int64_t delay_ms; /* a release's backoff (0: none) */
    bool watched;     /* its hold is still looked at while the command runs */
    bool cancelled;   /* deleted while the command ran */
    const char *json; /* its JSON in the claim's text (not NUL-terminated) */
    size_t json_len;
} WorkRecord;

/* Records that end together: a command's (one, or a batch), or a keeper's
 * (held for their backoff on a queue without NOT BEFORE). */
typedef struct WorkGroup {
    WorkRecord *recs;
    size_t n;
    int status;       /* the command's exit status (128 + a signal), -1 never run */
    int64_t start_ns; /* when the command started (CLOCK_MONOTONIC) */
    char *reason;     /* why a release happens (BECAUSE), or NULL */
} WorkGroup;

/* A command running for a group, as a worker's loop sees it. */
typedef struct WorkRun {
    pid_t pid;         /* 0 once it exited */
    int status;        /* its exit status, 128 + a signal */
    int err_fd;        /* the read end of its stderr, -1 once ended */
    Buf pending;       /* stderr not yet passed on (a partial line) */
    Buf head;          /* the current stderr line's first bytes */
    bool nonblank;     /* the current line holds more than blanks */
    Buf last;          /* the last line that was not blank, cut */
    bool killed;       /* the grace after a stop passed */
    bool stop_seen;    /* the stop was noted */
    bool watching;     /* holds are still looked at */
    int64_t grace_ns;  /* SIGTERM then, or -1 */
    int64_t kill_ns;   /* SIGKILL then, or -1 */
    int64_t tick_ns;   /* the holds are looked at then */
    int64_t since_ms;  /* since the holds were last touched */
    int64_t exited_ns; /* when it exited */
} WorkRun;

/* ---- work_claim.c ---- */

/* The records of the claim's text "claim" into "g" (whose records point
 * into it): one without --batch, or those of the array a batch's claim
 * answered, each with a string id and integer attempts and hold (others
 * are passed over).  False when the text cannot be read as one. */
bool work_claim_read(const WorkConfig *cfg, const Buf *claim, WorkGroup *g);
/* Marks in "named" the records of "g" whose id the command printed on a
 * line of its own in "out" (as the JSON's "id" writes it, bare or as a
 * JSON string); a line that names none of them is noted. */
void work_named_on_stdout(int worker, const WorkGroup *g, const Buf *out, bool *named);
/* Frees what "g" and its records own, and empties it. */
void work_group_free(WorkGroup *g);

/* ---- work_command.c ---- */

/* Starts "cfg"'s command with environment "envp", "in" on its stdin and
 * "out_fd" (when not -1) as its stdout, in a session of its own; its
 * stderr is read through run->err_fd.  A command that cannot be started
 * has ended: run->pid 0, status 127 (or 126), and a line saying why
 * passed on as its stderr. */
void work_run_start(const WorkConfig *cfg, char **envp, const Buf *in, int out_fd, WorkRun *run);
/* Passes on what the command wrote to stderr, whole lines at a time. */
void work_run_relay_read(WorkRun *run);
/* Ends the reading of the command's stderr: a partial line left is
 * passed on as a line. */
void work_run_relay_end(WorkRun *run);
/* Why a command failed (caller frees): "exit N" or "signal NAME", then
 * ": " and "last", its last line on stderr that was not blank, if any. */
char *work_failure_reason(int status, const Buf *last);

/* ---- work_end.c ---- */

/* Reads "fd" to its end into "out": false when a read failed. */
bool work_read_all(int fd, Buf *out);

/* The time now on "clock", in nanoseconds. */
int64_t work_clock_ns(int clock);
/* Appends "ms" as a duration the mount reads: 90000 is "1m30s", 0 "0s". */
void work_ms_format(int64_t ms, Buf *out);
/* Writes "TIME MESSAGE\n" to standard error at once (TIME: UTC, to the
 * millisecond), after the record lines not yet written. */
void work_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Writes "len" bytes of "p" to standard error, all of them unless a
 * write fails. */
void work_stderr_write(const char *p, size_t len);
/* Writes the record lines logged so far to standard error, in writes of
 * whole lines, each at most PIPE_BUF bytes: other workers' lines never
 * split one. */
void work_log_flush(void);
/* The record's file name as the log writes it: in double quotes, with '\'
 * and '"' escaped, when it holds a blank, a '"' or a '\'. */
void work_log_id(const char *name, Buf *out);

/* One exchange with a ctl session: writes "text" to it in one write(),
 * reads the answer to its end into "answer" (reset first).  "session"
 * NULL: a session of its own, opened on "cfg"'s ctl and closed here;
 * otherwise the caller's, opened when "*session" is -1 and kept open (-1
 * again when a read failed).  0, with "*wrote" false when the write was
 * refused (the answer then holds the error line); -1 when ctl could not
 * be opened ("answer" holds why). */
int work_ctl_exchange(const WorkConfig *cfg, int *session, const char *text, size_t len,
                      Buf *answer, bool *wrote);
/* The first {"error":…} line of "answer" as "NAME: message" into "out";
 * false when it holds none. */
bool work_ctl_error(const char *answer, Buf *out);

/* Ends the records "idx" (of "count") of "g" as each's "end" says, and
 * logs each, one line a record: finished deleted, rearmed released for
 * the next instant of --rearm, the others released (NOT BEFORE their
 * delay when the queue declares NOT BEFORE, BECAUSE "g"'s reason when it
 * has one).  With --batch, all in one commit of fenced statements through
 * ctl; otherwise, or when that commit fails, each through its fenced
 * held/ name, so that a record whose hold is gone is logged lost and the
 * others' outcome stands.  "session" is the worker's ctl session (see
 * work_ctl_exchange). */
void work_end(const WorkConfig *cfg, int *session, int worker, const WorkGroup *g,
              const size_t *idx, size_t count);
/* Logs record "r" of "g" as "outcome" with "extra" (NULL or "delay=…"). */
void work_log_record(int worker, const WorkGroup *g, const WorkRecord *r, WorkOutcome outcome,
                     const char *extra);

/* ---- work_worker.c ---- */

/* Runs worker number "worker" until a stop (SIGTERM, SIGINT): claims,
 * runs the command, ends the records.  Returns the worker process's exit
 * status: 0 after a stop, 1 when the queue went away. */
int work_worker_run(const WorkConfig *cfg, int worker);

#endif
