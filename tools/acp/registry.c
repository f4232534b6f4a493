/* SPDX-License-Identifier: Apache-2.0 */
/* Agents by name, from the ACP Registry (rfds/acp-agent-registry.mdx): a JSON object whose
 * `agents` array holds manifests (id, name, version, description, distribution: binary per
 * <os>-<arch>, npx, uvx). `acp agents` lists one; `acp --agent ID` runs the agent it names.
 *
 * The registry is --registry (a file or an http(s) URL), else $ACP_REGISTRY, else the public
 * one. A URL's copy is kept in $XDG_CACHE_HOME/acp and read when the network fails, so a
 * registry once seen serves offline. A binary distribution is downloaded once (redirects
 * followed, sha256 checked when the manifest gives one) and unpacked with bsdtar, tar or
 * unzip into $XDG_CACHE_HOME/acp/agents/ID/VERSION/TARGET; an npx one runs `npx -y PACKAGE
 * ARGS`, a uvx one `uvx PACKAGE ARGS`; the manifest's env is set for the agent. Downloads use
 * libacp's HTTP client (libcurl, loaded only when one is made). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "acp/http.h"
#include "tools/acp/app.h"
#include "tools/acp/safe.h"

extern char **environ;

#define REGISTRY_URL "https://cdn.agentclientprotocol.com/registry/v1/latest/registry.json"
#define REGISTRY_MAX (64u << 20) /* the aggregate, in memory */
#define ARCHIVE_MAX  (4ull << 30)
#define REDIRECTS    8

static const char *str(json_t *o, const char *key)
{
    return json_string_value(json_object_get(o, key));
}

static bool is_url(const char *s)
{
    return !strncmp(s, "http://", 7) || !strncmp(s, "https://", 8);
}

/* --- downloads ------------------------------------------------------------------------------ */

typedef struct fetch {
    acp_buf mem; /* fd < 0: the body in memory */
    int fd;
    uint64_t got, max;
    bool done, too_big;
    int result;
    long status;
    char *location; /* a redirect's target */
    char err[256];
} fetch;

static int on_data(acp_http *h, const char *p, size_t n, void *user)
{
    fetch *f = user;
    long st = acp_http_status(h);
    if (st >= 300 && st < 400) return 0; /* a redirect's body */
    if ((f->got += n) > f->max) {
        f->too_big = true;
        return 1;
    }
    if (f->fd < 0) return acp_buf_append(&f->mem, p, n) ? 1 : 0;
    while (n) {
        ssize_t w = write(f->fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return 1;
        p += w, n -= (size_t)w;
    }
    return 0;
}

static void on_done(acp_http *h, int result, long status, void *user)
{
    fetch *f = user;
    f->done = true;
    f->result = result;
    f->status = status;
    const char *loc = status >= 300 && status < 400 ? acp_http_header(h, "Location") : NULL;
    if (loc) f->location = strdup(loc);
    const char *e = result ? acp_http_error(h) : NULL;
    if (e) snprintf(f->err, sizeof f->err, "%s", e);
}

static void closed(void *user)
{
    *(bool *)user = true;
}

/* GET url into f (memory, or f->fd), following redirects. 0, or -1 with why in err. */
static int download(const char *url, fetch *f, char *err, size_t n)
{
    uv_loop_t loop;
    uv_loop_init(&loop);
    acp_http_client *hc = acp_http_client_new(&loop);
    int rc = -1;
    char *cur = strdup(url);
    if (!hc) snprintf(err, n, "no HTTP client (libcurl cannot be loaded)");
    for (int hop = 0; hc && cur && hop <= REDIRECTS; hop++) {
        static const acp_http_cbs cbs = {
            .struct_size = sizeof(acp_http_cbs), .on_data = on_data, .on_done = on_done};
        const char *headers[] = {"Accept: application/json, application/octet-stream, */*", NULL};
        f->done = false;
        f->got = 0;
        f->mem.len = 0;
        if (f->fd >= 0 && (ftruncate(f->fd, 0) || lseek(f->fd, 0, SEEK_SET))) break;
        acp_http *h = acp_http_start(hc, "GET", cur, headers, NULL, 0, &cbs, f);
        if (!h) {
            snprintf(err, n, "cannot start the download: %s", acp_error_last()->message);
            break;
        }
        while (!f->done) uv_run(&loop, UV_RUN_ONCE);
        if (f->location) { /* relative locations are not followed: registries give URLs */
            free(cur);
            cur = f->location;
            f->location = NULL;
            if (!is_url(cur)) {
                snprintf(err, n, "redirected to '%s'", safe_line(cur));
                break;
            }
            continue;
        }
        if (f->too_big)
            snprintf(err, n, "more than %llu bytes", (unsigned long long)f->max);
        else if (f->result)
            snprintf(err, n, "%s", f->err[0] ? f->err : "the transfer failed");
        else if (f->status / 100 != 2)
            snprintf(err, n, "HTTP status %ld", f->status);
        else
            rc = 0;
        break;
    }
    free(cur);
    if (rc && !err[0]) snprintf(err, n, "too many redirects");
    bool gone = !hc;
    if (hc) acp_http_client_close(hc, closed, &gone);
    while (!gone) uv_run(&loop, UV_RUN_ONCE);
    uv_run(&loop, UV_RUN_DEFAULT);
    uv_loop_close(&loop);
    return rc;
}

/* --- the cache ------------------------------------------------------------------------------ */

/* $XDG_CACHE_HOME/acp (else ~/.cache/acp) + sub, made with its parents; malloc'd or NULL. */
static char *cache_dir(const char *sub)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char *d = NULL;
    if (xdg && *xdg ? asprintf(&d, "%s/acp%s", xdg, sub) < 0
                    : !home || asprintf(&d, "%s/.cache/acp%s", home, sub) < 0)
        return NULL;
    for (char *p = d + 1;; p++) {
        if (*p && *p != '/') continue;
        char c = *p;
        *p = '\0';
        if (mkdir(d, 0700) && errno != EEXIST) {
            free(d);
            return NULL;
        }
        if (!(*p = c)) break;
    }
    return d;
}

