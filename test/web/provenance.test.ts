/** The layers of the "how it was reached" graph, from task results or ancestors. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { provenanceLayers } from "../../src/web/app/provenance.ts";

const app = { name: "https://www.acme.example:443", type: "Service::Entity::Uri" };

const names = (layers: ReturnType<typeof provenanceLayers>) =>
  layers.map((layer) =>
    layer.map((node) => `${node.kind} ${node.name}${node.tasks.length ? ` [${node.tasks.join(", ")}]` : ""}`),
  );

test("task results by depth, seed first, the entity last; each node names the tasks run on it", () => {
  const layers = provenanceLayers(
    app,
    [],
    [
      {
        task: "http_probe",
        entity_type: "Service::Entity::NetworkService",
        entity_name: "192.0.2.10:443/tcp",
        depth: "0.3e1",
      },
      {
        task: "dns_resolve",
        entity_type: "Service::Entity::Domain",
        entity_name: "acme.example",
        depth: "0.1e1",
      },
      {
        task: "dns_brute",
        entity_type: "Service::Entity::Domain",
        entity_name: "acme.example",
        depth: "0.1e1",
      },
      {
        task: "port_scan",
        entity_type: "Service::Entity::IpAddress",
        entity_name: "192.0.2.10",
        depth: "0.2e1",
      },
    ],
  );
  assert.deepEqual(names(layers), [
    ["Domain acme.example [dns_resolve, dns_brute]"],
    ["IpAddress 192.0.2.10 [port_scan]"],
    ["NetworkService 192.0.2.10:443/tcp [http_probe]"],
    ["Uri https://www.acme.example:443"],
  ]);
});

test("ancestors the task results leave out come first; without task results ancestors form the chain", () => {
  const withResults = provenanceLayers(
    app,
    [
      { name: "acme.example", type: "Service::Entity::Domain" },
      { name: "192.0.2.10", type: "Service::Entity::IpAddress" },
    ],
    [
      {
        task: "http_probe",
        entity_type: "Service::Entity::IpAddress",
        entity_name: "192.0.2.10",
        depth: "0.1e1",
      },
    ],
  );
  assert.deepEqual(names(withResults), [
    ["Domain acme.example"],
    ["IpAddress 192.0.2.10 [http_probe]"],
    ["Uri https://www.acme.example:443"],
  ]);

  const chain = provenanceLayers(app, [
    { name: "acme.example", type: "Service::Entity::Domain" },
    { name: "www.acme.example", type: "Service::Entity::DnsRecord" },
  ]);
  assert.deepEqual(names(chain), [
    ["Domain acme.example"],
    ["DnsRecord www.acme.example"],
    ["Uri https://www.acme.example:443"],
  ]);
  assert.deepEqual(
    names(provenanceLayers(app)),
    [["Uri https://www.acme.example:443"]],
    "a seed has only itself",
  );
});
