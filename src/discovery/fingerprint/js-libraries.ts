/**
 * JavaScript libraries and their versions, from the URLs a page loads scripts from and from the banner
 * comments at the top of script files, with the CPE names NVD files them under, so CVE matching and the
 * KEV flag work for them as for server products.
 *
 * URL shapes read (the library is named by a package, directory or file name, the version beside it):
 * - package@version, as npm CDNs write it: `/npm/jquery@3.4.1/dist/jquery.min.js`, `/@angular/core@8.2.14/…`;
 * - a library directory then a version directory, as cdnjs and Google write it:
 *   `/ajax/libs/jquery/3.4.1/jquery.min.js`;
 * - a version directory then the library's file: `/ui/1.12.1/jquery-ui.min.js`, `/4.14.0/standard/ckeditor.js`;
 * - the version in the file name: `jquery-3.4.1.min.js`, `moment.2.24.0.js`;
 * - the version in the query string of the library's file: `jquery.min.js?ver=3.4.1` (WordPress).
 */
import type { Detection } from "../../core/facts.ts";

interface JsLibrary {
  name: string;
  /** NVD's CPE vendor and product; empty where NVD lists none. */
  vendor: string;
  product: string;
  /** Lower-case names the library goes by in URLs: npm and cdnjs package names, file names. */
  names: string[];
  /** Banner comments; group 1 is the version. */
  banners: RegExp[];
}

