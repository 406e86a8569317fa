/**
 * The container files, checked without Docker (none runs here): compose.yaml parses, has the server,
 * workers, PostgreSQL and Redis with health checks and volumes, and names only settings the configuration
 * knows (its environment mapping in src/core/config.ts); the Dockerfile is multi-stage on node:24-slim,
 * runs as a non-root user, and starts through the Node check.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { parse } from "yaml";
import { ENVIRONMENT } from "../../src/core/config.ts";

const ROOT = join(import.meta.dirname, "../..");
// biome-ignore lint/suspicious/noExplicitAny: compose files are plain YAML
const compose: any = parse(readFileSync(join(ROOT, "compose.yaml"), "utf8"), { merge: true });
const SIGHTLINE = ["server", "worker"];

test("compose.yaml: server, workers, PostgreSQL and Redis, each with a health check; named volumes", () => {
  assert.deepEqual(Object.keys(compose.services).sort(), ["postgres", "redis", "server", "worker"]);
  for (const [name, service] of Object.entries<{ healthcheck?: { test?: unknown } }>(compose.services))
    assert.ok(service.healthcheck?.test, `${name} has a health check`);
  assert.deepEqual(compose.services.server.command, ["serve"]);
  assert.equal(compose.services.worker.command[0], "worker");
  assert.ok(compose.services.worker.deploy.replicas >= 2, "workers scale out");
  const declared = Object.keys(compose.volumes);
  for (const service of Object.values<{ volumes?: string[] }>(compose.services))
    for (const volume of service.volumes ?? []) assert.ok(declared.includes(volume.split(":")[0]), volume);
  assert.equal(compose.services.worker.depends_on.server.condition, "service_healthy");
  assert.equal(compose.services.server.depends_on.postgres.condition, "service_healthy");
});

test("compose.yaml names only settings the configuration knows, and wires the services together", () => {
  const known = new Set(Object.keys(ENVIRONMENT));
  for (const name of SIGHTLINE) {
    const environment = compose.services[name].environment as Record<string, string>;
    for (const variable of Object.keys(environment))
      assert.ok(known.has(variable), `${name}: ${variable} is a setting of src/core/config.ts`);
    assert.match(environment.DATABASE_URL, /^postgres:\/\/sightline:.*@postgres:5432\/sightline$/);
    assert.equal(environment.REDIS_URL, "redis://redis:6379");
    assert.equal(environment.SIGHTLINE_DATA_DIR, "/data");
  }
  assert.ok(compose.services.server.environment.HOST, "the server listens beyond the container's loopback");
  const password = compose.services.postgres.environment.POSTGRES_PASSWORD;
  assert.ok(compose.services.server.environment.DATABASE_URL.includes(password.replace(/\$/g, "$")));
  // The worker's metrics port is the one its health check asks.
  const port = compose.services.worker.command[compose.services.worker.command.indexOf("--metrics-port") + 1];
  assert.match(compose.services.worker.healthcheck.test.join(" "), new RegExp(`:${port}/metrics`));
});

test("Dockerfile: multi-stage on node:24-slim, non-root, health check, started through bin/sightline.js", () => {
  const dockerfile = readFileSync(join(ROOT, "Dockerfile"), "utf8");
  const stages = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((match) => match[1]);
  assert.ok(stages.length >= 2, "multi-stage");
  assert.ok(
    stages.every((image) => image === "node:24-slim"),
    stages.join(),
  );
  const users = [...dockerfile.matchAll(/^USER (\S+)/gm)].map((match) => match[1]);
  assert.ok(users.length > 0 && !["root", "0"].includes(users.at(-1)!), "runs as a non-root user");
  assert.match(dockerfile, /^HEALTHCHECK .*\n?.*\/healthz/m);
  assert.match(dockerfile, /^ENTRYPOINT \["node", "--max-semi-space-size=4", "bin\/sightline\.js"\]$/m);
  // What the image builds from exists, and what it must not carry is kept out.
  const ignored = readFileSync(join(ROOT, ".dockerignore"), "utf8").split("\n");
  for (const path of ["node_modules", ".git", "data"])
    assert.ok(ignored.includes(path), `.dockerignore has ${path}`);
  for (const match of dockerfile.matchAll(/^COPY (?!--from)(.+) \S+$/gm))
    for (const source of match[1].split(" "))
      assert.ok(!ignored.includes(source), `${source} is not ignored`);
});
