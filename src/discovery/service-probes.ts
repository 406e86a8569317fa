/**
 * The service probe database (src/discovery/probes/tcp.yaml, format in docs/services.md), loaded and
 * checked once: every probe and match is validated, every pattern compiled, so a mistake in the file
 * is an error at start-up naming the probe, not a silent miss during a scan.
 */
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { formatCpe } from "../core/cpe.ts";

export interface ServiceMatch {
  service: string;
  pattern: RegExp;
  soft: boolean;
  /** An API server behind HTTP: follow-ups run whatever the port. */
  api: boolean;
  product?: string;
  version?: string;
  update?: string;
  info?: string;
  /** `part:vendor:product`. */
  cpe?: string;
  starttls: boolean;
  decode?: "tds-version" | "oracle-vsnnum";
}

export interface ServiceProbe {
  name: string;
  kind: "greeting" | "tls" | "send";
  /** The request, `{host}` and `{port}` still in it (latin-1). */
  send?: string;
  sendBytes?: Buffer;
  /** Sent once the answer is read, before closing. */
  farewell?: Buffer;
  greetingFirst: boolean;
  ports: ReadonlySet<number>;
  requires?: ReadonlySet<string>;
  enrich: boolean;
  matches: ServiceMatch[];
  /** The services its matches can name. */
  services: ReadonlySet<string>;
}

const PROBE_KEYS = new Set([
  "name",
  "kind",
  "send",
  "send_hex",
  "farewell_hex",
  "greeting_first",
  "ports",
  "requires",
  "enrich",
  "matches",
]);
const MATCH_KEYS = new Set([
  "service",
  "pattern",
  "flags",
  "soft",
  "api",
  "product",
  "version",
  "update",
  "info",
  "cpe",
  "starttls",
  "decode",
]);

function fail(where: string, message: string): never {
  throw new Error(`Service probes, ${where}: ${message}`);
}

const text = (where: string, value: unknown, field: string): string | undefined => {
  if (value === undefined) return undefined;
  if (typeof value !== "string" || value === "") fail(where, `"${field}" must be a non-empty string`);
  return value;
};

function compileMatch(where: string, raw: Record<string, unknown>): ServiceMatch {
  for (const key of Object.keys(raw)) if (!MATCH_KEYS.has(key)) fail(where, `unknown field "${key}"`);
  const service = text(where, raw.service, "service");
  const source = text(where, raw.pattern, "pattern");
  if (!service || !source) fail(where, 'a match needs "service" and "pattern"');
  const flags = text(where, raw.flags, "flags") ?? "";
  if (!/^i?$/.test(flags)) fail(where, `flags "${flags}" are not supported (only "i")`);
  let pattern: RegExp;
  try {
    pattern = new RegExp(source, `s${flags}`);
  } catch (error) {
    fail(where, `pattern does not compile: ${(error as Error).message}`);
  }
  const cpe = text(where, raw.cpe, "cpe");
  if (cpe && !/^[aoh]:[a-z0-9_.\-~]+:[a-z0-9_.\-~]+$/.test(cpe))
    fail(where, `cpe "${cpe}" is not part:vendor:product`);
  const decode = text(where, raw.decode, "decode");
  if (decode && decode !== "tds-version" && decode !== "oracle-vsnnum")
    fail(where, `decode "${decode}" is not tds-version or oracle-vsnnum`);
  return {
    service,
    pattern,
    soft: raw.soft === true,
    api: raw.api === true,
    product: text(where, raw.product, "product"),
    version: text(where, raw.version, "version"),
    update: text(where, raw.update, "update"),
    info: text(where, raw.info, "info"),
    cpe,
    starttls: raw.starttls === true,
    decode: decode as ServiceMatch["decode"],
  };
}

function portSet(where: string, value: unknown): Set<number> {
  if (value === undefined) return new Set();
  if (!Array.isArray(value) || !value.every((p) => Number.isInteger(p) && p >= 1 && p <= 65535))
    fail(where, '"ports" must be a list of port numbers');
  return new Set(value as number[]);
}

