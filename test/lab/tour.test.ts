/**
 * The lab tour as `npm run lab` prints it: the server command works as printed (its settings scan only the
 * lab's ports, so another server on a lab address and a common port stays out of the results), the keys
 * it prints work, and the collection the tour seeds finds the lab's hosts and web applications.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";
import { fileURLToPath } from "node:url";
import { runClientCommand, type Sightline, spawnSightline } from "../helpers/processes.ts";

const LAB_MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));
const BASE = "127.123";

const cleanups: Array<() => Promise<unknown> | unknown> = [];
after(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

function startLabProcess(): Promise<{ output: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [LAB_MAIN], {
    env: { PATH: process.env.PATH ?? "", LAB_BASE: BASE },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const stop = () =>
    new Promise<void>((resolve) => {
      if (child.exitCode !== null) return resolve();
      child.once("exit", () => resolve());
      child.kill("SIGTERM");
    });
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the lab printed no tour:\n${output}`)), 30_000);
    const collect = (chunk: Buffer) => {
      output += chunk;
      if (/npm run -s sightline -- results lab hosts/.test(output)) {
        clearTimeout(timer);
        resolve({ output, stop });
      }
    };
    child.stdout.on("data", collect);
    child.stderr.on("data", collect);
    child.once("exit", () => reject(new Error(`the lab exited:\n${output}`)));
  });
}

test("the lab's printed tour works as printed, and scans only the lab's ports", async () => {
  const lab = await startLabProcess();
  cleanups.push(() => lab.stop());
  const command = lab.output.split("\n").find((line) => line.trim().endsWith("npm start"));
  assert.ok(command, lab.output);
  const printed = Object.fromEntries(
    command
      .trim()
      .split(/\s+/)
      .filter((word) => word.includes("="))
      .map((word) => word.split("=", 2) as [string, string]),
  );
  assert.deepEqual(Object.keys(printed), [
    "SIGHTLINE_DNS_SERVERS",
    "SIGHTLINE_SCAN_ALLOW",
    "SIGHTLINE_PORTS",
  ]);
  assert.match(lab.output, /export SERVICE_ACCESS_KEY=… SERVICE_SECRET_KEY=…/);
  assert.match(lab.output, /--seed Domain:acme\.test --seed Domain:globex\.test --scan-rate on_demand/);

  // Another server on a lab host's address, at a top-100 port the lab does not use: like a dev server on
  // a wildcard address, it answers there, and a scan of the top 100 ports would report it.
  const stray: Server = createServer((socket) => socket.end("HTTP/1.0 200 OK\r\n\r\nstray"));
  await new Promise<void>((resolve) => stray.listen(8000, `${BASE}.0.10`, resolve));
  cleanups.push(() => new Promise((resolve) => stray.close(resolve)));

  const dataDir = mkdtempSync(join(tmpdir(), "sightline-tour-"));
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }));
  // As printed, on an address of this test's own instead of the default 127.0.0.1:8080.
  const server: Sightline = spawnSightline(["serve"], {
    ...printed,
    SIGHTLINE_DATA_DIR: dataDir,
    HOST: `${BASE}.255.1`,
    PORT: "0",
    LOG_LEVEL: "warn",
  });
  cleanups.push(() => server.stop(5000));
  const listening = await server.waitForLine(/listening on http/, 30_000);
  const url = /(http:\/\/\S+?)[\s,)]/.exec(`${listening} `)![1]!;
  // Not a terminal: the generated keys are in a 0600 file whose path is printed, not on standard output.
  const file = /API keys \(SERVICE_ACCESS_KEY and SERVICE_SECRET_KEY\) were written to (\S+) /.exec(
    server.output(),
  )?.[1];
  const keys = file ? readFileSync(file, "utf8") : server.output();
  const key = (name: string) => new RegExp(`${name}=(\\S+)`).exec(keys)?.[1];
  const admin = { accessKey: key("SERVICE_ACCESS_KEY")!, secretKey: key("SERVICE_SECRET_KEY")! };
  assert.ok(admin.accessKey && admin.secretKey, server.output());

  const home = mkdtempSync(join(tmpdir(), "sightline-tour-home-"));
  cleanups.push(() => rmSync(home, { recursive: true, force: true }));
  const sightline = (args: string[]) => runClientCommand({ url, admin }, home, args);
  const created = await sightline(
    "collections create lab --seed Domain:acme.test --seed Domain:globex.test --scan-rate on_demand".split(
      " ",
    ),
  );
  assert.equal(created.code, 0, created.output);
  const run = await sightline(["run", "lab", "--watch", "--interval", "200"]);
  assert.equal(run.code, 0, run.output);
  assert.match(run.output, /Run 1 of lab finished/);

  const read = async (what: string) => {
    const response = await fetch(`${url}/api/collections/lab/${what}`, {
      headers: { SERVICE_ACCESS_KEY: admin.accessKey, SERVICE_SECRET_KEY: admin.secretKey },
    });
    // biome-ignore lint/suspicious/noExplicitAny: results as the API answers them
    return ((await response.json()) as { result: any }).result;
  };
  const hosts = await read("hosts");
  const ports = (ip: string) => hosts[ip].ports.map((port: { number: string }) => Number(port.number));
  assert.deepEqual(ports(`${BASE}.0.10`), [80, 443], "the stray server on port 8000 is not scanned");
  assert.deepEqual(ports(`${BASE}.0.14`), [22, 8080, 8443]);
  const applications = (await read("applications")).map((a: { name: string }) => a.name);
  assert.ok(
    applications.some((name: string) => name.includes("globex.test")),
    `globex.test's web applications: ${applications}`,
  );
});
