// SPDX-License-Identifier: Apache-2.0
// Helpers for node tests against the throwaway clusters of scripts/pg-test-cluster.sh (ctest
// fixtures pg / pg_outage_node): fresh databases, SQL through psql, stopping and starting a server.
import { execFile, execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import { promisify } from "node:util";
import { BUILD, SOURCE } from "../interop-agent/lib.mjs";

const run = promisify(execFile);

/** The cluster's conninfo (key=value), read from its state dir. */
export function clusterConninfo(name) {
  return readFileSync(join(BUILD, name, "conninfo"), "utf8").trim();
}

/** Runs SQL with psql; returns stdout rows as arrays of fields ("|"-separated). */
export function sql(conninfo, text) {
  const out = execFileSync("psql", ["-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", conninfo, "-c", text], {
    encoding: "utf8",
  });
  return out.split("\n").filter((l) => l !== "").map((l) => l.split("|"));
}

/**
 * A new database on cluster `name`, dropped after the test. Returns {conninfo, uri, name}: uri is a
 * postgresql:// URI with a password in it (the cluster trusts local connections, so the password is
 * never checked; it is there to prove it never shows up in messages or logs).
 */
export const PASSWORD = "Pw-" + randomBytes(6).toString("hex");
export function freshDb(t, name = "pg") {
  const base = clusterConninfo(name);
  const db = "acp_n_" + randomBytes(8).toString("hex");
  sql(base, `CREATE DATABASE ${db}`);
  t.after(() => sql(base, `DROP DATABASE IF EXISTS ${db} WITH (FORCE)`));
  const host = /host=(\S+)/.exec(base)[1];
  const port = /port=(\S+)/.exec(base)[1];
  return {
    name: db,
    conninfo: `${base} dbname=${db}`,
    uri: `postgresql://postgres:${PASSWORD}@/${db}?host=${encodeURIComponent(host)}&port=${port}`,
  };
}

/** scripts/pg-test-cluster.sh CMD on $ACP_BUILD/NAME (down: stop the server, keep data; up: start it). */
export async function cluster(cmd, name) {
  await run(join(SOURCE, "scripts", "pg-test-cluster.sh"), [cmd, join(BUILD, name)]);
}
