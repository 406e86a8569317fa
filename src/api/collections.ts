/** Collection management: list, create, add seeds, delete seeds, read one. */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { apiActor, recordAudit } from "../audit/log.ts";
import { badRequest, conflict, type ErrorDetail, forbidden, notFound } from "../core/errors.ts";
import { formatTimestamp } from "../core/formats.ts";
import { checkSeed, type Seed, uniqueSeeds } from "../core/seeds.ts";
import type { Principal } from "../store/accounts.ts";
import type { CollectionRow, CollectionsRepository } from "../store/collections.ts";
import {
  COLLECTION_NAME,
  COMMON_ERRORS,
  CONFLICT_ERROR,
  Collection,
  CollectionBody,
  CollectionParams,
  CreateCollectionBody,
  Envelope,
  FORBIDDEN_ERROR,
  NOT_FOUND_ERROR,
  SeedsChange,
} from "./schemas.ts";

/** Checks every seed; one 400 names each bad one, so nothing is half-written. */
export function parseSeeds(input: unknown[] | undefined): Seed[] {
  const seeds: Seed[] = [];
  const details: ErrorDetail[] = [];
  (input ?? []).forEach((raw, index) => {
    const check = checkSeed(raw);
    if (check.ok) seeds.push(check.seed);
    else details.push({ field: `seeds.${index}`, message: `seed ${index} ${check.message}` });
  });
  if (details.length > 0) {
    const first = details[0].message;
    const more = details.length > 1 ? ` (and ${details.length - 1} more bad seeds)` : "";
    throw badRequest(`Invalid seed: ${first}${more}. Nothing was saved.`, details);
  }
  return uniqueSeeds(seeds);
}

/**
 * The collection of that name if the user can see it (a member of its team); 404 otherwise. `find` may
 * read more with the row in the same query (the results read the latest finished run with it).
 */
export async function visibleCollection<Row extends CollectionRow = CollectionRow>(
  repository: CollectionsRepository,
  principal: Principal,
  name: string,
  find: (accountId: number, name: string) => Promise<Row | undefined> = (accountId, name) =>
    repository.findInAccount(accountId, name) as Promise<Row | undefined>,
): Promise<Row> {
  // A name no collection can have is not looked up (PostgreSQL refuses text with NUL bytes, for one).
  const row = COLLECTION_NAME.test(name) ? await find(principal.accountId, name) : undefined;
  if (!row || !principal.teamIds.includes(row.team_id)) {
    throw notFound(`No collection named "${name}" is visible to you; list yours with GET /api/collections.`);
  }
  return row;
}

function chooseTeam(principal: Principal, teamId: string | number | undefined): number {
  if (teamId === undefined || teamId === "") {
    const fallback = principal.defaultTeamId ?? principal.teamIds[0];
    if (fallback === undefined)
      throw forbidden("You are not a member of any team; ask an administrator to add you.");
    return fallback;
  }
  const id =
    typeof teamId === "number" ? teamId : /^\d+$/.test(teamId.trim()) ? Number(teamId.trim()) : Number.NaN;
  if (!Number.isSafeInteger(id)) {
    throw badRequest(`team_id must be a team's number, not ${JSON.stringify(teamId)}.`, [
      { field: "team_id", message: "must be a whole number" },
    ]);
  }
  if (!principal.teamIds.includes(id))
    throw forbidden(`You are not a member of team ${id}; pick one of your teams.`);
  return id;
}

async function describeCollection(repository: CollectionsRepository, row: CollectionRow) {
  const seeds = await repository.seeds(row.id);
  return {
    name: row.name,
    team_id: row.team_id,
    scan_rate: row.scan_rate,
    created_at: formatTimestamp(row.created_at),
    updated_at: formatTimestamp(row.updated_at),
    seed_count: seeds.length,
    seeds,
  };
}

