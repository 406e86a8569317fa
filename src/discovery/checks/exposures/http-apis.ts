/**
 * HTTP APIs that must never answer an anonymous client: search and document stores, cluster control
 * planes, container engines and registries, metrics. Each check sends one GET (etcd: one read-only
 * range query) and proves the exposure only by the shape of the answer (the product's own JSON or
 * exposition format), so a server that answers 200 to everything proves nothing.
 */
import { check, type ExposureCheck, excerpt } from "./check.ts";
import { type HttpAnswer, httpRequest, isObject, json } from "./http-request.ts";

const proofOf = (answer: HttpAnswer, facts: Record<string, unknown> = {}) => ({
  sent: answer.sent,
  received: excerpt(`HTTP ${answer.status}\n${answer.body}`),
  status: String(answer.status),
  tls: answer.tls,
  ...facts,
});

const UNAUTHENTICATED = "unauthenticated_access";

export const elasticsearchOpen = check({
  name: "elasticsearch_unauthenticated",
  prettyName: "Elasticsearch answers without authentication",
  severity: 2,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "The Elasticsearch (or OpenSearch) REST API answers anonymous requests: anyone can read, change or delete every index.",
  remediation:
    "Enable security (xpack.security.enabled: true, or the OpenSearch security plugin) with passwords or certificates, and bind the HTTP port to a private network.",
  references: [
    {
      type: "description",
      uri: "https://www.elastic.co/guide/en/elasticsearch/reference/current/security-minimal-setup.html",
    },
  ],
  services: ["elasticsearch", "opensearch", "wap-wsp"],
  ports: [9200],
  async prove(target) {
    const answer = await httpRequest(target, "/");
    const body = json(answer);
    if (answer?.status !== 200 || !isObject(body) || !isObject(body.version) || !("cluster_name" in body))
      return undefined;
    return proofOf(answer, { cluster_name: body.cluster_name, version: body.version.number });
  },
});

export const couchdbOpen = check({
  name: "couchdb_unauthenticated",
  prettyName: "CouchDB lists its databases without authentication",
  severity: 2,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "CouchDB answers an anonymous request for its list of databases (admin party or a public server): its documents are readable by anyone.",
  remediation:
    "Create an admin user, require valid users ([chttpd] require_valid_user = true) and bind to a private network.",
  references: [{ type: "description", uri: "https://docs.couchdb.org/en/stable/intro/security.html" }],
  services: ["couchdb"],
  ports: [5984],
  async prove(target) {
    const answer = await httpRequest(target, "/_all_dbs");
    const body = json(answer);
    if (answer?.status !== 200 || !Array.isArray(body) || !body.every((name) => typeof name === "string"))
      return undefined;
    return proofOf(answer, { databases: body.slice(0, 20) });
  },
});

export const etcdOpen = check({
  name: "etcd_unauthenticated",
  prettyName: "etcd answers key reads without authentication",
  severity: 1,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "The etcd client API answers an anonymous range read. etcd often holds a cluster's secrets (Kubernetes stores them there): anyone can read and change them.",
  remediation:
    "Require client certificates (--client-cert-auth) or enable etcd authentication, and expose port 2379 only to its clients.",
  references: [{ type: "description", uri: "https://etcd.io/docs/latest/op-guide/security/" }],
  services: ["etcd", "etcd-client"],
  ports: [2379],
  async prove(target) {
    // A range over every key, keys only, at most one: a read that returns the key count.
    const body = JSON.stringify({ key: "AA==", range_end: "AA==", keys_only: true, limit: 1 });
    const answer = await httpRequest(target, "/v3/kv/range", { method: "POST", body });
    const parsed = json(answer);
    if (
      answer?.status !== 200 ||
      !isObject(parsed) ||
      !isObject(parsed.header) ||
      !("cluster_id" in parsed.header)
    )
      return undefined;
    return proofOf(answer, { key_count: parsed.count ?? "0" });
  },
});

export const consulOpen = check({
  name: "consul_unauthenticated",
  prettyName: "Consul agent API answers without a token",
  severity: 2,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "The Consul HTTP API answers anonymous requests for the agent's configuration: with ACLs off, anyone can read the catalog and key/value store and register services or checks (which may run commands).",
  remediation:
    'Enable ACLs with default_policy = "deny", disable script checks, and serve the HTTP API only on a private address (or over TLS with client certificates).',
  references: [{ type: "description", uri: "https://developer.hashicorp.com/consul/docs/security/acl" }],
  services: ["consul", "fmtp"],
  ports: [8500],
  async prove(target) {
    const answer = await httpRequest(target, "/v1/agent/self");
    const body = json(answer);
    if (answer?.status !== 200 || !isObject(body) || !isObject(body.Config) || !isObject(body.Member))
      return undefined;
    return proofOf(answer, { datacenter: body.Config.Datacenter, node: body.Config.NodeName });
  },
});

