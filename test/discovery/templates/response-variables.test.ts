/**
 * The parts of an HTTP response as a template's DSL sees them (nuclei's names): the header text in Go's
 * canonical spelling, each header as a variable of its own (repeated ones joined by spaces, one named
 * like a part standing for it), the status, the length and the host; made once per response.
 */
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { HttpExchange } from "../../../src/discovery/net/http-fetch.ts";
import { responseVariables } from "../../../src/discovery/templates/http.ts";

const exchange = (headers: Array<[string, string]>, body = "<p>hi</p>"): HttpExchange => ({
  url: "http://[2001:db8::1]:8080/admin?x=1",
  method: "GET",
  requestHeaders: {},
  status: 404,
  headers,
  body: Buffer.from(body),
  truncated: false,
});

describe("responseVariables", () => {
  it("gives the header text, the response, the status, the host and each header by name", () => {
    const parts = responseVariables(
      exchange([
        ["server", "nginx/1.24.0"],
        ["set-cookie", "a=1"],
        ["x-frame-options", "DENY"],
        ["set-cookie", "b=2"],
      ]),
    );
    const header =
      "HTTP/1.1 404 Not Found\r\nServer: nginx/1.24.0\r\nSet-Cookie: a=1\r\nX-Frame-Options: DENY\r\nSet-Cookie: b=2";
    assert.equal(parts.header, header);
    assert.equal(parts.all_headers, header);
    assert.equal(parts.response, `${header}\r\n\r\n<p>hi</p>`);
    assert.equal(parts.all, parts.response);
    assert.equal(parts.body, "<p>hi</p>");
    assert.equal(parts.status_code, 404);
    assert.equal(parts.host, "[2001:db8::1]");
    assert.equal(parts.url, "http://[2001:db8::1]:8080/admin?x=1");
    assert.equal(parts.server, "nginx/1.24.0");
    assert.equal(parts.set_cookie, "a=1 b=2");
    assert.equal(parts.x_frame_options, "DENY");
    assert.equal(parts.content_type, "", "an absent content type reads as empty");
    assert.equal(parts.content_length, 9, "without the header, the body's length");
  });

  it("lets a header named like a part stand for it", () => {
    const parts = responseVariables(
      exchange([
        ["content-length", "42"],
        ["host", "elsewhere.test"],
        ["content-type", "text/html"],
      ]),
    );
    assert.equal(parts.content_length, "42");
    assert.equal(parts.host, "elsewhere.test");
    assert.equal(parts.content_type, "text/html");
  });

  it("makes a response's parts once", () => {
    const answered = exchange([["server", "x"]]);
    assert.equal(responseVariables(answered), responseVariables(answered));
  });
});
