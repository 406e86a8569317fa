/** What every result view shares: the wire form of an entity's common fields. */

import { type Static, Type } from "typebox";
import { text } from "../core/details.ts";
import { entityTypeName, formatDecimalExponent, formatTimestamp } from "../core/formats.ts";
import type { EntityRecord } from "../store/entities.ts";

/** The spec's Entity fields, in its formats. */
export function entityFields(
  entity: Pick<EntityRecord, "name" | "kind" | "firstSeen" | "lastSeen" | "hidden" | "scoped" | "aliasGroup">,
) {
  return {
    name: entity.name,
    type: entityTypeName(entity.kind),
    first_seen: formatTimestamp(entity.firstSeen),
    last_seen: formatTimestamp(entity.lastSeen),
    hidden: entity.hidden,
    scoped: entity.scoped,
    alias_group: formatDecimalExponent(entity.aliasGroup),
  };
}

export { strings, text } from "../core/details.ts";

export const Geolocation = Type.Object(
  {
    continent: Type.String(),
    country: Type.String(),
    country_code: Type.String(),
    continent_code: Type.String(),
  },
  {
    description: "Where the address is registered; all empty for loopback, private and other special ranges.",
  },
);
export type Geolocation = Static<typeof Geolocation>;

export function geolocation(value: unknown): Geolocation {
  const place = (typeof value === "object" && value !== null ? value : {}) as Record<string, unknown>;
  return {
    continent: text(place.continent),
    country: text(place.country),
    country_code: text(place.country_code),
    continent_code: text(place.continent_code),
  };
}

/** Numeric order for IPv4, then text order: 10.0.0.2 before 10.0.0.10. */
export function compareAddresses(a: string, b: string): number {
  const key = (address: string) =>
    address.includes(":")
      ? `1${address}`
      : `0${address
          .split(".")
          .map((part) => part.padStart(3, "0"))
          .join(".")}`;
  return key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0;
}
