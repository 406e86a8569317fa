/**
 * JavaScript libraries with versions: every URL shape, the banners of the covered libraries, the CPE
 * names, and the bounded reading of same-host script files by the web probe (count, bytes, origin).
 */
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { after, before, describe, it } from "node:test";
import type { Fingerprint } from "../../../src/core/facts.ts";
import { detectionCpe, fingerprintHttp } from "../../../src/discovery/fingerprint/fingerprint.ts";
import {
  BANNER_BYTES,
  detectLibrariesFromBanners,
  JS_LIBRARIES,
  libraryFromUrl,
  MAX_BANNER_SCRIPTS,
} from "../../../src/discovery/fingerprint/js-libraries.ts";
import { createHttpModule } from "../../../src/discovery/modules/http.ts";
import { runModule } from "../../helpers/discovery.ts";

const found = (url: string) => {
  const match = libraryFromUrl(url);
  return match ? `${match.library.name} ${match.version}` : undefined;
};

describe("libraries from script URLs", () => {
  const cases: Array<[string, string | undefined]> = [
    // package@version (jsDelivr, unpkg, scoped packages)
    ["https://cdn.jsdelivr.net/npm/jquery@3.4.1/dist/jquery.min.js", "jQuery 3.4.1"],
    ["https://unpkg.com/react@16.8.0/umd/react.production.min.js", "React 16.8.0"],
    ["https://unpkg.com/react-dom@16.8.0/umd/react-dom.production.min.js", "React 16.8.0"],
    ["https://cdn.jsdelivr.net/npm/@angular/core@8.2.14/bundles/core.umd.js", "Angular 8.2.14"],
    ["https://cdn.jsdelivr.net/npm/vue@2.6.10", "Vue.js 2.6.10"],
    ["https://cdn.jsdelivr.net/npm/dompurify@2.0.7/dist/purify.min.js", "DOMPurify 2.0.7"],
    ["https://cdn.jsdelivr.net/npm/chart.js@2.9.3/dist/Chart.min.js", "Chart.js 2.9.3"],
    ["https://cdn.jsdelivr.net/npm/bootstrap@4.3.1/dist/js/bootstrap.bundle.min.js", "Bootstrap 4.3.1"],
    // a library directory, then a version directory (cdnjs, Google)
    ["https://cdnjs.cloudflare.com/ajax/libs/jquery/3.4.1/jquery.min.js", "jQuery 3.4.1"],
    ["https://ajax.googleapis.com/ajax/libs/jqueryui/1.12.1/jquery-ui.min.js", "jQuery UI 1.12.1"],
    ["https://cdnjs.cloudflare.com/ajax/libs/lodash.js/4.17.15/lodash.min.js", "Lodash 4.17.15"],
    ["https://cdnjs.cloudflare.com/ajax/libs/underscore.js/1.9.1/underscore-min.js", "Underscore.js 1.9.1"],
    ["https://cdnjs.cloudflare.com/ajax/libs/moment.js/2.24.0/moment.min.js", "Moment.js 2.24.0"],
    ["https://cdnjs.cloudflare.com/ajax/libs/handlebars.js/4.1.2/handlebars.min.js", "Handlebars 4.1.2"],
    ["https://cdnjs.cloudflare.com/ajax/libs/backbone.js/1.4.0/backbone-min.js", "Backbone.js 1.4.0"],
    ["https://cdnjs.cloudflare.com/ajax/libs/knockout/3.5.0/knockout-min.js", "Knockout.js 3.5.0"],
    ["https://cdnjs.cloudflare.com/ajax/libs/ember.js/3.12.0/ember.min.js", "Ember.js 3.12.0"],
    ["https://cdnjs.cloudflare.com/ajax/libs/d3/5.12.0/d3.min.js", "D3 5.12.0"],
    ["https://cdnjs.cloudflare.com/ajax/libs/select2/4.0.13/js/select2.min.js", "Select2 4.0.13"],
    ["https://cdnjs.cloudflare.com/ajax/libs/angular.js/1.7.8/angular.min.js", "AngularJS 1.7.8"],
    ["https://cdnjs.cloudflare.com/ajax/libs/tinymce/5.0.0/tinymce.min.js", "TinyMCE 5.0.0"],
    // a version directory, then the library's own file
    ["https://code.jquery.com/ui/1.12.1/jquery-ui.min.js", "jQuery UI 1.12.1"],
    ["https://cdn.ckeditor.com/4.14.0/standard/ckeditor.js", "CKEditor 4.14.0"],
    ["https://cdn.example.test/static/3.4.1/jquery.min.js", "jQuery 3.4.1"],
    // the version in the file name
    ["https://code.jquery.com/jquery-3.4.1.min.js", "jQuery 3.4.1"],
    ["https://code.jquery.com/jquery-migrate-3.0.1.min.js", "jQuery Migrate 3.0.1"],
    ["http://www.acme.test/static/jquery-ui-1.12.1.custom.min.js", "jQuery UI 1.12.1"],
    ["http://www.acme.test/js/moment.2.24.0.js", "Moment.js 2.24.0"],
    ["https://code.jquery.com/jquery-3.3.1.slim.min.js", "jQuery 3.3.1"],
    ["http://www.acme.test/js/jquery.slim-3.3.1.min.js", "jQuery 3.3.1"],
    // the version in the query string of the library's own file
    ["http://blog.acme.test/wp-includes/js/jquery/jquery.min.js?ver=3.4.1", "jQuery 3.4.1"],
    ["http://blog.acme.test/wp-includes/js/jquery/jquery-migrate.min.js?ver=3.0.1", "jQuery Migrate 3.0.1"],
    ["http://blog.acme.test/js/bootstrap.min.js?v=4.3.1", "Bootstrap 4.3.1"],
    // no library, or no version
    ["http://blog.acme.test/js/app.min.js?ver=5.8.2", undefined],
    ["https://cdn.jsdelivr.net/npm/jquery/dist/jquery.min.js", undefined],
    ["http://www.acme.test/js/app-3.4.1.min.js", undefined],
    ["http://www.acme.test/jquery/", undefined],
    ["not a url", undefined],
  ];
  for (const [url, want] of cases) it(`${url} → ${want ?? "nothing"}`, () => assert.equal(found(url), want));

  it("names each library with NVD's CPE", () => {
    const [jquery] = fingerprintHttp({
      url: "http://www.acme.test/",
      headers: [],
      setCookies: [],
      body: "",
      meta: {},
      scripts: ["https://cdn.jsdelivr.net/npm/jquery@3.4.1/dist/jquery.min.js"],
    });
    assert.equal(detectionCpe(jquery), "cpe:2.3:a:jquery:jquery:3.4.1:*:*:*:*:*:*:*");
    assert.equal(jquery.matchType, "script_src");
    const cpes = Object.fromEntries(JS_LIBRARIES.map((l) => [l.name, `${l.vendor}:${l.product}`]));
    assert.equal(cpes["jQuery UI"], "jquery:jquery_ui");
    assert.equal(cpes.AngularJS, "angularjs:angular.js");
    assert.equal(cpes.DOMPurify, "cure53:dompurify");
    assert.equal(cpes.TinyMCE, "tiny:tinymce");
    assert.equal(cpes["jQuery Migrate"], ":", "NVD has no CPE for jQuery Migrate");
    assert.ok(JS_LIBRARIES.length >= 21);
  });
});

