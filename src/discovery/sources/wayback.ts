/**
 * The Wayback Machine's CDX server: `GET /cdx/search/cdx?url=*.<domain>&output=json&fl=original&
 * collapse=urlkey&showResumeKey=true&limit=N` answers a JSON array of rows, the first the field names
 * (`["original"]`); with more to come, an empty row then `[<resume key>]` end it, and the next page is
 * asked with `resumeKey=<key>`. The host of each archived URL is the name.
 */
import { hostOfUrl } from "./names.ts";
import type { PassiveSource } from "./source.ts";

const PAGE = 10_000;

export const wayback: PassiveSource = {
  id: "wayback",
  consumes: ["Domain"],
  async query({ target, client, add, maxPages }) {
    let resumeKey: string | undefined;
    for (let page = 0; page < maxPages; page++) {
      const { value } = await client.json<unknown>({
        path: "/cdx/search/cdx",
        query: {
          url: `*.${target}`,
          output: "json",
          fl: "original",
          collapse: "urlkey",
          showResumeKey: "true",
          limit: PAGE,
          resumeKey,
        },
      });
      if (!Array.isArray(value)) throw new Error("the CDX server answered something other than a JSON array");
      const rows = value.filter((row): row is unknown[] => Array.isArray(row));
      const blank = rows.findIndex((row) => row.length === 0);
      const records = (blank === -1 ? rows : rows.slice(0, blank)).slice(1);
      const hosts = records.flatMap((row) => (typeof row[0] === "string" ? [hostOfUrl(row[0]) ?? ""] : []));
      if (!add(hosts.filter((host) => host !== ""))) return;
      const next = blank === -1 ? undefined : rows[blank + 1]?.[0];
      if (typeof next !== "string" || next === "") return;
      resumeKey = next;
    }
  },
};
