// SPDX-License-Identifier: Apache-2.0
// The hostile process of issue 20: swaps ROOT/d for a link to OUTSIDE (relative, then
// absolute) and back, as fast as it can, until STOP exists. Prints how many swaps it made.
//   node fs-swapper.mjs ROOT OUTSIDE STOP
import { existsSync, renameSync, symlinkSync, unlinkSync } from "node:fs";
import { join, relative } from "node:path";

const [root, outside, stop] = process.argv.slice(2);
const d = join(root, "d"), real = join(root, "d_real"), rel = relative(root, outside);
let swaps = 0;
for (let i = 0; ; i++) {
  if ((i & 255) === 0 && existsSync(stop)) break;
  try {
    renameSync(d, real);
  } catch {
    continue;
  }
  try {
    symlinkSync(i & 1 ? outside : rel, d);
    unlinkSync(d);
  } catch {}
  renameSync(real, d);
  swaps++;
}
console.log(JSON.stringify({ swaps }));
