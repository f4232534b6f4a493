#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Fills a bench/ts-agent store directory with N sessions exactly as agent.mjs writes them
// (<id>.meta.json + an empty <id>.jsonl), for the session/list benchmark: writing them
// directly is what the SQLite side does with sqlite3, and 100,000 session/new round trips
// through the Node agent would only measure file creation.
//
//   node populate.mjs DIR N CWD [ARCHIVED_PERCENT]   (the first that many percent archived)
import * as fs from "node:fs";
import * as path from "node:path";
import * as crypto from "node:crypto";

const [dir, nArg, cwd, pctArg] = process.argv.slice(2);
const n = Number(nArg);
const archivedBelow = Math.floor((n * Number(pctArg ?? 0)) / 100);
fs.mkdirSync(dir, { recursive: true });
const base = Date.now() - n * 1000;
for (let i = 0; i < n; i++) {
  const id = crypto.randomBytes(16).toString("hex");
  const t = new Date(base + i * 1000).toISOString();
  const meta = { sessionId: id, cwd, additionalDirectories: [], title: `bench ${i}`, createdAt: t, updatedAt: t };
  if (i < archivedBelow) meta.archived = true;
  fs.writeFileSync(path.join(dir, `${id}.meta.json`), JSON.stringify(meta));
  fs.writeFileSync(path.join(dir, `${id}.jsonl`), "");
}
