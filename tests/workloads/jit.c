// SPDX-License-Identifier: GPL-2.0
/*
 * jit SECONDS [MAP_OWNER_UID]: runs machine code it wrote into an anonymous
 * executable mapping, and describes it in /tmp/perf-PID.map as a JIT does
 * ("START SIZE jit_hot_loop"). With MAP_OWNER_UID the map file is given to
 * that user (as root): a map the process's user does not own must be
 * ignored, or another user could plant names. Ground truth: the samples
 * are in jit_hot_loop (its caller is lost: the generated code keeps no
 * frame pointer).
 *
 * With JIT_WAIT=DIR in the environment it writes no map: it writes
 * "PID START SIZE" to DIR/info and sleeps until DIR/go exists, so that a
 * test can write the map (a hostile one) before the first sample.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "burn.h"

/* mov rax, rdi; 1: dec rax; jnz 1b; ret */
static const unsigned char code[] = { 0x48, 0x89, 0xf8, 0x48, 0xff, 0xc8, 0x75, 0xfb, 0xc3 };

__attribute__((noinline)) void run_jit(long (*fn)(long), double seconds)
{
	double end = clock_s(CLOCK_MONOTONIC) + seconds;

	while (clock_s(CLOCK_MONOTONIC) < end)
		fn(1000000);
}

int main(int argc, char **argv)
{
	double seconds = arg_seconds(argv[1], "jit SECONDS [MAP_OWNER_UID]");
	unsigned char *mem;
	char path[64];
	FILE *f;

	mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
		   -1, 0);
	if (mem == MAP_FAILED)
		return 1;
	memcpy(mem, code, sizeof(code));
	if (getenv("JIT_WAIT")) {
		char go[256];

		snprintf(path, sizeof(path), "%.50s/info", getenv("JIT_WAIT"));
		snprintf(go, sizeof(go), "%.50s/go", getenv("JIT_WAIT"));
		f = fopen(path, "w");
		if (!f)
			return 1;
		fprintf(f, "%d %lx %zx\n", getpid(), (unsigned long)(uintptr_t)mem, sizeof(code));
		fclose(f);
		while (access(go, F_OK))
			usleep(10000);
		run_jit((long (*)(long))mem, seconds);
		return 0;
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	f = fopen(path, "w");
	if (!f)
		return 1;
	fprintf(f, "%lx %zx jit_hot_loop\n", (unsigned long)(uintptr_t)mem, sizeof(code));
	if (argc > 2 && fchown(fileno(f), atoi(argv[2]), atoi(argv[2])))
		return 1;
	fclose(f);
	/* the map stays, as JITs leave it: profilers read it after the exit */
	run_jit((long (*)(long))mem, seconds);
	return 0;
}
