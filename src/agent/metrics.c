// SPDX-License-Identifier: GPL-2.0
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomicfile.h"
#include "log.h"
#include "metrics.h"
#include "version.h"

const char *const metrics_lost_reason[METRICS_LOST_NR] = {
	[METRICS_LOST_COUNTS_FULL] = "counts_map_full",
	[METRICS_LOST_STACKS_FULL] = "stacks_map_full",
	[METRICS_LOST_COLLISION] = "stack_id_collision",
	[METRICS_LOST_BUSY] = "map_busy",
	[METRICS_LOST_RING_FULL] = "ring_full",
};

struct metrics_event *metrics__event(struct metrics *m, const char *name)
{
	struct metrics_event *e;

	for (unsigned int i = 0; i < m->nr_events; i++)
		if (strcmp(m->events[i].name, name) == 0)
			return &m->events[i];
	if (m->nr_events >= METRICS_MAX_EVENTS)
		return NULL;
	e = &m->events[m->nr_events++];
	memset(e, 0, sizeof(*e));
	snprintf(e->name, sizeof(e->name), "%s", name);
	return e;
}

int metrics__sample_self(struct metrics *m)
{
	unsigned long size, resident;
	struct rusage ru;
	FILE *f;
	int err = 0;

	if (getrusage(RUSAGE_SELF, &ru) == 0)
		m->cpu_seconds = ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
				 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
	else
		err = -errno;
	/* Current, not peak (getrusage's ru_maxrss): a leak shows as a slope. */
	f = fopen("/proc/self/statm", "re");
	if (!f)
		return -errno;
	if (fscanf(f, "%lu %lu", &size, &resident) == 2)
		m->rss_bytes = (uint64_t)resident * sysconf(_SC_PAGESIZE);
	else
		err = -EINVAL;
	fclose(f);
	return err;
}

/* A label value, escaped as the exposition format wants. */
static void put_label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f), fputc(*v, f);
		else if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void head(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP bpfsampler_%s %s\n# TYPE bpfsampler_%s %s\n", name, help, name, type);
}

static void scalar(FILE *f, const char *name, const char *type, const char *help, uint64_t v)
{
	head(f, name, type, help);
	fprintf(f, "bpfsampler_%s %llu\n", name, (unsigned long long)v);
}

static void render_events(FILE *f, const struct metrics *m)
{
	head(f, "samples_total", "counter", "Samples taken, by event.");
	for (unsigned int i = 0; i < m->nr_events; i++) {
		fputs("bpfsampler_samples_total{event=\"", f);
		put_label(f, m->events[i].name);
		fprintf(f, "\"} %llu\n", (unsigned long long)m->events[i].samples);
	}
	head(f, "samples_lost_total", "counter",
	     "Samples lost before they reached a profile, by event and reason.");
	for (unsigned int i = 0; i < m->nr_events; i++) {
		for (int r = 0; r < METRICS_LOST_NR; r++) {
			fputs("bpfsampler_samples_lost_total{event=\"", f);
			put_label(f, m->events[i].name);
			fprintf(f, "\",reason=\"%s\"} %llu\n", metrics_lost_reason[r],
				(unsigned long long)m->events[i].lost[r]);
		}
	}
}

