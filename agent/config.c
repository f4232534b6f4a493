/* SPDX-License-Identifier: Apache-2.0 */
/* Modes and config options: what the engine describes, the current values of each session, the
 * two methods that change them, and their persistence in the store as the session's state:
 *
 *   {"mode":"code","config":{"model":"echo-large","verbose":true}}
 *
 * Values are kept by id, so a stored value that the engine no longer offers falls back to the
 * option's default instead of failing the load. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "agent/internal.h"

/* Boolean options shown to a client without session.configOptions.boolean (the spec's
 * "select fallback"): these two value ids stand for the boolean. */
static const acp_config_value bool_values[] = {
    {.value = "true", .name = "On"},
    {.value = "false", .name = "Off"},
};

static bool client_bools(const acp_agent *a)
{
    return acp_agent_client_has(a, "session.configOptions.boolean");
}

/* --- checking what the engine describes --------------------------------------------------- */

static bool has_groups(const acp_config_option *o)
{
    return o->nvalues && o->values[0].group;
}

static int check_option(acp_agent *a, const acp_config_option *o)
{
    if (!o->id || !*o->id || !o->name)
        return acp_error_set(ACP_EINVAL, "a config option needs an id and a name");
    if (o->boolean) return 0;
    if (!o->nvalues || !o->values)
        return acp_error_set(ACP_EINVAL, "config option '%s' has no values", o->id);
    bool grouped = has_groups(o);
    for (size_t i = 0; i < o->nvalues; i++) {
        const acp_config_value *v = &o->values[i];
        if (!v->value || !v->name)
            return acp_error_set(ACP_EINVAL,
                                 "config option '%s': a value needs a value id and a name", o->id);
        if (!v->group != !grouped || (grouped && !v->group_name))
            return acp_error_set(
                ACP_EINVAL,
                "config option '%s': either every value has a group (with a name) or none", o->id);
        if (AGENT_INDEX(o->values, i, v->value) < i)
            return acp_error_set(ACP_EINVAL, "config option '%s': value '%s' twice", o->id,
                                 v->value);
        /* A group is written as one SessionConfigSelectGroup: its values must be consecutive,
         * or its id would appear twice. */
        for (size_t k = 0; grouped && k + 1 < i; k++)
            if (!strcmp(o->values[k].group, v->group) && strcmp(o->values[i - 1].group, v->group))
                return acp_error_set(
                    ACP_EINVAL, "config option '%s': the values of group '%s' must be consecutive",
                    o->id, v->group);
    }
    if (o->default_value && AGENT_INDEX(o->values, o->nvalues, o->default_value) == o->nvalues)
        return acp_error_set(ACP_EINVAL,
                             "config option '%s': default '%s' is not one of its values", o->id,
                             o->default_value);
    return 0;
}

static int check_options(acp_agent *a, const acp_config_option *opts, size_t n)
{
    if (n && !opts) return acp_error_set(ACP_EINVAL, "config options missing");
    for (size_t i = 0; i < n; i++) {
        int rc = check_option(a, &opts[i]);
        if (rc) return rc;
        if (AGENT_INDEX(opts, i, opts[i].id) < i)
            return acp_error_set(ACP_EINVAL, "config option '%s' twice", opts[i].id);
    }
    return 0;
}

int cfg_check_engine(acp_agent *a)
{
    const acp_engine *e = &a->eng;
    if (e->nmodes && !e->modes) return acp_error_set(ACP_EINVAL, "modes missing");
    for (size_t i = 0; i < e->nmodes; i++) {
        if (!e->modes[i].id || !*e->modes[i].id || !e->modes[i].name)
            return acp_error_set(ACP_EINVAL, "a mode needs an id and a name");
        if (AGENT_INDEX(e->modes, i, e->modes[i].id) < i)
            return acp_error_set(ACP_EINVAL, "mode '%s' twice", e->modes[i].id);
    }
    if (e->default_mode && AGENT_INDEX(e->modes, e->nmodes, e->default_mode) == e->nmodes)
        return acp_error_set(ACP_EINVAL, "default mode '%s' is not a mode", e->default_mode);
    return check_options(a, e->config_options, e->nconfig_options);
}

/* --- lookups -------------------------------------------------------------------------------- */