/* The cache file of a registry URL: one per URL (FNV-1a of it). */
static char *cache_file(const char *url)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *p = url; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
    char *dir = cache_dir(""), *out = NULL;
    if (dir && asprintf(&out, "%s/registry-%016llx.json", dir, (unsigned long long)h) < 0)
        out = NULL;
    free(dir);
    return out;
}

static int write_file(const char *path, const char *data, size_t n)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s.%d", path, (int)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f) return -1;
    bool ok = fwrite(data, 1, n, f) == n;
    ok = !fclose(f) && ok;
    if (!ok || rename(tmp, path)) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* --- the registry --------------------------------------------------------------------------- */

static const char *registry_source(app *a)
{
    const char *env = getenv("ACP_REGISTRY");
    return a->registry ? a->registry : env && *env ? env : REGISTRY_URL;
}

/* The registry as JSON (the caller's), or NULL after saying why (EXIT_AGENT in *status). */
static json_t *registry_load(app *a)
{
    const char *src = registry_source(a);
    json_error_t je;
    json_t *reg = NULL;
    if (!is_url(src)) {
        if (!(reg = json_load_file(!strncmp(src, "file://", 7) ? src + 7 : src, 0, &je))) {
            app_note(a, "cannot read the registry %s: %s", safe_line(src), safe_line(je.text));
            return NULL;
        }
    } else {
        fetch f = {.fd = -1, .max = REGISTRY_MAX};
        char err[512] = "";
        char *cache = cache_file(src);
        if (!download(src, &f, err, sizeof err)) {
            reg = json_loadb(f.mem.data, f.mem.len, 0, &je);
            if (!reg)
                snprintf(err, sizeof err, "not JSON: %s", je.text);
            else if (cache)
                write_file(cache, f.mem.data, f.mem.len); /* best effort: it is a cache */
        }
        acp_buf_free(&f.mem);
        if (!reg && cache && (reg = json_load_file(cache, 0, &je)))
            app_note(a, "cannot fetch the registry %s (%s): using the copy in %s", safe_line(src),
                     safe_line(err), safe_line(cache));
        else if (!reg)
            app_note(a, "cannot fetch the registry %s: %s (and no copy is cached)", safe_line(src),
                     safe_line(err));
        free(cache);
    }
    if (reg && !json_is_array(json_object_get(reg, "agents"))) {
        app_note(a, "the registry %s has no 'agents' array", safe_line(src));
        json_decref(reg);
        reg = NULL;
    }
    return reg;
}

/* This machine's <os>-<arch> as the registry names targets. */
static void platform(char *out, size_t n)
{
    struct utsname u;
    const char *arch = "x86_64";
    if (!uname(&u)) arch = !strcmp(u.machine, "arm64") ? "aarch64" : u.machine;
#ifdef __APPLE__
    snprintf(out, n, "darwin-%.40s", arch);
#else
    snprintf(out, n, "linux-%.40s", arch);
#endif
}

