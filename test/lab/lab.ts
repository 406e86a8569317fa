import { type CertificateAuthority, createCertificateAuthority } from "./certificates.ts";
import { createDnsServer, startSilentNameserver } from "./dns-server.ts";
import { closeAll, hostRecords, type RunningHost, startServices } from "./hosts.ts";
import type { ServiceContext } from "./services.ts";
import { handlesReleased, isAddressInUse } from "./sockets.ts";
import { buildTruth } from "./truth.ts";
import type { Endpoint, HostSpec, Lab, LabOptions, LabRecord, LabWorld } from "./types.ts";
import { defaultWorld } from "./world.ts";
import { normalizeName, reverseName, ZoneSet } from "./zones.ts";

/** Shared by every lab: only the port differs, so labs never collide here. */
const DNS_SERVER_HOST = "127.53.0.1";
const SILENT_NAMESERVER_HOST = "127.53.0.2";
const SOA_TIMERS = { refresh: 3600, retry: 600, expire: 604800, minimum: 300 };

/** Blocks in use by labs of this process, so a second lab picks another without probing. */
const activeBases = new Set<string>();

export async function startLab(options: LabOptions = {}): Promise<Lab> {
  if (options.base !== undefined && !/^127\.(\d{1,3})$/.test(options.base)) {
    throw new Error(`lab base must look like "127.10", not ${JSON.stringify(options.base)}`);
  }
  if (options.base !== undefined && activeBases.has(options.base)) {
    throw new Error(`a lab on ${options.base} is already running in this process`);
  }
  const ca = await createCertificateAuthority();
  const world = options.world ?? defaultWorld;
  for (let attempt = 0; ; attempt++) {
    const base = options.base ?? randomBase();
    activeBases.add(base);
    try {
      return await launch(base, world(base), ca);
    } catch (error) {
      activeBases.delete(base);
      // Another process may hold the block; a random one can move, a chosen one cannot.
      if (options.base !== undefined || !isAddressInUse(error) || attempt >= 20) throw error;
    }
  }
}

function randomBase(): string {
  for (;;) {
    const octet = 10 + Math.floor(Math.random() * 241);
    const base = `127.${octet}`;
    if (octet !== 53 && !activeBases.has(base)) return base;
  }
}

async function launch(base: string, world: LabWorld, ca: CertificateAuthority): Promise<Lab> {
  const zones = new ZoneSet();
  const [primary = "ns1.invalid"] = world.nameservers;
  const reverseZone = reverseName(base); // "127.42" -> "42.127.in-addr.arpa"
  for (const zone of [...world.zones, { name: reverseZone, axfr: false, records: [] }]) {
    const name = normalizeName(zone.name);
    zones.addZone({
      name,
      axfr: zone.axfr ?? false,
      reverse: name === reverseZone,
      records: [
        {
          name,
          type: "SOA",
          data: { mname: primary, rname: `hostmaster.${name}`, serial: 2024060100, ...SOA_TIMERS },
        },
        ...world.nameservers.map((ns): LabRecord => ({ name, type: "NS", data: ns })),
        ...zone.records,
      ],
    });
  }

  const dns = createDnsServer(zones);
  const context: ServiceContext = { dns, ca };
  const hosts = new Map<string, RunningHost>();
  const silent = await startSilentNameserver(SILENT_NAMESERVER_HOST);
  const releaseAll = async () => {
    await closeAll([...hosts.values()].flatMap((host) => host.services));
    hosts.clear();
    await Promise.all([dns.close(), silent.close()]);
    await handlesReleased();
  };

  /** Starts a host's services; its records are published separately, in a stable order. */
  const startHost = async (spec: HostSpec): Promise<{ host: RunningHost; records: LabRecord[] }> => {
    if (hosts.has(spec.ip)) throw new Error(`lab host ${spec.ip} already exists`);
    const records = hostRecords(spec);
    const outside = records.find((record) => !zones.zoneFor(record.name));
    if (outside) throw new Error(`lab host ${spec.ip}: no lab zone holds ${outside.name}`);
    // Reserve the address before awaiting, so a concurrent start of the same address fails.
    const host: RunningHost = { spec, services: [], records: [] };
    hosts.set(spec.ip, host);
    try {
      host.services = await startServices(spec, context);
    } catch (error) {
      hosts.delete(spec.ip);
      throw error;
    }
    return { host, records };
  };
  /** Publishes hosts' records in one change, so each touched zone's serial moves once. */
  const publish = (started: { host: RunningHost; records: LabRecord[] }[]) => {
    const stored = zones.add(started.flatMap(({ records }) => records));
    for (const { host, records } of started) host.records = stored.splice(0, records.length);
  };

  let resolver: Endpoint;
  try {
    resolver = await dns.listen(DNS_SERVER_HOST);
    const started = await Promise.allSettled(world.hosts.map(startHost));
    const failure = started.find((result) => result.status === "rejected");
    if (failure) throw failure.reason;
    publish(started.flatMap((result) => (result.status === "fulfilled" ? [result.value] : [])));
  } catch (error) {
    await releaseAll();
    throw error;
  }

  const dnsServer = { host: resolver.host, port: resolver.port };
  const silentNameserver = { host: silent.host, port: silent.port };
  let stopping: Promise<void> | undefined;
  return {
    base,
    dnsServer,
    resolver: `${dnsServer.host}:${dnsServer.port}`,
    silentNameserver,
    caPem: ca.facts.pem,
    get truth() {
      return buildTruth({
        base,
        dnsServer,
        silentNameserver,
        zones,
        hosts: hosts.values(),
        ca: ca.facts,
        bruteforceWords: world.bruteforceWords,
      });
    },
    get ports() {
      const ports = new Set<number>();
      for (const host of hosts.values()) for (const service of host.services) ports.add(service.spec.port);
      return [...ports].sort((a, b) => a - b).join(",");
    },
    ip: (suffix) => `${base}.${suffix}`,
    addHost: async (spec) => publish([await startHost(spec)]),
    async removeHost(ip) {
      const host = hosts.get(ip);
      if (!host) throw new Error(`lab host ${ip} does not exist`);
      hosts.delete(ip);
      zones.remove(host.records);
      await closeAll(host.services);
    },
    stop() {
      stopping ??= releaseAll().finally(() => activeBases.delete(base));
      return stopping;
    },
  };
}
