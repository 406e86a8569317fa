/**
 * Where tests find PostgreSQL, Redis and MariaDB. With CI set, a missing service fails the test; elsewhere the
 * test is skipped with a sentence saying why.
 */
import { connect } from "node:net";

export const POSTGRES_URL =
  process.env.SIGHTLINE_TEST_POSTGRES_URL ?? "postgres://postgres@127.0.0.1:5432/postgres";
export const REDIS_URL = process.env.SIGHTLINE_TEST_REDIS_URL ?? "redis://127.0.0.1:6379";
/** The machine's MariaDB (or MySQL), which the exposure checks greet; only its address is used. */
export const MARIADB_URL = process.env.SIGHTLINE_TEST_MARIADB_URL ?? "mysql://127.0.0.1:3306";

function reachable(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    // Generous: on a loaded machine a loopback connect can wait on a busy event loop for a while.
    const socket = connect({ host: hostname, port: Number(port), timeout: 10_000 });
    socket.once("connect", () => {
      socket.destroy();
      resolve(true);
    });
    socket.once("error", () => resolve(false));
    socket.once("timeout", () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** undefined when the service may be used; otherwise the reason to skip. Throws under CI. */
export async function serviceSkipReason(name: string, url: string): Promise<string | undefined> {
  if (await reachable(url)) return undefined;
  const reason = `${name} is not reachable at ${url}`;
  if (process.env.CI) throw new Error(`${reason}, and CI requires it`);
  return `${reason}; skipping its tests (they are required when CI is set)`;
}
