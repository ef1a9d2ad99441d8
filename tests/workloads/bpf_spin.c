// SPDX-License-Identifier: GPL-2.0
/*
 * bpf_spin SECONDS: loads a BPF program named bpfs_spin (a long run of
 * additions) and runs it in the kernel with BPF_PROG_TEST_RUN, over and
 * over, for SECONDS. Needs root.
 *
 * GROUND TRUTH: most samples are in the kernel, in the JIT-compiled
 * program, which /proc/kallsyms lists as "bpf_prog_TAG_bpfs_spin [bpf]":
 * the same form as a kernel module's symbols ("name [module]"). This kernel
 * cannot load modules (no /proc/modules), so this is the module frame the
 * tests can have here.
 */
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>

#define ADDS 4000

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static struct bpf_insn insns[ADDS + 2];
	unsigned char pkt[64] = { 0 };
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	double end;
	int fd;

	if (argc != 2 || atof(argv[1]) <= 0) {
		fprintf(stderr, "usage: bpf_spin SECONDS\n");
		return 2;
	}
	insns[0] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0 };
	for (int i = 1; i <= ADDS; i++)
		insns[i] = (struct bpf_insn){ .code = BPF_ALU64 | BPF_ADD | BPF_K,
					      .dst_reg = BPF_REG_0, .imm = i };
	insns[ADDS + 1] = (struct bpf_insn){ .code = BPF_JMP | BPF_EXIT };
	fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "bpfs_spin", "GPL", insns, ADDS + 2, NULL);
	if (fd < 0) {
		fprintf(stderr, "bpf_spin: cannot load the program: %s\n", strerror(-fd));
		return 1;
	}
	if (bpf_obj_get_info_by_fd(fd, &info, &len)) {
		fprintf(stderr, "bpf_spin: cannot read the program's tag\n");
		return 1;
	}
	printf("bpf_prog_");
	for (int i = 0; i < BPF_TAG_SIZE; i++)
		printf("%02x", info.tag[i]);
	printf("_bpfs_spin\n");
	fflush(stdout);
	end = now_s() + atof(argv[1]);
	while (now_s() < end) {
		LIBBPF_OPTS(bpf_test_run_opts, run, .data_in = pkt, .data_size_in = sizeof(pkt),
			    .repeat = 1000);
		int err = bpf_prog_test_run_opts(fd, &run);

		if (err) {
			fprintf(stderr, "bpf_spin: test run: %s\n", strerror(-err));
			return 1;
		}
	}
	return 0;
}
