/** Collection management: list, create, add seeds, delete seeds, read one. */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { badRequest, conflict, type ErrorDetail, forbidden, notFound } from "../core/errors.ts";
import { formatTimestamp } from "../core/formats.ts";
import { portSpecProblem, type ScanProfile } from "../core/scan-profile.ts";
import { checkSeed, type Seed, uniqueSeeds } from "../core/seeds.ts";
import type { Principal } from "../store/accounts.ts";
import { apiActor, recordAudit } from "../store/audit.ts";
import { type CollectionRow, type CollectionsRepository, scanProfileOf } from "../store/collections.ts";
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
  NAMES_SOMETHING,
  NOT_FOUND_ERROR,
  PageOffset,
  SeedsChange,
} from "./schemas.ts";

/** A profile the schema let through whose port list cannot be scanned answers 400 with the reason. */
export function checkScanProfile(
  profile: { ports?: string } | null | undefined,
): ScanProfile | null | undefined {
  const problem = profile?.ports !== undefined ? portSpecProblem(profile.ports) : undefined;
  if (problem)
    throw badRequest(`scan_profile.ports ${problem}. Nothing was saved.`, [
      { field: "scan_profile.ports", message: problem },
    ]);
  // The schema has checked every other field (the preset's and the wordlist's names among them).
  return profile as ScanProfile | null | undefined;
}

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

/** The answer to a name that cannot be used, whatever the reason (docs/security.md). */
export const NAME_UNAVAILABLE = "This name cannot be used; choose another.";

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

/** Seeds shown with a collection when the request does not say how many. */
export const SEED_PAGE = 1000;

