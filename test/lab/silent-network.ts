/**
 * Silent addresses, really: a network namespace of our own (`unshare -rn`: a user namespace too, so no
 * privileges are needed where user namespaces are allowed) that routes 10.251.0.0/16 to a neighbour that
 * does not exist. A connection there is never answered nor refused, as an unused address of a real block;
 * loopback cannot give that (it refuses every closed port at once). ANSWERING_NET, inside it, is local
 * instead: its addresses refuse every port at once, as the addresses in use of a real block answer. Used by
 * the host-discovery test and the silent-space benchmark.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createDnsServer } from "./dns-server.ts";
import { ZoneSet } from "./zones.ts";

const run = promisify(execFile);

/** The silent block inside the namespace. */
export const SILENT_NET = "10.251.0.0/16";
/** Addresses of the silent block that answer (refuse) at once. */
export const ANSWERING_NET = "10.251.255.0/24";

const SETUP = [
  "ip link set lo up",
  "ip link add sl0 type veth peer name sl1",
  "ip link set sl0 up",
  "ip link set sl1 up",
  "ip addr add 10.250.0.1/24 dev sl0",
  "ip neigh add 10.250.0.2 lladdr 02:00:00:00:00:02 dev sl0",
  `ip route add ${SILENT_NET} via 10.250.0.2 dev sl0`,
  `ip route add local ${ANSWERING_NET} dev lo`,
].join(" && ");

/** Runs a Node script in a namespace of its own with the silent block; answers the last line it printed. */
export async function inSilentNetwork(
  script: string,
  args: string[],
  options: { timeoutMs: number; nodeOptions?: string[] },
): Promise<string> {
  const command = [process.execPath, ...(options.nodeOptions ?? []), script, ...args]
    .map((part) => `"${part}"`)
    .join(" ");
  const { stdout } = await run("unshare", ["-rn", "sh", "-c", `${SETUP} && exec ${command}`], {
    timeout: options.timeoutMs,
    maxBuffer: 16 * 1024 * 1024,
  });
  return stdout.trim().split("\n").pop() ?? "";
}

/** undefined when such a namespace can be made here, else why not (the first line of the error). */
export async function silentNetworkUnavailable(): Promise<string | undefined> {
  try {
    await run("unshare", ["-rn", "sh", "-c", SETUP]);
    return undefined;
  } catch (error) {
    return `a network namespace of our own is not available here (unshare -rn with ip: ${(error as Error).message.split("\n")[0]})`;
  }
}

/**
 * A resolver for a script run in the namespace, on the namespace's own 127.0.0.1:53: it answers every
 * reverse name of 10.251.0.0/16 at once with NXDOMAIN, as a real resolver answers for unused space.
 * Without it each address's reverse look-up waited out the DNS timeout, which no real block costs.
 */
export async function startSilentResolver() {
  const zones = new ZoneSet();
  const zone = "251.10.in-addr.arpa";
  zones.addZone({
    name: zone,
    axfr: false,
    reverse: true,
    records: [
      {
        name: zone,
        type: "SOA",
        data: {
          mname: `ns.${zone}`,
          rname: `hostmaster.${zone}`,
          serial: 1,
          refresh: 3600,
          retry: 600,
          expire: 86400,
          minimum: 60,
        },
      },
    ],
  });
  return createDnsServer(zones).listen("127.0.0.1", 53);
}