static const acp_config_option *find_option(const cfg *c, const char *id, size_t *at)
{
    *at = AGENT_INDEX(c->opts, c->nopts, id);
    return *at < c->nopts ? &c->opts[*at] : NULL;
}

static bool find_value(const acp_config_option *o, const char *value, size_t *at)
{
    size_t i = AGENT_INDEX(o->values, o->nvalues, value);
    if (i == o->nvalues) return false;
    *at = i;
    return true;
}

static bool find_mode(const acp_engine *e, const char *id, size_t *at)
{
    size_t i = AGENT_INDEX(e->modes, e->nmodes, id);
    if (i == e->nmodes) return false;
    *at = i;
    return true;
}

/* The option with category "mode" whose values include the mode ids, kept in step with the
 * mode (the spec asks agents that offer both to keep them in sync). */
static const acp_config_option *mode_option(const cfg *c, size_t *at)
{
    for (size_t i = 0; i < c->nopts; i++)
        if (!c->opts[i].boolean && c->opts[i].category && !strcmp(c->opts[i].category, "mode")) {
            *at = i;
            return &c->opts[i];
        }
    return NULL;
}

/* --- values ----------------------------------------------------------------------------------- */

/* Sets option i to the first valid of: prev (the value the option had before its description
 * was replaced), else when it had none the value stored when the session opened, else the
 * default. A value the user moved away from is never brought back. */
static void settle_value(cfg *c, size_t i, const json_t *prev)
{
    const acp_config_option *o = &c->opts[i];
    const json_t *stored =
        prev ? NULL : json_object_get(json_object_get(c->stored, "config"), o->id);
    if (o->boolean) {
        c->val[i] = json_is_boolean(prev)     ? json_is_true(prev)
                    : json_is_boolean(stored) ? json_is_true(stored)
                                              : o->default_bool;
        return;
    }
    size_t at = 0;
    if (!find_value(o, json_string_value(prev), &at) &&
        !find_value(o, json_string_value(stored), &at))
        find_value(o, o->default_value, &at); /* else the first */
    c->val[i] = at;
}

static json_t *value_json(const cfg *c, size_t i)
{
    return c->opts[i].boolean ? json_boolean(c->val[i])
                              : json_string(c->opts[i].values[c->val[i]].value);
}

/* Allocates the values of c->nopts options and settles each (prev: the values of the
 * description being replaced, as an object by id, or NULL). */
static int settle(cfg *c, const json_t *prev)
{
    size_t *val = calloc(c->nopts ? c->nopts : 1, sizeof *val);
    if (!val) return acp_error_code(ACP_ENOMEM);
    free(c->val);
    c->val = val;
    for (size_t i = 0; i < c->nopts; i++) settle_value(c, i, json_object_get(prev, c->opts[i].id));
    return 0;
}

static void sync_option_to_mode(acp_session *s, bool *opt_moved);

int cfg_init(acp_session *s, const char *stored)
{
    const acp_engine *e = &s->a->eng;
    cfg *c = &s->cfg;
    c->opts = e->config_options;
    c->nopts = e->nconfig_options;
    c->stored = stored ? json_loads(stored, 0, NULL) : NULL;
    if (e->nmodes) {
        c->mode = 0;
        if (!find_mode(e, json_string_value(json_object_get(c->stored, "mode")), &c->mode))
            find_mode(e, e->default_mode, &c->mode);
    }
    int rc = settle(c, NULL);
    bool moved; /* the mode wins over the option's own default */
    if (!rc) sync_option_to_mode(s, &moved);
    return rc;
}

void cfg_free(acp_session *s)
{
    cfg *c = &s->cfg;
    free(c->own);
    free(c->val);
    json_decref(c->stored);
    memset(c, 0, sizeof *c);
}

/* The state text for the store; NULL on ENOMEM. Caller frees. */
static char *state_text(const acp_session *s)
{
    const cfg *c = &s->cfg;
    const acp_engine *e = &s->a->eng;
    json_t *config = json_object();
    for (size_t i = 0; config && i < c->nopts; i++)
        json_object_set_new(config, c->opts[i].id, value_json(c, i));
    json_t *st = json_pack("{so}", "config", config);
    if (st && e->nmodes) json_object_set_new(st, "mode", json_string(e->modes[c->mode].id));
    char *txt = st ? json_dumps(st, JSON_COMPACT) : NULL;
    json_decref(st);
    return txt;
}

