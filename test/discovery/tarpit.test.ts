/**
 * A host that accepts a connection on every port (127.117.8.1, test/lab/tarpit.ts) is marked, and only
 * the port that answered as a service is listed; an ordinary host's silent open port is still listed.
 */
import assert from "node:assert/strict";
import { createServer, type Socket } from "node:net";
import { after, before, describe, test } from "node:test";
import { portScan } from "../../src/discovery/modules/ports.ts";
import { runModule } from "../helpers/discovery.ts";
import { listenTcp } from "../lab/sockets.ts";
import { startTarpit, type Tarpit } from "../lab/tarpit.ts";

const TARPIT = "127.117.8.1";
const ORDINARY = "127.117.8.2";

const servicesOf = (outcome: Awaited<ReturnType<typeof runModule>>) =>
  outcome.entities.filter((e) => e.kind === "NetworkService").map((e) => e.name);
const scanOf = (outcome: Awaited<ReturnType<typeof runModule>>, address: string) =>
  outcome.entities.find((e) => e.kind === "IpAddress" && e.name === address && e.details?.scan)?.details
    ?.scan as Record<string, unknown>;

describe("a host that accepts every port", () => {
  let tarpit: Tarpit;
  let silentOnOrdinary: { close(): Promise<void> };
  const held = new Set<Socket>();
  before(async () => {
    tarpit = await startTarpit(TARPIT, 40);
    // The ordinary host: one open port that says nothing, on a port number the tarpit also accepts on.
    const server = createServer((socket) => {
      held.add(socket);
      socket.on("error", () => {});
    });
    silentOnOrdinary = await listenTcp(server, ORDINARY, tarpit.silentPorts[0]);
  });
  after(async () => {
    for (const socket of held) socket.destroy();
    await silentOnOrdinary?.close();
    await tarpit?.stop();
  });

  const ports = () => [...tarpit.silentPorts, tarpit.greetingPort].sort((a, b) => a - b);

  test("is marked, and lists only the port that answered as a service", async () => {
    const outcome = await runModule(
      portScan,
      { kind: "IpAddress", name: TARPIT },
      { ports: ports(), timeoutMs: 500 },
    );
    assert.deepEqual(servicesOf(outcome), [`${TARPIT}:${tarpit.greetingPort}/tcp`]);
    const ssh = outcome.entities.find((e) => e.kind === "NetworkService")!;
    assert.equal(ssh.details?.service, "ssh");
    const scan = scanOf(outcome, TARPIT);
    assert.equal(scan.accepts_every_port, true);
    assert.equal((scan.open as number[]).length, 41, "the scan still says every port was open");
    assert.ok(
      outcome.notes.some((note) =>
        note.includes(`${TARPIT} accepts a connection on every port (41 of 41 scanned)`),
      ),
      outcome.notes.join("\n"),
    );
  });

  test("an ordinary host's open port that says nothing is still a service, named by its number", async () => {
    const outcome = await runModule(
      portScan,
      { kind: "IpAddress", name: ORDINARY },
      { ports: ports(), timeoutMs: 500 },
    );
    assert.deepEqual(servicesOf(outcome), [`${ORDINARY}:${tarpit.silentPorts[0]}/tcp`]);
    assert.equal(outcome.entities.find((e) => e.kind === "NetworkService")?.details?.identified_by, "port");
    assert.equal(scanOf(outcome, ORDINARY).accepts_every_port, undefined);
  });
});