export const collectionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const repository = app.services.collections;
  const tags = ["Collections"];

  app.get(
    "/",
    {
      schema: {
        tags,
        summary: "List the collections of all your teams",
        response: { 200: Envelope(Type.Array(Type.String())), ...COMMON_ERRORS },
      },
    },
    async (request) => ({
      success: true as const,
      message: "success" as const,
      result: await repository.namesForTeams(request.principal.teamIds),
    }),
  );

  app.post(
    "/",
    {
      schema: {
        tags,
        summary: "Create a collection with its seeds",
        description:
          "Creates the collection in `team_id` (default: your default team). Seeds are validated, normalised and de-duplicated; one bad seed rejects the request and nothing is saved.",
        body: CreateCollectionBody,
        response: {
          200: Envelope(Collection),
          ...COMMON_ERRORS,
          ...FORBIDDEN_ERROR,
          ...CONFLICT_ERROR,
        },
      },
    },
    async (request) => {
      const body = request.body;
      const seeds = parseSeeds(body.seeds);
      const teamId = chooseTeam(request.principal, body.team_id);
      const row = await repository.create(
        request.principal.accountId,
        teamId,
        body.name,
        seeds,
        body.scan_rate,
        (trx, { added }) =>
          recordAudit(trx, {
            ...apiActor(request.principal, request),
            action: "collection.create",
            target: `collection:${body.name}`,
            details: { team_id: teamId, seeds_added: added, scan_rate: body.scan_rate ?? "auto" },
          }),
      );
      if (!row) throw conflict(`A collection named "${body.name}" already exists; choose another name.`);
      return {
        success: true as const,
        message: "success" as const,
        result: await describeCollection(repository, row),
      };
    },
  );

  app.get(
    "/:collection_name",
    {
      schema: {
        tags,
        summary: "Read a collection: team, scan rate and seeds",
        params: CollectionParams,
        response: { 200: Envelope(Collection), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
      },
    },
    async (request) => {
      const row = await visibleCollection(repository, request.principal, request.params.collection_name);
      return {
        success: true as const,
        message: "success" as const,
        result: await describeCollection(repository, row),
      };
    },
  );

  app.post(
    "/:collection_name",
    {
      schema: {
        tags,
        summary: "Add seeds to a collection (and optionally change its scan rate)",
        description:
          "Seeds already in the collection are left as they are. `name`, when given, must repeat the collection's name. `team_id` cannot change here.",
        params: CollectionParams,
        body: CollectionBody,
        response: { 200: Envelope(SeedsChange), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
      },
    },
    async (request) => {
      const { collection_name } = request.params;
      const body = request.body;
      const row = await visibleCollection(repository, request.principal, collection_name);
      if (body.name !== undefined && body.name !== collection_name) {
        throw badRequest(
          `The body names collection "${body.name}" but the path names "${collection_name}"; they must match.`,
          [{ field: "name", message: "must match the collection name in the path" }],
        );
      }
      if (body.team_id !== undefined && chooseTeam(request.principal, body.team_id) !== row.team_id) {
        throw badRequest("A collection's team is chosen at creation and cannot be changed here.", [
          { field: "team_id", message: "cannot change" },
        ]);
      }
      const seeds = parseSeeds(body.seeds);
      const added = await repository.addSeeds(row.id, seeds, {
        scanRate: body.scan_rate,
        alongWith: (trx, { added }) =>
          recordAudit(trx, {
            ...apiActor(request.principal, request),
            action: seeds.length > 0 ? "collection.seeds.add" : "collection.update",
            target: `collection:${row.name}`,
            details: {
              seeds_given: seeds.length,
              seeds_added: added,
              ...(body.scan_rate !== undefined ? { scan_rate: body.scan_rate } : {}),
            },
          }),
      });
      const seedCount = (await repository.seeds(row.id)).length;
      return {
        success: true as const,
        message: "success" as const,
        result: { name: row.name, seeds_added: added, seed_count: seedCount },
      };
    },
  );

  app.delete(
    "/:collection_name/seeds",
    {
      schema: {
        tags,
        summary: "Delete all seeds of a collection",
        description: "Results of earlier runs stay readable; the next run has no seeds to start from.",
        params: CollectionParams,
        response: { 200: Envelope(SeedsChange), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
      },
    },
    async (request) => {
      const row = await visibleCollection(repository, request.principal, request.params.collection_name);
      const deleted = await repository.deleteSeeds(row.id, (trx, { deleted }) =>
        recordAudit(trx, {
          ...apiActor(request.principal, request),
          action: "collection.seeds.delete",
          target: `collection:${row.name}`,
          details: { seeds_deleted: deleted },
        }),
      );
      return {
        success: true as const,
        message: "success" as const,
        result: { name: row.name, seeds_deleted: deleted, seed_count: 0 },
      };
    },
  );
};
