/* SPDX-License-Identifier: Apache-2.0 */
/* The server options of `acp-agent --listen` and `acp serve` (docs/remote.md): one getopt_long
 * table (SERVE_CLI_LONGOPTS), one parser and one usage text, so the two programs take the same
 * options, check them the same way and start the same server (include/acp/server.h). */
#ifndef ACP_TOOLS_SERVE_CLI_H
#define ACP_TOOLS_SERVE_CLI_H

#include <getopt.h>
#include <stdbool.h>

#include "acp/server.h"

/* getopt_long values of the server options: a program's own options stay below 0x1000. */
enum {
    SERVE_OPT_LISTEN = 0x1000,
    SERVE_OPT_TLS_CERT,
    SERVE_OPT_TLS_KEY,
    SERVE_OPT_TOKEN_FILE,
    SERVE_OPT_ALLOW_ORIGIN,
    SERVE_OPT_ROOT,
    SERVE_OPT_EXPOSED,
    SERVE_OPT_INSECURE_NO_AUTH,
    SERVE_OPT_ALLOW_STDIO_MCP,
    SERVE_OPT_NO_STDIO_MCP,
    SERVE_OPT_PORT_FILE,
    SERVE_OPT_MAX_CONNECTIONS,
    SERVE_OPT_MAX_MESSAGE,
    SERVE_OPT_HIGH_WATER,
    SERVE_OPT_IDLE_TIMEOUT,
    SERVE_OPT_HEADER_TIMEOUT,
    SERVE_OPT_PING_INTERVAL,
    SERVE_OPT_CLOSE_TIMEOUT,
    SERVE_OPT_END
};

/* The entries of a program's struct option array (the one table both programs use). */
#define SERVE_CLI_LONGOPTS                                                                         \
    {"listen", required_argument, NULL, SERVE_OPT_LISTEN},                                         \
        {"tls-cert", required_argument, NULL, SERVE_OPT_TLS_CERT},                                 \
        {"tls-key", required_argument, NULL, SERVE_OPT_TLS_KEY},                                   \
        {"token-file", required_argument, NULL, SERVE_OPT_TOKEN_FILE},                             \
        {"allow-origin", required_argument, NULL, SERVE_OPT_ALLOW_ORIGIN},                         \
        {"root", required_argument, NULL, SERVE_OPT_ROOT},                                         \
        {"exposed", no_argument, NULL, SERVE_OPT_EXPOSED},                                         \
        {"insecure-no-auth", no_argument, NULL, SERVE_OPT_INSECURE_NO_AUTH},                       \
        {"allow-stdio-mcp", no_argument, NULL, SERVE_OPT_ALLOW_STDIO_MCP},                         \
        {"no-stdio-mcp", no_argument, NULL, SERVE_OPT_NO_STDIO_MCP},                               \
        {"port-file", required_argument, NULL, SERVE_OPT_PORT_FILE},                               \
        {"max-connections", required_argument, NULL, SERVE_OPT_MAX_CONNECTIONS},                   \
        {"max-message", required_argument, NULL, SERVE_OPT_MAX_MESSAGE},                           \
        {"high-water", required_argument, NULL, SERVE_OPT_HIGH_WATER},                             \
        {"idle-timeout", required_argument, NULL, SERVE_OPT_IDLE_TIMEOUT},                         \
        {"header-timeout", required_argument, NULL, SERVE_OPT_HEADER_TIMEOUT},                     \
        {"ping-interval", required_argument, NULL, SERVE_OPT_PING_INTERVAL},                       \
    {                                                                                              \
        "close-timeout", required_argument, NULL, SERVE_OPT_CLOSE_TIMEOUT                          \
    }

#define SERVE_CLI_MAX 64 /* --allow-origin and --root values each */

typedef struct serve_cli {
    const char *prog; /* "acp-agent", "acp": the start of every message */
    acp_server_opts so;
    const char *listen, *token_file, *port_file; /* argv strings */
    const char *origins[SERVE_CLI_MAX];          /* argv strings */
    char *roots[SERVE_CLI_MAX];                  /* resolved (realpath), owned */
    char *token;                                 /* read by serve_cli_finish; wiped when freed */
    bool given;                                  /* a server option other than --listen */
} serve_cli;

/* The server options' part of --help: "--listen ...: ..." and every option. */
extern const char serve_cli_usage[];

void serve_cli_init(serve_cli *c, const char *prog);
/* One option (opt in SERVE_OPT_LISTEN..SERVE_OPT_END, arg its value or NULL): 0, or 2 (the
 * usage exit status) after saying why on stderr. */
int serve_cli_take(serve_cli *c, int opt, const char *arg);
/* After the command line: the pairs checked, the token file read, c->so ready for
 * acp_agent_serve_listen (token, listen filled in). 0, or the exit status (2 usage, 1 the
 * token file) after saying why. */
int serve_cli_finish(serve_cli *c);
/* Once listening: writes --port-file and, when verbose, logs "listening on ...". false (said)
 * when the port file cannot be written. */
bool serve_cli_started(const serve_cli *c, const acp_server *srv, bool verbose);
/* Wipes the token and frees what c owns. */
void serve_cli_free(serve_cli *c);

#endif
