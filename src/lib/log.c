// SPDX-License-Identifier: GPL-2.0
#include <stdarg.h>
#include <stdio.h>

#include "log.h"

static enum log_level cur_level = LOG_WARN;

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

	if (level > cur_level)
		return;
	fputs(level == LOG_WARN ? "bpfsampler: warning: " : "bpfsampler: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}