export const JS_LIBRARIES: readonly JsLibrary[] = [
  {
    name: "jQuery",
    vendor: "jquery",
    product: "jquery",
    names: ["jquery"],
    banners: [/\/\*!?\s*jQuery v(\d+\.\d+\.\d+)/, /jQuery JavaScript Library v(\d+\.\d+\.\d+)/],
  },
  {
    name: "jQuery UI",
    vendor: "jquery",
    product: "jquery_ui",
    names: ["jquery-ui", "jqueryui", "jquery-ui-dist", "jquery.ui"],
    banners: [/jQuery UI - v(\d+\.\d+\.\d+)/],
  },
  {
    // NVD has no CPE for jQuery Migrate: it is named with its version, without CVEs.
    name: "jQuery Migrate",
    vendor: "",
    product: "",
    names: ["jquery-migrate"],
    banners: [/jQuery Migrate (?:- )?v(\d+\.\d+\.\d+)/],
  },
  {
    name: "Bootstrap",
    vendor: "getbootstrap",
    product: "bootstrap",
    names: ["bootstrap", "twitter-bootstrap"],
    banners: [/\bBootstrap v(\d+\.\d+\.\d+)/],
  },
  {
    // AngularJS (1.x) is the npm package "angular"; Angular (2 and later) is "@angular/core".
    name: "AngularJS",
    vendor: "angularjs",
    product: "angular.js",
    names: ["angular", "angular.js", "angularjs"],
    banners: [/@license AngularJS v(\d+\.\d+\.\d+)/],
  },
  {
    name: "Angular",
    vendor: "angularjs",
    product: "angular",
    names: ["@angular/core"],
    banners: [/@license Angular v(\d+\.\d+\.\d+)/],
  },
  {
    name: "React",
    vendor: "facebook",
    product: "react",
    names: ["react", "react-dom"],
    banners: [/@license React v(\d+\.\d+\.\d+)/],
  },
  {
    name: "Vue.js",
    vendor: "vuejs",
    product: "vue.js",
    names: ["vue", "vue.js"],
    banners: [/\bVue\.js v(\d+\.\d+\.\d+)/, /^\/\*\*?\s*\*?\s*vue v(\d+\.\d+\.\d+)/],
  },
  {
    name: "Lodash",
    vendor: "lodash",
    product: "lodash",
    names: ["lodash", "lodash.js"],
    banners: [
      /@license\s+\*?\s*Lodash (?:v)?(\d+\.\d+\.\d+)/,
      /\bLodash[\s\S]{0,1500}?VERSION = '(\d+\.\d+\.\d+)'/,
    ],
  },
  {
    // Lodash's banner names the Underscore.js release it follows; only Underscore's own line counts.
    name: "Underscore.js",
    vendor: "underscorejs",
    product: "underscore",
    names: ["underscore", "underscore.js"],
    banners: [/^\s*\/\/\s+Underscore\.js (\d+\.\d+\.\d+)/],
  },
  {
    name: "Moment.js",
    vendor: "momentjs",
    product: "moment",
    names: ["moment", "moment.js"],
    banners: [/\/\/! moment\.js\s*(?:\r?\n\/\/! version : |v)(\d+\.\d+\.\d+)/],
  },
  {
    name: "Handlebars",
    vendor: "handlebarsjs",
    product: "handlebars",
    names: ["handlebars", "handlebars.js"],
    banners: [/\bhandlebars v(\d+\.\d+\.\d+)/i],
  },
  {
    name: "DOMPurify",
    vendor: "cure53",
    product: "dompurify",
    names: ["dompurify"],
    banners: [/\bDOMPurify (\d+\.\d+\.\d+)/],
  },
  {
    name: "Backbone.js",
    vendor: "backbone_project",
    product: "backbone",
    names: ["backbone", "backbone.js"],
    banners: [/\bBackbone\.js (\d+\.\d+\.\d+)/],
  },
  {
    name: "Knockout.js",
    vendor: "knockoutjs",
    product: "knockout",
    names: ["knockout", "knockout.js"],
    banners: [/Knockout JavaScript library v(\d+\.\d+\.\d+)/],
  },
  {
    name: "Ember.js",
    vendor: "emberjs",
    product: "ember.js",
    names: ["ember", "ember.js", "ember-source"],
    banners: [/Ember - JavaScript Application Framework[\s\S]{0,400}?@version\s+(\d+\.\d+\.\d+)/],
  },
  {
    name: "D3",
    vendor: "d3.js_project",
    product: "d3.js",
    names: ["d3"],
    banners: [/https:\/\/d3js\.org v(\d+\.\d+\.\d+)/],
  },
  {
    name: "Select2",
    vendor: "select2",
    product: "select2",
    names: ["select2"],
    banners: [/\bSelect2 (\d+\.\d+\.\d+)/],
  },
  {
    name: "Chart.js",
    vendor: "chartjs",
    product: "chart.js",
    names: ["chart.js", "chart", "chartjs"],
    banners: [/\bChart\.js v(\d+\.\d+\.\d+)/],
  },
  {
    name: "TinyMCE",
    vendor: "tiny",
    product: "tinymce",
    names: ["tinymce"],
    banners: [/\bTinyMCE version (\d+\.\d+\.\d+)/],
  },
  {
    name: "CKEditor",
    vendor: "ckeditor",
    product: "ckeditor",
    names: ["ckeditor", "ckeditor4"],
    banners: [/\bCKEDITOR\b[\s\S]{0,400}?\bversion:\s*"(\d+\.\d+\.\d+)"/],
  },
];

const byName = new Map(
  JS_LIBRARIES.flatMap((library) => library.names.map((name) => [name, library] as const)),
);

/** A version as libraries tag releases: 3.4.1, 1.12, 4.0.0-rc.1. */
const VERSION = /^v?(\d+\.\d+(?:\.\d+)?(?:-[0-9a-z.]+)?)$/i;
const version = (text: string) => VERSION.exec(text)?.[1];

/** Build words after a file's name that say nothing about the library (`jquery.slim.min.js`). */
const BUILD_WORD =
  /[.-](?:min|slim|bundle|full|umd|esm|prod|production|development|dev|global|runtime|all|dist)$/;

/** "jquery-ui.min.js" → "jquery-ui"; undefined for anything but a script file. */
function stem(file: string): string | undefined {
  if (!/\.(?:m?js)$/.test(file)) return undefined;
  let name = file.replace(/\.m?js$/, "");
  while (BUILD_WORD.test(name)) name = name.replace(BUILD_WORD, "");
  return name;
}

interface UrlMatch {
  library: JsLibrary;
  version: string;
}

