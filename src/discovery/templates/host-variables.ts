/**
 * The nuclei format's variables for the parts of a host name, with the public suffix list (tldts):
 * for `www.app.example.co.uk`, RDN `example.co.uk` (the registrable domain), DN `example`, TLD
 * `co.uk`, SD `www.app`. An address (or a name under no known suffix) is its own RDN and DN.
 */
import { isIP } from "node:net";
import { parse } from "tldts";

export function hostVariables(host: string): { RDN: string; DN: string; TLD: string; SD: string } {
  if (isIP(host)) return { RDN: host, DN: host, TLD: "", SD: "" };
  const parsed = parse(host, { allowPrivateDomains: false });
  if (!parsed.domain) return { RDN: host, DN: host, TLD: parsed.publicSuffix ?? "", SD: "" };
  return {
    RDN: parsed.domain,
    DN: parsed.domainWithoutSuffix ?? parsed.domain,
    TLD: parsed.publicSuffix ?? "",
    SD: parsed.subdomain ?? "",
  };
}
