// SPDX-License-Identifier: Apache-2.0
// (unstable) auth/status and auth/status_update of the echo engine, with the official SDK 2.4.0 as
// the client and every message checked against schema.unstable.json (lib.mjs's schemaCheck):
// not_required without --auth; with --auth env:VAR unauthenticated until authenticate, never
// gated on that sign-in itself (the schema's MUST NOT -32000), an update on each change and
// none repeated; --unstable-off auth-status hides it.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, tempDir, sdkAgent } from "./lib.mjs";

const VAR = "ACP_ITEST_STATUS_TOKEN";
const updates = (a) => a.msgs.filter((e) => e.msg.method === "auth/status_update").map((e) => e.msg.params);

test("echo without --auth: auth.status advertised, state not_required, no update", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "s.db") });
  const init = await a.init();
  assert.deepEqual(init.agentCapabilities.auth?.status, {});
  assert.deepEqual(await a.request("auth/status", {}), { state: "not_required" });
  await a.end();
  assert.deepEqual(updates(a), []);
});

test("echo --auth env:VAR: unauthenticated (answered before any sign-in), then authenticated with its account after authenticate, back after logout; one update per change", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "s.db"), args: ["--auth", `env:${VAR}`], env: { [VAR]: "yes" } });
  await a.init();
  assert.deepEqual(await a.request("auth/status", {}), { state: "unauthenticated" });
  await a.request("authenticate", { methodId: "echo-token" });
  await a.request("authenticate", { methodId: "echo-token" }); // the same state: no second update
  const st = await a.request("auth/status", {});
  assert.deepEqual(st, { state: "authenticated", accounts: [{ label: "Echo token", active: true }] });
  await a.request("logout", {});
  await a.request("auth/status", {}); // a round trip: the logout's update has arrived
  await a.end();
  assert.deepEqual(updates(a).map((u) => u.state), ["authenticated", "unauthenticated"]);
});

test("--unstable-off auth-status: auth.status not advertised (logout still is), auth/status -32601", async (t) => {
  const dir = tempDir(t);
  const a = sdkAgent(t, { store: join(dir, "s.db"), args: ["--auth", `env:${VAR}`, "--unstable-off", "auth-status"], env: { [VAR]: "yes" } });
  const init = await a.init();
  assert.equal(init.agentCapabilities.auth?.status, undefined);
  assert.deepEqual(init.agentCapabilities.auth?.logout, {});
  await assert.rejects(a.request("auth/status", {}), (e) => e.code === -32601);
  await a.request("authenticate", { methodId: "echo-token" });
  await a.end();
  assert.deepEqual(updates(a), [], "an update for a feature switched off");
});
