import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HttpEvidence } from "../../../src/core/facts.ts";
import { fingerprintHttp } from "../../../src/discovery/fingerprint/fingerprint.ts";
import { readRecogDatabase } from "../../../src/discovery/fingerprint/recog.ts";
import {
  recogCertificate,
  recogKindOf,
  recogService,
  splitVersion,
  tellsMore,
} from "../../../src/discovery/fingerprint/recog-services.ts";
import { withRecog } from "../../../src/discovery/service-id.ts";

const response = (headers: Array<[string, string]>, setCookies: string[] = [], body = ""): HttpEvidence => ({
  url: "http://192.0.2.1/",
  headers,
  setCookies,
  body,
  meta: {},
  scripts: [],
});

describe("Recog's databases read the banners service identification already has", () => {
  it("an OpenSSH greeting gives the product, its version in NVD's form, and the Debian release", () => {
    const found = recogService("ssh", "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3");
    assert.ok(found);
    assert.equal(found.name, "OpenSSH");
    assert.equal(found.cpe, "cpe:2.3:a:openbsd:openssh:9.2:p1:*:*:*:*:*:*");
    assert.equal(found.facts.os, "Debian Linux 12.0");
    assert.equal(found.facts.os_cpe, "cpe:2.3:o:debian:debian_linux:12.0:*:*:*:*:*:*:*");
    assert.match(found.rule, /^recog ssh\.banner: OpenSSH/);
  });

  it("reply codes and greetings are taken off before the text is matched", () => {
    assert.equal(recogService("ftp", "220 (vsFTPd 3.0.3)")?.version, "3.0.3");
    const exim = recogService("smtp", "220 mx.example.com ESMTP Exim 4.96 Mon, 07 Dec 2026 10:00:00 +0000");
    assert.equal(exim?.name, "Exim");
    assert.equal(exim?.version, "4.96");
    assert.equal(recogService("pop3", "+OK Dovecot (Debian) ready.")?.facts.os, "Debian Linux");
    const imap = recogService(
      "imap",
      "* OK [CAPABILITY IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE STARTTLS AUTH=PLAIN] Dovecot (Debian) ready.",
    );
    assert.equal(imap?.name, "Dovecot");
    const mysql = recogService("mysql", "8.0.36-0ubuntu0.22.04.1");
    assert.equal(mysql?.version, "8.0.36");
    assert.equal(mysql?.facts.os, "Ubuntu Linux 22.04");
  });

  it("a protocol without a database, an empty banner or binary noise is left unidentified", () => {
    assert.equal(recogKindOf("redis"), undefined);
    assert.equal(recogService("redis", "-NOAUTH Authentication required."), undefined);
    assert.equal(recogService("ssh", ""), undefined);
    assert.equal(recogService("ssh", "\u0000\u0001".repeat(50_000)), undefined);
    assert.equal(recogKindOf("ssl/imap"), "imap4.banner");
  });

  it("splits a release suffix off the version as NVD does", () => {
    assert.deepEqual(splitVersion("8.9p1"), { version: "8.9", update: "p1" });
    assert.deepEqual(splitVersion("1.3.5a"), { version: "1.3.5", update: "a" });
    assert.deepEqual(splitVersion("4.96"), { version: "4.96", update: "" });
  });
});

describe("where the probe's rule and Recog's both name a product", () => {
  it("the probe's stays on a tie and Recog adds the machine's facts; the detail names the rule", () => {
    const identity = withRecog({
      service: "ssh",
      tls: false,
      banner: "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3",
      identified_by: "greeting",
      product: "OpenSSH",
      version: "9.2p1",
    });
    assert.equal(identity.product, "OpenSSH");
    assert.equal(identity.version, "9.2p1");
    assert.equal(identity.product_rule, "probe greeting");
    assert.equal(identity.os, "Debian Linux 12.0");
  });

  it("Recog's wins where it tells more: a product the probe did not name, or a longer version", () => {
    const unnamed = withRecog({
      service: "ftp",
      tls: false,
      banner: "220 (vsFTPd 3.0.3)",
      identified_by: "greeting",
    });
    assert.equal(unnamed.product, "vsftpd");
    assert.equal(unnamed.version, "3.0.3");
    assert.equal(unnamed.cpe, "cpe:2.3:a:vsftpd_project:vsftpd:3.0.3:*:*:*:*:*:*:*");
    assert.match(unnamed.product_rule ?? "", /^recog ftp\.banner: /);
    assert.equal(
      tellsMore({ product: "Exim", version: "4" }, recogService("smtp", "220 a ESMTP Exim 4.96")!),
      true,
    );
    assert.equal(
      tellsMore({ product: "Exim", version: "4.96" }, recogService("smtp", "220 a ESMTP Exim 4.96")!),
      false,
    );
  });
});

