/** Repository of collections and their seeds. */
import type { Kysely } from "kysely";
import { nowIso } from "../core/formats.ts";
import type { Seed } from "../core/seeds.ts";
import { changingCollections } from "./collection-changes.ts";
import type { CollectionsTable, Database } from "./schema.ts";

export type CollectionRow = Omit<CollectionsTable, "id"> & { id: number };

/** Writes that must commit or roll back with a change (its audit entry), given the change's outcome. */
export type AlongWith<T> = (trx: Kysely<Database>, outcome: T) => Promise<void>;

export class CollectionsRepository {
  readonly db: Kysely<Database>;
  constructor(db: Kysely<Database>) {
    this.db = db;
  }

  /** Names of the collections of the given teams, alphabetically. */
  async namesForTeams(teamIds: number[]): Promise<string[]> {
    if (teamIds.length === 0) return [];
    const rows = await this.db
      .selectFrom("collections")
      .select("name")
      .where("team_id", "in", teamIds)
      .orderBy("name")
      .execute();
    return rows.map((row) => row.name);
  }

  /** The collection of that name in the account, whatever its team. */
  findInAccount(accountId: number, name: string): Promise<CollectionRow | undefined> {
    return this.db
      .selectFrom("collections")
      .selectAll()
      .where("account_id", "=", accountId)
      .where("name", "=", name)
      .executeTakeFirst();
  }

  findById(id: number): Promise<CollectionRow | undefined> {
    return this.db.selectFrom("collections").selectAll().where("id", "=", id).executeTakeFirst();
  }

  /** Creates the collection and its seeds in one transaction; undefined when the name is taken. */
  async create(
    accountId: number,
    teamId: number,
    name: string,
    seeds: Seed[],
    scanRate = "auto",
    alongWith?: AlongWith<{ row: CollectionRow; added: number }>,
  ): Promise<CollectionRow | undefined> {
    return changingCollections(() =>
      this.db.transaction().execute(async (trx) => {
        const now = nowIso();
        const row = await trx
          .insertInto("collections")
          .values({
            account_id: accountId,
            team_id: teamId,
            name,
            scan_rate: scanRate,
            created_at: now,
            updated_at: now,
          })
          .onConflict((oc) => oc.columns(["account_id", "name"]).doNothing())
          .returningAll()
          .executeTakeFirst();
        if (!row) return undefined;
        const added = await insertSeeds(trx, row.id, seeds);
        await alongWith?.(trx, { row, added });
        return row;
      }),
    );
  }

  /**
   * Adds seeds (those already present are left as they are) and optionally sets the scan rate, all in one
   * transaction. Answers how many seeds were new.
   */
  async addSeeds(
    collectionId: number,
    seeds: Seed[],
    options: { scanRate?: string; alongWith?: AlongWith<{ added: number }> } = {},
  ): Promise<number> {
    return changingCollections(() =>
      this.db.transaction().execute(async (trx) => {
        const added = await insertSeeds(trx, collectionId, seeds);
        await trx
          .updateTable("collections")
          .set({
            updated_at: nowIso(),
            ...(options.scanRate !== undefined ? { scan_rate: options.scanRate } : {}),
          })
          .where("id", "=", collectionId)
          .execute();
        await options.alongWith?.(trx, { added });
        return added;
      }),
    );
  }

  async deleteSeeds(collectionId: number, alongWith?: AlongWith<{ deleted: number }>): Promise<number> {
    return changingCollections(() =>
      this.db.transaction().execute(async (trx) => {
        const result = await trx
          .deleteFrom("seeds")
          .where("collection_id", "=", collectionId)
          .executeTakeFirst();
        const deleted = Number(result.numDeletedRows);
        // What a collection's results read at request time (its seeds, for connections) is keyed on this.
        await trx
          .updateTable("collections")
          .set({ updated_at: nowIso() })
          .where("id", "=", collectionId)
          .execute();
        await alongWith?.(trx, { deleted });
        return deleted;
      }),
    );
  }

  async seeds(collectionId: number): Promise<Seed[]> {
    const rows = await this.db
      .selectFrom("seeds")
      .select(["type", "name"])
      .where("collection_id", "=", collectionId)
      .orderBy("id")
      .execute();
    return rows as Seed[];
  }
}

async function insertSeeds(db: Kysely<Database>, collectionId: number, seeds: Seed[]): Promise<number> {
  if (seeds.length === 0) return 0;
  const now = nowIso();
  let added = 0;
  // Chunked so a large seed list stays under both dialects' bound-parameter limits.
  for (let i = 0; i < seeds.length; i += 500) {
    const chunk = seeds.slice(i, i + 500);
    const rows = await db
      .insertInto("seeds")
      .values(
        chunk.map((seed) => ({
          collection_id: collectionId,
          type: seed.type,
          name: seed.name,
          created_at: now,
        })),
      )
      .onConflict((oc) => oc.columns(["collection_id", "type", "name"]).doNothing())
      .returning("id")
      .execute();
    added += rows.length;
  }
  return added;
}
