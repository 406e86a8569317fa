import { isIPv4 } from "node:net";
import { type RunningService, type ServiceContext, startService } from "./services.ts";
import type { HostSpec, LabRecord } from "./types.ts";
import { reverseName } from "./zones.ts";

export interface RunningHost {
  spec: HostSpec;
  services: RunningService[];
  /** The records published for it, as stored in the zone set (for removal). */
  records: LabRecord[];
}

/** The A, AAAA and PTR records a host publishes. */
export function hostRecords(spec: HostSpec): LabRecord[] {
  const ptr = spec.ptr === undefined ? spec.names[0] : spec.ptr;
  return [
    ...spec.names.map((name): LabRecord => ({ name, type: "A", data: spec.ip })),
    ...(spec.ipv6 ? spec.names.map((name): LabRecord => ({ name, type: "AAAA", data: spec.ipv6! })) : []),
    ...(ptr ? [{ name: reverseName(spec.ip), type: "PTR", data: ptr } satisfies LabRecord] : []),
  ];
}

/** Starts every service of a host; if one fails, closes the others and rethrows. */
export async function startServices(spec: HostSpec, context: ServiceContext): Promise<RunningService[]> {
  if (!isIPv4(spec.ip) || !spec.ip.startsWith("127."))
    throw new Error(`lab host ${spec.ip} is not a 127/8 address`);
  const started = await Promise.allSettled(
    spec.services.map((service) => startService(spec.ip, service, context)),
  );
  const running = started.flatMap((result) => (result.status === "fulfilled" ? [result.value] : []));
  const failure = started.find((result) => result.status === "rejected");
  if (failure) {
    await closeAll(running);
    throw withContext(failure.reason, spec);
  }
  return running;
}

export async function closeAll(closables: { close(): Promise<void> }[]): Promise<void> {
  await Promise.all(closables.map((closable) => closable.close()));
}

/** Keeps the errno code (callers retry on EADDRINUSE) and says which host failed. */
function withContext(reason: unknown, spec: HostSpec): unknown {
  if (!(reason instanceof Error)) return reason;
  reason.message = `lab host ${spec.ip}: ${reason.message}`;
  if ((reason as NodeJS.ErrnoException).code === "EACCES") {
    reason.message += " (ports below 1024 need root or sysctl net.ipv4.ip_unprivileged_port_start=0)";
  }
  return reason;
}
