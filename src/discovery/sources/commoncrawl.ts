/**
 * The Common Crawl index server: `GET /collinfo.json` lists the crawls (newest first, each with its
 * `id`); the newest's index is `GET /<id>-index?url=*.<domain>&output=json&fl=url&page=N`, answering
 * one JSON object a line. `showNumPages=true` first says how many pages there are (`{"pages": N}`).
 */
import { parseJson, SourceFailure } from "../net/source-client.ts";
import { hostOfUrl } from "./names.ts";
import { field, type PassiveSource } from "./source.ts";

export const commoncrawl: PassiveSource = {
  id: "commoncrawl",
  consumes: ["Domain"],
  async query({ target, client, add, maxPages }) {
    const { value: crawls } = await client.json<unknown>({ path: "/collinfo.json" });
    const id = Array.isArray(crawls) ? field(crawls[0], "id") : undefined;
    if (typeof id !== "string" || !/^[A-Za-z0-9-]+$/.test(id))
      throw new SourceFailure("parse error: collinfo.json names no crawl");
    const index = { path: `/${id}-index`, query: { url: `*.${target}`, output: "json", fl: "url" } };
    const { value: pages } = await client.json<unknown>({
      ...index,
      query: { ...index.query, showNumPages: "true" },
    });
    const count = Number(field(pages, "pages") ?? 1);
    for (let page = 0; page < Math.min(Number.isFinite(count) ? count : 1, maxPages); page++) {
      const answer = await client.request({ ...index, query: { ...index.query, page } }, (s) => s === 404);
      if (answer.status === 404) return;
      let lines = answer.body.toString("utf8").split("\n");
      if (answer.truncated) lines = lines.slice(0, -1);
      const hosts: string[] = [];
      for (const line of lines) {
        if (line.trim() === "") continue;
        const url = field(parseJson<unknown>({ body: Buffer.from(line), truncated: false }, 0), "url");
        const host = typeof url === "string" ? hostOfUrl(url) : undefined;
        if (host) hosts.push(host);
      }
      if (!add(hosts)) return;
    }
  },
};
