// SPDX-License-Identifier: GPL-2.0
/* The agent's config file: good files become the "--name=value" strings
 * getopt reads; bad ones are refused naming the line. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_config.h"
#include "log.h"
#include "opts.h"
#include "vec.h"
#include "unit.h"

/* A stand-in for the agent's table: one option of each kind. */
static const struct option opts[] = {
	{ "interval", required_argument, NULL, 'i' },
	{ "server", required_argument, NULL, 's' },
	{ "label", required_argument, NULL, 'l' },
	{ "user-only", no_argument, NULL, 'U' },
	{ "include-idle", no_argument, NULL, 'I' },
	{ "metrics-addr", optional_argument, NULL, 'm' },
	{},
};

static const char *arg(const struct vec *v, size_t i)
{
	return i < v->nr ? *(char **)vec__at(v, i) : "(none)";
}

static void test_good_file(void)
{
	struct vec args = VEC_INIT(char *);
	const char *text = "# agent config\n"
			   "\n"
			   "   interval =   10  \n"
			   "server=http://pyro:4040/ingest?x=1#frag\n"
			   "\t# indented comment\n"
			   "label = team = core infra\n"
			   "user-only\n"
			   "include-idle = false\n"
			   "include-idle = true\r\n"
			   "metrics-addr";

	CHECK(agent_config__parse(text, "t.conf", opts, &args) == 0, "good file parses");
	CHECK(args.nr == 6, "6 settings, got %zu", args.nr);
	CHECK(!strcmp(arg(&args, 0), "--interval=10"), "trimmed value: %s", arg(&args, 0));
	CHECK(!strcmp(arg(&args, 1), "--server=http://pyro:4040/ingest?x=1#frag"),
	      "'=' and '#' kept in a value: %s", arg(&args, 1));
	CHECK(!strcmp(arg(&args, 2), "--label=team = core infra"), "spaces and '=' kept: %s",
	      arg(&args, 2));
	CHECK(!strcmp(arg(&args, 3), "--user-only"), "bare flag: %s", arg(&args, 3));
	CHECK(!strcmp(arg(&args, 4), "--include-idle"), "false adds nothing, true the flag: %s",
	      arg(&args, 4));
	CHECK(!strcmp(arg(&args, 5), "--metrics-addr"), "optional value omitted: %s",
	      arg(&args, 5));
	agent_config__free_args(&args);
}

/* The strings go through getopt_long as they are: the config cannot mean
 * something the command line would not. */
static void test_getopt_reads_them(void)
{
	struct vec args = VEC_INIT(char *);
	char *argv[8] = { "agent" };
	int c, seen_i = 0, seen_U = 0;

	CHECK(agent_config__parse("interval = 7\nuser-only\n", "t.conf", opts, &args) == 0,
	      "parses");
	for (size_t i = 0; i < args.nr && i < 6; i++)
		argv[i + 1] = *(char **)vec__at(&args, i);
	optind = 1;
	while ((c = getopt_long((int)args.nr + 1, argv, "", opts, NULL)) != -1) {
		if (c == 'i')
			seen_i = !strcmp(optarg, "7");
		else if (c == 'U')
			seen_U = 1;
	}
	CHECK(seen_i && seen_U, "getopt sees --interval 7 and --user-only");
	agent_config__free_args(&args);
}

static void expect_bad(const char *text, const char *why)
{
	struct vec args = VEC_INIT(char *);
	char **pre = vec__push(&args);

	*pre = strdup("--kept");
	CHECK(agent_config__parse(text, "bad.conf", opts, &args) == -EINVAL, "refused: %s", why);
	CHECK(args.nr == 1, "args left as they were (%s): %zu", why, args.nr);
	agent_config__free_args(&args);
}