/** The library and version a script URL shows, in the order of the shapes above. */
export function libraryFromUrl(url: string): UrlMatch | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return undefined;
  }
  let path: string;
  try {
    path = decodeURIComponent(parsed.pathname).toLowerCase();
  } catch {
    path = parsed.pathname.toLowerCase();
  }
  const segments = path.split("/").filter(Boolean);
  if (segments.length > 32) return undefined;

  // package@version, scoped packages included.
  for (let i = 0; i < segments.length; i++) {
    const at = segments[i].lastIndexOf("@");
    if (at <= 0) continue;
    const name = segments[i].startsWith("@") ? undefined : segments[i].slice(0, at);
    const scoped = segments[i - 1]?.startsWith("@") ? `${segments[i - 1]}/${segments[i].slice(0, at)}` : name;
    const library = byName.get(scoped ?? "") ?? (name ? byName.get(name) : undefined);
    const found = version(segments[i].slice(at + 1));
    if (library && found) return { library, version: found };
  }
  // a library directory, then a version directory (cdnjs, Google's hosted libraries).
  for (let i = 0; i + 1 < segments.length; i++) {
    const library = byName.get(segments[i]);
    const found = version(segments[i + 1]);
    if (library && found) return { library, version: found };
  }
  const file = segments.at(-1) ?? "";
  const fileStem = stem(file);
  // a version directory, then (at most two directories on) the library's own file.
  const fileLibrary = fileStem === undefined ? undefined : byName.get(fileStem);
  if (fileLibrary) {
    for (let i = Math.max(0, segments.length - 4); i < segments.length - 1; i++) {
      const found = version(segments[i]);
      if (found) return { library: fileLibrary, version: found };
    }
  }
  // the version in the file name: jquery-3.4.1.min.js, jquery-ui-1.12.1.js, moment.2.24.0.js.
  const named = /^(.+?)[-.@_]v?(\d+\.\d+(?:\.\d+)?)(?=[.-]|$)/.exec(fileStem ?? "");
  if (named) {
    let namedStem = named[1];
    while (BUILD_WORD.test(namedStem)) namedStem = namedStem.replace(BUILD_WORD, "");
    const library = byName.get(namedStem);
    if (library) return { library, version: named[2] };
  }
  // the library's file with its version in the query string.
  if (fileLibrary) {
    for (const key of ["ver", "v", "version"]) {
      const found = version(parsed.searchParams.get(key) ?? "");
      if (found) return { library: fileLibrary, version: found };
    }
  }
  return undefined;
}

const quote = (text: string) => JSON.stringify(text.length > 120 ? `${text.slice(0, 117)}...` : text);

function detection(library: JsLibrary, found: string, matchType: string, details: string): Detection {
  return {
    name: library.name,
    vendor: library.vendor,
    product: library.product,
    part: "a",
    version: found,
    update: "",
    tags: ["JavaScript libraries"],
    matchType,
    matchDetails: details,
  };
}

/** Libraries with versions named by script URLs. */
export function detectLibrariesFromUrls(scripts: string[]): Detection[] {
  return scripts.flatMap((script) => {
    const match = libraryFromUrl(script);
    return match ? [detection(match.library, match.version, "script_src", `script ${quote(script)}`)] : [];
  });
}

/** How much of a script file its banner is looked for in: the bytes read of it. */
export const BANNER_BYTES = 4096;
/** Same-host script files read for banners per page. */
export const MAX_BANNER_SCRIPTS = 5;

/** Libraries with versions named by the banner comments of script files (their first BANNER_BYTES). */
export function detectLibrariesFromBanners(files: Array<{ url: string; text: string }>): Detection[] {
  const found: Detection[] = [];
  for (const { url, text } of files) {
    const head = text.slice(0, BANNER_BYTES);
    for (const library of JS_LIBRARIES) {
      for (const banner of library.banners) {
        const match = banner.exec(head);
        if (!match) continue;
        const line = match[0].replace(/\s+/g, " ").trim();
        found.push(
          detection(library, match[1], "script_banner", `script ${quote(url)} banner ${quote(line)}`),
        );
        break;
      }
    }
  }
  return found;
}