/* Records the current values in the store. ACP_ENOTFOUND: the session was deleted (by
 * another process, say) or taken over by another lease holder, and is closed at the next
 * flush. */
static int save(acp_session *s)
{
    if (s->gone) return session_gone_error(s);
    char *txt = state_text(s);
    if (!txt) return acp_error_set(ACP_ENOMEM, "out of memory");
    int rc = acp_store_set_state(s->a->store, s->id, s->fence, txt);
    free(txt);
    return session_write_failed(s, rc);
}

/* --- JSON ---------------------------------------------------------------------------------- */

static void write_value(acp_jw *w, const acp_config_value *v)
{
    acp_jw_obj(w);
    acp_jw_kstr(w, "value", v->value);
    acp_jw_kstr(w, "name", v->name);
    if (v->description) acp_jw_kstr(w, "description", v->description);
    acp_jw_obj_end(w);
}

static void write_option(const cfg *c, size_t i, bool bools, acp_jw *w)
{
    const acp_config_option *o = &c->opts[i];
    acp_jw_obj(w);
    acp_jw_kstr(w, "id", o->id);
    acp_jw_kstr(w, "name", o->name);
    if (o->description) acp_jw_kstr(w, "description", o->description);
    if (o->category) acp_jw_kstr(w, "category", o->category);
    if (o->boolean && bools) {
        acp_jw_kstr(w, "type", "boolean");
        acp_jw_key(w, "currentValue");
        acp_jw_bool(w, c->val[i]);
    } else if (o->boolean) {
        acp_jw_kstr(w, "type", "select");
        acp_jw_kstr(w, "currentValue", c->val[i] ? "true" : "false");
        acp_jw_key(w, "options");
        acp_jw_arr(w);
        for (size_t k = 0; k < 2; k++) write_value(w, &bool_values[k]);
        acp_jw_arr_end(w);
    } else {
        acp_jw_kstr(w, "type", "select");
        acp_jw_kstr(w, "currentValue", o->values[c->val[i]].value);
        acp_jw_key(w, "options");
        acp_jw_arr(w);
        for (size_t k = 0; k < o->nvalues;) {
            const acp_config_value *v = &o->values[k];
            if (!v->group) {
                write_value(w, v);
                k++;
                continue;
            }
            acp_jw_obj(w);
            acp_jw_kstr(w, "group", v->group);
            acp_jw_kstr(w, "name", v->group_name);
            acp_jw_key(w, "options");
            acp_jw_arr(w);
            for (; k < o->nvalues && !strcmp(o->values[k].group, v->group); k++)
                write_value(w, &o->values[k]);
            acp_jw_arr_end(w);
            acp_jw_obj_end(w);
        }
        acp_jw_arr_end(w);
    }
    acp_jw_obj_end(w);
}

static void write_options(const acp_session *s, acp_jw *w)
{
    bool bools = client_bools(s->a);
    acp_jw_arr(w);
    for (size_t i = 0; i < s->cfg.nopts; i++) write_option(&s->cfg, i, bools, w);
    acp_jw_arr_end(w);
}

void cfg_write_result(acp_session *s, acp_jw *w)
{
    const acp_engine *e = &s->a->eng;
    if (e->nmodes) {
        acp_jw_key(w, "modes");
        acp_jw_obj(w);
        acp_jw_kstr(w, "currentModeId", e->modes[s->cfg.mode].id);
        acp_jw_key(w, "availableModes");
        acp_jw_arr(w);
        for (size_t i = 0; i < e->nmodes; i++) {
            acp_jw_obj(w);
            acp_jw_kstr(w, "id", e->modes[i].id);
            acp_jw_kstr(w, "name", e->modes[i].name);
            if (e->modes[i].description) acp_jw_kstr(w, "description", e->modes[i].description);
            acp_jw_obj_end(w);
        }
        acp_jw_arr_end(w);
        acp_jw_obj_end(w);
    }
    if (s->cfg.nopts) {
        acp_jw_key(w, "configOptions");
        write_options(s, w);
    }
}

/* Sends current_mode_update or config_option_update, once the client knows the session (before
 * that the values go out in the result). Live only: load returns the current values. */
