/**
 * Secrets: a bootstrap secret shorter than 32 characters is refused at start; a secret a person chose is
 * stored with scrypt, a generated one with the fast hash (the scheme is in the stored hash); a key stored
 * with the fast hash before keeps working and the bootstrap one is stored again with scrypt; the
 * first-start secret reaches standard output only on a terminal, otherwise a 0600 file in the data
 * directory whose path is printed.
 */
import assert from "node:assert/strict";
import { readFileSync, statSync } from "node:fs";
import { describe, test } from "node:test";
import { startServer } from "../../src/app/server.ts";
import { ConfigError, loadConfig } from "../../src/core/config.ts";
import { hashSecret, verifySecret } from "../../src/store/keys.ts";
import { BOOTSTRAP_KEYS, testServerConfig } from "../helpers/server.ts";
import { createTestStore } from "../helpers/stores.ts";

const storedHash = async (server: Awaited<ReturnType<typeof startServer>>, accessKey: string) =>
  (
    await server.services.store.db
      .selectFrom("api_keys")
      .select("secret_hash")
      .where("access_key", "=", accessKey)
      .executeTakeFirstOrThrow()
  ).secret_hash;

describe("secrets", () => {
  test("a bootstrap secret shorter than 32 characters is refused at start, with a way out", () => {
    for (const secret of ["x", "short-but-not-enough-31-chars!!"])
      assert.throws(
        () =>
          loadConfig({ SIGHTLINE_BOOTSTRAP_ACCESS_KEY: "SLADMIN", SIGHTLINE_BOOTSTRAP_SECRET_KEY: secret }),
        (error: Error) =>
          error instanceof ConfigError &&
          /at least 32 characters/.test(error.message) &&
          /openssl rand/.test(error.message),
      );
    const accepted = loadConfig({
      SIGHTLINE_BOOTSTRAP_ACCESS_KEY: "SLADMIN",
      SIGHTLINE_BOOTSTRAP_SECRET_KEY: "y".repeat(32),
    });
    assert.equal(accepted.bootstrapSecretKey.length, 32);
  });

  test("a chosen secret is stored with scrypt, a generated one with the fast hash; both authenticate", async () => {
    const store = await createTestStore("sqlite");
    const server = await startServer(testServerConfig(store));
    try {
      const chosen = await storedHash(server, BOOTSTRAP_KEYS.accessKey);
      assert.match(chosen, /^scrypt\$15\$8\$1\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
      assert.equal(await verifySecret(BOOTSTRAP_KEYS.secretKey, chosen), true);
      assert.equal(await verifySecret(`${BOOTSTRAP_KEYS.secretKey}x`, chosen), false);
      const { accounts } = server.services;
      const generated = await accounts.issueKey((await accounts.findUser("admin"))!.id);
      assert.match(await storedHash(server, generated.accessKey), /^sha256\$/);
      for (const keys of [BOOTSTRAP_KEYS, generated]) {
        const response = await fetch(`${server.url}/api/collections`, {
          headers: { SERVICE_ACCESS_KEY: keys.accessKey, SERVICE_SECRET_KEY: keys.secretKey },
        });
        assert.equal(response.status, 200);
      }
    } finally {
      await server.close();
      await store.drop();
    }
  });

  test("a bootstrap key stored with the fast hash keeps working and is stored again with scrypt", async () => {
    const store = await createTestStore("sqlite");
    let server = await startServer(testServerConfig(store));
    await server.services.store.db
      .updateTable("api_keys")
      .set({ secret_hash: hashSecret(BOOTSTRAP_KEYS.secretKey) })
      .where("access_key", "=", BOOTSTRAP_KEYS.accessKey)
      .execute();
    await server.close();
    const lines: string[] = [];
    server = await startServer(testServerConfig(store), { announce: (line) => lines.push(line) });
    try {
      assert.match(await storedHash(server, BOOTSTRAP_KEYS.accessKey), /^scrypt\$/);
      assert.ok(
        lines.some((line) => /now stored with scrypt/.test(line)),
        lines.join("\n"),
      );
      const response = await fetch(`${server.url}/api/collections`, {
        headers: {
          SERVICE_ACCESS_KEY: BOOTSTRAP_KEYS.accessKey,
          SERVICE_SECRET_KEY: BOOTSTRAP_KEYS.secretKey,
        },
      });
      assert.equal(response.status, 200);
    } finally {
      await server.close();
      await store.drop();
    }
  });

  for (const terminal of [false, true])
    test(`the generated first-start secret ${terminal ? "is printed on a terminal" : "goes to a 0600 file, not to stdout"}`, async () => {
      const store = await createTestStore("sqlite");
      const lines: string[] = [];
      const server = await startServer(
        testServerConfig(store, { bootstrapAccessKey: "", bootstrapSecretKey: "" }),
        { announce: (line) => lines.push(line), terminal },
      );
      try {
        const output = lines.join("\n");
        const printed = /SERVICE_SECRET_KEY=(\S+)/.exec(output)?.[1];
        const file = /written to (\S+) /.exec(output)?.[1];
        if (terminal) {
          assert.ok(printed, output);
          assert.equal(file, undefined);
        } else {
          assert.equal(printed, undefined, "no secret in the log");
          assert.ok(file, output);
          // The line names the keys, so `logs | grep SERVICE_` finds it, and says how to read the file.
          assert.match(output, /API keys \(SERVICE_ACCESS_KEY and SERVICE_SECRET_KEY\) were written to /);
          assert.match(
            output,
            new RegExp(`docker compose exec server cat ${file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}`),
          );
          assert.equal(statSync(file).mode & 0o777, 0o600);
          const keys = readFileSync(file, "utf8");
          const access = /SERVICE_ACCESS_KEY=(\S+)/.exec(keys)![1];
          const secret = /SERVICE_SECRET_KEY=(\S+)/.exec(keys)![1];
          assert.ok(!output.includes(secret));
          const response = await fetch(`${server.url}/api/collections`, {
            headers: { SERVICE_ACCESS_KEY: access, SERVICE_SECRET_KEY: secret },
          });
          assert.equal(response.status, 200);
        }
      } finally {
        await server.close();
        await store.drop();
      }
    });
});