static void test_bad_files(void)
{
	expect_bad("interval = 1\n\ninterval 10\n", "no '=' and a space");
	expect_bad("nosuch = 1\n", "unknown option");
	expect_bad("--interval = 1\n", "dashes");
	expect_bad("= 5\n", "no name");
	expect_bad("interval =\n", "empty value");
	expect_bad("interval\n", "option that needs a value given none");
	expect_bad("user-only = maybe\n", "flag with a value");
	expect_bad("inter val = 3\n", "space in the name");
	/* '#' starts a comment only at the start of a line. */
	expect_bad("user-only  # trailing comment\n", "a comment after a flag");
}

static void test_load_file_and_ownership(void)
{
	char path[] = "/tmp/bpfs-agent-conf.XXXXXX";
	struct vec args = VEC_INIT(char *);
	struct stat st = { .st_mode = S_IFREG | 0600, .st_uid = 0 };
	int fd = mkstemp(path);

	CHECK(fd >= 0, "temp file");
	if (fd < 0)
		return;
	CHECK(write(fd, "interval = 3\n", 13) == 13, "write");
	close(fd);
	CHECK(agent_config__load(path, opts, &args) == 0, "loads a 0600 file of its owner");
	CHECK(args.nr == 1 && !strcmp(arg(&args, 0), "--interval=3"), "%s", arg(&args, 0));
	agent_config__free_args(&args);

	if (geteuid() == 0) {
		chmod(path, 0620);
		CHECK(agent_config__load(path, opts, &args) == -EPERM, "group-writable refused");
		chmod(path, 0644);
		CHECK(chown(path, 65534, 0) == 0, "chown");
		CHECK(agent_config__load(path, opts, &args) == -EPERM, "non-root owner refused");
		CHECK(args.nr == 0, "nothing added");
	}
	unlink(path);
	CHECK(agent_config__load(path, opts, &args) == -ENOENT, "missing file: -ENOENT");

	/* The rule itself, for any caller. */
	CHECK(agent_config__check_owner("x", &st, 0) == 0, "root-owned 0600 for root");
	st.st_mode = S_IFREG | 0646;
	CHECK(agent_config__check_owner("x", &st, 0) == -EPERM, "world-writable for root");
	st.st_mode = S_IFREG | 0644;
	st.st_uid = 1000;
	CHECK(agent_config__check_owner("x", &st, 0) == -EPERM, "user-owned for root");
	CHECK(agent_config__check_owner("x", &st, 1000) == 0, "any file for a non-root agent");
	st.st_mode = S_IFDIR | 0755;
	CHECK(agent_config__check_owner("x", &st, 1000) == -EPERM, "a directory");
}

/* The example shipped in dist/ is read by the real option parser: it cannot
 * name an option that does not exist or a value the parser refuses. */
static void test_example_config(void)
{
	const char *path = "dist/agent.conf.example";
	struct vec args = VEC_INIT(char *);
	char **argv;
	struct opts o;

	if (access(path, R_OK))
		SKIP_TEST("dist/agent.conf.example not found: run from the source tree");
	CHECK(agent_config__load(path, NULL, &args) == 0, "the example loads");
	CHECK(args.nr >= 5, "settings: %zu", args.nr);
	argv = calloc(args.nr + 3, sizeof(*argv));
	if (!argv)
		return;
	argv[0] = "bpfsampler";
	argv[1] = "agent";
	for (size_t i = 0; i < args.nr; i++)
		argv[i + 2] = *(char **)vec__at(&args, i);
	optind = 1;
	CHECK(opts__parse(&o, (int)args.nr + 2, argv) == OPTS_RUN, "bpfsampler agent accepts it");
	CHECK(o.agent.on && o.freq == 99 && o.agent.interval == 15 && o.agent.max_series == 64,
	      "values: freq %u interval %g max-series %u", o.freq, o.agent.interval,
	      o.agent.max_series);
	opts__free(&o);
	free(argv);
	agent_config__free_args(&args);
}

int main(void)
{
	log_set_level(LOG_ERROR);
	RUN(test_good_file);
	RUN(test_getopt_reads_them);
	RUN(test_bad_files);
	RUN(test_load_file_and_ownership);
	RUN(test_example_config);
	UNIT_EXIT();
}
