/* SPDX-License-Identifier: Apache-2.0 */
/* acp-bench-relay CMD ARGS...: the cheapest relay there is, the floor against which the
 * benchmarks measure acp trace. It runs CMD on pipes and moves bytes both ways with splice(2),
 * one blocking thread per direction, looking at nothing and recording nothing. Linux only. */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

typedef struct {
    int in, out;
} dir;

static void *pump(void *arg)
{
    dir *d = arg;
    while (splice(d->in, NULL, d->out, NULL, 1 << 20, SPLICE_F_MOVE) > 0) {}
    close(d->out); /* EOF on: the agent's stdin, or ours */
    return NULL;
}

int main(int argc, char **argv)
{
    int up[2], down[2];
    if (argc < 2 || pipe(up) || pipe(down)) {
        fprintf(stderr, "usage: acp-bench-relay CMD ARGS...\n");
        return 2;
    }
    pid_t pid = fork();
    if (pid == 0) {
        dup2(up[0], 0);
        dup2(down[1], 1);
        close(up[0]), close(up[1]), close(down[0]), close(down[1]);
        execvp(argv[1], argv + 1);
        _exit(127);
    }
    close(up[0]);
    close(down[1]);
    dir to_agent = {0, up[1]}, to_client = {down[0], 1};
    pthread_t a, b;
    pthread_create(&a, NULL, pump, &to_agent);
    pthread_create(&b, NULL, pump, &to_client);
    pthread_join(b, NULL); /* the agent's output ended: it is exiting */
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
