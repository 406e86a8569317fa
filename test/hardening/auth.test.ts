/**
 * Authentication under attack: failures are rate limited per client (429 with Retry-After) without ever
 * blocking a valid key pair; every failed pair costs the same work whichever half is wrong; secrets never
 * reach the logs, not even those of a 500.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import type { KyselyPlugin } from "kysely";
import { clientOf, FailureLimiter } from "../../src/api/failure-limit.ts";
import { startServer } from "../../src/app/server.ts";
import { AccountsRepository } from "../../src/store/accounts.ts";
import { verifySecret } from "../../src/store/keys.ts";
import {
  BOOTSTRAP_KEYS,
  type Keys,
  startTestServer,
  type TestServer,
  testServerConfig,
} from "../helpers/server.ts";
import { createTestStore, dialects } from "../helpers/stores.ts";
import { assertErrorEnvelope, rawRequest } from "./surface.ts";

const keyHeaders = (keys: Keys) => ({
  SERVICE_ACCESS_KEY: keys.accessKey,
  SERVICE_SECRET_KEY: keys.secretKey,
});
const WRONG: Keys = { accessKey: "SLNOSUCHKEY", secretKey: "not-the-secret" };

describe("failure limiter (token bucket of failed attempts per client)", () => {
  test("allows the budget, then asks to wait until a token refills", () => {
    let now = 0;
    const limiter = new FailureLimiter(6, { now: () => now }); // one token every 10 s
    for (let i = 0; i < 6; i++) assert.equal(limiter.fail("a"), 0, `failure ${i + 1} is within budget`);
    assert.equal(limiter.fail("a"), 10, "the seventh waits for the next token");
    assert.equal(limiter.fail("b"), 0, "another client has its own budget");
    now += 5_000;
    assert.equal(limiter.fail("a"), 5, "half a token back: five more seconds");
    now += 5_000;
    assert.equal(limiter.fail("a"), 0, "a whole token back: one more attempt");
    assert.equal(limiter.fail("a"), 10);
  });

  test("an IPv6 client is its /64, an IPv4-mapped address its IPv4 address", () => {
    assert.equal(clientOf("2001:db8:1:2:aaaa::1"), clientOf("2001:db8:1:2:bbbb:cccc:dddd:eeee"));
    assert.notEqual(clientOf("2001:db8:1:2::1"), clientOf("2001:db8:1:3::1"));
    assert.equal(clientOf("::ffff:192.0.2.7"), "192.0.2.7");
    assert.equal(clientOf("192.0.2.7"), "192.0.2.7");
  });

  test("memory stays bounded under a flood of addresses", () => {
    let now = 0;
    const limiter = new FailureLimiter(10, { now: () => now, maxClients: 100 });
    for (let i = 0; i < 1000; i++) {
      now += 1;
      limiter.fail(`198.51.100.${i}`);
    }
    assert.ok(limiter.trackedClients <= 100, `tracks ${limiter.trackedClients} clients`);
  });
});

describe("rate limiting of authentication failures over HTTP", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer("sqlite", { authFailureLimit: 5 });
  });
  after(async () => t?.close());

  const from = (address: string, keys: Keys | null, headers: Record<string, string> = {}) =>
    rawRequest(t.url, {
      method: "GET",
      path: "/api/collections",
      headers: { ...(keys ? keyHeaders(keys) : {}), ...headers },
      localAddress: address,
    });

  test("a client that keeps failing gets 429 with Retry-After; the rightful key still passes", async () => {
    const attacker = "127.0.0.2";
    for (let i = 0; i < 5; i++) {
      const response = await from(attacker, i % 2 ? WRONG : null);
      assert.equal(response.status, 401, `attempt ${i + 1} is an ordinary 401`);
    }
    const limited = await from(attacker, WRONG);
    assert.equal(limited.status, 429, limited.text);
    assertErrorEnvelope(limited, "429");
    assert.equal(JSON.parse(limited.text).error.code, "rate_limited");
    assert.match(JSON.parse(limited.text).message, /wait \d+ seconds/);
    const retryAfter = Number(limited.headers["retry-after"]);
    assert.ok(
      Number.isInteger(retryAfter) && retryAfter >= 1 && retryAfter <= 60,
      `Retry-After ${retryAfter}`,
    );

    // A wrong secret for a real access key is limited the same way.
    assert.equal((await from(attacker, { ...t.admin, secretKey: "guess" })).status, 429);
    // The valid pair is never blocked, not even from the attacker's own address (a shared NAT).
    const rightful = await from(attacker, t.admin);
    assert.equal(rightful.status, 200, rightful.text);
    // Others are not affected by this client's failures.
    assert.equal((await from("127.0.0.3", WRONG)).status, 401);
    assert.equal((await from("127.0.0.3", t.admin)).status, 200);
  });

  test("X-Forwarded-For is ignored unless the proxy is trusted: it cannot reset the budget", async () => {
    const address = "127.0.0.4";
    for (let i = 0; i < 5; i++) await from(address, WRONG, { "x-forwarded-for": `203.0.113.${i}` });
    const response = await from(address, WRONG, { "x-forwarded-for": "203.0.113.200" });
    assert.equal(response.status, 429, "a fresh forwarded address does not buy a fresh budget");
  });

  test("public endpoints and valid keys are never counted", async () => {
    for (let i = 0; i < 20; i++) {
      assert.equal((await from("127.0.0.5", t.admin)).status, 200);
      const health = await rawRequest(t.url, { method: "GET", path: "/healthz", localAddress: "127.0.0.5" });
      assert.equal(health.status, 200);
    }
    assert.equal((await from("127.0.0.5", WRONG)).status, 401, "the budget is untouched");
  });
});

describe("rate limiting behind a trusted reverse proxy", () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer("sqlite", { authFailureLimit: 3, trustProxy: ["127.0.0.1/32"] });
  });
  after(async () => t?.close());

  test("each forwarded client has its own budget", async () => {
    const via = (client: string) =>
      rawRequest(t.url, {
        method: "GET",
        path: "/api/collections",
        headers: { ...keyHeaders(WRONG), "x-forwarded-for": client },
        localAddress: "127.0.0.1",
      });
    for (let i = 0; i < 3; i++) assert.equal((await via("198.51.100.7")).status, 401);
    assert.equal((await via("198.51.100.7")).status, 429);
    assert.equal((await via("198.51.100.8")).status, 401, "another client behind the same proxy");
  });
});

for (const { dialect, skip } of await dialects()) {
  describe(`key checks cost the same whichever half is wrong, on ${dialect}`, { skip }, () => {
    let t: TestServer;
    before(async () => {
      t = await startTestServer(dialect);
    });
    after(async () => t?.close());

    test("an unknown access key, a wrong secret and a revoked key each take one query and one hash check", async () => {
      const { store, accounts } = t.server.services;
      const revoked = await accounts.issueKey((await accounts.findUser("admin"))!.id);
      await accounts.revokeKey(revoked.accessKey);
      const generated = await accounts.issueKey((await accounts.findUser("admin"))!.id);

      let queries = 0;
      const counter: KyselyPlugin = {
        transformQuery(args) {
          queries++;
          return args.node;
        },
        async transformResult(args) {
          return args.result;
        },
      };
      const verified: string[] = [];
      const repository = new AccountsRepository(store.db.withPlugin(counter), {
        verifySecret: (secret, stored) => {
          verified.push(stored);
          return verifySecret(secret, stored);
        },
      });

      const cases: Array<[string, string, string]> = [
        ["unknown access key", "SLNOSUCHKEY0000000000000000", BOOTSTRAP_KEYS.secretKey],
        // A generated key: its hash is of the decoy's kind. (A chosen secret — only the bootstrap key's —
        // is checked with scrypt and takes longer, telling only that this access key has a chosen secret.)
        ["wrong secret", generated.accessKey, "x".repeat(generated.secretKey.length)],
        ["revoked key", revoked.accessKey, revoked.secretKey],
      ];
      for (const [label, accessKey, secretKey] of cases) {
        queries = 0;
        verified.length = 0;
        assert.equal(await repository.authenticate(accessKey, secretKey), undefined, label);
        assert.equal(queries, 1, `${label}: one query`);
        assert.equal(verified.length, 1, `${label}: one hash verification`);
        assert.match(
          verified[0],
          /^sha256\$[0-9a-f]{32}\$[0-9a-f]{64}$/,
          `${label}: against a hash of the same kind`,
        );
      }
      assert.ok(await repository.authenticate(BOOTSTRAP_KEYS.accessKey, BOOTSTRAP_KEYS.secretKey));
    });
  });
}

describe("secrets never reach the logs", () => {
  test("debug-level logs of good, bad and failing requests hold no secret, and carry request ids", async () => {
    const store = await createTestStore("sqlite");
    const lines: string[] = [];
    const server = await startServer(testServerConfig(store), {
      logger: { level: "trace", stream: { write: (line: string) => void lines.push(line) } },
    });
    const wrongSecret = "wrong-secret-that-must-not-be-logged-42";
    try {
      const send = (method: string, path: string, headers: Record<string, string>, body?: string) =>
        rawRequest(server.url, {
          method,
          path,
          headers: { "content-type": "application/json", ...headers },
          body,
        });
      const good = keyHeaders(BOOTSTRAP_KEYS);
      assert.equal(
        (await send("GET", "/api/collections", { ...good, "x-request-id": "trace-me-1" })).status,
        200,
      );
      assert.equal(
        (await send("GET", "/api/collections", { ...good, SERVICE_SECRET_KEY: wrongSecret })).status,
        401,
      );
      // Keys in the query string by mistake: the URL is logged, their values are not.
      assert.equal(
        (
          await send(
            "GET",
            `/api/collections?limit=5&service_secret_key=${wrongSecret}&api_token=${wrongSecret}`,
            {},
          )
        ).status,
        401,
      );
      // Swapped headers: the secret sent as the access key must not be logged as one.
      assert.equal(
        (await send("GET", "/api/collections", { SERVICE_ACCESS_KEY: wrongSecret, SERVICE_SECRET_KEY: "x" }))
          .status,
        401,
      );
      assert.equal(
        (await send("POST", "/api/collections", good, JSON.stringify({ name: "logged", seeds: [] }))).status,
        200,
      );
      // A 500: the seeds table is gone, the request carries the keys, the error is logged.
      await server.services.store.db.schema.dropTable("seeds").execute();
      const failed = await send(
        "POST",
        "/api/collections/logged",
        { ...good, "x-request-id": "trace-me-500" },
        JSON.stringify({ seeds: [{ type: "Domain", name: "a.example" }] }),
      );
      assert.equal(failed.status, 500);
      assertErrorEnvelope(failed, "500");
      assert.doesNotMatch(failed.text, /seeds|sqlite|table/i, "the 500 reveals nothing internal");
      assert.equal(failed.headers["x-request-id"], "trace-me-500");
    } finally {
      await server.close();
      await store.drop();
    }

    const log = lines.join("");
    assert.ok(lines.length >= 9, "requests were logged");
    for (const line of lines) JSON.parse(line); // every line is structured JSON
    for (const secret of [BOOTSTRAP_KEYS.secretKey, wrongSecret])
      assert.ok(!log.includes(secret), "a secret key appears in the logs");
    const records = lines.map((line) => JSON.parse(line));
    assert.ok(
      records.some((r) => r.reqId === "trace-me-1"),
      "the client's x-request-id is the request's id in the logs",
    );
    const refusal = records.find((r) => r.msg === "authentication failed");
    assert.equal(refusal?.accessKey, BOOTSTRAP_KEYS.accessKey, "a refusal names the (public) access key");
    const error = records.find((r) => r.reqId === "trace-me-500" && r.level >= 50);
    assert.ok(error, "the 500 is logged at error level under its request id");
    assert.match(JSON.stringify(error.err), /seeds/, "with the real cause, for the operator");
  });
});
