/**
 * OrNull: a value or null as a list of types, which Fastify's serialiser checks with `typeof` instead of
 * compiling and running a validator for an `anyOf` (the first answer of a route paid tens of
 * milliseconds on the event loop for it).
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import build from "fast-json-stringify";
import { Type } from "typebox";
import { Value } from "typebox/value";
import { OrNull } from "../../src/core/or-null.ts";

const Row = Type.Object({
  error: OrNull(Type.String(), { description: "why" }),
  count: OrNull(Type.Integer()),
  settings: OrNull(Type.Object({ depth: Type.Integer() })),
});

test("the schema is one list of types, keeps its options, and checks values as a union would", () => {
  assert.deepEqual(Row.properties.error, { type: ["string", "null"], description: "why" });
  assert.deepEqual((Row.properties.settings as { type?: unknown }).type, ["object", "null"]);
  assert.ok(Value.Check(Row, { error: null, count: null, settings: null }));
  assert.ok(Value.Check(Row, { error: "x", count: 3, settings: { depth: 2 } }));
  assert.ok(!Value.Check(Row, { error: 3, count: null, settings: null }));
  assert.ok(!Value.Check(Row, { error: null, count: "3", settings: null }));
});

test("Fastify's serialiser writes it without a validator", () => {
  const stringify = build(JSON.parse(JSON.stringify(Row)));
  assert.equal(
    stringify({ error: null, count: 2, settings: { depth: 1 } }),
    '{"error":null,"count":2,"settings":{"depth":1}}',
  );
  assert.equal(
    stringify({ error: "e", count: null, settings: null }),
    '{"error":"e","count":null,"settings":null}',
  );
  // With an anyOf the serialiser's source asks for a validator; with a list of types it does not.
  const standalone = (error: unknown) =>
    build(JSON.parse(JSON.stringify({ type: "object", properties: { error } })), {
      mode: "standalone",
    }) as unknown as string;
  const withAnyOf = standalone(Type.Union([Type.String(), Type.Null()]));
  const withList = standalone(OrNull(Type.String()));
  assert.match(withAnyOf, /getSchemaValidator/);
  assert.doesNotMatch(withList, /getSchemaValidator/);
});

test("a schema without one type is refused", () => {
  assert.throws(() => OrNull(Type.Union([Type.String(), Type.Integer()])), /one type/);
});