describe("libraries from banner comments", () => {
  const banners: Array<[string, string]> = [
    ["/*! jQuery v3.4.1 | (c) JS Foundation and other contributors | jquery.org/license */", "jQuery 3.4.1"],
    ["/*!\n * jQuery JavaScript Library v1.12.4\n * http://jquery.com/", "jQuery 1.12.4"],
    ["/*! jQuery UI - v1.12.1 - 2016-09-14\n* http://jqueryui.com", "jQuery UI 1.12.1"],
    ["/*! jQuery Migrate v3.0.1 | (c) jQuery Foundation and other contributors */", "jQuery Migrate 3.0.1"],
    ["/*!\n  * Bootstrap v4.3.1 (https://getbootstrap.com/)", "Bootstrap 4.3.1"],
    [
      "/*\n AngularJS v1.7.8\n (c) 2010-2018 Google, Inc. http://angularjs.org\n @license AngularJS v1.7.8",
      "AngularJS 1.7.8",
    ],
    ["/**\n * @license Angular v8.2.14\n * (c) 2010-2019 Google LLC. https://angular.io/", "Angular 8.2.14"],
    ["/** @license React v16.8.0\n * react.production.min.js", "React 16.8.0"],
    ["/*!\n * Vue.js v2.6.10\n * (c) 2014-2019 Evan You", "Vue.js 2.6.10"],
    ["/**\n* vue v3.4.21\n* (c) 2018-present Yuxi (Evan) You and Vue contributors", "Vue.js 3.4.21"],
    [
      "/**\n * @license\n * Lodash <https://lodash.com/>\n */\n;(function() {\n  var undefined;\n  var VERSION = '4.17.15';",
      "Lodash 4.17.15",
    ],
    ["//     Underscore.js 1.9.1\n//     http://underscorejs.org", "Underscore.js 1.9.1"],
    ["//! moment.js\n//! version : 2.24.0\n//! authors : Tim Wood", "Moment.js 2.24.0"],
    ["/**!\n\n @license\n handlebars v4.1.2\n\nCopyright (C) 2011-2017", "Handlebars 4.1.2"],
    ["/*! @license DOMPurify 2.0.7 | (c) Cure53 and other contributors */", "DOMPurify 2.0.7"],
    ["//     Backbone.js 1.4.0\n\n//     (c) 2010-2019 Jeremy Ashkenas", "Backbone.js 1.4.0"],
    ["/*!\n * Knockout JavaScript library v3.5.0\n * (c) The Knockout.js team", "Knockout.js 3.5.0"],
    [
      "/*!\n * @overview  Ember - JavaScript Application Framework\n * @copyright Copyright 2011-2019 Tilde Inc.\n * @license   Licensed under MIT license\n * @version   3.12.0",
      "Ember.js 3.12.0",
    ],
    ["// https://d3js.org v5.12.0 Copyright 2019 Mike Bostock", "D3 5.12.0"],
    ["/*! Select2 4.0.13 | https://github.com/select2/select2/blob/master/LICENSE.md */", "Select2 4.0.13"],
    ["/*!\n * Chart.js v2.9.3\n * https://www.chartjs.org", "Chart.js 2.9.3"],
    ["/**\n * TinyMCE version 5.0.0 (2019-02-04)\n */", "TinyMCE 5.0.0"],
    [
      '/*\nCopyright (c) 2003-2020, CKSource\n*/\n(function(){window.CKEDITOR&&window.CKEDITOR.dom||(window.CKEDITOR||(window.CKEDITOR=function(){var a={timestamp:"K24B",version:"4.14.0",',
      "CKEditor 4.14.0",
    ],
  ];
  for (const [text, want] of banners)
    it(want, () => {
      const detections = detectLibrariesFromBanners([{ url: "http://www.acme.test/x.js", text }]);
      assert.deepEqual(
        detections.map((d) => `${d.name} ${d.version}`),
        [want],
      );
      assert.equal(detections[0].matchType, "script_banner");
    });

  it("does not take the Underscore release Lodash's banner names for Underscore", () => {
    const text =
      "/**\n * @license\n * Lodash lodash.com/license | Underscore.js 1.8.3 underscorejs.org/LICENSE\n */";
    assert.deepEqual(detectLibrariesFromBanners([{ url: "http://x.test/l.js", text }]), []);
  });

  it("reads only the first BANNER_BYTES of a file", () => {
    const late = `${" ".repeat(BANNER_BYTES)}/*! jQuery v3.4.1 | */`;
    assert.deepEqual(detectLibrariesFromBanners([{ url: "http://x.test/late.js", text: late }]), []);
  });
});

