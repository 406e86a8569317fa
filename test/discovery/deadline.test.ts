/** An operation's time bound: aborts at its time or with its parent, and leaves nothing behind once done. */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { deadline } from "../../src/discovery/net/deadline.ts";

describe("deadline", () => {
  it("aborts with a TimeoutError once its time has passed", async () => {
    const bound = deadline(new AbortController().signal, 20);
    assert.equal(bound.signal.aborted, false);
    await sleep(60);
    assert.equal(bound.signal.aborted, true);
    assert.equal((bound.signal.reason as DOMException).name, "TimeoutError");
  });

  it("aborts with its parent, for the parent's reason", () => {
    const parent = new AbortController();
    const bound = deadline(parent.signal, 60_000);
    parent.abort(new Error("run cancelled"));
    assert.equal(bound.signal.aborted, true);
    assert.equal((bound.signal.reason as Error).message, "run cancelled");
    bound.done();
  });

  it("is aborted from the start when its parent already is", () => {
    const parent = new AbortController();
    parent.abort(new Error("gone"));
    const bound = deadline(parent.signal, 60_000);
    assert.equal((bound.signal.reason as Error).message, "gone");
  });

  it("once done, neither its time nor its parent aborts it", async () => {
    const parent = new AbortController();
    const bound = deadline(parent.signal, 20);
    bound.done();
    await sleep(60);
    parent.abort(new Error("later"));
    assert.equal(bound.signal.aborted, false);
  });
});
