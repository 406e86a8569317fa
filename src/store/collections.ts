/** Repository of collections and their seeds. */
import type { Kysely } from "kysely";
import { badRequest } from "../core/errors.ts";
import { nowIso } from "../core/formats.ts";
import type { ScanProfile } from "../core/scan-profile.ts";
import type { Seed } from "../core/seeds.ts";
import type { CollectionsTable, Database } from "./schema.ts";
import { WORKING_TABLES } from "./working-marks.ts";

export type CollectionRow = Omit<CollectionsTable, "id"> & { id: number };

/** A collection's stored scan profile, or null when it has none (its runs use the server's settings). */
export function scanProfileOf(row: Partial<Pick<CollectionRow, "scan_profile">>): ScanProfile | null {
  return row.scan_profile ? (JSON.parse(row.scan_profile) as ScanProfile) : null;
}

/** Writes that must commit or roll back with a change (its audit entry), given the change's outcome. */
export type AlongWith<T> = (trx: Kysely<Database>, outcome: T) => Promise<void>;

export class CollectionsRepository {
  readonly db: Kysely<Database>;
  /** Seeds one collection may hold (SIGHTLINE_MAX_SEEDS). */
  readonly maxSeeds: number;
  constructor(db: Kysely<Database>, options: { maxSeeds?: number } = {}) {
    this.db = db;
    this.maxSeeds = options.maxSeeds ?? 100_000;
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
    scanProfile?: ScanProfile | null,
  ): Promise<CollectionRow | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const now = nowIso();
      const row = await trx
        .insertInto("collections")
        .values({
          account_id: accountId,
          team_id: teamId,
          name,
          scan_rate: scanRate,
          // Left out when there is none, so the column's null default stands.
          ...(scanProfile ? { scan_profile: JSON.stringify(scanProfile) } : {}),
          created_at: now,
          updated_at: now,
        })
        .onConflict((oc) => oc.columns(["account_id", "name"]).doNothing())
        .returningAll()
        .executeTakeFirst();
      if (!row) return undefined;
      const added = await insertSeeds(trx, row.id, seeds);
      if (added > this.maxSeeds) throw tooManySeeds(name, added, this.maxSeeds);
      await alongWith?.(trx, { row, added });
      return row;
    });
  }

  /**
   * Adds seeds (those already present are left as they are) and optionally sets the scan rate and the
   * scan profile (null: back to the server's settings), all in one transaction. Answers how many seeds
   * were new.
   */
  async addSeeds(
    collectionId: number,
    seeds: Seed[],
    options: {
      scanRate?: string;
      scanProfile?: ScanProfile | null;
      alongWith?: AlongWith<{ added: number }>;
    } = {},
  ): Promise<{ added: number; total: number }> {
    return this.db.transaction().execute(async (trx) => {
      // First, so that on PostgreSQL the collection's row lock orders concurrent additions: the count
      // below then sees every seed committed before, and the cap holds.
      const collection = await trx
        .updateTable("collections")
        .set({
          updated_at: nowIso(),
          ...(options.scanRate !== undefined ? { scan_rate: options.scanRate } : {}),
          ...(options.scanProfile !== undefined
            ? { scan_profile: options.scanProfile ? JSON.stringify(options.scanProfile) : null }
            : {}),
        })
        .where("id", "=", collectionId)
        .returning("name")
        .executeTakeFirst();
      const added = await insertSeeds(trx, collectionId, seeds);
      const total = await this.countSeeds(collectionId, trx);
      if (total > this.maxSeeds) throw tooManySeeds(collection?.name ?? "", total, this.maxSeeds);
      await options.alongWith?.(trx, { added });
      return { added, total };
    });
  }

  async deleteSeeds(collectionId: number, alongWith?: AlongWith<{ deleted: number }>): Promise<number> {
    return this.db.transaction().execute(async (trx) => {
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
    });
  }

  /** How many seeds the collection has, by query (never by reading them). */
  async countSeeds(collectionId: number, db: Kysely<Database> = this.db): Promise<number> {
    const row = await db
      .selectFrom("seeds")
      .select((eb) => eb.fn.countAll<number | string>().as("n"))
      .where("collection_id", "=", collectionId)
      .executeTakeFirst();
    return Number(row?.n ?? 0);
  }

  /** One page of the collection's seeds, in the order they were added. */
  async seedsPage(collectionId: number, limit: number, offset: number): Promise<Seed[]> {
    const rows = await this.db
      .selectFrom("seeds")
      .select(["type", "name"])
      .where("collection_id", "=", collectionId)
      .orderBy("id")
      .limit(limit)
      .offset(offset)
      .execute();
    return rows as Seed[];
  }

  /** Removes one seed; answers whether the collection had it. */
  async deleteSeed(
    collectionId: number,
    seed: Seed,
    alongWith?: AlongWith<{ deleted: boolean }>,
  ): Promise<boolean> {
    return this.db.transaction().execute(async (trx) => {
      const result = await trx
        .deleteFrom("seeds")
        .where("collection_id", "=", collectionId)
        .where("type", "=", seed.type)
        .where("name", "=", seed.name)
        .executeTakeFirst();
      const deleted = Number(result.numDeletedRows) > 0;
      if (!deleted) return false;
      await trx
        .updateTable("collections")
        .set({ updated_at: nowIso() })
        .where("id", "=", collectionId)
        .execute();
      await alongWith?.(trx, { deleted });
      return true;
    });
  }

  /**
   * Deletes the collection with everything that hangs off it — seeds, runs and their tasks, results and
   * their history, webhooks and their deliveries — through the schema's cascading foreign keys, in one
   * transaction with its audit entry. Answers how many runs went with it; undefined if it was gone.
   */
  async delete(
    collectionId: number,
    alongWith?: AlongWith<{ runs: number; seeds: number }>,
  ): Promise<{ runs: number; seeds: number } | undefined> {
    return this.db.transaction().execute(async (trx) => {
      const count = async (table: "runs" | "seeds") =>
        Number(
          (
            await trx
              .selectFrom(table)
              .select((eb) => eb.fn.countAll<number | string | bigint>().as("n"))
              .where("collection_id", "=", collectionId)
              .executeTakeFirstOrThrow()
          ).n,
        );
      const outcome = { runs: await count("runs"), seeds: await count("seeds") };
      // The runs' working tables hold no foreign key on PostgreSQL (migration 020): their rows go by hand.
      for (const table of WORKING_TABLES)
        await trx
          .deleteFrom(table)
          .where("run_id", "in", (eb) =>
            eb.selectFrom("runs").select("id").where("collection_id", "=", collectionId),
          )
          .execute();
      const result = await trx.deleteFrom("collections").where("id", "=", collectionId).executeTakeFirst();
      if (Number(result.numDeletedRows) === 0) return undefined;
      await alongWith?.(trx, outcome);
      return outcome;
    });
  }

  /** Whether the collection has any seed (a run of none would find nothing). */
  async hasSeeds(collectionId: number): Promise<boolean> {
    const row = await this.db
      .selectFrom("seeds")
      .select("id")
      .where("collection_id", "=", collectionId)
      .limit(1)
      .executeTakeFirst();
    return row !== undefined;
  }

  /** Every seed (a run's plan reads them all; a request reads a page). */
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

function tooManySeeds(name: string, total: number, max: number) {
  return badRequest(
    `Collection "${name}" would hold ${total.toLocaleString("en-US")} seeds; a collection holds at most ${max.toLocaleString("en-US")} (SIGHTLINE_MAX_SEEDS). Nothing was added; split the seeds over several collections or raise the limit.`,
    [{ field: "seeds", message: `at most ${max} seeds per collection (SIGHTLINE_MAX_SEEDS)` }],
  );
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
