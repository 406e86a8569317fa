/** Runs the migrations in src/store/migrations in order; the same set serves both dialects. */
import { type Migration, type MigrationProvider, Migrator } from "kysely/migration";
import type { Store } from "./database.ts";
import { migrations } from "./migrations/index.ts";

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
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
