/**
 * Host discovery's learnt wait (src/discovery/net/round-trips.ts): the whole ceiling until a network has
 * answered MIN_SAMPLES times, then its smoothed round trip and four variations, between floor and ceiling,
 * per IPv4 /16 or IPv6 /48.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { MIN_SAMPLES, networkOf, RoundTrips } from "../../src/discovery/net/round-trips.ts";

test("an address is timed with its IPv4 /16 or IPv6 /48; an IPv4-mapped one with its IPv4 /16", () => {
  assert.equal(networkOf("10.251.3.4"), "10.251");
  assert.equal(networkOf("2001:db8:1:2::5"), "2001:db8:1");
  assert.equal(networkOf("2001:db8:1:ffff::9"), networkOf("2001:db8:1::1"));
  assert.equal(networkOf("::ffff:10.251.9.9"), "10.251");
});

test("the ceiling until a network has answered enough; then the round trip, between floor and ceiling", () => {
  const trips = new RoundTrips();
  for (let i = 0; i < MIN_SAMPLES - 1; i++) trips.observe(`10.1.0.${i}`, 2);
  assert.equal(trips.wait("10.1.9.9", 250, 1000), 1000);
  trips.observe("10.1.0.200", 2);
  // A near network: its round trip is far below the floor.
  assert.equal(trips.wait("10.1.9.9", 250, 1000), 250);
  // Another /16 has learnt nothing.
  assert.equal(trips.wait("10.2.9.9", 250, 1000), 1000);
  // A floor at or above the ceiling is the ceiling: no learning.
  assert.equal(trips.wait("10.1.9.9", 1000, 1000), 1000);
});

test("a far or uneven network is waited for longer, never past the ceiling", () => {
  const far = new RoundTrips();
  for (let i = 0; i < 20; i++) far.observe("192.0.2.1", 400);
  const farWait = far.wait("192.0.2.77", 100, 1000);
  assert.ok(farWait >= 400 && farWait < 1000, `a 400 ms network waited ${farWait} ms`);
  const uneven = new RoundTrips();
  for (let i = 0; i < 20; i++) uneven.observe("198.51.100.1", i % 2 === 0 ? 20 : 300);
  // Answers of 20 and 300 ms: the variation counts four times, so the wait covers the slow ones.
  const unevenWait = uneven.wait("198.51.100.9", 100, 1000);
  assert.ok(unevenWait > 300, `an uneven network waited ${unevenWait} ms`);
  const beyond = new RoundTrips();
  for (let i = 0; i < 20; i++) beyond.observe("203.0.113.1", 5000);
  assert.equal(beyond.wait("203.0.113.2", 100, 1000), 1000);
});
