/** What the web checks look at: one probed application, with the client that reached it. */
import type { FingerprintedProduct } from "../fingerprint/fingerprint.ts";
import type { Page } from "../http/page.ts";
import type { HttpClient, HttpExchange } from "../net/http-fetch.ts";

export interface ProbedApplication {
  /** The Uri entity name: "https://www.acme.test:443". */
  name: string;
  /** The landing response (after same-host redirects). */
  exchange: HttpExchange;
  /** The first response, before any redirect. */
  first: HttpExchange;
  body: string;
  page: Page;
  products: FingerprintedProduct[];
  /** For checks that ask one more question (e.g. /.git/HEAD). */
  client: HttpClient;
}

/** The request half of an issue's proof, in the spec's shape. */
export function requestProof(exchange: HttpExchange) {
  return {
    method: exchange.method,
    url: exchange.url,
    headers: exchange.requestHeaders,
    hostname: new URL(exchange.url).hostname,
  };
}

/** The proof of a check that read a response: the request, its status and where it was. */
export function responseProof(exchange: HttpExchange) {
  return { request: requestProof(exchange), status: String(exchange.status), uri: exchange.url };
}
