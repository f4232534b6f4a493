/* SPDX-License-Identifier: Apache-2.0 */
/* libFuzzer target over acp_conn_recv: any bytes, in any pieces, must never crash, leak or
 * produce a line that is not valid JSON. `make fuzz` runs it; `make test` replays the corpus. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "acp/rpc.h"
#include "fuzz/check_output.h"

static void on_echo(acp_conn *c, acp_req *r, void *user)
{
    acp_req_reply(r, json_incref(acp_req_params(r)));
}

static void on_cancelled(acp_req *r, void *user)
{
    acp_req_error(r, ACP_RPC_CANCELLED, NULL, "cancelled");
}

/* Holds the request; answers when cancelled or at the end. */
static void on_hold(acp_conn *c, acp_req *r, void *user)
{
    acp_req_on_cancel(r, on_cancelled, NULL);
}

static void on_stream(acp_conn *c, acp_req *r, void *user)
{
    acp_jw *w = acp_req_reply_begin(r);
    acp_jw_obj(w);
    acp_jw_key(w, "params");
    acp_jw_raw(w, acp_req_params_text(r).n ? acp_req_params_text(r).p : "{}",
               acp_req_params_text(r).n ? acp_req_params_text(r).n : 2);
    acp_jw_obj_end(w);
    acp_req_reply_end(r);
}

static void on_resp(acp_conn *c, acp_msg *m, void *user)
{
    if (acp_msg_is_error(m)) {
        (void)acp_msg_error_code(m);
        (void)acp_msg_error_data(m);
    } else {
        (void)acp_msg_result(m);
    }
}

static void on_note(acp_conn *c, acp_msg *m, void *user)
{
    json_t *p = acp_msg_params(m);
    /* Answering a notification with a call back exercises both directions. */
    if (p) acp_conn_call(c, "peer/echo", json_incref(p), on_resp, NULL, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    acp_conn_opts o = {.struct_size = sizeof(acp_conn_opts), .max_message = 1024};
    acp_conn *c = acp_conn_new(&o);
    acp_conn_on(c, "echo", on_echo, NULL, NULL);
    acp_conn_on(c, "hold", on_hold, NULL, NULL);
    acp_conn_on(c, "stream", on_stream, NULL, NULL);
    acp_conn_on(c, "note", NULL, on_note, NULL);
    /* Responses to our own calls: make a few so ids 0..3 are pending. */
    for (int i = 0; i < 4; i++) acp_conn_call(c, "x", NULL, on_resp, NULL, NULL);
    fuzz_check_output(c);
    /* The first byte picks the piece size, so splits at odd offsets are explored too. */
    size_t piece = size ? (size_t)data[0] % 17 + 1 : 1;
    for (size_t i = 0; i < size; i += piece) {
        acp_conn_recv(c, (const char *)data + i, size - i < piece ? size - i : piece);
        fuzz_check_output(c);
    }
    acp_conn_eof(c);
    fuzz_check_output(c);
    acp_conn_free(c);
    return 0;
}
