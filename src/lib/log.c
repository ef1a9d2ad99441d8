// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "outpath.h"

static enum log_level cur_level = LOG_WARN;
static FILE *log_file;	     /* NULL: stderr */
static bool log_timestamps; /* a long-running agent's log wants them */

/* Mode 0640 (narrowed by the umask), like the spool: the agent's log names
 * services and files; its group may read it. An existing file keeps its
 * mode. The path under the rules of outpath.h: a link planted in a sticky
 * directory is not followed, a device or FIFO is written in place. */
int log_open(const char *path, char *why, size_t size)
{
	int fd = outpath__open_append(path, 0640, why, size);
	FILE *f = fd >= 0 ? fdopen(fd, "a") : NULL;

	if (!f) {
		int err = fd < 0 ? fd : -errno;

		if (fd >= 0)
			close(fd);
		return err;
	}
	setvbuf(f, NULL, _IOLBF, 0);
	if (log_file)
		fclose(log_file);
	log_file = f;
	return 0;
}

void log_close(void)
{
	if (log_file)
		fclose(log_file);
	log_file = NULL;
}

void log_set_timestamps(bool on)
{
	log_timestamps = on;
}

void log_set_level(enum log_level level)
{
	cur_level = level;
}

enum log_level log_get_level(void)
{
	return cur_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	FILE *out = log_file ? log_file : stderr;

	if (cur_level == LOG_OFF) {
		/* formatted all the same: a fuzzer still sees a bad argument */
		vsnprintf(NULL, 0, fmt, ap);
		return;
	}
	if (level > cur_level)
		return;
	if (log_timestamps) {
		char stamp[32];
		time_t now = time(NULL);
		struct tm tm;

		strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ ", gmtime_r(&now, &tm));
		fputs(stamp, out);
	}
	fputs(level == LOG_WARN ? "bpfsampler: warning: " : "bpfsampler: ", out);
	vfprintf(out, fmt, ap);
	if (!*fmt || fmt[strlen(fmt) - 1] != '\n') /* libbpf's end in one */
		fputc('\n', out);
}
