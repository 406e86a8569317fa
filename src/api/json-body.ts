/**
 * How request bodies are read: JSON only, uncompressed, and without the keys that poison prototypes.
 * An empty JSON body means "no body" (POST /schedule is sent with none), not a parse error.
 */
import type { FastifyInstance } from "fastify";
import fp from "fastify-plugin";
import { ApiError, badRequest } from "../core/errors.ts";

/**
 * Whether a parsed value holds a `__proto__` key or a `constructor` object with a `prototype` key anywhere:
 * harmless as JSON.parse builds them, dangerous once code merges the object into another. Walked with a
 * stack, not recursion: a body may nest hundreds of thousands of levels deep.
 */
export function hasReservedKey(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    if (node === null || typeof node !== "object") continue;
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
      continue;
    }
    if (Object.hasOwn(node, "__proto__")) return true;
    const ctor = Object.hasOwn(node, "constructor")
      ? (node as { constructor: unknown }).constructor
      : undefined;
    if (ctor && typeof ctor === "object" && Object.hasOwn(ctor, "prototype")) return true;
    for (const key of Object.keys(node)) stack.push((node as Record<string, unknown>)[key]);
  }
  return false;
}

export const jsonBodies = fp(async (app: FastifyInstance) => {
  // Fastify reads text/plain too, which would hand a JSON text sent as text/plain to the schema as a
  // string ("body must be an object"); refused instead, every non-JSON type answers 415 naming the type.
  app.removeContentTypeParser("text/plain");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
    // A byte-order mark may start JSON text (RFC 8259 lets parsers ignore it); JSON.parse would not.
    const text = (body as string).replace(/^\uFEFF/, "");
    if (text.trim() === "") return done(null, undefined);
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch (error) {
      const reason = (error as Error).message.replace(/[.\s]+$/, "");
      return done(badRequest(`The request body is not valid JSON: ${reason}.`));
    }
    // The scan only runs when the text could hold such a key: ordinary bodies pay one substring search.
    if ((text.includes("__proto__") || text.includes("constructor")) && hasReservedKey(value)) {
      return done(
        badRequest("The request body uses a reserved key (__proto__ or constructor.prototype); remove it."),
      );
    }
    done(null, value);
  });

  // Bodies are read as sent: a compressed one would be garbage to the JSON parser, so say so (RFC 7694).
  app.addHook("onRequest", async (request) => {
    const encoding = request.headers["content-encoding"];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== "identity") {
      throw new ApiError(
        415,
        "unsupported_media_type",
        "Send the request body uncompressed; Content-Encoding is not supported.",
      );
    }
  });

  // A body sent with GET or HEAD is not parsed, but it is read (and dropped) before the answer: answered
  // first, a connection the client asked to close would close with the body's rest unread, and the
  // kernel's reset could destroy the answer on its way to the client.
  app.addHook("onRequest", async (request) => {
    if (request.method !== "GET" && request.method !== "HEAD") return;
    const length = Number(request.headers["content-length"] ?? 0);
    if (!(length > 0) && request.headers["transfer-encoding"] === undefined) return;
    const limit = app.services.config.bodyLimit;
    if (length > limit)
      throw new ApiError(413, "payload_too_large", `A request body may be at most ${limit} bytes.`);
    await drain(request.raw, limit);
  });
});

/** Reads a request's body to its end and drops it, giving up past `limit` bytes. */
function drain(stream: NodeJS.ReadableStream & { destroy(): void }, limit: number): Promise<void> {
  return new Promise((resolve) => {
    let read = 0;
    stream.on("data", (chunk: Buffer) => {
      read += chunk.length;
      if (read > limit) {
        stream.destroy();
        resolve();
      }
    });
    stream.once("end", () => resolve());
    stream.once("error", () => resolve());
    stream.once("close", () => resolve());
  });
}
