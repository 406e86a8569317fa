/**
 * One UDP question and its answer: a datagram sent from a fresh socket connected to the asked address
 * and port, the first datagrams that come back from there (others are ignored), read until `complete` says the answer is
 * whole, the datagram or byte cap, or the deadline. A service that floods replies costs at most the
 * caps: the socket is closed the moment one is reached.
 */
import { createSocket, type Socket } from "node:dgram";
import { isIPv6 } from "node:net";

export interface UdpQuestion {
  host: string;
  port: number;
  payload: Buffer;
  timeoutMs: number;
  signal: AbortSignal;
  /** At most this many datagrams are kept (default 4). */
  maxDatagrams?: number;
  /** At most this many bytes are kept in all (default 16 KB). */
  maxBytes?: number;
  /** Whether the datagrams so far are the whole answer (default: the first one is). */
  complete?(datagrams: Buffer[]): boolean;
  /** Called at the first sign that the address is in use: a datagram from the port, or its refusal. */
  heard?(): void;
}

export interface UdpAnswer {
  datagrams: Buffer[];
  /** Datagrams that arrived past the caps and were not read (a flood shows here). */
  dropped: number;
}

/** Sends the question; answers undefined when nothing came back in time. */
export function udpAsk(question: UdpQuestion): Promise<UdpAnswer | undefined> {
  if (question.signal.aborted) return Promise.resolve(undefined);
  const maxDatagrams = question.maxDatagrams ?? 4;
  const maxBytes = question.maxBytes ?? 16 * 1024;
  const complete = question.complete ?? ((datagrams: Buffer[]) => datagrams.length > 0);
  return new Promise((resolve) => {
    const socket: Socket = createSocket({ type: isIPv6(question.host) ? "udp6" : "udp4" });
    const datagrams: Buffer[] = [];
    let bytes = 0;
    let dropped = 0;
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      question.signal.removeEventListener("abort", finish);
      socket.removeAllListeners("message");
      socket.on("error", () => {});
      try {
        socket.close();
      } catch {
        // already closed
      }
      resolve(datagrams.length > 0 ? { datagrams, dropped } : undefined);
    };
    const timer = setTimeout(finish, question.timeoutMs);
    question.signal.addEventListener("abort", finish, { once: true });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code === "ECONNREFUSED" && !done) question.heard?.();
      finish();
    });
    socket.on("message", (message, remote) => {
      if (done) return;
      if (remote.port !== question.port || normalise(remote.address) !== normalise(question.host)) return;
      question.heard?.();
      if (datagrams.length >= maxDatagrams || bytes >= maxBytes) {
        dropped++;
        return finish();
      }
      const kept = message.subarray(0, maxBytes - bytes);
      datagrams.push(kept);
      bytes += kept.length;
      if (complete(datagrams) || datagrams.length >= maxDatagrams || bytes >= maxBytes) finish();
    });
    // Connected, so the kernel hands an ICMP port unreachable to the socket as ECONNREFUSED: a closed
    // port ends its question at once instead of costing the whole wait (nmap's "closed").
    socket.connect(question.port, question.host, () => {
      if (done) return;
      socket.send(question.payload, (error) => {
        if (error) finish();
      });
    });
  });
}

const normalise = (address: string) => address.replace(/^::ffff:/, "").toLowerCase();
