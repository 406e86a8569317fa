/**
 * The PostgreSQL pool's hot queries go as named statements (src/store/prepared-statements.ts): each is
 * prepared once per connection, the number named is bounded, a schema change under a live connection
 * costs nothing, and statements inside a transaction go unnamed.
 */
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { after, before, describe, test } from "node:test";
import pg from "pg";
import { prepareHotStatements, StatementNames } from "../../src/store/prepared-statements.ts";
import { POSTGRES_URL, serviceSkipReason } from "../helpers/services.ts";

const skip = await serviceSkipReason("PostgreSQL", POSTGRES_URL);

describe("named statements on PostgreSQL", { skip }, () => {
  const table = `prepared_${randomBytes(4).toString("hex")}`;
  let client: pg.Client;

  before(async () => {
    client = new pg.Client({ connectionString: POSTGRES_URL });
    await client.connect();
    prepareHotStatements(client, new StatementNames());
    await client.query(`create table ${table} (a integer)`);
    await client.query(`insert into ${table} values (1), (2)`);
  });
  after(async () => {
    await client.query(`drop table if exists ${table}`);
    await client.end();
  });

  const prepared = async () =>
    (await client.query("select statement from pg_prepared_statements")).rows.map(
      (row: { statement: string }) => row.statement,
    );
  const select = `select * from ${table} where a = $1`;

  test("a query seen twice is prepared once, and answers as before", async () => {
    const first = await client.query(select, [1]);
    assert.equal((await prepared()).includes(select), false, "prepared on its first sight");
    for (let i = 0; i < 3; i++) assert.deepEqual((await client.query(select, [2])).rows, [{ a: 2 }]);
    assert.deepEqual(first.rows, [{ a: 1 }]);
    assert.equal((await prepared()).filter((text) => text === select).length, 1);
  });

  test("after the table changes, the query outside a transaction answers the new columns", async () => {
    await client.query(`alter table ${table} add column b text default 'x'`);
    assert.deepEqual((await client.query(select, [1])).rows, [{ a: 1, b: "x" }]);
  });

  test("inside a transaction a query goes unnamed: planned for its parameters, and a change costs nothing", async () => {
    const inside = `select a from ${table} where a >= $1`;
    await client.query("begin");
    for (let i = 0; i < 3; i++) assert.deepEqual((await client.query(inside, [2])).rows, [{ a: 2 }]);
    assert.equal((await prepared()).includes(inside), false, "prepared inside a transaction");
    // The named statement of the tests above, whose result columns this changes, is not used here.
    await client.query(`alter table ${table} add column c integer default 7`);
    assert.deepEqual((await client.query(select, [1])).rows, [{ a: 1, b: "x", c: 7 }]);
    await client.query("commit");
    // Outside, the next use prepares it afresh.
    assert.deepEqual((await client.query(select, [1])).rows, [{ a: 1, b: "x", c: 7 }]);
  });
});

describe("statement names", () => {
  test("are bounded: texts that keep varying stay unnamed once the budget is spent", () => {
    const names = new StatementNames();
    let named = 0;
    for (let i = 0; i < 2_000; i++) {
      const text = `select $1 from t where id in (${Array.from({ length: i + 1 }, (_, j) => `$${j + 2}`)})`;
      names.nameFor(text);
      if (names.nameFor(text) !== undefined) named++;
    }
    assert.equal(named, 400);
    assert.equal(names.nameFor("x".repeat(20_000)), undefined, "a very long text is named");
  });
});
