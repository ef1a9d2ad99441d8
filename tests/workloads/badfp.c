// SPDX-License-Identifier: GPL-2.0
/*
 * badfp SECONDS: five threads, each spinning for SECONDS with rbp set to
 * something that is not a frame pointer, each in a function of its own:
 *   spin_loop:   rbp points at a frame whose saved rbp is itself
 *   spin_kernel: rbp is a kernel address
 *   spin_guard:  rbp points into a PROT_NONE page just above the stack
 *   spin_odd:    rbp is the stack pointer plus 4 (not aligned)
 *   spin_junk:   rbp points at a frame that ends the chain (saved rbp 0)
 *                whose return address is a stack address, not code
 * Each thread runs on a stack of its own (mmap'ed, with the guard page on
 * top), as thread -> run_badfp -> spin_*.
 *
 * GROUND TRUTH: every sample of a spin_* function has that function as its
 * leaf; what is above it cannot be known from rbp: a walk must stop within
 * a frame or two (never loop, never read the kernel, never invent frames),
 * and the guard page's read fault shows as an unreadable user stack.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "burn.h"

#define USAGE "badfp SECONDS"
#define STACK_SIZE (1UL << 20)
#define PAGE 4096UL

static double end_time;

/* Spins ITERS times with rbp = FP, in the caller's function (inlined). The
 * red zone is stepped over before rbp is pushed. */
#define SPIN_WITH_FP(fp, iters)                                                    \
	__asm__ volatile("sub $128, %%rsp\n\t"                                     \
			 "push %%rbp\n\t"                                          \
			 "mov %0, %%rbp\n\t"                                       \
			 "1: dec %1\n\t"                                           \
			 "jnz 1b\n\t"                                              \
			 "pop %%rbp\n\t"                                           \
			 "add $128, %%rsp\n\t"                                     \
			 : "+r"(fp), "+r"(iters)                                   \
			 :                                                         \
			 : "cc", "memory")

#define SPIN_FN(name)                                                              \
	__attribute__((noinline)) void name(unsigned long fp)                      \
	{                                                                          \
		unsigned long iters = 2000000;                                     \
		SPIN_WITH_FP(fp, iters);                                           \
	}
SPIN_FN(spin_loop)
SPIN_FN(spin_kernel)
SPIN_FN(spin_guard)
SPIN_FN(spin_odd)
SPIN_FN(spin_junk)

__attribute__((noinline)) void loop_target(void)
{
	__asm__ volatile("nop");
}

struct job {
	const char *name;
	char *guard; /* the PROT_NONE page above this thread's stack */
};

__attribute__((noinline)) static void run_badfp(struct job *j)
{
	unsigned long slot[2] __attribute__((aligned(16)));
	unsigned long junk[2] __attribute__((aligned(16)));
	unsigned long sp;

	slot[0] = (unsigned long)slot; /* a saved rbp that points at itself */
	slot[1] = (unsigned long)loop_target + 1;
	junk[0] = 0;			 /* the chain's end ... */
	junk[1] = (unsigned long)junk;	 /* ... after a "return address" on the stack */
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	while (clock_s(CLOCK_MONOTONIC) < end_time) {
		if (!strcmp(j->name, "loop"))
			spin_loop((unsigned long)slot);
		else if (!strcmp(j->name, "kernel"))
			spin_kernel(0xffffffff81000000UL);
		else if (!strcmp(j->name, "guard"))
			spin_guard((unsigned long)j->guard);
		else if (!strcmp(j->name, "junk"))
			spin_junk((unsigned long)junk);
		else
			spin_odd(sp + 4);
	}
	BARRIER(slot[0]);
	BARRIER(junk[0]);
}

static void *thread_main(void *arg)
{
	run_badfp(arg);
	return NULL;
}

int main(int argc, char **argv)
{
	static struct job jobs[] = { { "loop", NULL },	{ "kernel", NULL }, { "guard", NULL },
				     { "odd", NULL },	{ "junk", NULL } };
	pthread_t t[5];

	if (argc != 2)
		usage_exit(USAGE);
	end_time = clock_s(CLOCK_MONOTONIC) + arg_seconds(argv[1], USAGE);
	for (int i = 0; i < 5; i++) {
		pthread_attr_t attr;
		char *stack = mmap(NULL, STACK_SIZE + PAGE, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (stack == MAP_FAILED || mprotect(stack + STACK_SIZE, PAGE, PROT_NONE)) {
			perror("badfp: stack");
			return 1;
		}
		jobs[i].guard = stack + STACK_SIZE;
		pthread_attr_init(&attr);
		pthread_attr_setstack(&attr, stack, STACK_SIZE);
		if (pthread_create(&t[i], &attr, thread_main, &jobs[i])) {
			fprintf(stderr, "badfp: pthread_create failed\n");
			return 1;
		}
		pthread_attr_destroy(&attr);
	}
	for (int i = 0; i < 5; i++)
		pthread_join(t[i], NULL);
	return 0;
}
