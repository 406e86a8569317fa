/**
 * The preset dictionary of json-codec.ts's FORMAT_1: text that stored JSON values are likely to repeat, so
 * that deflate can refer to it from the first byte of every value. It is Sightline's own vocabulary,
 * written by hand from the code that produces the values: the keys and shapes of the details the discovery
 * modules write (src/discovery/modules, checks, templates), the engine's provenance (task results and
 * ancestors), the entity type names, Sightline's own constants (its user agent, its content checks, its
 * template layout) and common HTTP, DNS and TLS words. It holds no value of any scanned world — no
 * address, name, hash or page of a benchmark or test — so what is stored for real surfaces shrinks the
 * same way. Placeholders stand where values vary.
 *
 * FROZEN: every value stored as FORMAT_1 needs exactly these bytes to be read back. A better dictionary is
 * a new format with its own first byte (json-codec.ts), this one kept for the values already stored.
 *
 * Deflate reaches back 32 KB and codes nearer matches a little shorter, so the most common text is last.
 */
const FRAGMENTS = [
  // Certificates (SslCertificate details) and TLS on a service.
  `{"subject":"CN=","subject_common_name":"","issuer":"CN=, O=","issuer_common_name":"","alt_names":[],"alt_names_count":1,"not_before":"2025-01-01T00:00:00.000Z","not_after":"2026-01-01T00:00:00.000Z","serial":"","sha256_fingerprint":"","key_type":"rsa","key_size":2048,"self_signed":false,"expired":false,"endpoints":[":443/tcp"]}`,
  `{"tls":true,"tls_protocol":"TLSv1.3","tls_cipher":"TLS_AES_256_GCM_SHA384","certificate":"","weak_protocols":[],"weak_cipher":""}`,
  `"key_type":"ec","key_size":256,"self_signed":true,"expired":true,"tls_protocol":"TLSv1.2","tls_cipher":"ECDHE-RSA-AES128-GCM-SHA256"`,
  // Names: DNS records and domain policies.
  `{"resolves":true,"records":{"a":[],"aaaa":[],"cname":[],"mx":[],"ns":[],"txt":[],"soa":[],"caa":[],"srv":[]},"addresses":[],"spf":"v=spf1 include: ~all","dmarc":"v=DMARC1; p=none; rua=mailto:","caa":[],"srv_services":[],"wildcard":{"addresses":[]},"zone_transfer":{"open":false}}`,
  `{"ptr":[]}{"ptr_of":[]}{"certificates":[]}{"resolutions":[]}{"resolves":false}`,
  // Addresses and netblocks.
  `{"seed":true,"netblock":"","asn":"AS","organization":"","net_name":"","geolocation":{"continent":"","country":"","country_code":"","continent_code":"","city":"","latitude":0,"longitude":0},"scan":{"ports_scanned":0,"open":[],"filtered":0,"host_down":true},"udp_scan":{"ports_probed":0,"answered":[]},"os":""}`,
  // Services: what identification and fingerprints said.
  `{"ip_address":"","port":22,"protocol":"tcp","service":"ssh","tls":false,"banner":"SSH-2.0-OpenSSH_","identified_by":"greeting","product":"OpenSSH","version":"","cpe":"cpe:2.3:a:openbsd:openssh:"}`,
  `{"ip_address":"","port":53,"protocol":"udp","service":"domain","banner":"","identified_by":"port"}`,
  `{"ip_address":"","port":443,"protocol":"tcp","service":"https","tls":true,"banner":"HTTP/1.1 200 OK","identified_by":"http-get","product":"Apache httpd","version":"","cpe":"cpe:2.3:a:apache:http_server:"}`,
  `"product":"Microsoft IIS","cpe":"cpe:2.3:a:microsoft:internet_information_services:","product":"nginx","version":"","cpe":"cpe:2.3:a:f5:nginx:`,
  // Issues: inferred CVEs, exposures' proof, takeovers.
  `{"cve":"CVE-2024-","cwe":"CWE-","cvss_v3_score":9.8,"cvss_v2_score":null,"exploited_in_the_wild":false,"affected_software":[{"vendor":"","product":"","version":"","cpe":"cpe:2.3:a:","matched_criteria":"cpe:2.3:a:"}],"match_details":"service probe \\"greeting\\" answered \\"`,
  `{"sent":"","received":"","answer":"","target":"","provider":"","proof":"","port":"","protocol":"tcp"}`,
  // Templates' issues: the request, what matched, where the template came from.
  `"matcher_names":[],"matched_at":[],"cve_ids":[],"template_source":"SIGHTLINE_TEMPLATES","tags":["cve","exposure","panel","tech","misconfig","headers","generic","disclosure","ssl","tls","dns"]`,
  `{"request":{"method":"GET","url":"http://","headers":{"user-agent":"Mozilla/5.0 (compatible; Sightline/0.1; attack-surface discovery)","accept":"*/*"},"hostname":""},"status":"200","uri":"http://","matched":{"part":"header","excerpt":"HTTP/1.1 200 OK\\r\\nServer: \\r\\nContent-Type: text/html\\r\\nDate: \\r\\nConnection: keep-alive\\r\\n"},"extracted":{"headers_disclosed":["server: "]},"headers_disclosed":["server: "],"template_id":"server-version-disclosure","template_path":"headers/server-version-disclosure.yaml","template_sha256":"","template_source":"sightline","tags":["misconfig","headers","disclosure","tech","sightline-check"],"cwe_ids":["CWE-200"]}`,
  `{"request":{"method":"GET","url":"https://","headers":{"user-agent":"Mozilla/5.0 (compatible; Sightline/0.1; attack-surface discovery)","accept":"*/*"},"hostname":""},"status":"200","uri":"https://","matched":{"part":"content_type","excerpt":"text/html"},"template_id":"missing-","template_path":"headers/missing-.yaml","template_sha256":"","template_source":"sightline","tags":["misconfig","headers","generic"],"cwe_ids":["CWE-693"]}`,
  // Applications (Uri details): what the web probe saw.
  `"headers":["server: ","content-type: text/html; charset=utf-8","content-type: application/json","content-length: ","cache-control: no-cache","x-powered-by: ","strict-transport-security: max-age=31536000","location: https://","vary: Accept-Encoding","last-modified: …","etag: …","accept-ranges: bytes","date: …","connection: keep-alive","keep-alive: timeout=5","transfer-encoding: chunked"],"cookies":"","redirect_chain":["http://"],"scripts":[],"forms":false,"request_hosts":[],`,
  `"cloud_providers":["Cloudflare","Amazon Web Services","Microsoft Azure","Google Cloud","Fastly","Akamai"],"cloud_hosted":true,"fingerprint":[{"product":"","issue":false,"inference":false,"vendor":"","vulns":[],"cpe":"cpe:2.3:a:","match_type":"content_body","type":"fingerprint","match_details":"","tags":["Web frameworks","JavaScript libraries","CMS"]}],"favicon_hash":`,
  `{"uri":"http://","code":"200","title":"","headers":["server: nginx/","content-type: text/html","date: …","connection: keep-alive","keep-alive: timeout=5","transfer-encoding: chunked"],"cookies":"","redirect_chain":[],"scripts":[],"forms":false,"request_hosts":[],"content":[{"name":"Authentication - HTTP Basic","type":"content","result":false},{"name":"Authentication - HTTP Digest","type":"content","result":false},{"name":"Authentication - NTLM","type":"content","result":false},{"name":"Authentication - Login Form","type":"content","result":false},{"name":"Directory Listing","type":"content","result":false},{"name":"Form","type":"content","result":false},{"name":"File Upload Form","type":"content","result":false},{"name":"Missing Security Header - strict-transport-security","type":"content","result":true},{"name":"Missing Security Header - content-security-policy","type":"content","result":true},{"name":"Missing Security Header - x-frame-options","type":"content","result":true},{"name":"Missing Security Header - x-content-type-options","type":"content","result":true}],"cloud_providers":[],"cloud_hosted":false,"api_endpoint":false,"response_data_hash":"","fingerprint":[{"product":"Nginx","issue":false,"inference":true,"vendor":"f5","vulns":[],"cpe":"cpe:2.3:a:f5:nginx:","match_type":"content_headers","type":"fingerprint","match_details":"server header \\"nginx/","tags":["Web servers","Reverse proxies"]}],"products":[["Nginx",""]],"protocol":"HTTP/1.1","service":"http","port":80,"ip_address":"","hostname":null,"favicon_hash":null}`,
  // Provenance: ancestors and task results, in every entity row.
  `[{"name":"","task":"dns-brute","entity_type":"Service::Entity::Domain","entity_name":"","depth":1},{"name":"dns-axfr:Nameserver:","task":"dns-axfr","entity_type":"Service::Entity::Nameserver","entity_name":"","depth":1},{"name":"tls:","task":"tls","entity_type":"Service::Entity::NetworkService","entity_name":":443/tcp","depth":1},{"name":"dns:DnsRecord:","task":"dns","entity_type":"Service::Entity::DnsRecord","entity_name":"","depth":1}]`,
  `[{"name":"","type":"Service::Entity::Domain"},{"name":"","type":"Service::Entity::DnsRecord"},{"name":"","type":"Service::Entity::NetBlock"},{"name":"","type":"Service::Entity::SslCertificate"},{"name":"","type":"Service::Entity::Uri"},{"name":":80/tcp","type":"Service::Entity::NetworkService"},{"name":"","type":"Service::Entity::IpAddress"}]`,
  `[{"name":"dns-reverse:IpAddress:","task":"dns-reverse","entity_type":"Service::Entity::IpAddress","entity_name":"","depth":0},{"name":"netblocks:IpAddress:","task":"netblocks","entity_type":"Service::Entity::IpAddress","entity_name":"","depth":0},{"name":"ports:IpAddress:","task":"ports","entity_type":"Service::Entity::IpAddress","entity_name":"","depth":0},{"name":"http:","task":"http","entity_type":"Service::Entity::NetworkService","entity_name":":80/tcp","depth":0}]`,
];

export const DICTIONARY_1 = FRAGMENTS.join("");
