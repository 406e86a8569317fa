/**
 * crt.sh: `GET /?q=%.<domain>&output=json` answers a JSON array of certificate entries whose
 * `common_name` and `name_value` (newline-separated SANs) hold the names. No paging: one answer.
 */
import { field, type PassiveSource } from "./source.ts";

export const crtsh: PassiveSource = {
  id: "crtsh",
  consumes: ["Domain"],
  async query({ target, client, add }) {
    const { value } = await client.json<unknown[]>({
      path: "/",
      query: { q: `%.${target}`, output: "json" },
    });
    if (!Array.isArray(value)) throw new Error("crt.sh answered something other than a JSON array");
    for (const entry of value) {
      const names = [field(entry, "common_name"), ...String(field(entry, "name_value") ?? "").split("\n")];
      if (!add(names.filter((name): name is string => typeof name === "string" && name !== ""))) return;
    }
  },
};