/** The collection with a page of its seeds (counted by query, never by reading them all). */
async function describeCollection(
  repository: CollectionsRepository,
  row: CollectionRow,
  page: { limit?: number; offset?: number } = {},
) {
  const [total, seeds] = await Promise.all([
    repository.countSeeds(row.id),
    repository.seedsPage(row.id, page.limit ?? SEED_PAGE, page.offset ?? 0),
  ]);
  return {
    name: row.name,
    team_id: row.team_id,
    scan_rate: row.scan_rate,
    scan_profile: scanProfileOf(row),
    created_at: formatTimestamp(row.created_at),
    updated_at: formatTimestamp(row.updated_at),
    seed_count: total,
    seeds_total: total,
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
      if (!NAMES_SOMETHING.test(body.name))
        throw badRequest(
          `The request body is invalid: name must contain a letter or a digit, and "${body.name}" has none.`,
          [{ field: "name", message: "must contain a letter or a digit" }],
        );
      const seeds = parseSeeds(body.seeds);
      const profile = checkScanProfile(body.scan_profile);
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
            details: {
              team_id: teamId,
              seeds_added: added,
              scan_rate: body.scan_rate ?? "auto",
              ...(profile ? { scan_profile: profile } : {}),
            },
          }),
        profile,
      );
      // Names are unique per account, so the name may belong to a collection of a team the caller is not
      // in: one sentence for every reason, which never confirms that such a collection exists.
      if (!row) throw conflict(NAME_UNAVAILABLE, [{ field: "name", message: "cannot be used" }]);
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
        summary: "Read a collection: team, scan rate and a page of its seeds",
        description: `\`seeds_total\` counts every seed; \`seeds\` holds one page of them, in the order they were added: \`limit\` (default ${SEED_PAGE}, at most 10,000) from \`offset\`.`,
        params: CollectionParams,
        querystring: Type.Object(
          {
            limit: Type.Optional(
              Type.Integer({
                minimum: 1,
                maximum: 10_000,
                description: `Seeds in the page (default ${SEED_PAGE}).`,
              }),
            ),
            offset: Type.Optional(PageOffset("Seeds to skip.")),
          },
          { additionalProperties: false },
        ),
        response: { 200: Envelope(Collection), ...COMMON_ERRORS, ...NOT_FOUND_ERROR },
      },
    },
    async (request) => {
      const row = await visibleCollection(repository, request.principal, request.params.collection_name);
      return {
        success: true as const,
        message: "success" as const,
        result: await describeCollection(repository, row, request.query),
      };
    },
  );

  app.post(
    "/:collection_name",
    {
      schema: {
        tags,
        summary: "Add seeds to a collection (and optionally change its scan rate or scan profile)",
        description:
          "Seeds already in the collection are left as they are. `name`, when given, must repeat the collection's name. `team_id` cannot change here.",
        params: CollectionParams,
        body: CollectionBody,
        response: {
          200: Envelope(SeedsChange),
          ...COMMON_ERRORS,
          // team_id naming a team the caller is not in
          ...FORBIDDEN_ERROR,
          ...NOT_FOUND_ERROR,
        },
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
      const profile = checkScanProfile(body.scan_profile);
      const { added, total } = await repository.addSeeds(row.id, seeds, {
        scanRate: body.scan_rate,
        scanProfile: profile,
        alongWith: (trx, { added }) =>
          recordAudit(trx, {
            ...apiActor(request.principal, request),
            action: seeds.length > 0 ? "collection.seeds.add" : "collection.update",
            target: `collection:${row.name}`,
            details: {
              seeds_given: seeds.length,
              seeds_added: added,
              ...(body.scan_rate !== undefined ? { scan_rate: body.scan_rate } : {}),
              ...(profile !== undefined ? { scan_profile: profile } : {}),
            },
          }),
      });
      return {
        success: true as const,
        message: "success" as const,
        result: { name: row.name, seeds_added: added, seed_count: total },
      };
    },
  );

  app.delete(
    "/:collection_name",
    {
      schema: {
        tags,
        summary: "Delete a collection with its runs and results",
        description:
          "Deletes the collection, its seeds, every run (a run in progress is cancelled first), its results and their history, and its webhooks. It cannot be undone; the CLI and the dashboard ask for a confirmation first. Takes no body.",
        params: CollectionParams,
        response: {
          200: Envelope(
            Type.Object({
              name: Type.String(),
              runs_deleted: Type.Integer(),
              seeds_deleted: Type.Integer(),
            }),
          ),
          ...COMMON_ERRORS,
          ...NOT_FOUND_ERROR,
        },
      },
    },
    async (request) => {
      const row = await visibleCollection(repository, request.principal, request.params.collection_name);
      // Work in flight stops before its rows go: a run still going would write into a deleted collection.
      const active = await app.services.runs.active(row.id);
      if (active && app.cancelRun)
        await app.cancelRun(active.id, `The collection was deleted by ${request.principal.userName}.`);
      const outcome = await repository.delete(row.id, (trx, { runs, seeds }) =>
        recordAudit(trx, {
          ...apiActor(request.principal, request),
          action: "collection.delete",
          target: `collection:${row.name}`,
          details: { runs_deleted: runs, seeds_deleted: seeds, team_id: row.team_id },
        }),
      );
      if (!outcome)
        throw notFound(`No collection named "${row.name}" is visible to you; it may have just been deleted.`);
      return {
        success: true as const,
        message: "success" as const,
        result: { name: row.name, runs_deleted: outcome.runs, seeds_deleted: outcome.seeds },
      };
    },
  );

  app.delete(
    "/:collection_name/seeds/:type/*",
    {
      schema: {
        tags,
        summary: "Delete one seed",
        description:
          "The seed is named by its type and its value, percent-encoded (`/seeds/Domain/example.com`, `/seeds/Uri/https%3A%2F%2Fexample.com%2F`); the value is normalised as when seeds are added. Results of earlier runs stay readable. Takes no body.",
        params: Type.Object({
          collection_name: Type.String(),
          type: Type.String({ description: "The seed's type, e.g. Domain." }),
          "*": Type.String({
            description: "The seed's value, percent-encoded.",
            "x-parameter-name": "value",
          }),
        }),
        response: {
          200: Envelope(SeedsChange),
          ...COMMON_ERRORS,
          404: {
            ...Type.Ref("ErrorEnvelope"),
            description: "No such collection visible to you, or no such seed in it.",
          },
        },
      },
    },
    async (request) => {
      const { collection_name, type } = request.params;
      const row = await visibleCollection(repository, request.principal, collection_name);
      const check = checkSeed({ type, name: request.params["*"] });
      if (!check.ok)
        throw badRequest(`The seed to delete ${check.message}.`, [{ field: "seed", message: check.message }]);
      const { seed } = check;
      const deleted = await repository.deleteSeed(row.id, seed, (trx) =>
        recordAudit(trx, {
          ...apiActor(request.principal, request),
          action: "collection.seed.delete",
          target: `collection:${row.name}`,
          details: { type: seed.type, name: seed.name },
        }),
      );
      if (!deleted)
        throw notFound(
          `Collection "${row.name}" has no ${seed.type} seed "${seed.name}"; list its seeds with GET /api/collections/${row.name}.`,
        );
      const seedCount = (await repository.seeds(row.id)).length;
      return {
        success: true as const,
        message: "success" as const,
        result: { name: row.name, seeds_deleted: 1, seed_count: seedCount },
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
