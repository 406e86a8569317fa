/** The spec's wire formats as schema types, for every result shape. */
import { Type } from "typebox";

export const Timestamp = Type.String({ description: "YYYY-MM-DD HH:MM:SS UTC" });

export const DecimalExponent = (description: string) =>
  Type.String({ description: `${description}, as a decimal-exponent number (e.g. "0.443e3")` });

export const EntityType = Type.String({ description: "Service::Entity::<Kind>" });