static int announce(acp_session *s, bool mode)
{
    if (s->state != SESS_READY) return 0;
    acp_buf b = {0};
    acp_jw w;
    acp_jw_init(&w, &b);
    acp_jw_obj(&w);
    if (mode) {
        acp_jw_kstr(&w, "sessionUpdate", "current_mode_update");
        acp_jw_kstr(&w, "currentModeId", s->a->eng.modes[s->cfg.mode].id);
    } else {
        acp_jw_kstr(&w, "sessionUpdate", "config_option_update");
        acp_jw_key(&w, "configOptions");
        write_options(s, &w);
    }
    acp_jw_obj_end(&w);
    int rc = acp_jw_status(&w);
    if (!rc) rc = session_send(s, b.data, b.len);
    acp_buf_free(&b);
    return rc;
}

/* --- changing values ------------------------------------------------------------------------ */

/* The mode and the "mode" option move together: after one changed, the other follows when it
 * has the same id. *mode_moved / *opt_moved say what changed. */
static void sync_option_to_mode(acp_session *s, bool *opt_moved)
{
    size_t i, v;
    const acp_config_option *o = mode_option(&s->cfg, &i);
    if (o && s->a->eng.nmodes && find_value(o, s->a->eng.modes[s->cfg.mode].id, &v) &&
        s->cfg.val[i] != v) {
        s->cfg.val[i] = v;
        *opt_moved = true;
    }
}

static void sync_mode_to_option(acp_session *s, bool *mode_moved)
{
    size_t i, m;
    const acp_config_option *o = mode_option(&s->cfg, &i);
    if (o && find_mode(&s->a->eng, o->values[s->cfg.val[i]].value, &m) && s->cfg.mode != m) {
        s->cfg.mode = m;
        *mode_moved = true;
    }
}

/* A snapshot to undo a change the store could not record. */
typedef struct undo {
    size_t mode, *val;
} undo;

static int snapshot(const cfg *c, undo *u)
{
    u->mode = c->mode;
    u->val = malloc((c->nopts ? c->nopts : 1) * sizeof *u->val);
    if (!u->val) return acp_error_code(ACP_ENOMEM);
    memcpy(u->val, c->val, c->nopts * sizeof *u->val);
    return 0;
}

enum { QUIET_NONE, QUIET_MODE, QUIET_CONFIG };

/* Saves the change, or rolls it back to u and returns the store's error. Then announces what
 * moved, except what the client asked for itself (`quiet`: its answer says so). An
 * announcement that cannot be built (out of memory) is lost; the change stands. */
static int commit(acp_session *s, undo *u, bool mode_moved, bool opt_moved, int quiet)
{
    int rc = save(s);
    if (rc) {
        s->cfg.mode = u->mode;
        memcpy(s->cfg.val, u->val, s->cfg.nopts * sizeof *u->val);
    }
    free(u->val);
    if (rc) return rc;
    if (mode_moved && quiet != QUIET_MODE) announce(s, true);
    if (opt_moved && quiet != QUIET_CONFIG) announce(s, false);
    return 0;
}

/* Moves to mode m (and the mode option with it). */
static int change_mode(acp_session *s, size_t m, int quiet)
{
    undo u;
    if (snapshot(&s->cfg, &u)) return acp_error_set(ACP_ENOMEM, "out of memory");
    bool opt_moved = false;
    bool moved = s->cfg.mode != m;
    s->cfg.mode = m;
    sync_option_to_mode(s, &opt_moved);
    return commit(s, &u, moved, opt_moved, quiet);
}

/* Sets option i to select value v, or to the boolean on. */
static int change_option(acp_session *s, size_t i, size_t v, bool on, int quiet)
{
    undo u;
    if (snapshot(&s->cfg, &u)) return acp_error_set(ACP_ENOMEM, "out of memory");
    bool mode_moved = false;
    s->cfg.val[i] = s->cfg.opts[i].boolean ? on : v;
    sync_mode_to_option(s, &mode_moved);
    return commit(s, &u, mode_moved, true, quiet);
}

/* --- the public API ----------------------------------------------------------------------------
 */

const char *acp_session_mode(const acp_session *s)
{
    const acp_engine *e = &s->a->eng;
    return e->nmodes ? e->modes[s->cfg.mode].id : NULL;
}

const char *acp_session_config(const acp_session *s, const char *config_id)
{
    size_t i;
    const acp_config_option *o = find_option(&s->cfg, config_id, &i);
    return o && !o->boolean ? o->values[s->cfg.val[i]].value : NULL;
}

