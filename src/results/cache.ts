/**
 * Rendered result bodies kept per process. A finished run's results never change, so a response is a
 * function of its key (collection, run, endpoint, query, format, encoding, and whatever else the route
 * reads at request time — see `resultCacheKey` in src/api/list-answers.ts); the bytes written for the first
 * request of a key are answered again to the next ones without reading the database.
 *
 * Small bodies live in memory from the second request of their key (a key's first filling only remembers
 * its digest): most pages are read once — a client paging through a list, a poller asking for new pages —
 * and admitting every one of them churned the memory tier, whose evicted Buffers are external memory that
 * V8 gives back only in a full collection (a /16 run's server peaked near 1 GB with 250 MB of it).
 * Larger ones go to files under `<data dir>/result-cache/<process>/` from the first request: the first
 * response is written to a temporary file while it streams to its client and renamed when complete, so a
 * failed or aborted response leaves nothing behind, and concurrent first requests of one key each write
 * their own file (the first to complete is kept). Both tiers are bounded and evict the least recently
 * used. Each process has its own folder and index (never shared: keys are immutable, so several servers
 * on one PostgreSQL may each keep their own); folders of processes of this host that are gone are removed
 * at start. A file found missing or of the wrong size is forgotten and the answer read again.
 */
import { createHash, randomBytes } from "node:crypto";
import { close, closeSync, fstatSync, mkdirSync, openSync, read, readdirSync, rmSync } from "node:fs";
import type { FileHandle } from "node:fs/promises";
import { open, rename, rm } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { Transform, type TransformCallback, type Writable } from "node:stream";
import { setBounded } from "../core/bounded-map.ts";

/** A cached body found: its bytes in memory, or an open descriptor of its file (the holder closes it). */
export type CacheHit =
  | { entry: CachedBody; memory: Buffer; fd?: undefined }
  | { entry: CachedBody; fd: number };

/** What a cached response needs besides its body: the headers that do not depend on the request URL. */
export interface CachedHeaders {
  contentType: string;
  contentEncoding?: string;
  contentDisposition?: string;
  /** X-Total-Count (the Link header is made from it and the request's own URL). */
  total: number;
}

export interface CachedBody {
  headers: CachedHeaders;
  /** The strong ETag of the answer: `etagOf` its key. */
  etag: string;
  size: number;
  /** The bytes, for a body kept in memory. */
  memory?: Buffer;
  /** The file, for a body kept on disk. */
  file?: string;
}

export interface ResultCacheOptions {
  /** The folder the per-process folders are made in. */
  directory: string;
  /** Bytes of files kept; 0 keeps no file. */
  diskBytes: number;
  /** Bytes of bodies kept in memory; 0 keeps none there. */
  memoryBytes: number;
}

/** Bytes read from a cached file at a time: few reads, little held per response. */
const READ_CHUNK = 1024 * 1024;

/** Bodies up to this share of the memory bound stay in memory; larger ones go to a file. */
const MEMORY_ITEM_SHARE = 16;

/** Digests of keys filled once and not kept in memory, remembered so that a second filling keeps its body. */
const SEEN_KEYS = 16_384;

