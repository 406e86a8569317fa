/**
 * The passive sources this server can ask: each with whether it runs by default, whether its key is set
 * (never the key), where it is asked (the base URL without credentials) and how it fared in the latest
 * run of your collections that asked it.
 */
import type { FastifyPluginAsyncTypebox } from "@fastify/type-provider-typebox";
import { Type } from "typebox";
import { OrNull } from "../core/or-null.ts";
import { chooseSources, SOURCES, sourceKeyKey, sourceUrlKey, sumStatuses } from "../core/sources.ts";
import { RunSourceView, sourceView } from "../results/runs.ts";
import { COMMON_ERRORS, Envelope } from "./schemas.ts";

export const SourceListing = Type.Object({
  source: Type.String({ description: "The source's id, as SIGHTLINE_SOURCES names it." }),
  title: Type.String(),
  keyed: Type.Boolean({ description: "It answers only with a key." }),
  key_set: Type.Boolean({ description: "This server has its key (the key itself is never shown)." }),
  chosen: Type.Boolean({ description: "Runs created now ask it (SIGHTLINE_SOURCES, and its key)." }),
  reason: OrNull(Type.String(), { description: "Why runs do not ask it; null when they do." }),
  url: Type.String({ description: "Where it is asked (SIGHTLINE_SOURCE_<ID>_URL), without credentials." }),
  rate_limit: Type.String({ description: "Its published rate limit, the default pace." }),
  returns: Type.String(),
  documentation: Type.String(),
  last_run: OrNull(Type.Integer(), { description: "The latest run of your collections that asked it." }),
  last_status: OrNull(RunSourceView, { description: "How it fared in that run." }),
});

/** A URL as it may be shown: no user name or password. */
const shownUrl = (text: string) => {
  try {
    const url = new URL(text);
    url.username = "";
    url.password = "";
    return url.href;
  } catch {
    return "(unreadable)";
  }
};

export const sourceRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get(
    "/",
    {
      schema: {
        tags: ["Sources"],
        summary: "List the passive sources, whether each has its key, and their last status",
        response: { 200: Envelope(Type.Array(SourceListing)), ...COMMON_ERRORS },
      },
    },
    async (request) => {
      const { config, runSources } = app.services;
      const keySet = (id: string) => {
        const key = (config as unknown as Record<string, unknown>)[sourceKeyKey(id as never)];
        return typeof key === "string" && key !== "";
      };
      const { skipped } = chooseSources(config.sources, keySet);
      const latest = await runSources.latest(request.principal.teamIds);
      return {
        success: true as const,
        message: "success" as const,
        result: [...SOURCES.values()].map((info) => {
          const last = latest.get(info.id);
          return {
            source: info.id,
            title: info.title,
            keyed: info.keyed,
            key_set: info.keyed && keySet(info.id),
            chosen: skipped[info.id] === undefined,
            reason: skipped[info.id] ?? null,
            url: shownUrl(config[sourceUrlKey(info.id)]),
            rate_limit: info.rateLimit,
            returns: info.returns,
            documentation: info.documentation,
            last_run: last?.runId ?? null,
            last_status: last ? sourceView(sumStatuses(info.id, last.statuses)) : null,
          };
        }),
      };
    },
  );
};
