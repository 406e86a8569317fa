/**
 * The container image holds everything the service reads at run time. Where a builder works (`docker`
 * with a daemon) the image is built and its /app listed; elsewhere the image's file list is read from the
 * Dockerfile's runtime COPY lines and .dockerignore. Either way a real server, traced for every file it
 * reads or loads, starts and runs a collection that reaches a web application (so the template library,
 * the fingerprint rules and the probes are read), and each file of the checkout it read must be in the
 * image: a run-time file the image lacks fails this test.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, relative, sep } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { type Sightline, spawnSightline } from "../helpers/processes.ts";
import { BOOTSTRAP_KEYS } from "../helpers/server.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const TRACE_PRELOAD = fileURLToPath(new URL("./file-trace.mjs", import.meta.url));
const ADDRESS = "127.92.0.7";

/** Paths under /app in the runtime stage, as the Dockerfile's COPY lines and RUN rm lines leave them. */
export function imageLayout(
  dockerfile: string,
  dockerignore: string,
): { copied: string[]; removed: string[] } {
  const runtime = dockerfile.slice(dockerfile.lastIndexOf("\nFROM "));
  const build = dockerfile.slice(0, dockerfile.lastIndexOf("\nFROM "));
  const ignored = dockerignore
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  const copied: string[] = [];
  for (const match of runtime.matchAll(/^COPY (--from=\S+ )?(.+) (\S+)$/gm)) {
    for (const source of match[2]!.split(" ")) {
      const path = source
        .replace(/^\/app\//, "")
        .replace(/^\.\//, "")
        .replace(/\/$/, "");
      if (!match[1] && ignored.includes(path)) continue; // the build context leaves it out
      copied.push(path);
    }
  }
  // What the build stage deletes from what it hands over (`rm -rf a b`), as globs.
  const removed = [...build.matchAll(/rm -rf ([^\n&\\]+)/g)].flatMap((match) =>
    match[1]!.trim().split(/\s+/),
  );
  return { copied, removed };
}

const glob = (pattern: string) =>
  new RegExp(`^${pattern.replace(/[.+^${}()|[\]\\]/g, "\\$&").replaceAll("*", "[^/]*")}(/|$)`);

/** Whether the image holds the checkout's file `path` (relative, with /). */
export function inImage(path: string, layout: { copied: string[]; removed: string[] }): boolean {
  if (layout.removed.some((pattern) => glob(pattern).test(path))) return false;
  return layout.copied.some((copied) => path === copied || path.startsWith(`${copied}/`));
}

/**
 * What the image need not hold: files its build makes that a checkout has only after `npm ci` (the
 * dashboard, the native engine), and the checkout's .git, read for the commit where it exists (the image
 * names its commit with SIGHTLINE_BUILD_COMMIT instead).
 */
const NOT_COPIED = [/^src\/web\/dist\//, /^src\/discovery\/net\/native\/build\//, /^\.git(\/|$)/];

let target: ReturnType<typeof createServer>;
let server: Sightline | undefined;
let dataDir: string;
let trace: string;

before(async () => {
  target = createServer((_request, response) => {
    response
      .writeHead(200, { "content-type": "text/html", server: "nginx/1.22.1" })
      .end("<title>Hello</title>");
  });
  await new Promise<void>((resolve) => target.listen(8080, ADDRESS, resolve));
  dataDir = mkdtempSync(join(tmpdir(), "sightline-image-"));
  trace = join(dataDir, "trace.txt");
});
after(async () => {
  await server?.stop(5000);
  await new Promise((resolve) => target.close(resolve));
  rmSync(dataDir, { recursive: true, force: true });
});

test("every file the server reads at start and during a run is in the image", async () => {
  const layout = imageLayout(
    readFileSync(join(ROOT, "Dockerfile"), "utf8"),
    readFileSync(join(ROOT, ".dockerignore"), "utf8"),
  );
  server = spawnSightline(["serve"], {
    NODE_OPTIONS: `--import ${TRACE_PRELOAD}`,
    SIGHTLINE_TEST_FILE_TRACE: trace,
    PORT: "0",
    HOST: "127.0.0.1",
    SIGHTLINE_DATA_DIR: dataDir,
    SIGHTLINE_BOOTSTRAP_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
    SIGHTLINE_BOOTSTRAP_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
    SIGHTLINE_SCAN_ALLOW: `${ADDRESS}/32`,
    SIGHTLINE_SOURCES: "none",
    LOG_LEVEL: "warn",
  });
  const listening = await server.waitForLine(/listening on http/, 30_000);
  const url = /(http:\/\/\S+?)[\s,)]/.exec(`${listening} `)![1]!;
  const headers = {
    SERVICE_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
    SERVICE_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
    "content-type": "application/json",
  };
  const created = await fetch(`${url}/api/collections`, {
    method: "POST",
    headers,
    body: JSON.stringify({
      name: "image",
      scan_rate: "on_demand",
      seeds: [{ type: "IpAddress", name: ADDRESS }],
      scan_profile: { ports: "8080", udp: false, template_library: true },
    }),
  });
  assert.equal(created.status, 200, await created.text());
  await fetch(`${url}/api/collections/image/schedule`, { method: "POST", headers });
  for (let i = 0; i < 600; i++) {
    const runs = (await (await fetch(`${url}/api/collections/image/runs`, { headers })).json()) as {
      result: Array<{ status: string }>;
    };
    if (runs.result[0] && ["finished", "failed"].includes(runs.result[0].status)) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const applications = (await (
    await fetch(`${url}/api/collections/image/applications`, { headers })
  ).json()) as {
    result: unknown[];
  };
  assert.ok(applications.result.length > 0, "the run reached the web application, so templates ran");
  await fetch(`${url}/`, {}); // the dashboard's files

  const read = new Set(
    readFileSync(trace, "utf8")
      .split("\n")
      .filter((path) => path.startsWith(ROOT) && existsSync(path))
      .map((path) => relative(ROOT, path).split(sep).join("/"))
      .filter((path) => path !== "" && !path.startsWith("..") && !path.startsWith(relative(ROOT, dataDir))),
  );
  assert.ok(
    [...read].some((path) => path.startsWith("templates/")),
    "the template library was read",
  );
  assert.ok(
    [...read].some((path) => path.startsWith("vulndb/")),
    "the vulnerability seed was read",
  );
  // The image keeps only the production dependencies (`npm prune --omit=dev`): every package the server
  // loaded must be one of them.
  const production = new Set(
    spawnSync("npm", ["ls", "--omit=dev", "--all", "--parseable"], { cwd: ROOT, encoding: "utf8" })
      .stdout.split("\n")
      .map((path) => relative(ROOT, path).split(sep).join("/"))
      .filter((path) => path.startsWith("node_modules/")),
  );
  const packageOf = (path: string) => /^node_modules\/(@[^/]+\/)?[^/]+/.exec(path)?.[0];
  const devOnly = [
    ...new Set(
      [...read]
        .map(packageOf)
        .filter(
          (name): name is string => name !== undefined && !/node-linux-|node-darwin-|node-win-/.test(name),
        ),
    ),
  ].filter((name) => !production.has(name));
  assert.ok(production.size > 20, "npm listed the production dependencies");
  assert.deepEqual(devOnly, [], "packages the server loaded that the image prunes as development ones");
  const missing = [...read].filter(
    (path) => !inImage(path, layout) && !NOT_COPIED.some((pattern) => pattern.test(path)),
  );
  assert.deepEqual(missing, [], "files the server read that the image does not hold");
});

test("the layout check fails for a run-time directory the Dockerfile does not copy", () => {
  const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8").replace(/^COPY templates .*\n/m, "");
  const layout = imageLayout(dockerfile, readFileSync(join(ROOT, ".dockerignore"), "utf8"));
  assert.equal(inImage("templates/http/exposed-git.yaml", layout), false);
  assert.equal(inImage("src/core/formats.ts", layout), true);
  assert.equal(
    inImage("src/web/app/main.tsx", layout),
    false,
    "the build stage deletes the dashboard's sources",
  );
  assert.equal(inImage("test/lab/lab.ts", layout), false);
});

test("where docker has a daemon, the built image's /app holds the templates", { skip: dockerSkip() }, () => {
  const built = spawnSync("docker", ["build", "-q", "-t", "sightline:layout-test", ROOT], {
    encoding: "utf8",
  });
  assert.equal(built.status, 0, built.stderr);
  const listed = spawnSync(
    "docker",
    ["run", "--rm", "--entrypoint", "ls", "sightline:layout-test", "/app/templates"],
    {
      encoding: "utf8",
    },
  );
  assert.equal(listed.status, 0, listed.stderr);
  assert.ok(listed.stdout.trim().length > 0);
});

function dockerSkip(): string | undefined {
  const info = spawnSync("docker", ["info"], { encoding: "utf8" });
  return info.status === 0
    ? undefined
    : "no docker daemon here: the image's layout is checked from the Dockerfile";
}