/** A least-recently-used map with a byte bound; `onEvict` is told about what it drops. */
class Lru {
  readonly #entries = new Map<string, CachedBody>();
  #bytes = 0;
  readonly bound: number;
  readonly #onEvict: (entry: CachedBody) => void;
  constructor(bound: number, onEvict: (entry: CachedBody) => void = () => {}) {
    this.bound = bound;
    this.#onEvict = onEvict;
  }
  get bytes() {
    return this.#bytes;
  }
  get size() {
    return this.#entries.size;
  }
  get(key: string): CachedBody | undefined {
    const entry = this.#entries.get(key);
    if (entry) {
      this.#entries.delete(key);
      this.#entries.set(key, entry);
    }
    return entry;
  }
  has(key: string) {
    return this.#entries.has(key);
  }
  set(key: string, entry: CachedBody): void {
    this.delete(key);
    this.#entries.set(key, entry);
    this.#bytes += entry.size;
    for (const [oldest, old] of this.#entries) {
      if (this.#bytes <= this.bound) break;
      this.#entries.delete(oldest);
      this.#bytes -= old.size;
      this.#onEvict(old);
    }
  }
  delete(key: string): void {
    const entry = this.#entries.get(key);
    if (!entry) return;
    this.#entries.delete(key);
    this.#bytes -= entry.size;
    this.#onEvict(entry);
  }
  clear(): void {
    for (const key of [...this.#entries.keys()]) this.delete(key);
  }
}

const processAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
};

export class ResultCache {
  readonly directory: string;
  readonly #memory: Lru;
  readonly #disk: Lru;
  readonly #memoryItemBytes: number;
  /** Keys (by digest) whose body has been filled once, so the next filling of one keeps it in memory. */
  readonly #seen = new Map<string, true>();
  #closed = false;

  constructor(options: ResultCacheOptions) {
    const host = hostname().replace(/[^A-Za-z0-9.-]/g, "_");
    // Folders of processes of this host that have gone (a crash, a kill) are removed; others are left.
    try {
      for (const name of readdirSync(options.directory)) {
        const match = /^(.+)-(\d+)-[0-9a-f]+$/.exec(name);
        if (match && match[1] === host && !processAlive(Number(match[2])))
          rmSync(join(options.directory, name), { recursive: true, force: true });
      }
    } catch {
      // No folder yet.
    }
    this.directory = join(options.directory, `${host}-${process.pid}-${randomBytes(4).toString("hex")}`);
    if (options.diskBytes > 0) mkdirSync(this.directory, { recursive: true });
    this.#memory = new Lru(options.memoryBytes);
    this.#disk = new Lru(options.diskBytes, (entry) => {
      if (entry.file) rmSync(entry.file, { force: true });
    });
    this.#memoryItemBytes = Math.floor(options.memoryBytes / MEMORY_ITEM_SHARE);
  }

  /** Whether anything is kept at all (SIGHTLINE_RESULT_CACHE_BYTES=0 turns the cache off). */
  get enabled(): boolean {
    return !this.#closed && (this.#memory.bound > 0 || this.#disk.bound > 0);
  }

  /** Bytes and entries held, for metrics and tests. */
  get usage() {
    return {
      memoryBytes: this.#memory.bytes,
      memoryEntries: this.#memory.size,
      diskBytes: this.#disk.bytes,
      diskEntries: this.#disk.size,
    };
  }

  /**
   * The cached body of a key and, for a file, an open descriptor of it (so an eviction between now and
   * the read does not matter; `writeCachedFile` closes it). A file that is gone or of another size than written is forgotten:
   * the caller reads the answer again.
   */
  lookup(key: string): CacheHit | undefined {
    const inMemory = this.#memory.get(key);
    if (inMemory?.memory) return { entry: inMemory, memory: inMemory.memory };
    const onDisk = this.#disk.get(key);
    if (!onDisk?.file) return undefined;
    let fd: number;
    try {
      fd = openSync(onDisk.file, "r");
    } catch {
      this.#disk.delete(key);
      return undefined;
    }
    if (fstatSync(fd).size !== onDisk.size) {
      closeSync(fd);
      this.#disk.delete(key);
      return undefined;
    }
    return { entry: onDisk, fd };
  }

