/**
 * urlscan.io's search API: `GET /api/v1/search/?q=domain:<domain>&size=100` answers `{results: [{task:
 * {domain}, page: {domain}, sort: [...]}], has_more}`; the next page is asked with `search_after=` the
 * last result's `sort` values joined by commas.
 */
import { field, type PassiveSource } from "./source.ts";

export const urlscan: PassiveSource = {
  id: "urlscan",
  consumes: ["Domain"],
  async query({ target, client, add, maxPages }) {
    let after: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const { value } = await client.json<unknown>({
        path: "/api/v1/search/",
        query: { q: `domain:${target}`, size: 100, search_after: after },
      });
      const results = field(value, "results");
      if (!Array.isArray(results)) throw new Error("urlscan.io's answer has no results list");
      const names = results.flatMap((result) =>
        [field(field(result, "page"), "domain"), field(field(result, "task"), "domain")].filter(
          (name): name is string => typeof name === "string",
        ),
      );
      if (!add(names) || field(value, "has_more") !== true || results.length === 0) return;
      const sort = field(results[results.length - 1], "sort");
      if (!Array.isArray(sort)) return;
      after = sort.join(",");
    }
  },
};
