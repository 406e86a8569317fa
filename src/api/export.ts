/**
 * GET /api/collections/{name}/export/{item_type}/from_date/{YYYY-MM-DD}/[{page_token}]: the hosted
 * service's export, paged by an opaque key (src/results/export.ts). The token is standard base64, so it
 * may hold `/`: the route takes the rest of the path.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import type { FastifyReply, FastifyRequest } from "fastify";
import { Type } from "typebox";
import { badRequest } from "../core/errors.ts";
import {
  EXPORT_ITEMS,
  EXPORT_PAGE_SIZE,
  EXPORT_TYPES,
  type ExportKey,
  ExportKeySchema,
  type ExportType,
  exportPage,
  pageToken,
  parseFromDate,
  parseToken,
} from "../results/export.ts";
import { chunked } from "../results/stream.ts";
import { ResultQueries } from "../store/result-queries.ts";
import { visibleCollection } from "./collections.ts";
import { patternMeaning } from "./errors.ts";
import { sendBody } from "./results.ts";
import { COMMON_ERRORS, Envelope, NOT_FOUND_ERROR } from "./schemas.ts";

const ExportParams = {
  collection_name: Type.String({ description: "The collection's name." }),
  item_type: Type.String({ enum: [...EXPORT_TYPES], description: "What to export." }),
  from_date: Type.String({
    pattern: patternMeaning("^\\d{4}-\\d{2}-\\d{2}$", "must be a date written YYYY-MM-DD, e.g. 2026-01-31"),
    description: "Only items last seen on or after this day (UTC), YYYY-MM-DD.",
    examples: ["2026-01-31"],
  }),
};

const ExportQuery = Type.Object(
  {
    limit: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 10000,
        description: `Items per page (default ${EXPORT_PAGE_SIZE}).`,
      }),
    ),
  },
  { additionalProperties: false },
);

const ExportResult = Type.Object({
  items: Type.Array(Type.Union(EXPORT_TYPES.map((type) => EXPORT_ITEMS[type])), {
    description:
      "entities: ExportEntity; issues: the issues result's items; applications and hosts: the matching result's items with an `id` (hosts also `ip`).",
  }),
  more_results: Type.Boolean({ description: "Another page follows." }),
  last_evaluated_key: ExportKeySchema,
});

const DESCRIPTION = [
  "The collection's entities, issues, applications or hosts last seen on or after `from_date`, a page at a time, in a stable order; each item has an `id` unique in the collection and stable across runs.",
  "While `more_results` is true, ask for the next page by appending standard base64 of `JSON.stringify(last_evaluated_key)` to this URL (it may contain `/`, `+` and `=`).",
  "Every page reads the run the first page read, so a run finishing during an export neither repeats nor skips an item. An empty `items` with `more_results` false before any run has finished.",
  "A malformed date, an unknown item type or a token this export did not give answer 400.",
].join(" ");

export const exportRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { collections } = app.services;
  const queries = new ResultQueries(app.services.store.db);

  async function answer(
    request: FastifyRequest<{
      Params: { collection_name: string; item_type: string; from_date: string; "*"?: string };
      Querystring: { limit?: number };
    }>,
    reply: FastifyReply,
  ) {
    const params = request.params;
    const itemType = params.item_type as ExportType;
    const lastSeenFrom = parseFromDate(params.from_date);
    // The collection first: one you cannot see answers 404 whatever the token, like one that does not exist.
    const collection = await visibleCollection(collections, request.principal, params.collection_name);
    const token = params["*"] ?? "";
    const after: ExportKey | undefined = token === "" ? undefined : parseToken(token, itemType);
    let run = await queries.run(collection);
    if (after) {
      // The run the first page read; a token of another collection names no run of this one.
      try {
        run = await queries.run(collection, after.run_id);
      } catch {
        throw badRequest(
          `The page token reads run ${after.run_id}, which is not a finished run of collection "${collection.name}"; start again from the first page (the URL without a token).`,
          [{ field: "page_token", message: "names a run this collection does not have" }],
        );
      }
    }
    const body = exportPage(queries, {
      itemType,
      collectionName: collection.name,
      run,
      lastSeenFrom,
      after,
      size: request.query.limit ?? EXPORT_PAGE_SIZE,
    });
    return sendBody(request, reply, chunked(body), "json");
  }

  const schema = {
    tags: ["Results"],
    querystring: ExportQuery,
    response: {
      200: {
        description: "The envelope around one page: its items, whether more follow, and where it ended.",
        ...Envelope(ExportResult),
      },
      ...COMMON_ERRORS,
      ...NOT_FOUND_ERROR,
    },
  };
  app.get(
    "/:collection_name/export/:item_type/from_date/:from_date",
    {
      schema: {
        ...schema,
        summary: "Export: the first page of a collection's entities, issues, applications or hosts",
        description: DESCRIPTION,
        params: Type.Object(ExportParams),
      },
    },
    answer,
  );
  app.get(
    "/:collection_name/export/:item_type/from_date/:from_date/*",
    {
      schema: {
        ...schema,
        summary: "Export: the page after a page token",
        description: DESCRIPTION,
        params: Type.Object({
          ...ExportParams,
          "*": Type.String({
            examples: [
              pageToken({ item_type: "entities", run_id: 1, kind: "Domain", name: "www.example.com" }),
            ],
            description:
              "Standard base64 of JSON.stringify(last_evaluated_key) of the previous page (may contain /, + and =); empty for the first page.",
          }),
        }),
      },
    },
    answer,
  );
};
