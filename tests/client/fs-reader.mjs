// SPDX-License-Identifier: Apache-2.0
// A reader of a file another process rewrites (the user's editor, a build): reads FILE whole
// again and again until STOP exists, and prints {reads, torn}: torn counts reads that were
// not SIZE bytes of one repeated character (a file seen truncated or half written).
//   node fs-reader.mjs FILE SIZE STOP
import { existsSync, readFileSync } from "node:fs";

const [file, size, stop] = process.argv.slice(2);
let reads = 0, torn = 0;
while (!existsSync(stop)) {
  let b;
  try {
    b = readFileSync(file);
  } catch {
    torn++; // a rewrite must never make the file disappear either
    continue;
  }
  reads++;
  if (b.length !== Number(size) || b.indexOf(b[0] === 65 ? 66 : 65) !== -1) torn++;
}
console.log(JSON.stringify({ reads, torn }));
