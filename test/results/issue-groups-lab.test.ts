/**
 * One finding behind several names is one issue to a person: on the lab, nginx on one address answers
 * for several names, and each of its applications carries the same inferred CVE. Real discovery gives
 * every issue on a service or application the service it runs on (`details.endpoint`), and the issues
 * list grouped by finding (`?group=finding`) shows such a finding once, with its names.
 */
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { type LabServer, startLabServer } from "../helpers/lab-server.ts";
import { waitForRun } from "../runs/helpers.ts";

interface Issue {
  name: string;
  entity_type: string;
  entity_name: string;
  details: {
    endpoint?: string;
    entities?: Array<{ entity_type: string; entity_name: string }>;
    entity_count?: number;
  };
}

describe("issues grouped by finding and service, on the lab", () => {
  let lab: LabServer;
  let issues: Issue[];
  let group: Issue[];

  before(async () => {
    lab = await startLabServer("sqlite", { base: "127.124" });
    const id = Number((await lab.t.request("POST", "/api/collections/lab/schedule")).body.result.id);
    assert.equal((await waitForRun(lab.t, "lab", id, "finished", "failed")).status, "finished");
    issues = (await lab.t.request("GET", "/api/collections/lab/issues")).body.result;
    const byKey = new Map<string, Issue[]>();
    for (const issue of issues)
      if (issue.details.endpoint) {
        const key = `${issue.name} ${issue.details.endpoint}`;
        byKey.set(key, [...(byKey.get(key) ?? []), issue]);
      }
    group = [...byKey.values()].sort((a, b) => b.length - a.length)[0]!;
  });
  after(async () => {
    await lab?.close();
  });

  test("the API names the service of every issue on a service or application", () => {
    assert.ok(group.length >= 2, "some finding is seen through several names of one service");
    assert.match(group[0]!.details.endpoint!, /^127\.124\.\d+\.\d+:\d+$/);
    assert.equal(new Set(group.map((issue) => issue.entity_name)).size, group.length);
    for (const issue of issues)
      if (/^https?:\/\/|\/tcp$/.test(issue.entity_name)) assert.ok(issue.details.endpoint, issue.entity_name);
  });

  test("grouped by finding, that finding is one item listing every name it was seen through", async () => {
    const response = await lab.t.request("GET", "/api/collections/lab/issues?group=finding");
    assert.equal(response.status, 200, response.text);
    const grouped: Issue[] = response.body.result;
    const items = grouped.filter(
      (issue) => issue.name === group[0]!.name && issue.details.endpoint === group[0]!.details.endpoint,
    );
    assert.equal(items.length, 1);
    assert.equal(items[0]!.details.entity_count, group.length);
    assert.deepEqual(
      items[0]!.details.entities,
      group.map((issue) => ({ entity_type: issue.entity_type, entity_name: issue.entity_name })),
    );
    const groups = new Set(
      issues.map(
        (issue) => `${issue.name} ${issue.details.endpoint ?? `${issue.entity_type} ${issue.entity_name}`}`,
      ),
    );
    assert.equal(grouped.length, groups.size);
    assert.equal(Number(response.headers.get("x-total-count")), groups.size);
  });
});
