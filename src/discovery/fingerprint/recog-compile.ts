/**
 * Recog's XML fingerprint databases → the compact JSON Sightline ships and loads (one file per
 * database, so discovery parses only the kinds of text it met). Runs at update time, never during
 * discovery: `sightline fingerprints update --recog DIR` and the build of the shipped copy.
 * A fingerprint whose pattern cannot be translated is kept out with its reason (`skipped`).
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { DOMParser, type Element } from "@xmldom/xmldom";
import { translateRecogPattern } from "./recog-pattern.ts";

export interface RecogParam {
  /** 0: a fixed value (may interpolate `{other.param}`); n > 0: capture group n. */
  pos: number;
  name: string;
  value?: string;
}

export interface RecogExample {
  text: string;
  /** Expected parameter values (Recog's example attributes without the leading `_` ones). */
  expect: Record<string, string>;
}

export interface RecogFingerprint {
  /** Recog's pattern, as written upstream. */
  pattern: string;
  /** The JavaScript translation and its flags. */
  source: string;
  flags: string;
  /** Anchors checked after the match (\A at the start, \z or \Z at the end of the pattern). */
  anchorStart?: boolean;
  anchorEnd?: "z" | "Z";
  description: string;
  params: RecogParam[];
  examples: RecogExample[];
}

export interface RecogDatabase {
  /** What text it matches, e.g. `ssh.banner`. */
  matches: string;
  protocol?: string;
  preference?: number;
  fingerprints: RecogFingerprint[];
  skipped: { pattern: string; reason: string }[];
}

/** A database's name: Recog's `matches` attribute, else derived from the file name. */
function databaseName(root: Element, file: string): string {
  const matches = root.getAttribute("matches");
  if (matches) return matches;
  return basename(file, ".xml").replace(/_/g, ".");
}

function elements(parent: Element, tag: string): Element[] {
  const found: Element[] = [];
  for (let child = parent.firstChild; child; child = child.nextSibling) {
    if (child.nodeType === 1 && (child as Element).tagName === tag) found.push(child as Element);
  }
  return found;
}

function exampleOf(element: Element, dir: string): RecogExample | undefined {
  const expect: Record<string, string> = {};
  let text = element.textContent ?? "";
  const encoding = element.getAttribute("_encoding");
  const file = element.getAttribute("_filename");
  if (file) text = readFileSync(join(dir, file), "latin1");
  if (encoding === "base64") text = Buffer.from(text.replace(/\s+/g, ""), "base64").toString("latin1");
  for (const attribute of Array.from(element.attributes)) {
    if (!attribute.name.startsWith("_")) expect[attribute.name] = attribute.value;
  }
  return { text, expect };
}

/** One XML database, parsed and translated. */
export function compileRecogXml(xml: string, file: string, dir: string): RecogDatabase {
  const document = new DOMParser().parseFromString(xml, "text/xml");
  const root = document.documentElement;
  if (root?.tagName !== "fingerprints") throw new Error(`${file} is not a Recog fingerprint database`);
  const preference = root.getAttribute("preference");
  const database: RecogDatabase = {
    matches: databaseName(root, file),
    ...(root.getAttribute("protocol") ? { protocol: root.getAttribute("protocol") as string } : {}),
    ...(preference ? { preference: Number(preference) } : {}),
    fingerprints: [],
    skipped: [],
  };
  for (const element of elements(root, "fingerprint")) {
    const pattern = element.getAttribute("pattern") ?? "";
    const translated = translateRecogPattern(pattern, element.getAttribute("flags") ?? "");
    if ("reason" in translated) {
      database.skipped.push({ pattern, reason: translated.reason });
      continue;
    }
    const description = elements(element, "description")[0]?.textContent?.trim().replace(/\s+/g, " ") ?? "";
    const params = elements(element, "param").map((param) => ({
      pos: Number(param.getAttribute("pos") ?? 0),
      name: param.getAttribute("name") ?? "",
      ...(param.hasAttribute("value") ? { value: param.getAttribute("value") as string } : {}),
    }));
    const examples = elements(element, "example")
      .map((example) => exampleOf(example, dir))
      .filter((example): example is RecogExample => example !== undefined);
    database.fingerprints.push({ pattern, ...translated, description, params, examples });
  }
  return database;
}

export interface RecogBuildSummary {
  databases: number;
  fingerprints: number;
  skipped: number;
}

/**
 * Every database of a Recog checkout (`DIR/xml/*.xml`, or `DIR/*.xml`) into `out/NAME.json`, with
 * the licence text and a NOTICE beside them. The previous copy is replaced whole.
 */
export function buildRecogData(recogDir: string, out: string, upstream: string): RecogBuildSummary {
  let xmlDir = join(recogDir, "xml");
  try {
    readdirSync(xmlDir);
  } catch {
    xmlDir = recogDir;
  }
  const files = readdirSync(xmlDir)
    .filter((file) => file.endsWith(".xml"))
    .sort();
  if (files.length === 0) throw new Error(`${recogDir} holds no Recog XML databases (looked in ${xmlDir})`);
  const licence = ["COPYING", "LICENSE"]
    .map((name) => {
      try {
        return readFileSync(join(recogDir, name), "utf8");
      } catch {
        return undefined;
      }
    })
    .find((text) => text !== undefined);
  if (!licence)
    throw new Error(`${recogDir} has no COPYING or LICENSE: Recog's licence text must ship with its data`);
  const databases = files.map((file) =>
    compileRecogXml(readFileSync(join(xmlDir, file), "utf8"), file, xmlDir),
  );
  rmSync(out, { recursive: true, force: true });
  mkdirSync(out, { recursive: true });
  const index: Record<string, string> = {};
  for (const database of databases) {
    const name = `${database.matches}.json`;
    index[database.matches] = name;
    writeFileSync(join(out, name), JSON.stringify(database));
  }
  writeFileSync(join(out, "index.json"), `${JSON.stringify(index, null, 1)}\n`);
  writeFileSync(join(out, "COPYING"), licence);
  writeFileSync(
    join(out, "NOTICE"),
    `Rapid7 Recog fingerprint databases, translated to JSON by Sightline (patterns rewritten for\n` +
      `JavaScript; content unchanged). Upstream: ${upstream}.\n` +
      `Copyright (c) Rapid7, Inc. and Recog contributors. BSD 2-Clause licence: see COPYING.\n`,
  );
  return {
    databases: databases.length,
    fingerprints: databases.reduce((sum, database) => sum + database.fingerprints.length, 0),
    skipped: databases.reduce((sum, database) => sum + database.skipped.length, 0),
  };
}
