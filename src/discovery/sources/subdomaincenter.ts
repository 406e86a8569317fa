/** subdomain.center: `GET /?domain=<domain>` answers a JSON array of names. */
import { type PassiveSource, stringsOf } from "./source.ts";

export const subdomaincenter: PassiveSource = {
  id: "subdomaincenter",
  consumes: ["Domain"],
  async query({ target, client, add }) {
    const { value } = await client.json<unknown>({ path: "/", query: { domain: target } });
    if (!Array.isArray(value)) throw new Error("subdomain.center answered something other than a JSON array");
    add(stringsOf(value));
  },
};