describe("the machine Recog reads in an answer that names no product", () => {
  it("an SNMP sysDescr gives the operating system (and its CPE) to the service's details", () => {
    const identity = withRecog(
      {
        service: "snmp",
        tls: false,
        banner: "SNMP GetResponse: Cisco IOS Software, …",
        identified_by: "snmp",
      },
      "Cisco IOS Software, C2960 Software (C2960-LANBASEK9-M), Version 12.2(55)SE7, RELEASE SOFTWARE (fc1)",
    );
    assert.equal(identity.os, "Cisco IOS 12.2(55)SE7");
    assert.equal(identity.os_cpe, "cpe:2.3:o:cisco:ios:12.2(55)SE7:*:*:*:*:*:*:*");
    assert.equal(identity.product, undefined, "an operating system is not the service's product");
    const linux = withRecog(
      { service: "snmp", tls: false, banner: "SNMP GetResponse: Linux lab …", identified_by: "snmp" },
      "Linux lab 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01) x86_64",
    );
    assert.match(linux.os ?? "", /^Linux 6\.1\.0/);
  });

  it("an answer given no text of Recog's kind is not matched at all", () => {
    const identity = withRecog(
      { service: "snmp", tls: false, banner: "SNMPv3 engine 80001f88…", identified_by: "snmpv3-discovery" },
      "",
    );
    assert.deepEqual(Object.keys(identity).sort(), ["banner", "identified_by", "service", "tls"]);
  });
});

describe("a certificate's subject and issuer", () => {
  it("a router's own certificate names the device; a site's certificate from a public CA names none", () => {
    assert.deepEqual(
      recogCertificate(
        "C=US\nL=Irvine\nO=Cisco-Linksys, LLC\nOU=RV042\nCN=00:22:6b:ef:1e:d0",
        "C=US\nO=X\nCN=Y",
      ),
      {
        device: "Broadband Router",
        hardware: "Cisco RV042",
        fingerprint_rule: "recog x509.subject: Cisco / Linksys Router",
      },
    );
    assert.deepEqual(recogCertificate("CN=www.acme.test", "C=US\nO=Let's Encrypt\nCN=R3"), {});
  });
});

describe("Recog's web databases beside the project's web rules", () => {
  it("a Server header only Recog knows names its product with the header as evidence", () => {
    const found = fingerprintHttp(response([["server", "IdeaWebServer/0.83.74"]]));
    const idea = found.find((d) => d.name.includes("Idea Web Server"));
    assert.ok(idea, JSON.stringify(found));
    assert.equal(idea.version, "0.83.74");
    assert.match(
      idea.matchDetails ?? "",
      /server header "IdeaWebServer\/0\.83\.74" \(recog http_header\.server: /,
    );
  });

  it("a product both name is listed once, under the project's name", () => {
    const jetty = fingerprintHttp(response([["server", "Jetty(9.4.51.v20230217)"]]));
    assert.deepEqual(
      jetty.filter((d) => /jetty/i.test(d.name)).map((d) => d.name),
      ["Jetty"],
    );
    const kestrel = fingerprintHttp(response([["server", "Kestrel"]]));
    assert.equal(kestrel.filter((d) => /kestrel/i.test(d.name)).length, 1);
    const nginx = fingerprintHttp(response([["server", "nginx/1.22.1"]]));
    assert.deepEqual(
      nginx.map((d) => [d.name, d.version]),
      [["Nginx", "1.22.1"]],
    );
  });

  it("Recog adds a product to most of its own Server-header examples the project's rules miss", () => {
    const database = readRecogDatabase("http_header.server");
    assert.ok(database);
    let examples = 0;
    let added = 0;
    for (const fingerprint of database.fingerprints)
      for (const example of fingerprint.examples) {
        examples++;
        const found = fingerprintHttp(response([["server", example.text]]));
        if (found.some((d) => d.matchDetails?.includes("(recog "))) added++;
      }
    assert.ok(examples > 500, `only ${examples} examples`);
    assert.ok(added / examples > 0.5, `Recog added a product to ${added} of ${examples} examples`);
  });
});
