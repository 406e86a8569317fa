/**
 * GitHub code search: `GET /search/code?q="<domain>"&per_page=100&page=N` with a token and the
 * text-match media type answers `{total_count, items: [{text_matches: [{fragment}]}]}`; names ending in
 * the domain are read out of the fragments. Pages go on while a page is full.
 */
import { namesInText } from "./names.ts";
import { field, type PassiveSource } from "./source.ts";

const PER_PAGE = 100;

export const github: PassiveSource = {
  id: "github",
  consumes: ["Domain"],
  async query({ target, key, client, add, maxPages }) {
    for (let page = 1; page <= Math.min(maxPages, 10); page++) {
      const { value } = await client.json<unknown>({
        path: "/search/code",
        query: { q: `"${target}"`, per_page: PER_PAGE, page },
        headers: {
          authorization: `Bearer ${key}`,
          accept: "application/vnd.github.text-match+json",
          "x-github-api-version": "2022-11-28",
        },
      });
      const items = field(value, "items");
      if (!Array.isArray(items)) throw new Error("GitHub's answer has no items list");
      const fragments = items.flatMap((item) => {
        const matches = field(item, "text_matches");
        return Array.isArray(matches) ? matches.map((match) => String(field(match, "fragment") ?? "")) : [];
      });
      if (!add(fragments.flatMap((fragment) => namesInText(fragment, target))) || items.length < PER_PAGE)
        return;
    }
  },
};
