/**
 * History on the lab, on SQLite and PostgreSQL: the lab's sites answer every visit with a new Date, fresh
 * session cookies, request ids, CSP nonces, CSRF tokens and view state, clock-made Expires and
 * Last-Modified, and a mail server greets with the time. A second run of the unchanged lab writes no new
 * version of anything; a site whose title, then whose server version, really changed gets one, and only it.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import type { RequestListener } from "node:http";
import { after, before, describe, test } from "node:test";
import { discoveryModules } from "../../src/discovery/modules.ts";
import { parseStored } from "../../src/store/json-codec.ts";
import { type DiscoveryFixture, discoveryFixture } from "../helpers/discovery.ts";
import { dialects } from "../helpers/stores.ts";
import { type Lab, startLab } from "../lab/index.ts";

/** A site the test changes between runs; like the lab's others, it says some things anew on every visit. */
function changingSite() {
  const careers = { title: "Globex Careers", server: "nginx/1.24.0" };
  const handler: RequestListener = (_request, response) => {
    response.setHeader("server", careers.server);
    response.writeHead(200, {
      "content-type": "text/html; charset=utf-8",
      "set-cookie": `session=${randomBytes(16).toString("base64url")}; Path=/; HttpOnly`,
      "x-request-id": randomBytes(8).toString("hex"),
    });
    response.end(
      `<!DOCTYPE html><html><head><title>${careers.title}</title>` +
        `<meta name="csrf-token" content="${randomBytes(16).toString("hex")}"></head><body>Jobs</body></html>`,
    );
  };
  return { careers, handler };
}

for (const { dialect, skip } of await dialects()) {
  describe(`application versions on the lab, ${dialect}`, { skip }, () => {
    let lab: Lab;
    let fixture: DiscoveryFixture;
    let careersIp: string;
    const runs: number[] = [];
    const { careers, handler } = changingSite();

    before(async () => {
      lab = await startLab();
      careersIp = lab.ip("4.40");
      await lab.addHost({
        ip: careersIp,
        names: ["careers.globex.test"],
        services: [{ kind: "http", port: 80, server: careers.server, title: careers.title, handler }],
      });
      fixture = await discoveryFixture(
        dialect,
        [
          { type: "Domain", name: "globex.test" },
          { type: "DnsRecord", name: "careers.globex.test" },
        ],
        { dnsServers: [lab.resolver], scanAllow: ["127.0.0.0/8"], timeoutMs: 1000 },
        discoveryModules(),
      );
    });
    after(async () => {
      await fixture?.close();
      await lab?.stop();
    });

    const run = async () => {
      const { run, finished } = await fixture.run();
      assert.equal(finished, true);
      runs.push(run.id);
      return run.id;
    };
    /** The versions a run wrote (entities that were new or changed in it), as "Kind name". */
    const written = async (runId: number) =>
      (
        await fixture.store.db
          .selectFrom("entities")
          .select(["kind", "name"])
          .where("collection_id", "=", fixture.collectionId)
          .where("version_run_id", "=", runId)
          .execute()
      )
        .map((row) => `${row.kind} ${row.name}`)
        .sort();
    const application = async (name: string) => {
      const [found] = (await fixture.entities.current(fixture.collectionId, { kinds: ["Uri"] })).filter(
        (entity) => entity.name === name,
      );
      assert.ok(found, name);
      return found.details as { title: string; headers: string[]; cookies: string; products: string[][] };
    };

    test("a second run of the unchanged lab writes no new version of anything", async () => {
      const first = await run();
      const applications = (await written(first)).filter((entity) => entity.startsWith("Uri "));
      assert.ok(applications.length >= 10, `the first run found the applications: ${applications}`);
      const second = await run();
      assert.deepEqual(await written(second), [], "every entity of run 2 continues its run-1 version");
    });

    test("what changes per visit is shown as …, what does not is shown as sent", async () => {
      const status = await application("https://status.globex.test:443");
      for (const line of ["date: …", "x-request-id: …"]) assert.ok(status.headers.includes(line), line);
      assert.ok(
        status.headers.some((line) => /^content-security-policy: .*script-src 'self' 'nonce-…'$/.test(line)),
        "the CSP is shown, its nonce is not",
      );
      assert.equal(status.cookies, "sid=…; Path=/; Expires=…; Secure; HttpOnly; SameSite=Lax");
      const docs = await application("http://docs.globex.test:80");
      for (const line of ["expires: …", "last-modified: …", "cache-control: max-age=300"])
        assert.ok(docs.headers.includes(line), line);
      // A static site's dates and tags are facts about it, kept as sent.
      const legacy = await application("http://legacy.globex.test:80");
      for (const line of ["last-modified: Tue, 14 Sep 2021 08:00:00 GMT", 'etag: "1f4-5cbf0b1c9e400"'])
        assert.ok(legacy.headers.includes(line), line);
      assert.equal(
        (await application("http://portal.globex.test:80")).cookies,
        "ASP.NET_SessionId=…; path=/; HttpOnly",
      );

      const [mail] = (
        await fixture.entities.current(fixture.collectionId, { kinds: ["NetworkService"] })
      ).filter((service) => service.name === `${lab.ip("4.17")}:25/tcp`);
      assert.equal(mail?.details.banner, "220 mail.globex.test ESMTP Sendmail 8.15.2/8.15.2; …");
      assert.deepEqual(mail?.details.products, [["Sendmail", "8.15.2"]], "the version is still read");
    });

    test("a new title, then a new server version, makes new versions of that site's applications (and of its service, for the version) only", async () => {
      const site = ["Uri http://careers.globex.test:80", `Uri http://${careersIp}:80`];
      careers.title = "Globex Careers: we are hiring";
      const retitled = await run();
      assert.deepEqual(await written(retitled), site.sort());
      assert.equal((await application("http://careers.globex.test:80")).title, careers.title);

      // The server's version is also what its service answered with: the service changes too.
      careers.server = "nginx/1.25.3";
      const upgraded = await run();
      assert.deepEqual(await written(upgraded), [...site, `NetworkService ${careersIp}:80/tcp`].sort());
      assert.deepEqual((await application("http://careers.globex.test:80")).products, [["Nginx", "1.25.3"]]);

      // Reading an earlier run still shows what it saw.
      const titleAsOf = async (runId: number) => {
        const row = await fixture.store.db
          .selectFrom("entities")
          .select("details")
          .where("collection_id", "=", fixture.collectionId)
          .where("name", "=", "http://careers.globex.test:80")
          .where("version_run_id", "<=", runId)
          .where("last_run_id", ">=", runId)
          .executeTakeFirstOrThrow();
        return (parseStored(row.details) as { title: string }).title;
      };
      assert.deepEqual(await Promise.all(runs.map(titleAsOf)), [
        "Globex Careers",
        "Globex Careers",
        careers.title,
        careers.title,
      ]);
    });
  });
}
