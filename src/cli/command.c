// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "command.h"
#include "log.h"

struct command {
	pid_t pid;
	int go_fd;    /* write end: closing or writing starts the command */
	bool exited;
	int status;   /* wait status once exited */
};

int command__spawn(char *const *argv, struct command **out)
{
	struct command *cmd;
	int fds[2], err;
	char go;

	cmd = calloc(1, sizeof(*cmd));
	if (!cmd)
		return -ENOMEM;
	if (pipe2(fds, O_CLOEXEC)) {
		err = -errno;
		free(cmd);
		return err;
	}
	cmd->pid = fork();
	if (cmd->pid < 0) {
		err = -errno;
		close(fds[0]);
		close(fds[1]);
		free(cmd);
		p_err("cannot fork for %s: %s", argv[0], strerror(-err));
		return err;
	}
	if (cmd->pid == 0) {
		close(fds[1]);
		/* Wait for the go; EOF without it means the parent gave up. */
		if (read(fds[0], &go, 1) != 1)
			_exit(127);
		/* bpfsampler ignores SIGPIPE; the command gets the default back
		 * (an ignored signal stays ignored across exec) */
		signal(SIGPIPE, SIG_DFL);
		execvp(argv[0], argv);
		fprintf(stderr, "bpfsampler: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	close(fds[0]);
	cmd->go_fd = fds[1];
	*out = cmd;
	return 0;
}

pid_t command__pid(const struct command *cmd)
{
	return cmd->pid;
}

int command__release(struct command *cmd)
{
	char go = 'g';
	int err = 0;

	if (write(cmd->go_fd, &go, 1) != 1)
		err = -errno;
	close(cmd->go_fd);
	cmd->go_fd = -1;
	return err;
}

bool command__poll(struct command *cmd)
{
	if (!cmd->exited && waitpid(cmd->pid, &cmd->status, WNOHANG) == cmd->pid)
		cmd->exited = true;
	return cmd->exited;
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 1;
}

int command__finish(struct command *cmd, bool kill_it)
{
	int code = 0;

	if (!cmd)
		return 0;
	if (cmd->go_fd >= 0)
		close(cmd->go_fd); /* never released: the child exits 127 */
	if (!command__poll(cmd)) {
		if (kill_it || cmd->go_fd >= 0) {
			if (cmd->go_fd < 0)
				kill(cmd->pid, SIGTERM);
			while (waitpid(cmd->pid, &cmd->status, 0) < 0 && errno == EINTR)
				;
			cmd->exited = true;
		} else {
			p_warn("sampling ended before the command; it goes on as pid %d",
			       cmd->pid);
		}
	}
	if (cmd->exited)
		code = exit_code(cmd->status);
	free(cmd);
	return code;
}
