/**
 * A host that accepts every port it is asked on and says nothing (a tarpit, or a SYN proxy in front of
 * a firewall), with one real service behind it that greets: what a scan of such a host must tell apart.
 */
import { createServer, type Server, type Socket } from "node:net";
import { type Closable, listenTcp } from "./sockets.ts";

export interface Tarpit {
  host: string;
  /** The ports it accepts on, silent. */
  silentPorts: number[];
  /** The one port where a service greets (SSH). */
  greetingPort: number;
  stop(): Promise<void>;
}

const GREETING = "SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n";

/** A tarpit on `host`, accepting on `count` ports the system picks, and an SSH greeting on one more. */
export async function startTarpit(host: string, count: number): Promise<Tarpit> {
  const sockets = new Set<Socket>();
  const hold = (socket: Socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    socket.setTimeout(10_000, () => socket.destroy());
  };
  const listeners: Array<{ server: Server; closable: Closable }> = [];
  const listen = async (onConnection: (socket: Socket) => void) => {
    const server = createServer(onConnection);
    const closable = await listenTcp(server, host, 0);
    listeners.push({ server, closable });
    return (server.address() as { port: number }).port;
  };
  const silentPorts: number[] = [];
  for (let n = 0; n < count; n++) silentPorts.push(await listen(hold));
  const greetingPort = await listen((socket) => {
    hold(socket);
    socket.write(GREETING);
  });
  return {
    host,
    silentPorts,
    greetingPort,
    async stop() {
      for (const socket of sockets) socket.destroy();
      await Promise.all(listeners.map(({ closable }) => closable.close()));
    },
  };
}