int acp_session_config_bool(const acp_session *s, const char *config_id, bool *on)
{
    size_t i;
    const acp_config_option *o = find_option(&s->cfg, config_id, &i);
    if (!o || !o->boolean) return acp_error_code(ACP_ENOTFOUND);
    *on = s->cfg.val[i];
    return 0;
}

int acp_session_set_mode(acp_session *s, const char *mode_id)
{
    size_t m;
    if (s->state == SESS_CLOSED) return acp_error_set(ACP_ECLOSED, "session %s is closed", s->id);
    if (!find_mode(&s->a->eng, mode_id, &m))
        return acp_error_set(ACP_EINVAL, "unknown mode '%s'", mode_id ? mode_id : "(null)");
    return change_mode(s, m, QUIET_NONE);
}

static int set_option(acp_session *s, const char *config_id, bool boolean, const char *value,
                      bool on)
{
    size_t i, v = 0;
    if (s->state == SESS_CLOSED) return acp_error_set(ACP_ECLOSED, "session %s is closed", s->id);
    const acp_config_option *o = config_id ? find_option(&s->cfg, config_id, &i) : NULL;
    if (!o || o->boolean != boolean)
        return acp_error_set(ACP_EINVAL, "no %s config option '%s'", boolean ? "boolean" : "select",
                             config_id ? config_id : "(null)");
    if (!boolean && !find_value(o, value, &v))
        return acp_error_set(ACP_EINVAL, "config option '%s' has no value '%s'", config_id,
                             value ? value : "(null)");
    return change_option(s, i, v, on, QUIET_NONE);
}

int acp_session_set_config(acp_session *s, const char *config_id, const char *value)
{
    return set_option(s, config_id, false, value, false);
}

int acp_session_set_config_bool(acp_session *s, const char *config_id, bool on)
{
    return set_option(s, config_id, true, NULL, on);
}

/* A deep copy of opts[0..n) in one allocation (two passes: measure, then copy). */
static size_t put_str(char **arena, const char *str)
{
    size_t n = str ? strlen(str) + 1 : 0;
    if (*arena && str) {
        memcpy(*arena, str, n);
        *arena += n;
    }
    return n;
}

static void *copy_options(const acp_config_option *opts, size_t n)
{
    size_t total = n * sizeof *opts, strs = 0;
    for (size_t i = 0; i < n; i++) total += opts[i].nvalues * sizeof *opts[i].values;
    char *none = NULL;
    for (size_t i = 0; i < n; i++) {
        const acp_config_option *o = &opts[i];
        strs += put_str(&none, o->id) + put_str(&none, o->name) + put_str(&none, o->description) +
                put_str(&none, o->category) + put_str(&none, o->default_value);
        for (size_t k = 0; k < o->nvalues; k++)
            strs += put_str(&none, o->values[k].value) + put_str(&none, o->values[k].name) +
                    put_str(&none, o->values[k].description) + put_str(&none, o->values[k].group) +
                    put_str(&none, o->values[k].group_name);
    }
    acp_config_option *out = malloc(total + strs + 1);
    if (!out) return NULL;
    acp_config_value *vals = (acp_config_value *)(out + n);
    char *arena = (char *)out + total;
#define DUP(dst, src) ((dst) = (src) ? arena : NULL, put_str(&arena, (src)))
    for (size_t i = 0; i < n; i++) {
        const acp_config_option *o = &opts[i];
        out[i] = *o;
        out[i].values = vals;
        DUP(out[i].id, o->id);
        DUP(out[i].name, o->name);
        DUP(out[i].description, o->description);
        DUP(out[i].category, o->category);
        DUP(out[i].default_value, o->default_value);
        for (size_t k = 0; k < o->nvalues; k++, vals++) {
            DUP(vals->value, o->values[k].value);
            DUP(vals->name, o->values[k].name);
            DUP(vals->description, o->values[k].description);
            DUP(vals->group, o->values[k].group);
            DUP(vals->group_name, o->values[k].group_name);
        }
    }
#undef DUP
    return out;
}