describe("same-host script banners in the web probe", () => {
  let server: Server;
  let port: number;
  const requests: IncomingMessage[] = [];
  const HOST = "127.118.0.1";
  const scripts = Array.from({ length: MAX_BANNER_SCRIPTS + 3 }, (_, i) => `/js/vendor-${i}.js`);

  before(async () => {
    server = createServer((request, response) => {
      requests.push(request);
      const path = request.url ?? "/";
      if (path === "/") {
        response.writeHead(200, { "content-type": "text/html" });
        response.end(
          `<html><head><title>Libraries</title>${scripts.map((s) => `<script src="${s}"></script>`).join("")}` +
            '<script src="https://cdn.jsdelivr.net/npm/jquery@3.4.1/dist/jquery.min.js"></script>' +
            '<script src="http://other.test/js/bootstrap.js"></script></head><body></body></html>',
        );
      } else if (path === "/js/vendor-0.js") {
        // A banner, then a megabyte the probe must not read.
        response.writeHead(200, { "content-type": "application/javascript" });
        response.end(`/*! jQuery UI - v1.12.1 - 2016-09-14 */\n${"x".repeat(1024 * 1024)}`);
      } else if (path === "/js/vendor-1.js") {
        response.writeHead(200, { "content-type": "application/javascript" });
        response.end(`${"/* padding */\n".repeat(1000)}/*! Select2 4.0.13 | */`);
      } else if (path.startsWith("/js/vendor-")) {
        response.writeHead(200, { "content-type": "application/javascript" });
        response.end("/*! DOMPurify 2.0.7 | (c) Cure53 */");
      } else response.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, HOST, resolve));
    port = (server.address() as AddressInfo).port;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("reads at most MAX_BANNER_SCRIPTS same-host files, BANNER_BYTES of each, and names what their banners say", async () => {
    const outcome = await runModule(createHttpModule(), {
      kind: "NetworkService",
      name: `${HOST}:${port}/tcp`,
      details: { ip_address: HOST, port, protocol: "tcp", service: "http", banner: "" },
    });
    const scriptRequests = requests.filter((r) => r.url?.startsWith("/js/"));
    assert.equal(scriptRequests.length, MAX_BANNER_SCRIPTS, "only the first few same-host scripts");
    assert.deepEqual(
      scriptRequests.map((r) => r.url),
      scripts.slice(0, MAX_BANNER_SCRIPTS),
    );
    for (const request of scriptRequests) assert.equal(request.headers.range, `bytes=0-${BANNER_BYTES - 1}`);
    const [application] = outcome.entities;
    const fingerprints = application.details?.fingerprint as Fingerprint[];
    const named = Object.fromEntries(fingerprints.map((f) => [f.product, f]));
    assert.equal(named["jQuery UI"]?.cpe, "cpe:2.3:a:jquery:jquery_ui:1.12.1:*:*:*:*:*:*:*");
    assert.equal(named["jQuery UI"]?.match_type, "script_banner");
    assert.equal(named.jQuery?.cpe, "cpe:2.3:a:jquery:jquery:3.4.1:*:*:*:*:*:*:*", "the CDN's URL");
    assert.equal(named.DOMPurify?.cpe, "cpe:2.3:a:cure53:dompurify:2.0.7:*:*:*:*:*:*:*");
    assert.equal(named.Select2, undefined, "a banner past the bytes read is not seen");
    assert.equal(named.Bootstrap, undefined, "another host's script is not fetched");
  });
});
