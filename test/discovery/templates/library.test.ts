/**
 * Sightline's own template library on its lab targets: every shipped template matches the target made
 * for it and not its twin, and nothing else in the library matches either (the targets are otherwise
 * hardened sites), so a template that matches too much fails here as surely as one that matches nothing.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { createTemplatesModule } from "../../../src/discovery/modules/templates.ts";
import { BUILT_IN_DIRECTORY, loadDirectory } from "../../../src/discovery/templates/library.ts";
import {
  type RunningTargets,
  startTemplateTargets,
  TEMPLATE_TARGETS,
  targetHost,
} from "../../lab/template-targets.ts";
import { application, context, service } from "./helpers.ts";

describe("the shipped template library on its lab targets", () => {
  let targets: RunningTargets;
  before(async () => {
    targets = await startTemplateTargets("127.117.0.1");
  });
  after(async () => {
    await targets?.close();
  });

  test("at least 60 templates, every one parsed and every one with a target and a twin", async () => {
    const library = await loadDirectory(BUILT_IN_DIRECTORY, true);
    assert.deepEqual(library.skipped, []);
    assert.ok(library.templates.length >= 60, `${library.templates.length} templates`);
    const ids = library.templates.map((loaded) => loaded.template.id).sort();
    assert.deepEqual(ids, Object.keys(TEMPLATE_TARGETS).sort());
    for (const { template } of library.templates) {
      assert.ok(template.info.name && template.info.description && template.info.remediation, template.id);
      assert.ok(template.info.authors.includes("sightline"), template.id);
    }
  });

  /** What the whole library raises on one target, by template id. */
  async function raisedOn(id: string, variant: "match" | "twin") {
    const spec = TEMPLATE_TARGETS[id][variant];
    const ctx = context({ dnsServers: [targets.resolver] });
    const module = createTemplatesModule();
    if (!spec.kind || spec.kind === "http") {
      const scheme = spec.scheme ?? "http";
      const port = scheme === "https" ? targets.httpsPort : targets.httpPort;
      await module.run(application(`${scheme}://${targetHost(id, variant)}:${port}`, targets.address), ctx);
    } else if (spec.kind === "tcp") {
      await module.run(service(targets.tcp[id][variant], spec.port), ctx);
    } else if (spec.kind === "dns") {
      await module.run({ kind: "Domain", name: targetHost(id, variant) }, ctx);
    } else {
      const { address, port } = targets.ssl[id][variant];
      await module.run(
        {
          kind: "SslCertificate",
          name: `${id}-${variant}`,
          details: { endpoints: [`${address}:${port}/tcp`] },
        },
        ctx,
      );
    }
    return ctx.issues.map((issue) => issue.details.template_id as string).sort();
  }

  for (const id of Object.keys(TEMPLATE_TARGETS).sort()) {
    test(`${id}: matches its target and not its twin`, async () => {
      assert.deepEqual(await raisedOn(id, "match"), [id], "on its target");
      assert.deepEqual(await raisedOn(id, "twin"), [], "on its twin");
    });
  }
});
