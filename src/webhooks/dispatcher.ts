/**
 * Sends the outbox: every second (and at once when this process enqueued something) it claims due
 * deliveries and POSTs them, a few at a time, each with a time limit. A 2xx is delivered; anything else
 * (another status, a timeout, a refused connection, a refused address) is retried after a delay that
 * doubles each time — SIGHTLINE_WEBHOOK_RETRY_MS, then twice that, … — until SIGHTLINE_WEBHOOK_ATTEMPTS
 * attempts, then the delivery is failed. Every attempt is logged. Runs never wait on any of this.
 *
 * The request: `POST <url>` with the event as JSON, signed with the webhook's secret:
 *   X-Sightline-Timestamp: <unix seconds>
 *   X-Sightline-Signature: sha256=<hex HMAC-SHA256 of "<timestamp>.<body>">
 *   X-Sightline-Event, X-Sightline-Delivery: the event type and the delivery's id.
 * A receiver recomputes the HMAC over the timestamp, a dot and the raw body, compares in constant time,
 * and refuses timestamps older than a few minutes (replays).
 *
 * Beside them, the Standard Webhooks headers (standardwebhooks.com), which its published libraries verify:
 *   webhook-id: <a message id, the same on every retry>
 *   webhook-timestamp: <unix seconds>
 *   webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">
 * keyed, as that spec says, with the bytes the secret's base64 after `whsec_` stands for.
 */
import { createHash, createHmac } from "node:crypto";
import { Agent, fetch } from "undici";
import { nowIso } from "../core/formats.ts";
import type { DeliveryRow, Webhook, WebhooksRepository } from "../store/webhooks.ts";
import type { WebhookEvents } from "./events.ts";
import type { WebhookTargets } from "./targets.ts";

const POLL_MS = 1000;
/** Deliveries in flight at once per process: a slow receiver holds one slot, not the outbox. */
const PARALLEL = 4;
/** How far back the sweep looks for runs whose events were never enqueued. */
const SWEEP_WINDOW_MS = 24 * 3600 * 1000;
const SWEEP_EVERY_MS = 30_000;
/** Bytes of a receiver's answer kept in the log. */
const ERROR_BODY = 200;

export interface DispatcherOptions {
  repository: WebhooksRepository;
  events: WebhookEvents;
  targets: WebhookTargets;
  timeoutMs: number;
  attempts: number;
  retryMs: number;
  log?: { warn(message: string): void };
}

