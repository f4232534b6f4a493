/* SPDX-License-Identifier: Apache-2.0 */
/* A program built the way an application builds against an installed libacp (pkg-config or
 * find_package(acp)), run by tests/install/*.sh. It opens an SQLite session store for real and
 * links one entry point of every layer above it, so that a static link pulls in every object
 * group of libacp.a with its libraries: the agent, the client, and the network server (TLS,
 * HTTP/2, WebSocket). Their addresses are enough to make the linker resolve them; calling them
 * would tie this file to option structs that are not what it tests.
 * Usage: consumer DIR (a scratch directory for the store). Prints "consumer ok VERSION". */
#include <stdio.h>
#include <stdlib.h>

#include <acp/agent.h>
#include <acp/client.h>
#include <acp/error.h>
#include <acp/server.h>
#include <acp/store.h>
#include <acp/version.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: consumer DIR\n");
        return 2;
    }
    void (*volatile layers[])(void) = {
        (void (*)(void))acp_agent_new,
        (void (*)(void))acp_client_start,
        (void (*)(void))acp_agent_serve_listen,
        (void (*)(void))acp_server_free,
    };
    for (size_t i = 0; i < sizeof layers / sizeof *layers; i++)
        if (!layers[i]) return 1;

    char path[4096];
    snprintf(path, sizeof path, "%s/consumer.db", argv[1]);
    acp_store *st = NULL;
    if (acp_store_open(path, &st) != 0) {
        fprintf(stderr, "consumer: acp_store_open: %s\n", acp_error_last()->message);
        return 1;
    }
    acp_store_close(st);

    int major = 0;
    const char *v = acp_version(&major, NULL, NULL);
    if (major != ACP_VERSION_MAJOR) {
        fprintf(stderr, "consumer: built with libacp %s, runs with %s\n", ACP_VERSION_STRING, v);
        return 1;
    }
    printf("consumer ok %s\n", v);
    return 0;
}
