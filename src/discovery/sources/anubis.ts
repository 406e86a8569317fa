/** Anubis (jldc.me): `GET /anubis/subdomains/<domain>` answers a JSON array of names. */
import { type PassiveSource, stringsOf } from "./source.ts";

export const anubis: PassiveSource = {
  id: "anubis",
  consumes: ["Domain"],
  async query({ target, client, add }) {
    const { value } = await client.json<unknown>({
      path: `/anubis/subdomains/${encodeURIComponent(target)}`,
    });
    if (!Array.isArray(value)) throw new Error("Anubis answered something other than a JSON array");
    add(stringsOf(value));
  },
};
