/* SPDX-License-Identifier: Apache-2.0 */
/* pty_run CMD ARGS...: runs CMD on a new pseudo-terminal, copying our stdin to it and its
 * output to our stdout, so a Node test can drive `acp chat` like a person at a terminal
 * (typing Ctrl-C sends the byte 0x03, which the line discipline turns into SIGINT).
 * Exits with CMD's status (128 + signal when it was killed). Test helper only. */
#include <errno.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: pty_run CMD ARGS...\n");
        return 2;
    }
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    if (pid < 0) {
        perror("pty_run: forkpty");
        return 1;
    }
    if (pid == 0) {
        execvp(argv[1], argv + 1);
        perror("pty_run: exec");
        _exit(127);
    }
    struct pollfd fds[2] = {{.fd = master, .events = POLLIN}, {.fd = 0, .events = POLLIN}};
    char buf[65536];
    for (;;) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR) continue;
            break;
        }
        if (fds[0].revents) {
            ssize_t n = read(master, buf, sizeof buf);
            if (n <= 0) break; /* EIO: the child side is closed */
            if (write(1, buf, (size_t)n) != n) break;
        }
        if (fds[1].revents) {
            ssize_t n = read(0, buf, sizeof buf);
            if (n <= 0)
                fds[1].fd = -1; /* keep the terminal open; the test ends the program */
            else if (write(master, buf, (size_t)n) != n)
                break;
        }
    }
    int status = 0;
    waitpid(pid, &status, 0);
    close(master);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