int cmd_agents(app *a)
{
    json_t *reg = registry_load(a);
    if (!reg) return EXIT_AGENT;
    json_t *agents = json_object_get(reg, "agents"), *m;
    if (a->json) {
        render_result(&a->r, json_pack("{s:O}", "agents", agents));
        json_decref(reg);
        return 0;
    }
    char plat[64];
    platform(plat, sizeof plat);
    size_t i;
    if (!json_array_size(agents)) printf("no agents\n");
    json_array_foreach(agents, i, m)
    {
        json_t *d = json_object_get(m, "distribution");
        char how[64] = "";
        if (json_object_get(json_object_get(d, "binary"), plat)) strcat(how, "binary ");
        if (json_is_object(json_object_get(d, "npx"))) strcat(how, "npx ");
        if (json_is_object(json_object_get(d, "uvx"))) strcat(how, "uvx ");
        if (!how[0]) strcpy(how, "- ");
        how[strlen(how) - 1] = '\0';
        printf("%-24s %-10s %-24s %-12s %s\n", safe_line(str(m, "id") ? str(m, "id") : "?"),
               safe_line(str(m, "version") ? str(m, "version") : "?"),
               safe_line(str(m, "name") ? str(m, "name") : "?"), how,
               safe_line(str(m, "description") ? str(m, "description") : ""));
    }
    json_decref(reg);
    return 0;
}

/* --- running one ---------------------------------------------------------------------------- */

/* A registry id: ^[a-z][a-z0-9-]*$ (the RFD's pattern). */
static bool is_id(const char *s)
{
    if (!s || *s < 'a' || *s > 'z') return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '-')) return false;
    return true;
}

static bool in_path(const char *cmd)
{
    const char *path = getenv("PATH");
    char *dup = strdup(path ? path : "/usr/bin:/bin"), *save = NULL;
    bool found = false;
    for (char *d = strtok_r(dup, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char buf[PATH_MAX];
        snprintf(buf, sizeof buf, "%s/%s", *d ? d : ".", cmd);
        found = access(buf, X_OK) == 0;
    }
    free(dup);
    return found;
}

/* Runs argv (searched in PATH) and waits: its exit status, or -1 when it could not start. */
static int run(char *const argv[])
{
    pid_t pid;
    if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ)) return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