int acp_session_set_config_options(acp_session *s, const acp_config_option *opts, size_t n)
{
    acp_agent *a = s->a;
    if (s->state == SESS_CLOSED) return acp_error_set(ACP_ECLOSED, "session %s is closed", s->id);
    int rc = check_options(a, opts, n);
    if (rc) return rc;
    cfg *c = &s->cfg;
    json_t *prev = json_object();
    for (size_t i = 0; prev && i < c->nopts; i++)
        json_object_set_new(prev, c->opts[i].id, value_json(c, i));
    void *own = n ? copy_options(opts, n) : NULL;
    if (!prev || (n && !own)) {
        json_decref(prev);
        free(own);
        return acp_error_set(ACP_ENOMEM, "out of memory");
    }
    cfg old = *c;
    c->opts = own;
    c->nopts = n;
    c->own = own;
    c->val = NULL;
    rc = settle(c, prev);
    json_decref(prev);
    if (rc) {
        free(own);
        *c = old;
        return acp_error_set(rc, "out of memory");
    }
    size_t old_mode = c->mode;
    bool mode_moved = false;
    sync_mode_to_option(s, &mode_moved);
    if ((rc = save(s))) { /* nothing changed: the store and the client keep the old list */
        free(c->own);
        free(c->val);
        *c = old;
        c->mode = old_mode;
        return rc;
    }
    free(old.own);
    free(old.val);
    if (mode_moved) announce(s, true);
    announce(s, false);
    return 0;
}

/* --- session/set_mode, session/set_config_option -----------------------------------------------
 */

/* The session named in params that fit their table, open and answered, or NULL after
 * answering the error. */
static acp_session *target(acp_agent *a, acp_req *req, const vfield *params)
{
    const char *id = agent_accept(a, req, params, true) ? session_id_param(req) : NULL;
    acp_session *s = id ? session_target(a, req, id) : NULL;
    return s && lease_check(s, req) ? s : NULL; /* taken over meanwhile? (lease.c) */
}

/* Answers an engine's veto: its code and sentence, or a generic one. */
static void refuse(acp_req *req, int code, char *message, const char *what)
{
    acp_req_error(req, code, NULL, "%s", message ? message : what);
    free(message);
}

/* Answers a change the store could not record (the values are unchanged). */
static void reply_failed(acp_session *s, acp_req *req, int rc)
{
    if (rc == ACP_ENOTFOUND)
        session_reply_gone(s, req);
    else if (rc == ACP_ESTORE)
        agent_store_error(req, acp_error_last()->message);
    else
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "%s", acp_error_last()->message);
}

/* Asks the engine's vetoes about a client's change to mode m, or to option i (value v, or on):
 * false after answering the refusal. The mode and the "mode" option move together, so a
 * change to one is also put to the other's hook: neither can be used to get round the other. */
static bool vetoed(acp_session *s, acp_req *req, size_t m, size_t i, size_t v, bool on)
{
    const acp_engine *e = &s->a->eng;
    size_t mi, mv;
    const acp_config_option *mo = mode_option(&s->cfg, &mi);
    if (m == SIZE_MAX && mo && i == mi && find_mode(e, mo->values[v].value, &mv) &&
        mv != s->cfg.mode)
        m = mv;
    if (i == SIZE_MAX && mo && find_value(mo, e->modes[m].id, &mv) && mv != s->cfg.val[mi]) {
        i = mi;
        v = mv;
    }
    /* The option is asked about by copies of its ids: a hook may replace the option list
     * (acp_session_set_config_options), which frees the one those strings live in. */
    char *oid = NULL, *oval = NULL;
    if (i != SIZE_MAX) {
        const acp_config_option *o = &s->cfg.opts[i];
        oid = strdup(o->id);
        oval = o->boolean ? NULL : strdup(o->values[v].value);
        if (!oid || (!o->boolean && !oval)) {
            free(oid);
            free(oval);
            acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
            return false;
        }
    }
    char *msg = NULL;
    int code = 0;
    if (m != SIZE_MAX && e->set_mode) code = e->set_mode(s, e->modes[m].id, &msg, e->user);
    const char *what = "the agent refused the mode";
    if (!code && oid && e->set_config) {
        free(msg);
        msg = NULL;
        code = e->set_config(s, oid, oval, on, &msg, e->user);
        what = "the agent refused the value";
    }
    free(oid);
    free(oval);
    if (code) {
        refuse(req, code, msg, what);
        return false;
    }
    free(msg);
    return true;
}

