/* work_command.c — the command queuefs-work runs for a claim: started
 * in a session of its own with the claim's JSON on stdin, its stderr
 * passed on to the worker's line by line and its last line that is not
 * blank kept, and why it failed put in words.
 *
 * Decisions beyond the script it replaces: the command is started with
 * posix_spawnp(); one that cannot be started ends with status 127 (126
 * when it is there but cannot be run) and the line "queuefs-work: failed
 * to execute COMMAND: …" on stderr, its reason. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "work.h"

/* The most of a failure's reason taken from stderr, in characters. */
#define REASON_LINE_MAX 1000
/* What a partial stderr line is held back to, before it is passed on. */
#define RELAY_LINE_MAX 65536

/* The current stderr line ended: the last one that is not blank is kept,
 * cut to REASON_LINE_MAX characters. */
static void
line_end(WorkRun *run)
{
    if (run->nonblank) {
        lang_buf_reset(&run->last);
        size_t chars = 0, i = 0;
        for (; i < run->head.len; i++) {
            if (((unsigned char)run->head.data[i] & 0xC0) != 0x80 && ++chars > REASON_LINE_MAX)
                break;
        }
        lang_buf_append(&run->last, run->head.data ? run->head.data : "", i);
    }
    lang_buf_reset(&run->head);
    run->nonblank = false;
}

/* Passes "n" bytes the command wrote to stderr on, whole lines at a time. */
static void
relay(WorkRun *run, const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '\n') {
            line_end(run);
            continue;
        }
        if (run->head.len < 4 * REASON_LINE_MAX)
            lang_buf_putc(&run->head, p[i]);
        run->nonblank |= p[i] != ' ' && p[i] != '\t';
    }
    lang_buf_append(&run->pending, p, n);
    const char *nl = memrchr(run->pending.data, '\n', run->pending.len);
    size_t whole = nl ? (size_t)(nl - run->pending.data) + 1 : 0;
    if (run->pending.len > RELAY_LINE_MAX)
        whole = run->pending.len;
    work_stderr_write(run->pending.data, whole);
    memmove(run->pending.data, run->pending.data + whole, run->pending.len - whole);
    run->pending.len -= whole;
}

void
work_run_relay_end(WorkRun *run)
{
    if (run->err_fd >= 0)
        close(run->err_fd);
    run->err_fd = -1;
    if (run->pending.len > 0) {
        lang_buf_putc(&run->pending, '\n');
        work_stderr_write(run->pending.data, run->pending.len);
        lang_buf_reset(&run->pending);
    }
    if (run->head.len > 0)
        line_end(run);
}

void
work_run_relay_read(WorkRun *run)
{
    char chunk[16384];
    for (;;) {
        ssize_t n = read(run->err_fd, chunk, sizeof chunk);
        if (n > 0) {
            relay(run, chunk, (size_t)n);
            continue;
        }
        if (n == 0 || (errno != EINTR && errno != EAGAIN))
            work_run_relay_end(run);
        return;
    }
}

/* A memfd holding "n" bytes of "p", read from its start; -1 on failure. */
static int
memfd_with(const char *p, size_t n)
{
    int fd = memfd_create("queuefs-work", MFD_CLOEXEC);
    if (fd < 0)
        return -1;
    for (size_t done = 0; done < n;) {
        ssize_t k = write(fd, p + done, n - done);
        if (k <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)k;
    }
    lseek(fd, 0, SEEK_SET);
    return fd;
}

void
work_run_start(const WorkConfig *cfg, char **envp, const Buf *in, int out_fd, WorkRun *run)
{
    int in_fd = memfd_with(in->data ? in->data : "", in->len);
    int err[2] = {-1, -1};
    int rc = in_fd < 0 || pipe2(err, O_CLOEXEC) != 0 ? errno : 0;
    if (!rc) {
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t all, none;
        sigfillset(&all);
        sigemptyset(&none);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO);
        if (out_fd >= 0)
            posix_spawn_file_actions_adddup2(&fa, out_fd, STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, err[1], STDERR_FILENO);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                            POSIX_SPAWN_SETSIGDEF);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        rc = posix_spawnp(&run->pid, cfg->command[0], &fa, &attr, cfg->command, envp);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        close(err[1]);
    }
    if (in_fd >= 0)
        close(in_fd);
    run->err_fd = err[0];
    if (rc) {
        run->pid = 0;
        run->status = rc == ENOENT ? 127 : 126;
        run->exited_ns = work_clock_ns(CLOCK_MONOTONIC);
        Buf line = {0};
        lang_buf_printf(&line, "queuefs-work: failed to execute %s: %s\n", cfg->command[0],
                        strerror(rc));
        relay(run, line.data, line.len);
        lang_buf_free(&line);
        work_run_relay_end(run);
        return;
    }
    fcntl(run->err_fd, F_SETFL, O_NONBLOCK);
}

char *
work_failure_reason(int status, const Buf *last)
{
    Buf why = {0};
    const char *sig = status > 128 ? sigabbrev_np(status - 128) : NULL;
    if (sig)
        lang_buf_printf(&why, "signal %s", sig);
    else
        lang_buf_printf(&why, "exit %d", status);
    if (last->len)
        lang_buf_printf(&why, ": %s", last->data);
    return lang_buf_steal(&why);
}
