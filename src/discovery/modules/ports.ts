/**
 * TCP connect scan of an address over the configured port list, with banner grabbing: an open port is
 * read for what the service says first, within a short bound (web and TLS ports are not waited on).
 * Every connection goes through the throttle (global and per-host concurrency, rate) and honours the
 * run's abort signal. Open ports become NetworkService entities named "1.2.3.4:22/tcp".
 *
 * A host that accepts a connection on (nearly) every port — a SYN proxy, a tarpit, a firewall that
 * answers for what it guards — is marked (`scan.accepts_every_port`): once it has shown that, a port
 * that says nothing is not identified, and only the ports that answered as a service are listed, not
 * hundreds named by their numbers alone (those wait for the end of the scan, which shows what kind of
 * host it is; a port that answered is listed at once).
 */
import type { ServiceIdentity } from "../../core/service-identity.ts";
import { serviceName } from "../../core/service-names.ts";
import type { DiscoveryModule, DiscoverySettings } from "../module.ts";
import { type NativeProbes, nativeProbes } from "../net/native-probes.ts";
import { roundTrips } from "../net/round-trips.ts";
import { type PortState, TcpProber, type TurnOutcome } from "../net/tcp-prober.ts";
import { identifyService } from "../service-id.ts";
import { osFromBanner, SILENT_PORTS } from "../services.ts";

/** A host with at least this many open ports, nearly all it answered on, accepts every port. */
const ACCEPTS_EVERY_PORT_MIN = 32;
const ACCEPTS_EVERY_PORT_SHARE = 0.9;

/** At most this many ports per throttle slot before it is handed back (see ProbeTurn). */
const PORTS_PER_TURN = 16;
/**
 * …and no port starts on a slot held this long. With a host's ports spread over many slots, work
 * waiting for one of them waits a fraction of this; a shorter bound only cuts turns short when the
 * machine is busy (the thread's own event loop is what makes a turn long on loopback).
 */
const TURN_MS = 250;

/**
 * Host discovery (`hostDiscovery`): the ports a scan of a longer list probes first, the most common ones
 * first (nmap's TCP host discovery uses 80 and 443). An address that answers none of them — no open port,
 * no refusal — is taken to be unused and its other ports are not probed: in real blocks most addresses are
 * unused, and each would cost the whole timeout on every lane.
 */
const DISCOVERY_PORTS = [80, 443, 22, 3389, 445, 25, 21, 8080, 23, 53, 110, 143, 993, 995, 3306, 8443];
/** How many ports the first round probes, at most; a list no longer than this is scanned in one round. */
const DISCOVERY_ROUND = 8;

/** The first round of a scan of `ports`: its most common ports (else its first), or none for a short list. */
export function discoveryRound(ports: readonly number[]): number[] {
  if (ports.length <= DISCOVERY_ROUND) return [];
  const listed = new Set(ports);
  const common = DISCOVERY_PORTS.filter((port) => listed.has(port)).slice(0, DISCOVERY_ROUND);
  for (const port of ports) {
    if (common.length >= DISCOVERY_ROUND) break;
    if (!common.includes(port)) common.push(port);
  }
  return common;
}

/**
 * The probe engine of a scan: the native one when it was built and the configuration allows it
 * (`probeEngine`: `auto`, the default, or `js`), unless a rate paces every connection — that scan is
 * slow by choice, and the JS engine reads a greeting on the connection that found the port instead of
 * a second one, so each connection keeps a slot of its own.
 */
export function nativeEngine(
  settings: Pick<DiscoverySettings, "probeEngine" | "rateLimit">,
  available: NativeProbes | undefined,
): NativeProbes | undefined {
  return settings.probeEngine === "js" || settings.rateLimit > 0 ? undefined : available;
}

