// SPDX-License-Identifier: Apache-2.0
// Replies for the scripted server (fake-openai.mjs) and where their shapes come from.
//
// fake-openai.mjs renders every reply in one of two recorded formats. The sources:
//
// OpenAI ("openai"):
//   - openai/openai-node tests/lib/__snapshots__/ChatCompletionStream.test.ts.snap (commit
//     7b7d6ca7, recorded from gpt-4o-2024-08-06): the envelope {id "chatcmpl-…", object
//     "chat.completion.chunk", created, model, system_fingerprint "fp_…", choices}, the first
//     chunk's delta {role: "assistant", content: "", refusal: null}, choices[].logprobs, the
//     finish chunk with delta {} and finish_reason "stop", and with stream_options.include_usage
//     a last chunk with "choices": [] and the usage, before `data: [DONE]`.
//   - openai-node src/resources/chat/completions/completions.ts (ChatCompletionChunk,
//     ChatCompletionStreamOptions.include_usage: "All other chunks will also include a usage
//     field, but with a null value"; finish_reason "tool_calls"; Delta.ToolCall {index, id?,
//     type?, function?: {name?, arguments?}}).
//   - openai-node tests/lib/ChatCompletionStream.test.ts customToolChunks(): a function tool call
//     streamed as {index, id, type: "function", function: {name, arguments: ""}} and then
//     {index, function: {arguments: fragment}} chunks, ended by an empty delta with
//     finish_reason "tool_calls".
//
// llama.cpp llama-server ("llama"):
//   - ggml-org/llama.cpp tools/server/server-task.cpp (commit 00efb3e1),
//     to_json_oaicompat_chat_partial / _stream: the envelope key order {choices, created, id,
//     model, system_fingerprint (the build, "b7140-…"), object}, choices[] {finish_reason, index,
//     delta}, the first delta {role: "assistant", content: null} ("to conform to openai
//     behavior"), the finish chunk with delta {}, then with include_usage a chunk with
//     "choices": [] and usage, and `timings` (prompt_n, prompt_ms, predicted_n, ...) on the last
//     chunk.
//   - llama.cpp common/chat.cpp common_chat_msg_diff_to_json_oaicompat: deltas carry
//     reasoning_content, content, or tool_calls [{index, id + type "function" on the first diff
//     of a call, function {name (first diff), arguments}}].
//   - A recording of llama-server b6097/b6881 with gpt-oss (g0t4/ask-openai.nvim,
//     lua/ask-openai/rewrites/harmony/NOTES.md): the role chunk with content null,
//     {"delta":{"reasoning_content":"We"}} chunks, and the last chunk with "delta":{},
//     finish_reason "stop", usage and timings.
//
// Errors: OpenAI's error body {error: {message, type, param, code}} (429 code
// "rate_limit_exceeded" with a Retry-After header, as the openai clients honour it:
// openai-node src/client.ts retryRequest reads retry-after-ms and retry-after); llama.cpp's
// {error: {code, message, type}} (server-common.cpp format_error_response).

/** A plain answer. */
export const answer = (text, o = {}) => ({ text, ...o });
/** Reasoning then an answer, as llama-server streams a thinking model. */
export const thinking = (reasoning, text, o = {}) => ({ format: "llama", reasoning, text, ...o });
/** One tool call (arguments: an object, or a string sent as is, e.g. invalid JSON). */
export const toolCall = (name, args, o = {}) => ({ tools: [{ name, arguments: args, id: o.id }], ...o });
/** Several tool calls in one assistant message. */
export const toolCalls = (calls, o = {}) => ({ tools: calls.map(([name, args, id]) => ({ name, arguments: args, id })), ...o });
/** An HTTP error. */
export const httpError = (status, message = `HTTP ${status}`, headers = {}) => ({
  status,
  headers,
  body: { error: { message, type: status === 429 ? "requests" : "server_error", param: null, code: status === 429 ? "rate_limit_exceeded" : null } },
});
/** 429 with Retry-After (seconds). */
export const rateLimited = (seconds = 1) => httpError(429, "Rate limit reached for requests. Please try again shortly.", { "Retry-After": String(seconds) });
/** A stream whose socket is destroyed after `after` events (the role chunk is event 0). */
export const cutStream = (text, after = 3) => ({ text, cutAfter: after, split: 4 });
/** A slow stream: one chunk every `ms` (for cancel mid-stream). */
export const slowStream = (text, ms = 200, o = {}) => ({ text, delayMs: ms, split: 2, ...o });
