import type { Socket as UdpSocket } from "node:dgram";
import type { Server, Socket } from "node:net";

/** Something the lab started and must release on stop. Closing twice is harmless. */
export interface Closable {
  close(): Promise<void>;
}

export function isAddressInUse(error: unknown): boolean {
  return (error as NodeJS.ErrnoException | undefined)?.code === "EADDRINUSE";
}

/**
 * Listens and returns a closer that also destroys open connections: `server.close()` alone
 * waits for clients (keep-alive, an idle SSH banner reader) and stop() must not.
 */
export function listenTcp(server: Server, host: string, port: number): Promise<Closable> {
  const sockets = new Set<Socket>();
  server.on("connection", (socket: Socket) => {
    sockets.add(socket);
    socket.once("close", () => sockets.delete(socket));
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen({ host, port, exclusive: true }, () => {
      server.off("error", reject);
      resolve(
        closeOnce(async () => {
          const closed = new Promise<void>((done) => server.close(() => done()));
          for (const socket of sockets) socket.destroy();
          await closed;
        }),
      );
    });
  });
}

export function bindUdp(socket: UdpSocket, host: string, port: number): Promise<Closable> {
  return new Promise((resolve, reject) => {
    // A socket that failed to bind still holds its handle.
    const fail = (error: Error) => {
      socket.close();
      reject(error);
    };
    socket.once("error", fail);
    socket.bind({ address: host, port, exclusive: true }, () => {
      socket.off("error", fail);
      // A send to a vanished client must not crash the process.
      socket.on("error", () => {});
      resolve(closeOnce(() => new Promise<void>((done) => socket.close(() => done()))));
    });
  });
}

/** Tries random ports outside Linux's ephemeral range until `attempt` does not hit EADDRINUSE. */
export async function withRandomPort<T>(attempt: (port: number) => Promise<T>): Promise<T> {
  for (let tries = 0; ; tries++) {
    const port = 10_000 + Math.floor(Math.random() * 20_000);
    try {
      return await attempt(port);
    } catch (error) {
      if (!isAddressInUse(error) || tries >= 50) throw error;
    }
  }
}

function closeOnce(close: () => Promise<void>): Closable {
  let closing: Promise<void> | undefined;
  return { close: () => (closing ??= close()) };
}

/**
 * Resolves once closed handles are really gone: 'close' events fire before libuv frees a
 * handle, in the close-callbacks phase that follows the check phase of the same loop turn.
 */
export async function handlesReleased(): Promise<void> {
  await new Promise(setImmediate);
  await new Promise(setImmediate);
}