/** The signature headers of a body sent at `timestamp` (unix seconds). */
export function signature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac("sha256", secret).update(`${timestamp}.${body}`).digest("hex")}`;
}

/** The Standard Webhooks key of a secret: the bytes of its base64 after `whsec_` (either base64 alphabet). */
function standardKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret, "base64");
}

/** The Standard Webhooks signature of a message: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`. */
export function standardSignature(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${createHmac("sha256", standardKey(secret)).update(`${id}.${timestamp}.${body}`).digest("base64")}`;
}

/**
 * The message id of a delivery: the same on every retry (receivers de-duplicate on it), different for
 * every delivery of every installation (its id alone repeats in a new database).
 */
export function messageId(webhookId: number, delivery: Pick<DeliveryRow, "id" | "payload">): string {
  const digest = createHash("sha256")
    .update(`${webhookId}.${delivery.id}.${delivery.payload}`)
    .digest("base64url");
  return `msg_${delivery.id}_${digest.slice(0, 16)}`;
}

export class WebhookDispatcher {
  readonly #options: DispatcherOptions;
  readonly #agent: Agent;
  readonly #inFlight = new Set<Promise<void>>();
  readonly #abort = new AbortController();
  #timer: NodeJS.Timeout | undefined;
  #draining = false;
  #again = false;
  #lastSweep = 0;

  constructor(options: DispatcherOptions) {
    this.#options = options;
    // Connections resolve through the target check, so a name rebound to a denied address is refused.
    this.#agent = new Agent({ connect: { lookup: options.targets.lookup }, connections: PARALLEL });
  }

  start(): void {
    this.#options.events.onEnqueued = () => this.nudge();
    this.#timer = setInterval(() => this.nudge(), POLL_MS);
    this.#timer.unref();
    this.nudge();
  }

  /** Looks at the outbox now (coalesced with a look already under way). */
  nudge(): void {
    if (this.#abort.signal.aborted) return;
    if (this.#draining) {
      this.#again = true;
      return;
    }
    this.#draining = true;
    this.#drain()
      .catch((error) => this.#options.log?.warn(`webhook deliveries: ${(error as Error).message}`))
      .finally(() => {
        this.#draining = false;
        if (this.#again) {
          this.#again = false;
          this.nudge();
        }
      });
  }

  /** Stops polling and aborts deliveries in flight (they are retried by the next process). */
  async close(): Promise<void> {
    clearInterval(this.#timer);
    this.#abort.abort();
    await Promise.allSettled([...this.#inFlight]);
    await this.#agent.close();
  }

  async #drain(): Promise<void> {
    if (Date.now() - this.#lastSweep > SWEEP_EVERY_MS) {
      this.#lastSweep = Date.now();
      await this.#options.events.sweep(new Date(Date.now() - SWEEP_WINDOW_MS).toISOString());
    }
    const free = PARALLEL - this.#inFlight.size;
    if (free <= 0) return;
    const claimed = await this.#options.repository.claimDue(free, this.#options.timeoutMs + 30_000);
    for (const { delivery, webhook } of claimed) {
      const sending: Promise<void> = this.#deliver(delivery, webhook)
        .catch((error) =>
          this.#options.log?.warn(`webhook delivery ${delivery.id}: ${(error as Error).message}`),
        )
        .finally(() => {
          this.#inFlight.delete(sending);
          this.nudge();
        });
      this.#inFlight.add(sending);
    }
  }

  async #deliver(delivery: DeliveryRow, webhook: Webhook): Promise<void> {
    const started = Date.now();
    const at = nowIso();
    const timestamp = Math.floor(started / 1000);
    const id = messageId(webhook.id, delivery);
    let status: number | null = null;
    let error: string | null = null;
    try {
      const problem = await this.#literalProblem(webhook.url);
      if (problem) throw new Error(`refused: ${problem}`);
      const response = await fetch(webhook.url, {
        method: "POST",
        redirect: "manual",
        headers: {
          "content-type": "application/json",
          "user-agent": "Sightline-Webhooks/1",
          "x-sightline-event": delivery.event,
          "x-sightline-delivery": String(delivery.id),
          "x-sightline-timestamp": String(timestamp),
          "x-sightline-signature": signature(webhook.secret, timestamp, delivery.payload),
          "webhook-id": id,
          "webhook-timestamp": String(timestamp),
          "webhook-signature": standardSignature(webhook.secret, id, timestamp, delivery.payload),
        },
        body: delivery.payload,
        signal: AbortSignal.any([this.#abort.signal, AbortSignal.timeout(this.#options.timeoutMs)]),
        dispatcher: this.#agent,
      });
      status = response.status;
      const text = await response.text().catch(() => "");
      if (status < 200 || status > 299)
        error = `the receiver answered HTTP ${status}${text ? `: ${text.slice(0, ERROR_BODY)}` : ""}`;
    } catch (caught) {
      if (this.#abort.signal.aborted) {
        // Shutting down: not an attempt of the receiver's; the next process sends it at once.
        await this.#options.repository.release(delivery.id);
        return;
      }
      error = describe(caught, this.#options.timeoutMs);
    }
    const attempt = { at, status, error, durationMs: Date.now() - started };
    const attempts = delivery.attempts + 1;
    const outcome =
      error === null
        ? ({ delivered: true } as const)
        : {
            delivered: false as const,
            retryAt:
              attempts < this.#options.attempts
                ? new Date(Date.now() + this.#options.retryMs * 2 ** (attempts - 1)).toISOString()
                : undefined,
          };
    await this.#options.repository.recordAttempt(delivery, attempt, outcome);
  }

  /** An address literal in the URL is never looked up, so it is checked here. */
  async #literalProblem(url: string): Promise<string | undefined> {
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
    return /^[\d.]+$|:/.test(host) ? this.#options.targets.addressProblem(host) : undefined;
  }
}

function describe(error: unknown, timeoutMs: number): string {
  const failure = error as Error & { cause?: { code?: string; message?: string } };
  if (failure.name === "TimeoutError") return `no answer within ${timeoutMs} ms`;
  const cause = failure.cause;
  if (cause?.message?.startsWith("refused:")) return cause.message;
  if (cause?.code) return `${cause.code}${cause.message ? `: ${cause.message}` : ""}`;
  return failure.message;
}
