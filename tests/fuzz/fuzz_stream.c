// SPDX-License-Identifier: GPL-2.0
/*
 * Ring records as stream__handle takes them (stream mode, the agent): a
 * record of any type and size, stack records sized by their frame count.
 * The input is a sequence of (2-byte little-endian size, that many bytes);
 * each record is copied into a buffer of exactly its size, so a read past
 * it is an ASan report. Then every stack id seen is unwound.
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "stream.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_setup();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct stream *st = NULL;
	struct stream_stats ss;
	uint64_t ids[64], ips[BPFS_MAX_USER_DEPTH];
	size_t nr_ids = 0, handled = 0, nr;
	bool missing;

	if (stream__new(&(struct stream_opts){ .keep_samples = true }, &st))
		return 0;
	while (size >= 2) {
		size_t len = data[0] | (size_t)data[1] << 8;
		void *rec;

		data += 2;
		size -= 2;
		if (len > size)
			len = size;
		rec = malloc(len ? len : 1);
		if (!rec)
			break;
		memcpy(rec, data, len);
		if (len >= BPFS_REC_STACK_HEAD && nr_ids < 64) {
			const struct bpfs_rec_stack *r = rec;

			ids[nr_ids++] = r->id;
		}
		stream__handle(st, rec, len);
		free(rec);
		data += len;
		size -= len;
		handled++;
	}
	for (uint32_t cpu = 0; cpu < 4; cpu++)
		stream__close_cpu(st, cpu, 0);
	stream__finish(st);
	for (size_t i = 0; i < nr_ids; i++) {
		nr = stream__unwind(st, ids[i], NULL, NULL, ips, BPFS_MAX_USER_DEPTH, &missing);
		if (nr > BPFS_MAX_USER_DEPTH)
			abort();
	}
	stream__samples(st, &nr);
	stream__stats(st, &ss);
	/* every record is taken in or refused as malformed (a stack with id
	 * 0 or too many frames is taken in, then refused: counted twice) */
	if (ss.records > handled || ss.records + ss.malformed < handled)
		abort();
	stream__free(st);
	return 0;
}
