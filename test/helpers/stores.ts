/**
 * Test stores on both dialects: a fresh SQLite file in a temporary folder, or a fresh PostgreSQL
 * database created for the test and dropped after it.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Config } from "../../src/core/config.ts";
import { POSTGRES_URL, serviceSkipReason } from "./services.ts";

export interface TestStore {
  dialect: "sqlite" | "postgres";
  config: Pick<Config, "databaseUrl" | "dataDir">;
  drop(): Promise<void>;
}

async function adminQuery(url: string, sql: string) {
  // Loaded here, so that a process that only uses SQLite (the scale bench's server) never loads pg.
  const { default: pg } = await import("pg");
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A fresh store; on PostgreSQL a database of its own on the server at `postgresUrl`. */
export async function createTestStore(
  dialect: "sqlite" | "postgres",
  postgresUrl = POSTGRES_URL,
): Promise<TestStore> {
  const dataDir = mkdtempSync(join(tmpdir(), "sightline-test-"));
  if (dialect === "sqlite") {
    return {
      dialect,
      config: { databaseUrl: "", dataDir },
      drop: async () => rmSync(dataDir, { recursive: true, force: true }),
    };
  }
  const name = `sightline_test_${randomBytes(6).toString("hex")}`;
  await adminQuery(postgresUrl, `CREATE DATABASE ${name}`);
  const url = new URL(postgresUrl);
  url.pathname = `/${name}`;
  return {
    dialect,
    config: { databaseUrl: url.toString(), dataDir },
    drop: async () => {
      await adminQuery(postgresUrl, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The dialects to run a suite on, each with its skip reason (undefined = run). */
export async function dialects(): Promise<
  Array<{ dialect: "sqlite" | "postgres"; skip: string | undefined }>
> {
  return [
    { dialect: "sqlite", skip: undefined },
    { dialect: "postgres", skip: await serviceSkipReason("PostgreSQL", POSTGRES_URL) },
  ];
}