  /**
   * A pass-through for a response of a key not held: what flows through it reaches the client unchanged
   * and is kept — in memory while small, else in a temporary file — and becomes the key's entry once the
   * body has ended; a small body only if the key was filled before (see the file's comment). An error or
   * an abort before the end drops what was kept.
   */
  filling(key: string, headers: CachedHeaders): Transform {
    if (!this.enabled) return new Transform({ transform: (chunk, _encoding, done) => done(null, chunk) });
    const seenAs = digest(key);
    const admitToMemory = this.#seen.has(seenAs);
    if (!admitToMemory) setBounded(this.#seen, seenAs, true, SEEN_KEYS);
    const parts: Buffer[] = [];
    let size = 0;
    let file: { path: string; handle: Promise<FileHandle> } | undefined;
    let dropped = false;
    const cache = this;
    const drop = () => {
      dropped = true;
      parts.length = 0;
      if (file) {
        const { path, handle } = file;
        file = undefined;
        handle
          .then((h) => h.close())
          .catch(() => {})
          .finally(() => rm(path, { force: true }).catch(() => {}));
      }
    };
    const keep = async (chunk: Buffer) => {
      if (dropped) return;
      size += chunk.length;
      if (!file && size <= this.#memoryItemBytes) {
        parts.push(chunk);
        return;
      }
      if (size > this.#disk.bound) return drop();
      if (!file) {
        const path = join(this.directory, `${digest(key)}.${randomBytes(6).toString("hex")}.tmp`);
        file = { path, handle: open(path, "wx") };
        const held = Buffer.concat(parts);
        parts.length = 0;
        if (held.length > 0) await (await file.handle).write(held);
      }
      await (await file.handle).write(chunk);
    };
    return new Transform({
      transform(chunk: Buffer, _encoding, done: TransformCallback) {
        keep(chunk).then(
          () => done(null, chunk),
          () => {
            // A failing disk must not fail the response: stop keeping, keep answering.
            drop();
            done(null, chunk);
          },
        );
      },
      flush(done: TransformCallback) {
        if (dropped || cache.#closed) return done();
        const etag = etagOf(key);
        if (!file) {
          if (admitToMemory) {
            cache.#memory.set(key, { headers, etag, size, memory: Buffer.concat(parts) });
            cache.#seen.delete(seenAs);
          }
          parts.length = 0;
          return done();
        }
        const { path, handle } = file;
        file = undefined;
        // Its own name (not the key's): a concurrent first response of the key may be renamed too.
        const final = path.replace(/\.tmp$/, ".body");
        handle
          .then((h) => h.close())
          .then(async () => {
            if (cache.#closed || cache.#disk.has(key)) return rm(path, { force: true });
            await rename(path, final);
            cache.#disk.set(key, { headers, etag, size, file: final });
          })
          .catch(() => rm(path, { force: true }).catch(() => {}))
          .finally(() => done());
      },
      destroy(error, done) {
        drop();
        done(error);
      },
    });
  }

  /** Forgets every entry and removes the process's folder. */
  close(): void {
    this.#closed = true;
    this.#memory.clear();
    this.#disk.clear();
    this.#seen.clear();
    rmSync(this.directory, { recursive: true, force: true });
  }
}

/** A file-name-safe digest of a key. */
/**
 * The strong ETag of a result answer, derived from its cache key: a finished run never changes, so the
 * key (run, route, normalised query, format, encoding, what else the answer reads) names the bytes, and a
 * repeat can be answered 304 before any row is read.
 */
export const etagOf = (key: string) =>
  `"${createHash("sha256").update(key).digest("base64url").slice(0, 32)}"`;

const digest = (key: string) => createHash("sha256").update(key).digest("hex").slice(0, 40);

/**
 * Read buffers of cached files, kept for the next response. A fresh megabyte for every read of a large
 * answer made V8 run full garbage collections all through it (external memory counts towards its
 * limits), which cost several times the copying itself.
 */
const spareChunks: Buffer[] = [];
const SPARE_CHUNKS_KEPT = 8;

/**
 * Writes `size` bytes of a cached file to `out` and ends it, one read buffer at a time, reusing buffers
 * once the socket has taken their bytes; stops (and closes the descriptor) if `out` closes first.
 * A read error or a file shorter than `size` destroys `out`: its headers promised `size` bytes.
 */
export function writeCachedFile(fd: number, size: number, out: Writable): void {
  let offset = 0;
  let reading = false;
  let done = false;
  let closed = false;
  // The descriptor is closed once, and only when no read is in flight: its number could be reused.
  const finish = (error?: Error) => {
    if (!done) {
      done = true;
      if (error) out.destroy(error);
    }
    if (reading || closed) return;
    closed = true;
    close(fd, () => {});
  };
  const release = (chunk: Buffer) => {
    if (spareChunks.length < SPARE_CHUNKS_KEPT) spareChunks.push(chunk);
  };
  out.once("close", () => finish());
  const next = () => {
    if (done) return;
    if (offset >= size) {
      out.end();
      return finish();
    }
    const chunk = spareChunks.pop() ?? Buffer.allocUnsafeSlow(READ_CHUNK);
    reading = true;
    read(fd, chunk, 0, Math.min(READ_CHUNK, size - offset), offset, (error, bytesRead) => {
      reading = false;
      if (done || error || bytesRead === 0) {
        release(chunk);
        return finish(
          done ? undefined : (error ?? new Error(`a cached file ended ${size - offset} bytes early`)),
        );
      }
      offset += bytesRead;
      const part = bytesRead === chunk.length ? chunk : chunk.subarray(0, bytesRead);
      if (out.write(part, () => release(chunk))) next();
      else out.once("drain", next);
    });
  };
  next();
}