export const portScan: DiscoveryModule = {
  name: "ports",
  consumes: ["IpAddress"],
  produces: ["NetworkService"],
  waits: true,
  async run(entity, ctx) {
    const address = entity.name;
    if (!ctx.mayTouch(address)) {
      ctx.note(
        `${address} was not port-scanned: the deny list covers it (allow it with SIGHTLINE_SCAN_ALLOW).`,
      );
      return;
    }
    const { ports, timeoutMs, perHostConcurrency, rateLimit, limits } = ctx.settings;
    const first = ctx.settings.hostDiscovery === false ? [] : discoveryRound(ports);
    // The first round waits what the address's network has shown its round trips to be (round-trips.ts),
    // as known when each of its probes starts: the probes of many addresses wait for connection slots,
    // and their neighbours' answers meanwhile count.
    const discoveryCeilingMs = Math.min(ctx.settings.hostDiscoveryTimeoutMs ?? timeoutMs, timeoutMs);
    const discoveryFloorMs = ctx.settings.hostDiscoveryMinTimeoutMs;
    const discoveryMs = () =>
      discoveryFloorMs === undefined
        ? discoveryCeilingMs
        : roundTrips.wait(address, discoveryFloorMs, discoveryCeilingMs);
    // SSH, SMTP and FTP greet at once; a slow one still shows within the bound.
    const bannerMs = Math.min(limits.bannerTimeoutMs, timeoutMs);
    const lanes = Math.min(ports.length, perHostConcurrency);
    // A turn takes a share of the host's ports, so every lane has work; one port when a rate paces each connection.
    const perTurn =
      rateLimit > 0 ? 1 : Math.max(1, Math.min(PORTS_PER_TURN, Math.floor(ports.length / lanes)));
    const prober = new TcpProber({
      signal: ctx.signal,
      native: nativeEngine(ctx.settings, nativeProbes),
    });
    // Ports not yet probed, the next one last: a turn takes from the end and gives back what it left.
    const waiting: number[] = [];
    const open: number[] = [];
    /** Ports whose probe timed out (filtered), in the round under way. */
    let timedOut: number[] = [];
    /** Ports that answered at all: open, or refused. */
    let answered = 0;
    const identifications: Promise<void>[] = [];
    /** Open ports nothing but their number named, held until the scan shows what the host is. */
    const namedByPort: Array<{ port: number; identity: ServiceIdentity }> = [];
    /** Services listed so far. */
    let listed = 0;
    const emitService = (port: number, identity: ServiceIdentity) => {
      listed++;
      ctx.emit({
        kind: "NetworkService",
        name: serviceName(address, port),
        details: { ip_address: address, port, protocol: "tcp", ...identity },
      });
      const os = osFromBanner(identity.banner);
      if (os) ctx.emit({ kind: "IpAddress", name: address, details: { os } });
    };
    const acceptsEveryPort = () =>
      open.length >= ACCEPTS_EVERY_PORT_MIN && open.length >= ACCEPTS_EVERY_PORT_SHARE * answered;
    // An open port is named by what it answers (service-id.ts), each probe in a slot of its own.
    const identify = async (port: number, greeting: Buffer | undefined) => {
      const identity = await identifyService({
        host: address,
        port,
        greeting,
        connectMs: timeoutMs,
        firstByteMs: bannerMs,
        signal: ctx.signal,
        slot: (work) => ctx.throttle.run(address, work, ctx.signal),
      }).catch(() => undefined);
      if (!identity) return; // aborted while waiting for a slot
      // Named by its number alone: listed once the scan has shown the host does not accept every port.
      if (identity.identified_by === "port") namedByPort.push({ port, identity });
      else emitService(port, identity);
    };
    const found = (port: number, state: PortState) => {
      if (!state.open) {
        if (state.reason === "timeout") timedOut.push(port);
        return;
      }
      open.push(port);
      // A host accepting every port: a port that said nothing is not asked what it is.
      if (acceptsEveryPort() && !state.greeting?.length) return;
      // The scan waited for a greeting on this port unless it is one whose clients speak first.
      const greeting = SILENT_PORTS.has(port) ? state.greeting : (state.greeting ?? Buffer.alloc(0));
      identifications.push(identify(port, greeting));
    };
    // A lane is one throttle slot at a time; each slot probes a turn's ports, one after another.
    /** Whether a probe of the first round waited less than the whole timeout (its silence proves less). */
    let waitedShort = false;
    const lane = async (waitFor: () => number) => {
      while (waiting.length > 0 && !ctx.signal.aborted) {
        let turn: number[] = [];
        let outcome: TurnOutcome;
        let began = 0;
        try {
          outcome = await ctx.throttle.run(
            address,
            () => {
              // Ports are taken once the slot is ours, so a lane waiting for one holds none.
              turn = waiting.splice(-perTurn).reverse();
              const waitMs = waitFor();
              if (waitMs < timeoutMs) waitedShort = true;
              began = performance.now();
              return prober.run({
                host: address,
                ports: turn,
                bannerMs: turn.map((port) => (SILENT_PORTS.has(port) ? 0 : bannerMs)),
                timeoutMs: waitMs,
                bannerBytes: limits.bannerMaxBytes,
                turnMs: TURN_MS,
              });
            },
            ctx.signal,
          );
        } catch {
          return; // aborted while waiting for a slot
        }
        const tookMs = performance.now() - began;
        waiting.push(...turn.slice(outcome.probed).reverse());
        // Refused ports are not among the answers: what answered is what was probed less what did not.
        const answeredNow = outcome.probed - outcome.answers.filter(({ state }) => !state.open).length;
        answered += answeredNow;
        // A turn whose every port answered, none waited on for a greeting, timed its round trips (its
        // ports are probed one after another; the thread's own delays make the time longer, never shorter).
        if (
          answeredNow > 0 &&
          answeredNow === outcome.probed &&
          !outcome.answers.some(({ port, state }) => state.open && !SILENT_PORTS.has(port))
        )
          roundTrips.observe(address, tookMs / outcome.probed);
        for (const { port, state } of outcome.answers) found(port, state);
      }
    };
    const round = async (list: readonly number[], waitFor: () => number) => {
      waiting.push(...list.toReversed());
      await Promise.all(Array.from({ length: Math.min(lanes, list.length) }, () => lane(waitFor)));
    };
    const whole = () => timeoutMs;
    let down = false;
    try {
      if (first.length > 0) {
        await round(first, discoveryMs);
        down = answered === 0 && !ctx.signal.aborted;
        if (!down) {
          // The address is in use: what the short wait left unanswered is asked again with the whole
          // timeout, so its ports are judged as a scan without host discovery judges them.
          const again = waitedShort ? timedOut : [];
          if (again.length > 0) timedOut = [];
          const rest = new Set(first);
          await round([...again, ...ports.filter((port) => !rest.has(port))], whole);
        }
      } else await round(ports, whole);
    } finally {
      prober.close();
    }
    await Promise.all(identifications);
    const everyPort = acceptsEveryPort();
    // On such a host a port named only by its number is the host's accepting, not a service.
    if (everyPort)
      ctx.note(
        `${address} accepts a connection on every port (${open.length} of ${ports.length} scanned): a SYN proxy or tarpit; only the ${listed} port(s) that answered as a service are listed.`,
      );
    else for (const { port, identity } of namedByPort) emitService(port, identity);
    ctx.emit({
      kind: "IpAddress",
      name: address,
      details: {
        scan: {
          ports_scanned: down ? first.length : ports.length,
          open: open.sort((a, b) => a - b),
          filtered: timedOut.length,
          // None of the first round's ports answered or refused: the rest were not probed.
          ...(down ? { host_down: true } : {}),
          ...(everyPort ? { accepts_every_port: true } : {}),
        },
      },
    });
  },
};
