/** Runs the migrations in src/store/migrations in order; the same set serves both dialects. */
import { type Migration, type MigrationProvider, Migrator } from "kysely/migration";
import type { Store } from "./database.ts";
import { migrations, VULNERABILITY_TABLES } from "./migrations/index.ts";
import { loadSeedIfEmpty } from "./vuln-importer.ts";

class StaticMigrations implements MigrationProvider {
  readonly store: Store;
  constructor(store: Store) {
    this.store = store;
  }
  async getMigrations(): Promise<Record<string, Migration>> {
    const result: Record<string, Migration> = {};
    for (const [name, migration] of Object.entries(migrations)) {
      result[name] = { up: (db) => migration.up(db, this.store.dialect) };
    }
    return result;
  }
}

export async function migrateToLatest(store: Store): Promise<string[]> {
  const migrator = new Migrator({ db: store.db, provider: new StaticMigrations(store) });
  const { error, results } = await migrator.migrateToLatest();
  if (error) throw error instanceof Error ? error : new Error(String(error));
  const applied = (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
  // The vulnerability tables start with the shipped seed, loaded by today's importer once they exist.
  if (applied.includes(VULNERABILITY_TABLES)) await loadSeedIfEmpty(store.db);
  return applied;
}
