/* SPDX-License-Identifier: GPL-2.0 */
/* The command profiled with "-- command": started stopped-before-exec, so
 * that sampling is armed before its first instruction. */
#ifndef BPFSAMPLER_COMMAND_H
#define BPFSAMPLER_COMMAND_H

#include <stdbool.h>
#include <sys/types.h>

struct command;

/* Forks; the child waits until command__release() and then execs argv. */
int command__spawn(char *const *argv, struct command **out);
pid_t command__pid(const struct command *cmd);
int command__release(struct command *cmd);
/* True once the command has exited (reaps it). */
bool command__poll(struct command *cmd);
/* Frees cmd. If the command still runs: with kill_it it is terminated and
 * reaped, otherwise it is left running. Returns its exit status (128+signal
 * when killed by a signal), or 0 when it was left running. */
int command__finish(struct command *cmd, bool kill_it);

#endif