export const dockerOpen = check({
  name: "docker_api_unauthenticated",
  prettyName: "Docker Engine API open to anyone",
  severity: 1,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "The Docker Engine API answers without client authentication. Whoever reaches it can start a privileged container and so control the host.",
  remediation:
    "Do not expose the Docker socket over TCP; if it must be, require TLS client certificates (tlsverify) on 2376 and firewall it.",
  references: [{ type: "description", uri: "https://docs.docker.com/engine/security/protect-access/" }],
  services: ["docker", "docker-tls"],
  ports: [2375, 2376],
  async prove(target) {
    const answer = await httpRequest(target, "/version");
    const body = json(answer);
    if (answer?.status !== 200 || !isObject(body) || typeof body.ApiVersion !== "string") return undefined;
    return proofOf(answer, { docker_version: body.Version, api_version: body.ApiVersion, os: body.Os });
  },
});

export const kubeletOpen = check({
  name: "kubelet_unauthenticated",
  prettyName: "Kubelet API answers without authentication",
  severity: 1,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "The kubelet API lists the node's pods to an anonymous client; the same API runs commands in containers.",
  remediation:
    "Start the kubelet with --anonymous-auth=false and --authorization-mode=Webhook, and firewall port 10250.",
  references: [
    {
      type: "description",
      uri: "https://kubernetes.io/docs/reference/access-authn-authz/kubelet-authn-authz/",
    },
  ],
  services: ["kubelet"],
  ports: [10250, 10255],
  async prove(target) {
    const answer = await httpRequest(target, "/pods");
    const body = json(answer);
    if (answer?.status !== 200 || !isObject(body) || body.kind !== "PodList") return undefined;
    return proofOf(answer, { pods: Array.isArray(body.items) ? body.items.length : 0 });
  },
});

export const kubernetesOpen = check({
  name: "kubernetes_api_unauthenticated",
  prettyName: "Kubernetes API answers anonymous requests",
  severity: 1,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "The Kubernetes API server lists namespaces to an anonymous client: anonymous requests are bound to a role that reads (or changes) the cluster.",
  remediation:
    "Remove role bindings for system:anonymous and system:unauthenticated (or start the API server with --anonymous-auth=false) and restrict who reaches port 6443.",
  references: [
    {
      type: "description",
      uri: "https://kubernetes.io/docs/reference/access-authn-authz/authentication/#anonymous-requests",
    },
  ],
  services: ["kubernetes", "sun-sr-https"],
  ports: [6443, 8080],
  async prove(target) {
    const answer = await httpRequest(target, "/api/v1/namespaces");
    const body = json(answer);
    if (answer?.status !== 200 || !isObject(body) || body.kind !== "NamespaceList") return undefined;
    return proofOf(answer, { namespaces: Array.isArray(body.items) ? body.items.length : 0 });
  },
});

export const registryCatalog = check({
  name: "container_registry_catalog",
  prettyName: "Container registry lists its repositories to anyone",
  severity: 2,
  confidence: "confirmed",
  category: UNAUTHENTICATED,
  description:
    "The registry answers the catalog request anonymously: every image, and the code and secrets baked into them, can be pulled.",
  remediation: "Require authentication on the registry (token or htpasswd auth) and serve it over TLS.",
  references: [{ type: "description", uri: "https://distribution.github.io/distribution/spec/api/#catalog" }],
  services: ["docker-registry", "registry"],
  ports: [5000],
  async prove(target) {
    const answer = await httpRequest(target, "/v2/_catalog?n=20");
    const body = json(answer);
    if (answer?.status !== 200 || !isObject(body) || !Array.isArray(body.repositories)) return undefined;
    return proofOf(answer, { repositories: body.repositories.slice(0, 20) });
  },
});

/** Two exposition lines, `# HELP name …` and `# TYPE name counter|gauge|…`, prove a metrics endpoint. */
const EXPOSITION =
  /^# HELP [a-zA-Z_:][\w:]* .*\n(?:.*\n)*?# TYPE [a-zA-Z_:][\w:]* (counter|gauge|histogram|summary|untyped)\b/m;

export const metricsOpen = check({
  name: "metrics_endpoint_exposed",
  prettyName: "Metrics endpoint open to anyone",
  severity: 4,
  confidence: "confirmed",
  category: "information_disclosure",
  description:
    "A Prometheus-format metrics endpoint answers anonymous requests, giving away software versions, host names, internal addresses and traffic.",
  remediation: "Serve /metrics only on an internal address, or behind authentication.",
  references: [{ type: "description", uri: "https://prometheus.io/docs/operating/security/" }],
  services: ["prometheus", "http", "https", "http-alt", "http-proxy"],
  ports: [9090, 9091, 9100, 9115, 9121, 9187, 9256],
  async prove(target) {
    const answer = await httpRequest(target, "/metrics");
    if (answer?.status !== 200 || !EXPOSITION.test(answer.body)) return undefined;
    return proofOf(answer, { metrics_path: "/metrics" });
  },
});

export const HTTP_API_CHECKS: readonly ExposureCheck[] = [
  elasticsearchOpen,
  couchdbOpen,
  etcdOpen,
  consulOpen,
  dockerOpen,
  kubeletOpen,
  kubernetesOpen,
  registryCatalog,
  metricsOpen,
];
