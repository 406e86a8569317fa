import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { formatCpe, parseCpe } from "../../../src/core/cpe.ts";
import type { CpeMatchRow } from "../../../src/store/vuln-records.ts";
import { criterionMatches } from "../../../src/store/vulns.ts";

const criterion = (criteria: string, range: Partial<CpeMatchRow> = {}): CpeMatchRow => {
  const cpe = parseCpe(criteria);
  assert.ok(cpe, criteria);
  return {
    criteria,
    part: cpe.part,
    vendor: cpe.vendor,
    product: cpe.product,
    version: cpe.version,
    version_update: cpe.update,
    version_start_including: null,
    version_start_excluding: null,
    version_end_including: null,
    version_end_excluding: null,
    ...range,
  };
};
const product = (text: string) => {
  const cpe = parseCpe(text);
  assert.ok(cpe, text);
  return cpe;
};

describe("CPE 2.3 strings", () => {
  it("parses the fields and unescapes values", () => {
    const cpe = parseCpe("cpe:2.3:a:oracle:communications_diameter_signaling_router_idih\\::*:*:*:*:*:*:*:*");
    assert.equal(cpe?.product, "communications_diameter_signaling_router_idih:");
    assert.equal(cpe?.version, "*");
    assert.equal(parseCpe("cpe:2.3:a:openbsd:openssh:8.5:p1:*:*:*:*:*:*")?.update, "p1");
  });

  it("rejects what is not a CPE 2.3 formatted string", () => {
    assert.equal(parseCpe("cpe:/a:apache:http_server:2.4.49"), undefined);
    assert.equal(parseCpe("cpe:2.3:x:apache:http_server:2.4.49:*:*:*:*:*:*:*"), undefined);
    assert.equal(parseCpe("cpe:2.3:a:apache:http_server"), undefined);
  });

  it("formats with wildcards for missing fields and escapes punctuation", () => {
    assert.equal(
      formatCpe({ part: "a", vendor: "apache", product: "http_server", version: "2.4.49" }),
      "cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*",
    );
    const text = formatCpe({ part: "a", vendor: "acme", product: "a:b", version: "1.0" });
    assert.equal(parseCpe(text)?.product, "a:b");
  });
});

describe("criterionMatches", () => {
  const apache = criterion("cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*");
  it("matches an exact version and nothing next to it", () => {
    assert.equal(
      criterionMatches(apache, product("cpe:2.3:a:apache:http_server:2.4.49:*:*:*:*:*:*:*")),
      true,
    );
    assert.equal(
      criterionMatches(apache, product("cpe:2.3:a:apache:http_server:2.4.50:*:*:*:*:*:*:*")),
      false,
    );
    assert.equal(criterionMatches(apache, product("cpe:2.3:a:apache:tomcat:2.4.49:*:*:*:*:*:*:*")), false);
    assert.equal(criterionMatches(apache, product("cpe:2.3:a:apache:http_server:*:*:*:*:*:*:*:*")), false);
  });

  it("honours inclusive and exclusive range edges", () => {
    const exim = criterion("cpe:2.3:a:exim:exim:*:*:*:*:*:*:*:*", {
      version_start_including: "4.87",
      version_end_including: "4.91",
    });
    const at = (version: string) =>
      criterionMatches(exim, product(`cpe:2.3:a:exim:exim:${version}:*:*:*:*:*:*:*`));
    assert.deepEqual(["4.86", "4.87", "4.90", "4.91", "4.92"].map(at), [false, true, true, true, false]);

    const php = criterion("cpe:2.3:a:php:php:*:*:*:*:*:*:*:*", {
      version_start_excluding: "7.3.0",
      version_end_excluding: "7.3.11",
    });
    const phpAt = (version: string) =>
      criterionMatches(php, product(`cpe:2.3:a:php:php:${version}:*:*:*:*:*:*:*`));
    assert.deepEqual(["7.3.0", "7.3.1", "7.3.10", "7.3.11"].map(phpAt), [false, true, true, false]);
  });

  it("compares OpenSSH portable versions with their p-suffix", () => {
    const range = criterion("cpe:2.3:a:openbsd:openssh:*:*:*:*:*:*:*:*", {
      version_start_including: "8.6",
      version_end_excluding: "9.8",
    });
    const exact = criterion("cpe:2.3:a:openbsd:openssh:8.5:p1:*:*:*:*:*:*");
    const plain = criterion("cpe:2.3:a:openbsd:openssh:9.8:-:*:*:*:*:*:*");
    const ssh = (version: string, update = "*") =>
      product(`cpe:2.3:a:openbsd:openssh:${version}:${update}:*:*:*:*:*:*`);
    assert.equal(criterionMatches(range, ssh("8.9", "p1")), true);
    assert.equal(criterionMatches(range, ssh("9.8", "p1")), false);
    assert.equal(criterionMatches(exact, ssh("8.5", "p1")), true);
    assert.equal(criterionMatches(exact, ssh("8.5p1")), true);
    assert.equal(criterionMatches(exact, ssh("8.5", "p2")), false);
    assert.equal(criterionMatches(plain, ssh("9.8")), true);
    assert.equal(criterionMatches(plain, ssh("9.8", "p1")), false);
  });

  it("follows NVD's aliases for the same software", () => {
    const old = criterion("cpe:2.3:a:nginx:nginx:*:*:*:*:*:*:*:*", { version_end_excluding: "1.20.1" });
    assert.equal(criterionMatches(old, product("cpe:2.3:a:f5:nginx:1.18.0:*:*:*:*:*:*:*")), true);
  });
});