export function compileProbes(document: unknown): ServiceProbe[] {
  const list = (document as { probes?: unknown })?.probes;
  if (!Array.isArray(list)) fail("the file", 'it must have a "probes" list');
  const names = new Set<string>();
  return list.map((raw: Record<string, unknown>, index) => {
    const where = `probe ${typeof raw?.name === "string" ? `"${raw.name}"` : `#${index + 1}`}`;
    for (const key of Object.keys(raw ?? {})) if (!PROBE_KEYS.has(key)) fail(where, `unknown field "${key}"`);
    const name = text(where, raw.name, "name");
    if (!name) fail(where, 'a probe needs a "name"');
    if (names.has(name)) fail(where, "the name is used twice");
    names.add(name);
    const kind = (text(where, raw.kind, "kind") ?? "send") as ServiceProbe["kind"];
    if (!["greeting", "tls", "send"].includes(kind))
      fail(where, `kind "${kind}" is not greeting, tls or send`);
    const send = text(where, raw.send, "send");
    const hex = text(where, raw.send_hex, "send_hex");
    if (hex && !/^(?:[0-9a-f]{2})+$/i.test(hex))
      fail(where, '"send_hex" must be pairs of hexadecimal digits');
    const farewell = text(where, raw.farewell_hex, "farewell_hex");
    if (farewell && !/^(?:[0-9a-f]{2})+$/i.test(farewell))
      fail(where, '"farewell_hex" must be pairs of hexadecimal digits');
    if (kind === "send" && !send && !hex) fail(where, 'a probe of kind "send" needs "send" or "send_hex"');
    if (kind !== "send" && (send || hex)) fail(where, `a ${kind} probe sends nothing of its own`);
    if (send && [...send].some((char) => char.charCodeAt(0) > 0xff))
      fail(where, '"send" must be bytes (\\xNN escapes)');
    const rawMatches = raw.matches ?? [];
    if (!Array.isArray(rawMatches)) fail(where, '"matches" must be a list');
    if (kind === "tls" && rawMatches.length > 0) fail(where, "a tls probe has no matches");
    const matches = rawMatches.map((match, i) => compileMatch(`${where}, match #${i + 1}`, match));
    const requires =
      raw.requires === undefined
        ? undefined
        : Array.isArray(raw.requires) && raw.requires.every((s) => typeof s === "string")
          ? new Set(raw.requires as string[])
          : fail(where, '"requires" must be a list of service names');
    return {
      name,
      kind,
      send,
      sendBytes: hex ? Buffer.from(hex, "hex") : undefined,
      farewell: farewell ? Buffer.from(farewell, "hex") : undefined,
      greetingFirst: raw.greeting_first === true,
      ports: portSet(where, raw.ports),
      requires,
      enrich: raw.enrich === true,
      matches,
      services: new Set(matches.map((match) => match.service)),
    };
  });
}

const PROBES_FILE = new URL("./probes/tcp.yaml", import.meta.url);

let loaded: ServiceProbe[] | undefined;

/** The project's probes, read and compiled on first use. */
export function serviceProbes(): ServiceProbe[] {
  loaded ??= compileProbes(parse(readFileSync(PROBES_FILE, "utf8")));
  return loaded;
}

/** The probes for a port, in the order they are tried: those naming the port first, then file order. */
export function probeOrder(probes: ServiceProbe[], port: number): ServiceProbe[] {
  return [
    ...probes.filter((probe) => probe.ports.has(port)),
    ...probes.filter((probe) => !probe.ports.has(port)),
  ];
}

/** A probe's request for a target. */
export function requestBytes(probe: ServiceProbe, host: string, port: number): Buffer {
  if (probe.sendBytes) return probe.sendBytes;
  const hostText = host.includes(":") ? `[${host}]` : host;
  return Buffer.from(
    (probe.send ?? "").replaceAll("{host}", hostText).replaceAll("{port}", String(port)),
    "latin1",
  );
}

export interface MatchedIdentity {
  service: string;
  soft: boolean;
  api: boolean;
  product?: string;
  version?: string;
  info?: string;
  cpe?: string;
  starttls: boolean;
}

const fill = (template: string | undefined, groups: Record<string, string | undefined>) =>
  template
    ?.replace(/\{(\w+)\}/g, (_, name: string) => groups[name] ?? "")
    .replace(/[^\x20-\x7e]/g, "")
    .trim()
    .slice(0, 120) || undefined;

/** The first match of `probe` on `answer`, with its templates filled in. */
export function matchAnswer(probe: ServiceProbe, answer: Buffer): MatchedIdentity | undefined {
  const textAnswer = answer.toString("latin1");
  for (const match of probe.matches) {
    const found = match.pattern.exec(textAnswer);
    if (!found) continue;
    const groups: Record<string, string | undefined> = { ...found.groups };
    if (match.decode === "tds-version") groups.version = tdsVersion(answer);
    if (match.decode === "oracle-vsnnum") groups.version = oracleVersion(groups.vsnnum);
    const version = fill(match.version ?? (groups.version !== undefined ? "{version}" : undefined), groups);
    const update = fill(match.update ?? (groups.update !== undefined ? "{update}" : undefined), groups);
    const [part, vendor, product] = match.cpe?.split(":") ?? [];
    return {
      service: match.service,
      soft: match.soft,
      api: match.api,
      product: fill(match.product, groups),
      version: version ? `${version}${update ?? ""}` : undefined,
      info: fill(match.info, groups),
      cpe: match.cpe
        ? formatCpe({
            part: part as "a" | "o" | "h",
            vendor,
            product,
            version: version ?? "*",
            update: update ?? "*",
          })
        : undefined,
      starttls: match.starttls,
    };
  }
  return undefined;
}

/** The VERSION option of a TDS PRELOGIN answer: major.minor.build. */
export function tdsVersion(answer: Buffer): string | undefined {
  const payload = answer.subarray(8);
  for (let at = 0; at + 5 <= payload.length && payload[at] !== 0xff; at += 5) {
    if (payload[at] !== 0) continue;
    const offset = payload.readUInt16BE(at + 1);
    if (payload.readUInt16BE(at + 3) < 6 || offset + 6 > payload.length) return undefined;
    return `${payload[offset]}.${payload[offset + 1]}.${payload.readUInt16BE(offset + 2)}`;
  }
  return undefined;
}

/** An Oracle VSNNUM (decimal) as the release it encodes: 318767104 → 19.0.0.0.0. */
export function oracleVersion(vsnnum: string | undefined): string | undefined {
  const value = Number(vsnnum);
  if (!Number.isSafeInteger(value) || value <= 0 || value > 0xffffffff) return undefined;
  return [value >>> 24, (value >>> 20) & 0xf, (value >>> 12) & 0xff, (value >>> 8) & 0xf, value & 0xff].join(
    ".",
  );
}
