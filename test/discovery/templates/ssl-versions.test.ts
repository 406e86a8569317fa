/**
 * `ssl` templates with min_version/max_version against real TLS servers (127.117.1.2): one that speaks
 * only TLS 1.2, one that still accepts TLS 1.0. A block asking for exactly one version matches only
 * where the server accepts it; SSLv3, which neither accepts, is asked with a hand-written ClientHello.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { createServer, type Server } from "node:tls";
import { createTemplatesModule } from "../../../src/discovery/modules/templates.ts";
import { loadDirectory } from "../../../src/discovery/templates/library.ts";
import { createCertificateAuthority } from "../../lab/certificates.ts";
import { listenTcp, withRandomPort } from "../../lab/sockets.ts";
import { context } from "./helpers.ts";

const HOST = "127.117.1.2";

describe("ssl templates that ask for protocol versions", () => {
  const servers: Array<{ server: Server; close: () => Promise<void> }> = [];
  const ports = { modern: 0, legacy: 0 };
  let directory: string;

  before(async () => {
    const authority = await createCertificateAuthority();
    const certificate = await authority.issue({
      commonName: "tls.engine.test",
      altNames: ["tls.engine.test"],
      key: "ecdsa-p256",
      issuer: "lab-ca",
    });
    const options = {
      modern: { minVersion: "TLSv1.2", maxVersion: "TLSv1.2" },
      legacy: { minVersion: "TLSv1", maxVersion: "TLSv1.3", ciphers: "DEFAULT:@SECLEVEL=0" },
    } as const;
    for (const name of ["modern", "legacy"] as const) {
      const server = createServer({ key: certificate.keyPem, cert: certificate.chainPem, ...options[name] });
      server.on("tlsClientError", () => {});
      ports[name] = await withRandomPort(async (port) => {
        servers.push({ server, close: (await listenTcp(server, HOST, port)).close });
        return port;
      });
    }
    directory = mkdtempSync(join(tmpdir(), "sightline-ssl-"));
  });
  after(async () => {
    for (const { close } of servers) await close();
    rmSync(directory, { recursive: true, force: true });
  });

  const template = (id: string, versions: string, dsl: string) =>
    `id: ${id}\ninfo:\n  name: ${id}\n  author: test\n  severity: low\n  tags: ssl\nssl:\n  - address: "{{Host}}:{{Port}}"\n${versions}    matchers:\n      - type: dsl\n        dsl:\n          - '${dsl}'\n`;

  async function raised(yaml: string, port: number) {
    const dir = mkdtempSync(join(directory, "t-"));
    writeFileSync(join(dir, "t.yaml"), yaml);
    const ctx = context({ templates: { builtIn: false, directories: [dir] } });
    await createTemplatesModule().run(
      { kind: "SslCertificate", name: "c", details: { endpoints: [`${HOST}:${port}/tcp`] } },
      ctx,
    );
    return ctx.issues.map((issue) => issue.name);
  }

  const tls10 = template(
    "tls10-accepted",
    "    min_version: tls10\n    max_version: tls10\n",
    'tls_version == "tls10"',
  );
  const tls13 = template(
    "tls13-offered",
    "    min_version: tls13\n    max_version: tls13\n",
    'tls_version == "tls13"',
  );
  const sslv3 = template(
    "sslv3-accepted",
    "    min_version: sslv3\n    max_version: sslv3\n",
    'tls_version == "sslv3"',
  );
  const any = template("any-version", "", "len(tls_version) > 0");

  test("a block asking for exactly TLS 1.0 matches the server that still accepts it, not the other", async () => {
    assert.deepEqual(await raised(tls10, ports.legacy), ["template:tls10-accepted"]);
    assert.deepEqual(await raised(tls10, ports.modern), []);
  });

  test("TLS 1.3 only where the server speaks it; SSLv3 nowhere; no versions asks as Node does", async () => {
    assert.deepEqual(await raised(tls13, ports.legacy), ["template:tls13-offered"]);
    assert.deepEqual(await raised(tls13, ports.modern), []);
    assert.deepEqual(await raised(sslv3, ports.legacy), []);
    assert.deepEqual(await raised(any, ports.modern), ["template:any-version"]);
  });

  test("a version that is not nuclei's, or a range upside down, is refused when the template is read", async () => {
    for (const [versions, reason] of [
      ["    min_version: tls14\n", /min_version "tls14" is not one of sslv3, tls10, tls11, tls12, tls13/],
      [
        "    min_version: tls12\n    max_version: tls10\n",
        /min_version tls12 is newer than max_version tls10/,
      ],
    ] as const) {
      const dir = mkdtempSync(join(directory, "bad-"));
      writeFileSync(join(dir, "bad.yaml"), template("bad", versions, "true"));
      const library = await loadDirectory(dir);
      assert.equal(library.templates.length, 0);
      assert.match(library.skipped[0].reason, reason);
    }
  });
});
