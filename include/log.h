/* SPDX-License-Identifier: GPL-2.0 */
/* One place every message goes through: format-checked, with a level. */
#ifndef BPFSAMPLER_LOG_H
#define BPFSAMPLER_LOG_H

#include <stdarg.h>
#include <stdbool.h>

enum log_level {
	LOG_OFF = -1, /* as a level to set: nothing logged (the fuzzers) */
	LOG_ERROR = 0,
	LOG_WARN,
	LOG_INFO,
	LOG_DEBUG,
};

#define __printf(a, b) __attribute__((format(printf, a, b)))

/* Messages at or below this level are printed (default LOG_WARN). */
void log_set_level(enum log_level level);
enum log_level log_get_level(void);

/* Messages go to path (appended) instead of stderr; called again, the file
 * is reopened (log rotation: SIGHUP). Returns 0 or -errno; why (size
 * bytes) says why when the path was refused (outpath.h), else "". */
int log_open(const char *path, char *why, size_t size);
void log_close(void);
/* Each line starts with the UTC time (the agent's log). */
void log_set_timestamps(bool on);

/* Prints "bpfsampler: <msg>\n" on stderr ("warning: " prefix for LOG_WARN). */
void log_msg(enum log_level level, const char *fmt, ...) __printf(2, 3);
void log_vmsg(enum log_level level, const char *fmt, va_list ap) __printf(2, 0);

#define p_err(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define p_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define p_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define p_dbg(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
