/**
 * A value or null, as JSON Schema's list of types (`{"type": ["string", "null"]}`), not as `anyOf`.
 *
 * Fastify serialises answers with fast-json-stringify, which picks an `anyOf` branch by validating the
 * value with Ajv: each such validator is compiled on the first answer that needs it (40 ms for a run's
 * schema, 100–200 ms on a busy server: the whole event loop waits, once per process) and run on every
 * answer after. A list of types it checks with `typeof`. OpenAPI 3.1 reads either form the same.
 */
import { type Static, type TSchema, type TSchemaOptions, type TUnsafe, Type } from "typebox";

export function OrNull<T extends TSchema>(
  schema: T,
  options: TSchemaOptions = {},
): TUnsafe<Static<T> | null> {
  const { type } = schema as { type?: unknown };
  if (typeof type !== "string")
    throw new Error("OrNull takes a schema of one type (string, integer, object, …)");
  return Type.Unsafe<Static<T> | null>({ ...schema, ...options, type: [type, "null"] });
}