char *metrics__render(const struct metrics *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return NULL;
	head(f, "build_info", "gauge", "Always 1; the version is the label.");
	fputs("bpfsampler_build_info{version=\"", f);
	put_label(f, BPFSAMPLER_VERSION);
	fputs("\"} 1\n", f);
	render_events(f, m);
	scalar(f, "windows_written_total", "counter", "Profile windows written.",
	       m->windows_written);
	scalar(f, "windows_pushed_total", "counter", "Profile windows the server accepted.",
	       m->windows_pushed);
	scalar(f, "push_failures_total", "counter",
	       "Push attempts that failed (network, timeout, 5xx).", m->push_failures);
	scalar(f, "push_retries_total", "counter", "Push attempts that were retries.",
	       m->push_retries);
	scalar(f, "push_rejected_total", "counter",
	       "Profile windows the server refused (4xx): not retried.", m->push_rejected);
	scalar(f, "backlog_files", "gauge", "Profile windows on disk waiting to be pushed.",
	       m->backlog_files);
	scalar(f, "backlog_bytes", "gauge", "Bytes of the windows waiting to be pushed.",
	       m->backlog_bytes);
	scalar(f, "backlog_pruned_total", "counter",
	       "Backlog windows deleted to keep the backlog within its age and size limits.",
	       m->backlog_pruned);
	scalar(f, "windows_dropped_undelivered_total", "counter",
	       "Profile windows dropped without ever being pushed.", m->dropped_undelivered);
	scalar(f, "processes_tracked", "gauge", "Processes the agent keeps state for.",
	       m->processes_tracked);
	scalar(f, "processes_unfollowed_total", "counter",
	       "Records of processes not followed (announcements, execs, mappings) because the "
	       "agent knew as many processes as it keeps (it fell behind the processes started): "
	       "their samples have no user frame names.",
	       m->processes_unfollowed);
	scalar(f, "series_overflowed_total", "counter",
	       "Processes put in the \"other\" series: more distinct services than allowed.",
	       m->series_overflowed);
	scalar(f, "mappings_lost_total", "counter",
	       "Mapping records the side-band ring had no room for (the maps were read again; "
	       "raise --sideband-size).", m->mappings_lost);
	scalar(f, "stack_segments_dropped_total", "counter",
	       "Stack segments taken out of the BPF stacks map when it was emptied but not kept "
	       "(keeping them failed: out of memory); samples naming them have no stack.",
	       m->stack_segments_dropped);
	scalar(f, "records_unsent_total", "counter",
	       "Ring records the BPF side could not reserve (ring full; raise --ring-size): each "
	       "is a sequence gap.", m->records_unsent);
	scalar(f, "records_missing", "gauge",
	       "Ring records missing by sequence number (a record that comes late fills its "
	       "gap): records_unsent_total but for records still in flight.",
	       m->records_missing);
	scalar(f, "records_out_of_order_total", "counter",
	       "Ring records seen twice or later than the window of late numbers (a bug).",
	       m->records_reordered);
	scalar(f, "unwind_table_rows", "gauge",
	       "Rows the unwind tables hold in the kernel, 16 bytes each (--unwind-rows).",
	       m->unwind_rows);
	scalar(f, "unwind_tables_built_total", "counter",
	       "Unwind tables built from .eh_frame or .debug_frame.", m->unwind_tables_built);
	scalar(f, "kernel_max_sample_rate", "gauge",
	       "kernel.perf_event_max_sample_rate as of the last window: the kernel lowers it "
	       "when sampling interrupts run long, and throttles every rate above it.",
	       m->max_sample_rate);
	scalar(f, "resident_memory_bytes", "gauge", "The agent's resident memory.",
	       m->rss_bytes);
	head(f, "cpu_seconds_total", "counter", "The agent's own user and system CPU time.");
	fprintf(f, "bpfsampler_cpu_seconds_total %.3f\n", m->cpu_seconds);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int metrics__write_file(const struct metrics *m, const char *path)
{
	char *text = metrics__render(m);
	struct atomicfile af;
	int err;

	if (!text) {
		p_err("metrics file %s: out of memory rendering it", path);
		return -ENOMEM;
	}
	/* mode 0644: node_exporter runs as another user. The new file has no
	 * name, or one not ending in .prom (atomicfile.h): the textfile
	 * collector never reads a half-written file. A symlink, FIFO or
	 * device follows the rules of outpath.h, as a profile's -o does. */
	err = atomicfile__open(&af, AT_FDCWD, path, 0644, ATOMICFILE_NOWAIT);
	if (err && af.why[0]) {
		p_err("metrics file %s: %s", path, af.why);
		goto out;
	}
	if (err) {
		p_err("metrics file %s: cannot create a temporary file beside it: %s (check that the "
		      "directory exists and is writable)", path, strerror(-err));
		goto out;
	}
	err = atomicfile__write(&af, text, strlen(text));
	if (err) {
		atomicfile__abort(&af);
		p_err("metrics file %s: %s", path, strerror(-err));
		goto out;
	}
	err = atomicfile__commit(&af);
	if (err)
		p_err("metrics file %s: %s", path, strerror(-err));
out:
	free(text);
	return err;
}
