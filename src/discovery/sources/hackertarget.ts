/**
 * HackerTarget's host search: `GET /hostsearch/?q=<domain>` answers CSV lines `host,address`; an error
 * is a single plain line ("error check your search parameter", "API count exceeded …").
 */
import { SourceFailure } from "../net/source-client.ts";
import type { PassiveSource } from "./source.ts";

export const hackertarget: PassiveSource = {
  id: "hackertarget",
  consumes: ["Domain"],
  async query({ target, client, add }) {
    const { text } = await client.text({ path: "/hostsearch/", query: { q: target } });
    const lines = text.split(/\r?\n/).filter((line) => line.trim() !== "");
    if (lines.length === 1 && !lines[0]!.includes(","))
      throw new SourceFailure(`refused: ${lines[0]!.slice(0, 100)}`);
    add(lines.map((line) => line.split(",")[0]!));
  },
};