/* The file's sha256 in hex (sha256sum, coreutils), into out[65]; -1 when it cannot. */
static int sha256_file(const char *path, char *out)
{
    int fds[2];
    if (pipe(fds)) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    char *argv[] = {"sha256sum", "--", (char *)path, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, "sha256sum", &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    ssize_t n = 0, r;
    char buf[128];
    while (!rc && n < 64 && (r = read(fds[0], buf + n, sizeof buf - 1 - (size_t)n)) != 0)
        if (r > 0)
            n += r;
        else if (errno != EINTR)
            break;
    close(fds[0]);
    int st = 0;
    if (!rc)
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    if (rc || n < 64 || !WIFEXITED(st) || WEXITSTATUS(st)) return -1;
    memcpy(out, buf, 64);
    out[64] = '\0';
    return 0;
}

/* Unpacks archive (named like url) into dir: bsdtar reads every format; else tar for tarballs
 * (compression told by tar itself) and unzip for .zip. 0, or -1 after saying why. */
static int unpack(app *a, const char *archive, const char *url, const char *dir)
{
    size_t n = strlen(url);
    bool zip = n > 4 && !strcasecmp(url + n - 4, ".zip");
    char *bsd[] = {"bsdtar", "-xf", (char *)archive, "-C", (char *)dir, NULL};
    char *tar[] = {"tar", "-xf", (char *)archive, "-C", (char *)dir, NULL};
    char *unz[] = {"unzip", "-q", "-o", (char *)archive, "-d", (char *)dir, NULL};
    char *const *argv = in_path("bsdtar") ? bsd : zip ? unz : tar;
    int st = run(argv);
    if (st == 0) return 0;
    app_note(a, "cannot unpack %s with %s (%s)", safe_line(url), argv[0],
             st < 0 ? "not installed" : "it failed");
    return -1;
}

/* A command word quoted for acp_client_split_command: '...' with ' written '\''. */
static void quote(acp_buf *b, const char *w)
{
    if (b->len) acp_buf_putc(b, ' ');
    acp_buf_putc(b, '\'');
    for (; *w; w++)
        if (*w == '\'')
            acp_buf_append(b, "'\\''", 4);
        else
            acp_buf_putc(b, *w);
    acp_buf_putc(b, '\'');
}

/* The binary of target t, unpacked once into the cache: its absolute cmd, or NULL (said). */
static char *binary(app *a, json_t *m, json_t *t, const char *plat)
{
    const char *url = str(t, "archive"), *cmd = str(t, "cmd"), *want = str(t, "sha256");
    if (!url || !cmd || !is_url(url) || strstr(cmd, "..") || *cmd == '/') {
        app_note(a, "agent %s: its %s archive or cmd is missing or unusable", str(m, "id"), plat);
        return NULL;
    }
    char sub[PATH_MAX];
    const char *ver = str(m, "version");
    snprintf(sub, sizeof sub, "/agents/%s/%s/%s", str(m, "id"),
             ver && !strstr(ver, "..") && !strchr(ver, '/') ? ver : "unknown", plat);
    char *dir = cache_dir(sub), *exe = NULL, marker[PATH_MAX], file[PATH_MAX];
    if (!dir) {
        app_note(a, "cannot make the cache directory for agent %s", str(m, "id"));
        return NULL;
    }
    snprintf(marker, sizeof marker, "%s/.acp-unpacked", dir);
    if (access(marker, F_OK)) {
        snprintf(file, sizeof file, "%s/.download.%d", dir, (int)getpid());
        fetch f = {.fd = open(file, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600),
                   .max = ARCHIVE_MAX};
        char err[512] = "", got[65];
        bool ok = f.fd >= 0;
        if (!ok) snprintf(err, sizeof err, "%s", strerror(errno));
        if (ok && isatty(STDERR_FILENO)) fprintf(stderr, "acp: downloading %s\n", safe_line(url));
        ok = ok && !download(url, &f, err, sizeof err);
        if (f.fd >= 0) close(f.fd);
        if (!ok)
            app_note(a, "cannot download agent %s from %s: %s", str(m, "id"), safe_line(url),
                     safe_line(err));
        if (ok && want && (sha256_file(file, got) || strcasecmp(got, want))) {
            app_note(a, "agent %s: the archive's sha256 is not the registry's; not run",
                     str(m, "id"));
            ok = false;
        }
        ok = ok && !unpack(a, file, url, dir);
        unlink(file);
        int fd = ok ? open(marker, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) : -1;
        if (fd >= 0) close(fd);
        if (!ok) {
            free(dir);
            return NULL;
        }
    }
    if (asprintf(&exe, "%s/%s", dir, cmd[0] == '.' && cmd[1] == '/' ? cmd + 2 : cmd) < 0)
        exe = NULL;
    free(dir);
    if (exe && access(exe, X_OK)) {
        app_note(a, "agent %s: %s is not in its archive (or not executable)", str(m, "id"),
                 safe_line(cmd));
        free(exe);
        exe = NULL;
    }
    return exe;
}

int registry_resolve(app *a)
{
    /* Only a single word that names no program: a command line, a socket or a URL is not an
     * id, and a program in PATH keeps its meaning. */
    if (!is_id(a->agent) || in_path(a->agent)) return 0;
    json_t *reg = registry_load(a);
    if (!reg) {
        app_note(
            a, "cannot start agent '%s': no such program in PATH, and no registry to look it up in",
            safe_line(a->agent));
        return EXIT_AGENT;
    }
    json_t *agents = json_object_get(reg, "agents"), *m = NULL;
    size_t i;
    json_array_foreach(agents, i, m) if (str(m, "id") && !strcmp(str(m, "id"), a->agent)) break;
    if (i == json_array_size(agents)) {
        app_note(a, "no agent '%s' in the registry %s (see 'acp agents'), nor in PATH",
                 safe_line(a->agent), safe_line(registry_source(a)));
        json_decref(reg);
        return EXIT_USAGE;
    }
    json_t *d = json_object_get(m, "distribution");
    char plat[64];
    platform(plat, sizeof plat);
    json_t *bin = json_object_get(json_object_get(d, "binary"), plat);
    json_t *npx = json_object_get(d, "npx"), *uvx = json_object_get(d, "uvx");
    /* A binary needs nothing installed; npx needs Node, uvx uv. */
    json_t *how = json_is_object(bin) ? bin : json_is_object(npx) ? npx : uvx;
    acp_buf cmd = {0};
    if (how == bin) {
        char *exe = binary(a, m, bin, plat);
        if (!exe) {
            json_decref(reg);
            return EXIT_AGENT;
        }
        quote(&cmd, exe);
        free(exe);
    } else if (json_is_object(how) && str(how, "package")) {
        quote(&cmd, how == npx ? "npx" : "uvx");
        if (how == npx) quote(&cmd, "-y");
        quote(&cmd, str(how, "package"));
    } else {
        app_note(a, "agent %s has no distribution for %s (binary, npx or uvx)", safe_line(a->agent),
                 plat);
        json_decref(reg);
        return EXIT_AGENT;
    }
    json_t *v;
    json_array_foreach(json_object_get(how, "args"), i, v) if (json_is_string(v))
        quote(&cmd, json_string_value(v));
    const char *k;
    json_object_foreach(json_object_get(how, "env"), k,
                        v) if (json_is_string(v) && *k && !strchr(k, '='))
        setenv(k, json_string_value(v), 1); /* the agent inherits ours */
    json_decref(reg);
    if (!acp_buf_cstr(&cmd)) return EXIT_AGENT;
    free(a->agent_cmd);
    a->agent = a->agent_cmd = cmd.data;
    return 0;
}
