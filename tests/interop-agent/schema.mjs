// SPDX-License-Identifier: Apache-2.0
// Strict validation of agent messages against the v1 JSON Schema (the authority on wire shapes:
// /work/shared/spec/README.md), as shipped in the pinned SDK: its unstable variant
// (schema/v1/schema.unstable.json, stable v1 plus the unstable members and methods), because the agent
// offers the unstable features by default (acp-agent --unstable-off turns them off).
//
// The SDK's own zod validators are lenient by design (malformed optional fields default, bad array
// items are skipped), so they would hide an agent's mistakes. This validator ignores the schema's
// x-deserialize-* leniency hints: what an agent writes must be valid as written. It implements the
// keywords the schema uses: $ref, type, const, enum, properties, required, additionalProperties, items,
// allOf, anyOf, oneOf (as anyOf: the discriminators make variants exclusive), not, minimum, maximum,
// minLength, maxLength and integer formats. On top, unknownKeys() flags object keys that the schema
// names nowhere (extensibility.mdx: custom fields only under _meta).
import { readFileSync } from "node:fs";

// The unstable schema: a superset of the stable one, with the unstable features acp-agent offers
// by default (providers, auth/status, ...), so what it advertises and answers is checked too.
const schema = JSON.parse(
  readFileSync(new URL("../../node_modules/@agentclientprotocol/sdk/schema/v1/schema.unstable.json", import.meta.url), "utf8"),
);
const defs = schema.$defs;

const INT_RANGE = {
  int32: [-(2 ** 31), 2 ** 31 - 1],
  uint32: [0, 2 ** 32 - 1],
  uint16: [0, 65535],
  int64: [-(2 ** 63), 2 ** 63],
  uint64: [0, 2 ** 64],
};

function typeOk(t, v) {
  switch (t) {
    case "null":
      return v === null;
    case "boolean":
      return typeof v === "boolean";
    case "string":
      return typeof v === "string";
    case "number":
      return typeof v === "number";
    case "integer":
      return Number.isInteger(v);
    case "array":
      return Array.isArray(v);
    case "object":
      return v !== null && typeof v === "object" && !Array.isArray(v);
  }
  return true;
}

// Returns the first error as a string, or null when v is valid against s.
function check(s, v, path) {
  if (s === true || s === undefined) return null;
  if (s === false) return `${path}: not allowed`;
  if (s.$ref) {
    const r = check(defs[s.$ref.replace("#/$defs/", "")], v, path);
    if (r) return r;
  }
  if (s.type !== undefined) {
    const ts = Array.isArray(s.type) ? s.type : [s.type];
    if (!ts.some((t) => typeOk(t, v))) return `${path}: expected ${ts.join("|")}, got ${JSON.stringify(v)?.slice(0, 80)}`;
  }
  if ("const" in s && v !== s.const) return `${path}: expected ${JSON.stringify(s.const)}, got ${JSON.stringify(v)?.slice(0, 80)}`;
  if (s.enum && !s.enum.includes(v)) return `${path}: ${JSON.stringify(v)} not in ${JSON.stringify(s.enum)}`;
  if (typeof v === "string") {
    const len = [...v].length;
    if (s.minLength !== undefined && len < s.minLength) return `${path}: ${JSON.stringify(v)} shorter than ${s.minLength}`;
    if (s.maxLength !== undefined && len > s.maxLength) return `${path}: string longer than ${s.maxLength}`;
  }
  if (typeof v === "number") {
    if (s.minimum !== undefined && v < s.minimum) return `${path}: ${v} < ${s.minimum}`;
    if (s.maximum !== undefined && v > s.maximum) return `${path}: ${v} > ${s.maximum}`;
    const range = INT_RANGE[s.format];
    if (range && (!Number.isInteger(v) || v < range[0] || v > range[1])) return `${path}: ${v} is not ${s.format}`;
  }
  if (typeOk("object", v)) {
    for (const k of s.required ?? []) if (!(k in v)) return `${path}: missing required "${k}"`;
    for (const [k, sub] of Object.entries(s.properties ?? {})) {
      if (k in v) {
        const r = check(sub, v[k], `${path}.${k}`);
        if (r) return r;
      }
    }
    if (s.additionalProperties !== undefined && s.additionalProperties !== true) {
      for (const k of Object.keys(v)) {
        if (s.properties && k in s.properties) continue;
        const r = check(s.additionalProperties, v[k], `${path}.${k}`);
        if (r) return r;
      }
    }
  }
  if (Array.isArray(v) && s.items) {
    for (let i = 0; i < v.length; i++) {
      const r = check(s.items, v[i], `${path}[${i}]`);
      if (r) return r;
    }
  }
  for (const sub of s.allOf ?? []) {
    const r = check(sub, v, path);
    if (r) return r;
  }
  for (const alts of [s.anyOf, s.oneOf]) {
    if (!alts) continue;
    const errs = alts.map((sub) => check(sub, v, path));
    if (errs.includes(null)) continue;
    // Report the variant whose discriminator (a const property) the value carries, if any.
    const picked = alts.findIndex(
      (sub) => typeOk("object", v) && Object.entries(sub.properties ?? {}).some(([k, p]) => "const" in p && v[k] === p.const),
    );
    return errs[picked >= 0 ? picked : 0];
  }
  if (s.not && !check(s.not, v, path)) return `${path}: matches a forbidden shape`;
  return null;
}

/** Validates v against $defs[name]; returns null or the first error. */
export function validate(name, v) {
  if (!defs[name]) throw new Error(`no $defs.${name} in the schema`);
  return check(defs[name], v, name);
}

// Every property name the schema declares anywhere; values under these keys are free-form.
const KNOWN = new Set();
(function walk(o) {
  if (Array.isArray(o)) o.forEach(walk);
  else if (o && typeof o === "object") {
    for (const k of Object.keys(o.properties ?? {})) KNOWN.add(k);
    Object.values(o).forEach(walk);
  }
})(schema);
const FREE = new Set(["_meta", "rawInput", "rawOutput", "data"]);
// Keys whose object value is a map with names of the sender's choosing (ElicitationSchema.properties:
// property names; AuthMethodTerminal.env: variable names): its keys are data, its values are checked.
const MAPS = new Set(["properties", "env"]);

/** Object keys (with their paths) that the schema names nowhere: custom fields outside _meta. */
export function unknownKeys(v, path = "") {
  const out = [];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...unknownKeys(x, `${path}[${i}]`)));
  else if (v && typeof v === "object")
    for (const [k, x] of Object.entries(v)) {
      if (!KNOWN.has(k)) out.push(`${path}.${k}`);
      else if (MAPS.has(k) && x && typeof x === "object" && !Array.isArray(x))
        for (const [name, y] of Object.entries(x)) out.push(...unknownKeys(y, `${path}.${k}.${name}`));
      else if (!FREE.has(k)) out.push(...unknownKeys(x, `${path}.${k}`));
    }
  return out;
}