static void h_set_mode(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    acp_session *s = target(a, req, &params_set_mode);
    if (!s) return;
    if (!a->eng.nmodes) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, NULL, "session %s has no modes", s->id);
        return;
    }
    json_t *id = json_object_get(acp_req_params(req), "modeId");
    size_t m;
    if (!find_mode(&a->eng, json_string_value(id), &m)) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{so}", "modeId", json_incref(id)),
                      "unknown mode '%s': not one of the session's availableModes",
                      json_string_value(id));
        return;
    }
    if (!vetoed(s, req, m, SIZE_MAX, 0, false)) return;
    int rc = change_mode(s, m, QUIET_MODE);
    if (rc)
        reply_failed(s, req, rc);
    else
        session_reply(s, req, NULL);
}

static void h_set_config(acp_conn *c, acp_req *req, void *user)
{
    acp_agent *a = user;
    acp_session *s = target(a, req, &params_set_config);
    if (!s) return;
    json_t *p = acp_req_params(req);
    json_t *cid = json_object_get(p, "configId"), *value = json_object_get(p, "value");
    const char *type = json_string_value(json_object_get(p, "type"));
    size_t i, v = 0;
    const char *id = json_string_value(cid);
    const acp_config_option *o = find_option(&s->cfg, id, &i);
    if (!o) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "configId", id),
                      "unknown config option '%s'", id);
        return;
    }
    /* A boolean option is a boolean only for clients that can show one; others were shown
     * the "true" / "false" select and send one of those ids (a string without a type). The
     * edge let through a boolean value with type "boolean", else a value id (a string): the
     * schema's anyOf reads {"type":"boolean","value":"x"} as the value id "x", as the SDK does. */
    bool boolean = type && !strcmp(type, "boolean") && json_is_boolean(value);
    bool on = false;
    if (o->boolean && boolean && client_bools(a)) {
        on = json_is_true(value);
    } else if (o->boolean && !boolean && !client_bools(a) &&
               (!strcmp(json_string_value(value), "true") ||
                !strcmp(json_string_value(value), "false"))) {
        on = !strcmp(json_string_value(value), "true");
    } else if (o->boolean) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, NULL,
                      client_bools(a)
                          ? "config option '%s' is boolean: send type \"boolean\" and a "
                            "boolean value"
                          : "config option '%s' takes the value \"true\" or \"false\"",
                      id);
        return;
    } else if (boolean) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, NULL,
                      "config option '%s' is a select: send one of its value ids", id);
        return;
    } else if (!find_value(o, json_string_value(value), &v)) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS,
                      json_pack("{ss sO}", "configId", id, "value", value),
                      "config option '%s' has no value '%s'", id, json_string_value(value));
        return;
    }
    bool was_boolean = o->boolean;
    if (!vetoed(s, req, SIZE_MAX, i, v, on)) return;
    /* A hook may have replaced the option list: o, i and v may be stale. The change applies
     * to the option of that id as it is now, if it still takes the value. */
    o = find_option(&s->cfg, id, &i);
    if (!o || o->boolean != was_boolean ||
        (!o->boolean && !find_value(o, json_string_value(value), &v))) {
        acp_req_error(req, ACP_RPC_INVALID_PARAMS, json_pack("{ss}", "configId", id),
                      "config option '%s' no longer takes this value: the agent replaced its "
                      "options",
                      id);
        return;
    }
    int rc = change_option(s, i, v, on, QUIET_CONFIG);
    if (rc) {
        reply_failed(s, req, rc);
        return;
    }
    /* The complete state, dependent changes included, as the spec asks. */
    acp_buf b = {0};
    acp_jw w;
    acp_jw_init(&w, &b);
    acp_jw_obj(&w);
    acp_jw_key(&w, "configOptions");
    write_options(s, &w);
    acp_jw_obj_end(&w);
    if (acp_jw_status(&w))
        acp_req_error(req, ACP_RPC_INTERNAL_ERROR, NULL, "out of memory");
    else
        session_reply_raw(s, req, b.data, b.len);
    acp_buf_free(&b);
}

void cfg_register(acp_agent *a)
{
    acp_conn_on(a->conn, "session/set_mode", h_set_mode, NULL, a);
    acp_conn_on(a->conn, "session/set_config_option", h_set_config, NULL, a);
}
